// kspoolctl's exit codes, and the one place where an error becomes one. They are part
// of the interface (scripts test them); --help and README.md list them.
// Thread safety: stateless.
#pragma once

#include <iostream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/cord.h"

namespace kspool::ctl {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;      // runtime error, or the agent returned an error
inline constexpr int kExitUsage = 2;      // bad command line
inline constexpr int kExitCorrupt = 3;    // the WAL holds corrupt or inconsistent data
inline constexpr int kExitWalInUse = 4;   // a writing command found an agent on the WAL
// send --wait kafka: the agent accepted the messages (they are fsynced and will be
// delivered or discarded) but the call ended before every outcome was known, usually
// at its deadline; their sequence numbers are printed, to ask with `delivery`.
inline constexpr int kExitNotConfirmed = 5;

inline constexpr char kExitCodesHelp[] =
    "Exit codes: 0 success; 1 runtime error, or the agent returned an error or was "
    "unreachable; 2 bad usage; 3 corruption found (wal verify, or a corrupt entry shown); "
    "4 the WAL is in use by a running agent (dead replay/purge: stop the agent first); "
    "5 send --wait kafka: the messages were accepted, but the call ended (deadline) before "
    "every outcome was known (their sequence numbers are printed; ask with delivery).";

// Marks a status as "the WAL is locked by another process", so that it exits with 4.
inline constexpr char kWalInUsePayload[] = "kspool.ctl/wal-in-use";
inline absl::Status WalInUse(absl::Status s) {
  s.SetPayload(kWalInUsePayload, absl::Cord("1"));
  return s;
}

// Prints the error and returns its exit code.
inline int Fail(const absl::Status& s) {
  std::cerr << "kspoolctl: " << s.message() << "\n";
  return s.GetPayload(kWalInUsePayload).has_value() ? kExitWalInUse : kExitError;
}

}  // namespace kspool::ctl
