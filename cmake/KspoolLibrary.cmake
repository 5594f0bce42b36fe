# kspool_library(<name> SOURCES <files> [DEPS <kspool libraries>] [LIBS <external targets>])
# One folder, one static library. DEPS and LIBS are the library's declared dependencies;
# they are recorded in the build tree's layering.txt, from which the `layering` test
# (tools/check_layering.py) fails any source of the folder that includes a header of a
# library outside them (ARCHITECTURE.md has the map).
function(kspool_library name)
  cmake_parse_arguments(L "" "" "SOURCES;DEPS;LIBS" ${ARGN})
  if(L_SOURCES)
    add_library(${name} STATIC ${L_SOURCES})
    set(scope PUBLIC)
  else()
    add_library(${name} INTERFACE)
    set(scope INTERFACE)
  endif()
  target_include_directories(${name} ${scope} ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} ${scope} ${L_DEPS} ${L_LIBS})
  file(RELATIVE_PATH dir ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  string(REPLACE ";" " " deps "${L_DEPS} ${L_LIBS}")
  set_property(GLOBAL APPEND PROPERTY KSPOOL_LAYERS "${name} ${dir} ${deps}")
endfunction()

# Writes layering.txt: one line per library, "<name> <folder> <dependencies...>".
function(kspool_write_layering)
  get_property(layers GLOBAL PROPERTY KSPOOL_LAYERS)
  string(REPLACE ";" "\n" text "${layers}")
  file(WRITE ${CMAKE_BINARY_DIR}/layering.txt "${text}\n")
endfunction()
