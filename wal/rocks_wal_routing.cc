// RocksWal: the routing bounds of the drain (routing_bounds.h), one meta key per topic,
// `routing/<topic>` (FORMAT.md). Saved only when the partition count the drain routes a
// topic with changes, so a synced write of its own costs nothing in the steady state.
#include "wal/keys.h"
#include "wal/rocks_status.h"
#include "wal/rocks_wal.h"

namespace kspool::wal {

absl::StatusOr<std::vector<RoutingBound>> RocksWal::RoutingBounds(const std::string& topic) {
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  const std::string key = keys::Routing(topic);
  std::string v;
  rocksdb::Status s = db_->db->Get(rocksdb::ReadOptions(), db_->meta, key, &v);
  if (s.IsNotFound()) return std::vector<RoutingBound>{};
  RETURN_IF_ERROR(FromRocks(s, "WAL " + options_.dir + ": read " + key));
  return DecodeRoutingBounds(key, v);
}

absl::StatusOr<std::vector<RoutingBound>> RocksWal::SaveRoutingBound(const std::string& topic,
                                                                     RoutingBound bound) {
  MutexLock settle(&settle_mu_);  // serializes with ForgetIdleTopics, which deletes the key
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  uint64_t head;
  {
    MutexLock l(&mu_);
    if (!write_error_.ok()) return write_error_;
    head = ledger_.head();
  }
  const std::string key = keys::Routing(topic);
  std::string v;
  rocksdb::Status s = db_->db->Get(rocksdb::ReadOptions(), db_->meta, key, &v);
  std::vector<RoutingBound> bounds;
  if (!s.IsNotFound()) {
    RETURN_IF_ERROR(FromRocks(s, "WAL " + options_.dir + ": read " + key));
    absl::StatusOr<std::vector<RoutingBound>> saved = DecodeRoutingBounds(key, v);
    // A value that does not parse says nothing: replaced by a pair that claims no more
    // than "any count" for what came before it.
    if (saved.ok()) bounds = std::move(saved).value();
  }
  AddRoutingBound(&bounds, bound, head);
  rocksdb::WriteBatch wb;
  wb.Put(db_->meta, key, EncodeRoutingBounds(bounds));
  s = SyncedWrite(&wb);
  if (!s.ok()) {
    RecordWriteError(s, "routing bound write");
    return FromRocks(s, "save the routing bound of topic " + topic);
  }
  return bounds;
}

}  // namespace kspool::wal
