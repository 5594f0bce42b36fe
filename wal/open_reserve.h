// WalReserve: room set aside on the WAL's volume so that the WAL can always be opened.
//
// RocksDB cannot open a database on a full volume: it flushes what its log files hold
// into a table file and writes a new MANIFEST, OPTIONS file and log, and the open fails
// (or, worse, asserts) without room for them. So the WAL directory holds a preallocated
// file, KSPOOL_RESERVE (Options::reserve_bytes). Before each open (Open, Reopen),
// BeforeOpen() deletes it when the volume is full: when its free space is less than an
// open needs (the log files' bytes plus a margin for the rest), or when the WAL has just
// run out of space (a write failed with ENOSPC: the free space seen after it, what
// RocksDB had preallocated for its log, is not room for new messages). While the
// reserve is missing the WAL refuses appends (UNAVAILABLE, reason "no_reserve"): what
// room is left goes to settling and draining, which free space, not to new messages.
// Restore() (called periodically) makes it again once the volume has twice its size
// free: the reserve, and as much again for new messages. (With a quarter more instead,
// a restart after an ENOSPC made it again at once, and Sends went straight back into
// the full volume.)
//
// A first start (no WAL in the directory yet) on a volume without room for the reserve
// and an open is refused: it could never be opened again once full.
//
// All file-system calls go through ReserveFileSystem, so tests can fake free space and
// failing preallocations. Thread safety: every method may be called from any thread
// (one internal lock for the changes; missing() reads an atomic). Errors: UNAVAILABLE for the file system's failures,
// RESOURCE_EXHAUSTED for a first start without room.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"

namespace kspool::wal {

inline constexpr char kReserveFileName[] = "KSPOOL_RESERVE";
// The bounds of --wal-reserve-bytes (ResolveReserveBytes).
inline constexpr uint64_t kMinReserveBytes = 4ull << 20;
inline constexpr uint64_t kMaxAutoReserveBytes = 256ull << 20;
// What an open writes besides the table file of the replayed logs: MANIFEST, OPTIONS,
// the new log's first blocks.
inline constexpr uint64_t kOpenMarginBytes = 2ull << 20;

struct VolumeSpace {
  uint64_t free_bytes = 0;   // available to an unprivileged user (statvfs f_bavail)
  uint64_t total_bytes = 0;  // the volume's size
};

// The file-system calls of the reserve: the real ones (PosixReserveFileSystem), or a
// test's fake.
class ReserveFileSystem {
 public:
  virtual ~ReserveFileSystem() = default;
  // The volume holding `path`, or its nearest existing ancestor.
  virtual absl::StatusOr<VolumeSpace> Space(const std::string& path) = 0;
  // Where that volume is mounted (for messages); `path` itself when unknown.
  virtual std::string MountPoint(const std::string& path) = 0;
  // The size of the file `path`; nullopt when there is none.
  virtual std::optional<uint64_t> FileSize(const std::string& path) = 0;
  // The summed sizes of the files in `dir` whose names end in `suffix` (0: none, or no
  // such directory).
  virtual uint64_t FilesBytes(const std::string& dir, std::string_view suffix) = 0;
  // Creates `path` with `bytes` allocated on the volume (not sparse), durable; on
  // failure leaves no file.
  virtual absl::Status Allocate(const std::string& path, uint64_t bytes) = 0;
  virtual absl::Status Remove(const std::string& path) = 0;
};

// The real file system (statvfs, fallocate).
std::shared_ptr<ReserveFileSystem> PosixReserveFileSystem();

// The size of the reserve for --wal-reserve-bytes `configured` on a volume of
// `volume_bytes`: 0 is automatic, an eighth of the volume, at least kMinReserveBytes and
// at most kMaxAutoReserveBytes. INVALID_ARGUMENT naming the flag when the result is below
// kMinReserveBytes or above a quarter of the volume.
absl::StatusOr<uint64_t> ResolveReserveBytes(uint64_t configured, uint64_t volume_bytes);
// The same for the volume that holds (or will hold) `dir`, by the real file system.
absl::StatusOr<uint64_t> ResolveReserveBytesFor(const std::string& dir, uint64_t configured);

class WalReserve {
 public:
  // `bytes` > 0; `fs` null: the real file system.
  WalReserve(std::string dir, uint64_t bytes, std::shared_ptr<ReserveFileSystem> fs);

  // Before RocksDB opens the directory (it exists). Keeps the reserve while the volume
  // has room for an open and `ran_out_of_space` is false (no write failed with ENOSPC
  // since the last open), else deletes it; makes a missing one as Restore() does.
  // `first_start`: no WAL in the directory yet; then the reserve is made if the volume
  // has room for it and an open, else RESOURCE_EXHAUSTED naming the volume.
  absl::Status BeforeOpen(bool first_start, bool ran_out_of_space = false);
  // Makes a missing reserve once the volume has 2 x bytes() free. True when it was made
  // by this call.
  bool Restore();

  bool missing() const;
  uint64_t bytes() const { return bytes_; }
  const std::string& path() const { return path_; }
  // The refusal of an append while the reserve is missing.
  absl::Status RefusalStatus() const;

 private:
  // Allocates the reserve if the volume has `bytes_ + extra` free. Under mu_.
  bool MakeIfRoom(uint64_t free_bytes, uint64_t extra) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string dir_;
  const std::string path_;
  const uint64_t bytes_;
  const std::shared_ptr<ReserveFileSystem> fs_;
  // Serializes BeforeOpen() and Restore() (which may preallocate for a while); missing_
  // is read without it, so an append or GetStats() never waits for a preallocation.
  Mutex mu_;
  std::atomic<bool> missing_{true};
};

}  // namespace kspool::wal
