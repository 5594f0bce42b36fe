// FaultInjectionFileSystem: a RocksDB FileSystem wrapper for tests (the seam LevelDB's
// db/fault_injection_test.cc uses through its Env). It can
//  * count syncs of RocksDB's write-ahead log files (`*.log`);
//  * fail the next N syncs or appends (as EIO or as a full disk), or every append while
//    a "disk full" switch is set; or the next N syncs RocksDB's background threads do
//    not make (FailNextForegroundSyncs: the same sync fails in every replay);
//  * fail syncs of table files (`*.sst`) only: FailTableSyncs(skip, n) lets `skip` of
//    them pass, then fails `n` (a flush's or a compaction's output file), leaving the
//    write-ahead log and the MANIFEST alone;
//  * fail exactly one chosen write's sync: FailSyncOfWrite(marker) fails the sync that
//    would make durable the first bytes appended to a RocksDB write-ahead log file that
//    hold `marker`, and only it, whatever else syncs meanwhile (other threads' writes,
//    flushes, the drain's commit points);
//  * fail reads of table files (`*.sst`) made by one thread: FailReadsOnThisThread()
//    lets `skip` reads pass, then fails `n`, as an EIO or as data that fails RocksDB's
//    block checksum (a byte of what was read is flipped), so a scan can stop with an
//    error after it has read part of its range. Reads by other threads (RocksDB's
//    flushes and compactions) are never failed, so a test that arms it stays
//    deterministic;
//  * simulate a power cut: it tracks, per file opened for writing, how many bytes were
//    appended and how many of them a successful Sync/Fsync made durable. SetActive(false)
//    is the cut: from then on every write, sync, flush and close of a tracked file, and
//    every file creation, rename and delete, fails with IOError("power cut") and changes
//    nothing on disk. After the DB is closed, DropUnsyncedData() truncates every tracked
//    file to its durable size, which is what the disk would hold after the cut.
// Model and its limits: a rename or delete is durable at once (directory syncs are not
// modelled); RangeSync does not make data durable; a sync that completes after the cut
// fails and counts for nothing. Files never opened for writing through this wrapper are
// durable as they are.
// Thread safety: every method may be called from any thread; RocksDB calls it from its
// own threads. One mutex guards the tracking state, so the cut is atomic with respect to
// every sync: a sync either returned OK before the cut (and its bytes survive) or fails.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

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
  rocksdb::IOStatus ReopenWritableFile(const std::string& fname,
                                       const rocksdb::FileOptions& opts,
                                       std::unique_ptr<rocksdb::FSWritableFile>* result,
                                       rocksdb::IODebugContext* dbg) override;
  // Used by RocksDB only with recycle_log_file_num > 0 (default 0).
  rocksdb::IOStatus ReuseWritableFile(const std::string& fname, const std::string& old_fname,
                                      const rocksdb::FileOptions& opts,
                                      std::unique_ptr<rocksdb::FSWritableFile>* result,
                                      rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus NewRandomAccessFile(const std::string& fname,
                                        const rocksdb::FileOptions& opts,
                                        std::unique_ptr<rocksdb::FSRandomAccessFile>* result,
                                        rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus RenameFile(const std::string& src, const std::string& target,
                               const rocksdb::IOOptions& opts,
                               rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus DeleteFile(const std::string& fname, const rocksdb::IOOptions& opts,
                               rocksdb::IODebugContext* dbg) override;

  // Syncs of `*.log` (RocksDB WAL) files that succeeded.
  uint64_t wal_syncs() const { return wal_syncs_.load(); }
  void FailNextSyncs(int n) { fail_syncs_.store(n); }
  // As FailNextSyncs, but syncs made by RocksDB's background threads (flushes and
  // compactions, named "rocksdb:<priority>") pass: their timing is not the test's, and a
  // seeded run (the drain simulator) must fail the same sync every time.
  void FailNextForegroundSyncs(int n) { fail_foreground_syncs_.store(n); }
  void FailNextAppends(int n, bool no_space) {
    appends_no_space_.store(no_space);
    fail_appends_.store(n);
  }
  // Of the next syncs of `*.sst` files, `skip` pass, then `n` fail with an IOError.
  void FailTableSyncs(int skip, int n) {
    table_syncs_to_skip_.store(skip);
    fail_table_syncs_.store(n);
  }
  uint64_t injected_table_sync_failures() const { return injected_table_sync_failures_.load(); }
  // While set, every append fails with IOStatus::NoSpace (a disk that stays full).
  void SetNoSpace(bool no_space) { no_space_.store(no_space); }
  // As SetNoSpace, for the appends of every thread but RocksDB's background ones (its
  // flushes and compactions): a simulation's replays then agree, as those threads' timing
  // is not the simulation's.
  void SetNoSpaceForeground(bool no_space) { no_space_foreground_.store(no_space); }
  // While set, the failure of a marked write's sync (FailSyncOfWrite) also sets the
  // volume full (SetNoSpace), in the same call: a reopen then fails until the test
  // clears it, so the failed state can be looked at without racing the reopen.
  void NoSpaceAfterMarkedSync(bool on) { no_space_after_marked_.store(on); }
  // While set (>= 0), GetFreeSpace() answers this many bytes: the volume as RocksDB's
  // SstFileManager sees it (its room checks after a failure for space). -1: the real one.
  void SetFreeSpace(int64_t bytes) { free_space_.store(bytes); }
  rocksdb::IOStatus GetFreeSpace(const std::string& path, const rocksdb::IOOptions& opts,
                                 uint64_t* diskfree, rocksdb::IODebugContext* dbg) override {
    const int64_t fake = free_space_.load();
    if (fake < 0) return target()->GetFreeSpace(path, opts, diskfree, dbg);
    *diskfree = static_cast<uint64_t>(fake);
    return rocksdb::IOStatus::OK();
  }

  // Arms the failure of one write's sync: the next append to a `*.log` file whose bytes
  // contain `marker` (possibly spread over consecutive appends) dooms that file's next
  // sync, which then fails with IOError("injected sync failure ...") and disarms. The
  // marker must be contiguous in the file: RocksDB's log splits records at 32 KiB block
  // boundaries, so a value that carries the marker twice always matches.
  void FailSyncOfWrite(std::string marker) {
    std::lock_guard<std::mutex> l(mu_);
    sync_marker_ = std::move(marker);
  }
  // Syncs failed by FailSyncOfWrite(), and whether one is still armed (no append has
  // carried its marker yet) or pending (its append happened, its sync has not yet).
  uint64_t injected_sync_failures() const { return injected_sync_failures_.load(); }
  bool sync_failure_armed() const {
    std::lock_guard<std::mutex> l(mu_);
    return !sync_marker_.empty();
  }

  // Reads of `*.sst` files by the calling thread: `skip` pass, then `n` fail (IOError,
  // or with `corrupt` a flipped byte that RocksDB reports as a checksum mismatch).
  // Replaces what was armed before; n = 0 disarms.
  void FailReadsOnThisThread(int skip, int n, bool corrupt) {
    std::lock_guard<std::mutex> l(mu_);
    read_thread_ = std::this_thread::get_id();
    read_skip_ = skip;
    read_fail_ = n;
    read_corrupt_ = corrupt;
  }
  // Reads failed or corrupted by FailReadsOnThisThread() so far.
  uint64_t injected_read_faults() const { return injected_read_faults_.load(); }

  // Power. SetActive(false) cuts it; see the header comment.
  void SetActive(bool active) {
    std::lock_guard<std::mutex> l(mu_);
    active_ = active;
  }
  bool active() const {
    std::lock_guard<std::mutex> l(mu_);
    return active_;
  }
  // Truncates every tracked file to the bytes its last successful sync covered, then
  // forgets them (what is left is durable). Call only after the DB is closed; call it
  // before SetActive(true). Aborts the process if a file cannot be truncated.
  void DropUnsyncedData();
  // A power cut while `close` (e.g. destroying the DB's owner) runs: nothing it writes
  // reaches the disk, what was not synced is dropped, then the power is back. Stronger
  // than a crash of the process (which keeps unsynced bytes in the page cache).
  template <typename Close>
  void CutPowerWhile(Close close) {
    SetActive(false);
    close();
    DropUnsyncedData();
    SetActive(true);
  }
  // Bytes that DropUnsyncedData() has removed so far.
  uint64_t dropped_bytes() const {
    std::lock_guard<std::mutex> l(mu_);
    return dropped_bytes_;
  }

 private:
  struct FileState {
    uint64_t size = 0;    // bytes appended (or found at reopen)
    uint64_t synced = 0;  // bytes a successful sync covered
    std::string tail;     // while a marker is armed: the last appended bytes, to match across appends
    bool sync_doomed = false;  // the next sync fails (FailSyncOfWrite)
  };
  class File;  // the wrapped writable file; fault_fs.cc
  class ReadFile;  // the wrapped random-access file; fault_fs.cc
  enum class ReadFault { kNone, kError, kCorrupt };
  // Whether this read (by the calling thread) fails, and how; takes mu_.
  ReadFault NextRead();

  // OK while the power is on; takes mu_.
  rocksdb::IOStatus CheckActive(const std::string& what) const;
  // Wraps a freshly opened file and tracks it under `fname`. Caller holds mu_.
  void TrackLocked(const std::string& fname, std::shared_ptr<FileState> state,
                   std::unique_ptr<rocksdb::FSWritableFile>* result);
  // Hooks of File, called around the target's operations.
  rocksdb::IOStatus BeforeAppend(const std::string& fname);
  // `n` bytes written at `offset`, or at the end when offset is kAtEnd.
  static constexpr uint64_t kAtEnd = ~uint64_t{0};
  void AfterAppend(const std::string& fname, FileState* state, std::string_view data,
                   uint64_t offset = kAtEnd);
  rocksdb::IOStatus BeforeSync(const std::string& fname, FileState* state, uint64_t* covered);
  rocksdb::IOStatus AfterSync(const std::string& fname, FileState* state, uint64_t covered);

  mutable std::mutex mu_;
  bool active_ = true;                                             // guarded by mu_
  std::map<std::string, std::shared_ptr<FileState>> files_;        // guarded by mu_
  uint64_t dropped_bytes_ = 0;                                     // guarded by mu_
  std::string sync_marker_;                                        // guarded by mu_
  std::atomic<uint64_t> injected_sync_failures_{0};
  std::thread::id read_thread_;                                    // guarded by mu_
  int read_skip_ = 0;                                              // guarded by mu_
  int read_fail_ = 0;                                              // guarded by mu_
  bool read_corrupt_ = false;                                      // guarded by mu_
  std::atomic<uint64_t> injected_read_faults_{0};

  std::atomic<uint64_t> wal_syncs_{0};
  std::atomic<int> fail_syncs_{0};
  std::atomic<int> fail_foreground_syncs_{0};
  std::atomic<int> table_syncs_to_skip_{0};
  std::atomic<int> fail_table_syncs_{0};
  std::atomic<uint64_t> injected_table_sync_failures_{0};
  std::atomic<int> fail_appends_{0};
  std::atomic<bool> appends_no_space_{false};
  std::atomic<bool> no_space_{false};
  std::atomic<bool> no_space_after_marked_{false};
  std::atomic<bool> no_space_foreground_{false};
  std::atomic<int64_t> free_space_{-1};
};

// An Env whose file system is `fs`, for wal::Options::env.
std::shared_ptr<rocksdb::Env> EnvFor(std::shared_ptr<rocksdb::FileSystem> fs);

}  // namespace kspool::testing
