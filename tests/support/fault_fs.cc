#include "tests/support/fault_fs.h"

namespace kspool::testing {
namespace {

bool IsWalFile(const std::string& fname) {
  return fname.size() > 4 && fname.compare(fname.size() - 4, 4, ".log") == 0;
}

// Takes one unit from a countdown; true if the caller should fail.
bool Take(std::atomic<int>* n) {
  int cur = n->load();
  while (cur > 0) {
    if (n->compare_exchange_weak(cur, cur - 1)) return true;
  }
  return false;
}

class FaultFile : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  FaultFile(std::unique_ptr<rocksdb::FSWritableFile> f, FaultInjectionFileSystem* fs,
            std::string fname)
      : FSWritableFileOwnerWrapper(std::move(f)), fs_(fs), fname_(std::move(fname)) {}

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = fs_->OnAppend(fname_);
    return s.ok() ? FSWritableFileOwnerWrapper::Append(data, o, dbg) : s;
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           const rocksdb::DataVerificationInfo& info,
                           rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = fs_->OnAppend(fname_);
    return s.ok() ? FSWritableFileOwnerWrapper::Append(data, o, info, dbg) : s;
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = fs_->OnSync(fname_);
    return s.ok() ? FSWritableFileOwnerWrapper::Sync(o, dbg) : s;
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = fs_->OnSync(fname_);
    return s.ok() ? FSWritableFileOwnerWrapper::Fsync(o, dbg) : s;
  }

 private:
  FaultInjectionFileSystem* fs_;
  std::string fname_;
};

}  // namespace

rocksdb::IOStatus FaultInjectionFileSystem::NewWritableFile(
    const std::string& fname, const rocksdb::FileOptions& opts,
    std::unique_ptr<rocksdb::FSWritableFile>* result, rocksdb::IODebugContext* dbg) {
  std::unique_ptr<rocksdb::FSWritableFile> f;
  rocksdb::IOStatus s = target()->NewWritableFile(fname, opts, &f, dbg);
  if (s.ok()) result->reset(new FaultFile(std::move(f), this, fname));
  return s;
}

rocksdb::IOStatus FaultInjectionFileSystem::OnSync(const std::string& fname) {
  if (Take(&fail_syncs_)) return rocksdb::IOStatus::IOError("injected sync failure: " + fname);
  if (IsWalFile(fname)) wal_syncs_.fetch_add(1);
  return rocksdb::IOStatus::OK();
}

rocksdb::IOStatus FaultInjectionFileSystem::OnAppend(const std::string& fname) {
  if (!Take(&fail_appends_)) return rocksdb::IOStatus::OK();
  if (appends_no_space_.load()) {
    return rocksdb::IOStatus::NoSpace("injected full disk: " + fname);
  }
  return rocksdb::IOStatus::IOError("injected write failure: " + fname);
}

std::shared_ptr<rocksdb::Env> EnvFor(std::shared_ptr<rocksdb::FileSystem> fs) {
  return std::shared_ptr<rocksdb::Env>(rocksdb::NewCompositeEnv(fs).release());
}

}  // namespace kspool::testing
