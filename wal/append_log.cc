// AppendLog::Append: the blocking form of AppendAsync().
#include "wal/append_log.h"

#include "base/mutex.h"

namespace kspool::wal {

absl::StatusOr<AppendResult> AppendLog::Append(AppendBatch batch) {
  Mutex mu;
  CondVar cv;
  bool done = false;
  absl::StatusOr<AppendResult> result;
  AppendAsync(std::move(batch), [&](absl::StatusOr<AppendResult> r) {
    // Signalled under mu: this frame cannot return (destroying cv) before Signal does.
    MutexLock l(&mu);
    result = std::move(r);
    done = true;
    cv.Signal();
  });
  MutexLock l(&mu);
  while (!done) cv.Wait(&mu);
  return result;
}

}  // namespace kspool::wal
