#include "tests/support/fault_fs.h"

#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kspool::testing {
namespace {

using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;
using rocksdb::Slice;

bool IsWalFile(const std::string& fname) {
  return fname.size() > 4 && fname.compare(fname.size() - 4, 4, ".log") == 0;
}

bool IsTableFile(const std::string& fname) {
  return fname.size() > 4 && fname.compare(fname.size() - 4, 4, ".sst") == 0;
}

// Takes one unit from a countdown; true if the caller should fail.
// RocksDB names the threads of its background pools "rocksdb:low", "rocksdb:high", ...
bool OnRocksDbBackgroundThread() {
  char name[16] = {};
  return pthread_getname_np(pthread_self(), name, sizeof name) == 0 &&
         std::strncmp(name, "rocksdb:", 8) == 0;
}

bool Take(std::atomic<int>* n) {
  int cur = n->load();
  while (cur > 0) {
    if (n->compare_exchange_weak(cur, cur - 1)) return true;
  }
  return false;
}

IOStatus PowerCut(const std::string& what) { return IOStatus::IOError("power cut", what); }

[[noreturn]] void Die(const char* op, const std::string& path) {
  std::fprintf(stderr, "FaultInjectionFileSystem: %s %s: %s\n", op, path.c_str(),
               std::strerror(errno));
  std::abort();
}

}  // namespace

class FaultInjectionFileSystem::File : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  File(std::unique_ptr<rocksdb::FSWritableFile> f, FaultInjectionFileSystem* fs,
       std::string fname, std::shared_ptr<FileState> state)
      : FSWritableFileOwnerWrapper(std::move(f)),
        fs_(fs),
        fname_(std::move(fname)),
        state_(std::move(state)) {}

  IOStatus Append(const Slice& data, const IOOptions& o, IODebugContext* dbg) override {
    return Write(data, kAtEnd, [&] { return target()->Append(data, o, dbg); });
  }
  IOStatus Append(const Slice& data, const IOOptions& o,
                  const rocksdb::DataVerificationInfo& info, IODebugContext* dbg) override {
    return Write(data, kAtEnd, [&] { return target()->Append(data, o, info, dbg); });
  }
  IOStatus PositionedAppend(const Slice& data, uint64_t offset, const IOOptions& o,
                            IODebugContext* dbg) override {
    return Write(data, offset, [&] { return target()->PositionedAppend(data, offset, o, dbg); });
  }
  IOStatus PositionedAppend(const Slice& data, uint64_t offset, const IOOptions& o,
                            const rocksdb::DataVerificationInfo& info,
                            IODebugContext* dbg) override {
    return Write(data, offset,
                 [&] { return target()->PositionedAppend(data, offset, o, info, dbg); });
  }
  IOStatus Truncate(uint64_t size, const IOOptions& o, IODebugContext* dbg) override {
    IOStatus s = Guarded("truncate", [&] { return target()->Truncate(size, o, dbg); });
    if (s.ok()) {
      std::lock_guard<std::mutex> l(fs_->mu_);
      state_->size = size;
      state_->synced = std::min(state_->synced, size);
    }
    return s;
  }
  IOStatus Sync(const IOOptions& o, IODebugContext* dbg) override {
    return SyncWith([&] { return target()->Sync(o, dbg); });
  }
  IOStatus Fsync(const IOOptions& o, IODebugContext* dbg) override {
    return SyncWith([&] { return target()->Fsync(o, dbg); });
  }
  // sync_file_range does not make data durable; it only must not run after the cut.
  IOStatus RangeSync(uint64_t offset, uint64_t nbytes, const IOOptions& o,
                     IODebugContext* dbg) override {
    return Guarded("range sync", [&] { return target()->RangeSync(offset, nbytes, o, dbg); });
  }
  IOStatus Flush(const IOOptions& o, IODebugContext* dbg) override {
    return Guarded("flush", [&] { return target()->Flush(o, dbg); });
  }
  // After the cut the target is closed by its destructor, which writes no data.
  IOStatus Close(const IOOptions& o, IODebugContext* dbg) override {
    return Guarded("close", [&] { return target()->Close(o, dbg); });
  }

 private:
  template <typename Op>
  IOStatus Guarded(const char* what, Op op) {
    IOStatus s = fs_->CheckActive(std::string(what) + " " + fname_);
    return s.ok() ? op() : s;
  }
  template <typename Op>
  IOStatus Write(const Slice& data, uint64_t offset, Op op) {
    IOStatus s = fs_->BeforeAppend(fname_);
    if (s.ok()) s = op();
    if (s.ok()) fs_->AfterAppend(fname_, state_.get(), {data.data(), data.size()}, offset);
    return s;
  }
  template <typename Op>
  IOStatus SyncWith(Op op) {
    uint64_t covered = 0;
    IOStatus s = fs_->BeforeSync(fname_, state_.get(), &covered);
    if (s.ok()) s = op();
    return s.ok() ? fs_->AfterSync(fname_, state_.get(), covered) : s;
  }

  FaultInjectionFileSystem* const fs_;
  const std::string fname_;
  const std::shared_ptr<FileState> state_;  // outlives a rename or delete of the path
};

class FaultInjectionFileSystem::ReadFile : public rocksdb::FSRandomAccessFileOwnerWrapper {
 public:
  ReadFile(std::unique_ptr<rocksdb::FSRandomAccessFile> f, FaultInjectionFileSystem* fs,
           std::string fname)
      : FSRandomAccessFileOwnerWrapper(std::move(f)), fs_(fs), fname_(std::move(fname)) {}

  IOStatus Read(uint64_t offset, size_t n, const IOOptions& o, Slice* result, char* scratch,
                IODebugContext* dbg) const override {
    const ReadFault fault = fs_->NextRead();
    if (fault == ReadFault::kError) return IOStatus::IOError("injected read failure: " + fname_);
    IOStatus s = target()->Read(offset, n, o, result, scratch, dbg);
    if (s.ok() && fault == ReadFault::kCorrupt && !result->empty()) Corrupt(result, scratch);
    return s;
  }
  IOStatus MultiRead(rocksdb::FSReadRequest* reqs, size_t num_reqs, const IOOptions& o,
                     IODebugContext* dbg) override {
    const ReadFault fault = fs_->NextRead();
    if (fault == ReadFault::kError) return IOStatus::IOError("injected read failure: " + fname_);
    IOStatus s = target()->MultiRead(reqs, num_reqs, o, dbg);
    if (s.ok() && fault == ReadFault::kCorrupt && num_reqs > 0 && reqs[0].status.ok() &&
        !reqs[0].result.empty()) {
      Corrupt(&reqs[0].result, reqs[0].scratch);
    }
    return s;
  }

 private:
  // Flips a byte in the middle of what was read, when it is in the caller's buffer.
  static void Corrupt(Slice* result, char* scratch) {
    if (scratch == nullptr || result->data() != scratch) return;
    scratch[result->size() / 2] ^= 0x5a;
  }

  FaultInjectionFileSystem* const fs_;
  const std::string fname_;
};

FaultInjectionFileSystem::ReadFault FaultInjectionFileSystem::NextRead() {
  std::lock_guard<std::mutex> l(mu_);
  if (read_fail_ == 0 || std::this_thread::get_id() != read_thread_) return ReadFault::kNone;
  if (read_skip_ > 0) {
    --read_skip_;
    return ReadFault::kNone;
  }
  --read_fail_;
  injected_read_faults_.fetch_add(1);
  return read_corrupt_ ? ReadFault::kCorrupt : ReadFault::kError;
}

IOStatus FaultInjectionFileSystem::NewRandomAccessFile(
    const std::string& fname, const rocksdb::FileOptions& opts,
    std::unique_ptr<rocksdb::FSRandomAccessFile>* result, IODebugContext* dbg) {
  IOStatus s = target()->NewRandomAccessFile(fname, opts, result, dbg);
  const bool table = fname.size() > 4 && fname.compare(fname.size() - 4, 4, ".sst") == 0;
  if (s.ok() && table) result->reset(new ReadFile(std::move(*result), this, fname));
  return s;
}

IOStatus FaultInjectionFileSystem::CheckActive(const std::string& what) const {
  std::lock_guard<std::mutex> l(mu_);
  return active_ ? IOStatus::OK() : PowerCut(what);
}

void FaultInjectionFileSystem::TrackLocked(const std::string& fname,
                                           std::shared_ptr<FileState> state,
                                           std::unique_ptr<rocksdb::FSWritableFile>* result) {
  files_[fname] = state;
  result->reset(new File(std::move(*result), this, fname, std::move(state)));
}

// File creation, rename and delete run under mu_, so each is wholly before or after a cut.
IOStatus FaultInjectionFileSystem::NewWritableFile(
    const std::string& fname, const rocksdb::FileOptions& opts,
    std::unique_ptr<rocksdb::FSWritableFile>* result, IODebugContext* dbg) {
  std::lock_guard<std::mutex> l(mu_);
  if (!active_) return PowerCut("create " + fname);
  IOStatus s = target()->NewWritableFile(fname, opts, result, dbg);
  if (s.ok()) TrackLocked(fname, std::make_shared<FileState>(), result);
  return s;
}

IOStatus FaultInjectionFileSystem::ReopenWritableFile(
    const std::string& fname, const rocksdb::FileOptions& opts,
    std::unique_ptr<rocksdb::FSWritableFile>* result, IODebugContext* dbg) {
  std::lock_guard<std::mutex> l(mu_);
  if (!active_) return PowerCut("reopen " + fname);
  uint64_t size = 0;
  IOStatus s = target()->GetFileSize(fname, IOOptions(), &size, dbg);
  if (!s.ok()) size = 0;  // reopening creates a missing file
  s = target()->ReopenWritableFile(fname, opts, result, dbg);
  if (!s.ok()) return s;
  auto it = files_.find(fname);
  // A file tracked already keeps its sync mark; an untracked one is durable as it is.
  std::shared_ptr<FileState> state =
      it != files_.end() ? it->second : std::make_shared<FileState>();
  if (it == files_.end()) state->synced = size;
  state->size = size;
  state->synced = std::min(state->synced, size);
  TrackLocked(fname, std::move(state), result);
  return s;
}

IOStatus FaultInjectionFileSystem::ReuseWritableFile(
    const std::string& fname, const std::string& old_fname, const rocksdb::FileOptions& opts,
    std::unique_ptr<rocksdb::FSWritableFile>* result, IODebugContext* dbg) {
  std::lock_guard<std::mutex> l(mu_);
  if (!active_) return PowerCut("reuse " + old_fname + " as " + fname);
  IOStatus s = target()->ReuseWritableFile(fname, old_fname, opts, result, dbg);
  if (!s.ok()) return s;
  files_.erase(old_fname);
  // Conservative: the old contents count as unsynced and are dropped by a cut.
  TrackLocked(fname, std::make_shared<FileState>(), result);
  return s;
}

IOStatus FaultInjectionFileSystem::RenameFile(const std::string& src, const std::string& dst,
                                              const IOOptions& opts, IODebugContext* dbg) {
  std::lock_guard<std::mutex> l(mu_);
  if (!active_) return PowerCut("rename " + src + " to " + dst);
  IOStatus s = target()->RenameFile(src, dst, opts, dbg);
  if (!s.ok()) return s;
  std::shared_ptr<FileState> state;  // none: dst is now an untracked (durable) file
  if (auto it = files_.find(src); it != files_.end()) {
    state = std::move(it->second);
    files_.erase(it);
  }
  if (state) files_[dst] = std::move(state); else files_.erase(dst);
  return s;
}

IOStatus FaultInjectionFileSystem::DeleteFile(const std::string& fname, const IOOptions& opts,
                                              IODebugContext* dbg) {
  std::lock_guard<std::mutex> l(mu_);
  if (!active_) return PowerCut("delete " + fname);
  IOStatus s = target()->DeleteFile(fname, opts, dbg);
  if (s.ok()) files_.erase(fname);
  return s;
}

IOStatus FaultInjectionFileSystem::BeforeAppend(const std::string& fname) {
  IOStatus s = CheckActive("append to " + fname);
  if (!s.ok()) return s;
  if (no_space_.load()) return IOStatus::NoSpace("injected full disk: " + fname);
  if (no_space_foreground_.load() && !OnRocksDbBackgroundThread()) {
    return IOStatus::NoSpace("injected full disk: " + fname);
  }
  if (!Take(&fail_appends_)) return IOStatus::OK();
  if (appends_no_space_.load()) return IOStatus::NoSpace("injected full disk: " + fname);
  return IOStatus::IOError("injected write failure: " + fname);
}

void FaultInjectionFileSystem::AfterAppend(const std::string& fname, FileState* state,
                                           std::string_view data, uint64_t offset) {
  std::lock_guard<std::mutex> l(mu_);
  const uint64_t n = data.size();
  state->size = offset == kAtEnd ? state->size + n : std::max(state->size, offset + n);
  if (sync_marker_.empty() || !IsWalFile(fname)) return;
  std::string seen = state->tail;
  seen.append(data);
  if (seen.find(sync_marker_) != std::string::npos) {
    state->sync_doomed = true;
    sync_marker_.clear();
    state->tail.clear();
    return;
  }
  const size_t keep = std::min(seen.size(), sync_marker_.size() - 1);
  state->tail = seen.substr(seen.size() - keep);
}

IOStatus FaultInjectionFileSystem::BeforeSync(const std::string& fname, FileState* state,
                                              uint64_t* covered) {
  if (Take(&fail_syncs_)) return IOStatus::IOError("injected sync failure: " + fname);
  if (fail_foreground_syncs_.load() > 0 && !OnRocksDbBackgroundThread() &&
      Take(&fail_foreground_syncs_)) {
    return IOStatus::IOError("injected sync failure: " + fname);
  }
  if (IsTableFile(fname) && !Take(&table_syncs_to_skip_) && Take(&fail_table_syncs_)) {
    injected_table_sync_failures_.fetch_add(1);
    return IOStatus::IOError("injected table sync failure: " + fname);
  }
  std::lock_guard<std::mutex> l(mu_);
  if (!active_) return PowerCut("sync " + fname);
  if (state->sync_doomed) {
    state->sync_doomed = false;
    injected_sync_failures_.fetch_add(1);
    if (no_space_after_marked_.load()) no_space_.store(true);
    return IOStatus::IOError("injected sync failure of the marked write: " + fname);
  }
  *covered = state->size;  // appends racing with this sync may or may not be covered
  return IOStatus::OK();
}

IOStatus FaultInjectionFileSystem::AfterSync(const std::string& fname, FileState* state,
                                             uint64_t covered) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!active_) return PowerCut("sync " + fname + " did not complete before the cut");
    state->synced = std::max(state->synced, covered);
  }
  if (IsWalFile(fname)) wal_syncs_.fetch_add(1);
  return IOStatus::OK();
}

void FaultInjectionFileSystem::DropUnsyncedData() {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [path, state] : files_) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) continue;  // removed behind our back: nothing to drop
      Die("stat", path);
    }
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    if (size <= state->synced) continue;
    if (::truncate(path.c_str(), static_cast<off_t>(state->synced)) != 0) Die("truncate", path);
    dropped_bytes_ += size - state->synced;
  }
  files_.clear();  // what is left on disk is durable
}

std::shared_ptr<rocksdb::Env> EnvFor(std::shared_ptr<rocksdb::FileSystem> fs) {
  return std::shared_ptr<rocksdb::Env>(rocksdb::NewCompositeEnv(fs).release());
}

}  // namespace kspool::testing
