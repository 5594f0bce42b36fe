// FaultInjectionFileSystem: a RocksDB FileSystem wrapper for tests (the seam LevelDB's
// fault_injection_test uses through its Env). It counts syncs of RocksDB's write-ahead
// log files and, on command, fails the next N syncs or appends (as EIO or as a full
// disk). Thread-safe: RocksDB calls it from its own threads.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "rocksdb/env.h"
#include "rocksdb/file_system.h"

namespace kspool::testing {

class FaultInjectionFileSystem : public rocksdb::FileSystemWrapper {
 public:
  FaultInjectionFileSystem() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}
  static const char* kClassName() { return "FaultInjectionFileSystem"; }
  const char* Name() const override { return kClassName(); }

  rocksdb::IOStatus NewWritableFile(const std::string& fname, const rocksdb::FileOptions& opts,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override;

  // Syncs of `*.log` (RocksDB WAL) files that succeeded.
  uint64_t wal_syncs() const { return wal_syncs_.load(); }
  void FailNextSyncs(int n) { fail_syncs_.store(n); }
  void FailNextAppends(int n, bool no_space) {
    appends_no_space_.store(no_space);
    fail_appends_.store(n);
  }

  // Used by the wrapped files.
  rocksdb::IOStatus OnSync(const std::string& fname);
  rocksdb::IOStatus OnAppend(const std::string& fname);

 private:
  std::atomic<uint64_t> wal_syncs_{0};
  std::atomic<int> fail_syncs_{0};
  std::atomic<int> fail_appends_{0};
  std::atomic<bool> appends_no_space_{false};
};

// An Env whose file system is `fs`, for wal::Options::env.
std::shared_ptr<rocksdb::Env> EnvFor(std::shared_ptr<rocksdb::FileSystem> fs);

}  // namespace kspool::testing
