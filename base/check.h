// KSPOOL_DCHECK: debug checks of invariants that are too costly for the shipped binary
// (recounts of the drain's window, for instance). Active only when the build defines
// KSPOOL_DCHECKS: sanitizer builds and -DKSPOOL_DCHECKS=ON do (CMakeLists.txt); the
// plain RelWithDebInfo package build does not, and there a KSPOOL_DCHECK evaluates
// nothing. A failed check prints where and what failed and aborts, after calling the
// handler a test installed (the drain simulator prints its seed and a replay command).
// Thread safety: SetCheckFailureHandler() before any check runs; checks from any thread.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"

namespace kspool {

// Called with the failure's text before the process aborts; nullptr: none.
using CheckFailureHandler = void (*)(const std::string& what);

inline CheckFailureHandler& CheckFailureHandlerSlot() {
  static CheckFailureHandler handler = nullptr;
  return handler;
}
inline void SetCheckFailureHandler(CheckFailureHandler h) { CheckFailureHandlerSlot() = h; }

[[noreturn]] inline void CheckFailed(const char* file, int line, const std::string& what) {
  const std::string text = std::string(file) + ":" + std::to_string(line) + ": " + what;
  std::fprintf(stderr, "KSPOOL_DCHECK failed: %s\n", text.c_str());
  std::fflush(stderr);
  if (CheckFailureHandler h = CheckFailureHandlerSlot()) h(text);
  std::abort();
}

#if defined(KSPOOL_DCHECKS)
inline constexpr bool kDchecks = true;
#define KSPOOL_DCHECK(cond)                                                      \
  do {                                                                           \
    if (!(cond)) ::kspool::CheckFailed(__FILE__, __LINE__, "check " #cond);      \
  } while (0)
// Aborts unless `expr` (an absl::Status) is OK, with its message.
#define KSPOOL_DCHECK_OK(expr)                                                   \
  do {                                                                           \
    const ::absl::Status kspool_dcheck_status_ = (expr);                         \
    if (!kspool_dcheck_status_.ok()) {                                           \
      ::kspool::CheckFailed(__FILE__, __LINE__, kspool_dcheck_status_.ToString()); \
    }                                                                            \
  } while (0)
#else
inline constexpr bool kDchecks = false;
#define KSPOOL_DCHECK(cond) \
  do {                      \
    if (false) (void)(cond); \
  } while (0)
#define KSPOOL_DCHECK_OK(expr) \
  do {                         \
    if (false) (void)(expr);   \
  } while (0)
#endif

}  // namespace kspool
