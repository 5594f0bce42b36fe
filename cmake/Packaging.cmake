# The Debian package (CPack): `tools/package.sh` builds build/kspool_VERSION_ARCH.deb.
# It holds the four programs in /usr/bin, the systemd unit, the commented default
# config (a conffile) and the maintainer scripts of deploy/debian/ (the kspool user,
# /var/lib/kspool). Runtime dependencies come from dpkg-shlibdeps, not from a list.
include(GNUInstallDirs)

install(TARGETS kspool-agent kspoolctl kspool-devkafka kspool-bench
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/kspool.service DESTINATION /lib/systemd/system)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/kspool.toml DESTINATION /etc/kspool)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The reference the README links to (security, the Bruce input, operations, performance).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
        FILES_MATCHING PATTERN "*.md")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kspool)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "kspool maintainers <kspool@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "durable write-ahead-log spool agent for Kafka")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "kspool-agent takes messages over gRPC, fsyncs them into a RocksDB write-ahead log
before it answers, and produces them to Kafka (acks=all, idempotent). Includes
kspoolctl (operator CLI), kspool-devkafka (a local Kafka-protocol cluster for
tests) and kspool-bench (load generator).")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)  # the build's debug info stays in build/
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # kspool_0.1.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")  # postinst; merged with the shlibdeps
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/deploy/debian/conffiles ${PROJECT_SOURCE_DIR}/deploy/debian/postinst
    ${PROJECT_SOURCE_DIR}/deploy/debian/prerm ${PROJECT_SOURCE_DIR}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)  # xz: half the size, 30 s more to build
include(CPack)
