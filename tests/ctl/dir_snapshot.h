// DirSnapshot: every file of a directory with its size, modification time and a hash of
// its contents, to show that a read left the directory exactly as it was.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>

namespace kspool::testing {

inline std::map<std::string, std::string> DirSnapshot(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    struct stat st {};
    stat(e.path().c_str(), &st);
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream contents;
    if (e.is_regular_file()) contents << in.rdbuf();
    out[e.path().lexically_relative(dir).string()] =
        std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
        std::to_string(st.st_mtim.tv_nsec) + " " +
        std::to_string(std::hash<std::string>()(contents.str()));
  }
  return out;
}

}  // namespace kspool::testing
