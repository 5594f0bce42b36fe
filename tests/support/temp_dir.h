// TempDir: a fresh directory under $TMPDIR for one test, removed afterwards.
// TableBytes: the bytes of RocksDB's table files (*.sst) in a directory.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace kspool::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kspool-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// RocksDB deletes table files from its background threads at any time, so a
// file listed may be gone when it is measured: it counts as zero bytes.
inline uint64_t TableBytes(const std::string& dir) {
  uint64_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".sst") continue;
    const uintmax_t size = e.file_size(ec);
    if (!ec) n += size;
  }
  return n;
}

}  // namespace kspool::testing
