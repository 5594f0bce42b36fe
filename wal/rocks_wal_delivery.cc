// RocksWal: DeliveryQueries and Maintenance::TrimDeliveries, by its DeliveryIndex
// (delivery_index.h), and SettledWatermarks, by its WatermarkStore (watermark_store.h),
// under the locks that keep the database open and its writers serialized.
#include "wal/rocks_status.h"
#include "wal/rocks_wal.h"

namespace kspool::wal {

absl::StatusOr<DeliveryTally> RocksWal::DeliveryTallyOf(const std::string& topic,
                                                        int32_t partition) {
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  // From disk, not from the settler's memory: a reader never waits for a settle.
  return TallyStore::Read(topic, partition, *db_);
}

absl::Status RocksWal::LookupDeliveries(const std::vector<uint64_t>& seqs,
                                        std::vector<Outcome>* out) {
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  // Read before the index's snapshot: whatever settles or commits after is in it or
  // not visible at all (delivery_index_read.cc).
  const auto [head, next] = live_range();
  return delivery_index_.Lookup(*db_, head, next, seqs, out);
}

absl::Status RocksWal::ScanDeliveries(uint64_t from_seq, size_t max_entries,
                                      std::vector<Outcome>* out, uint64_t* next) {
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  const uint64_t head = live_range().head;
  return delivery_index_.Scan(*db_, head, from_seq, max_entries, out, next);
}

absl::StatusOr<DeliveryTrim> RocksWal::TrimDeliveries() {
  if (!delivery_index_.has_limits()) return DeliveryTrim();
  MutexLock settle(&settle_mu_);  // the only writers of `delivery` and its totals hold it
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  {
    MutexLock l(&mu_);
    if (!write_error_.ok()) return write_error_;
  }
  rocksdb::WriteBatch wb;
  // settle_mu_ holds off the settles, so the head stays where it is read until the trim
  // is written.
  const uint64_t head = live_range().head;
  ASSIGN_OR_RETURN(DeliveryIndex::Trim trim, delivery_index_.PlanTrim(*db_, head, &wb));
  if (wb.Count() == 0) return trim.removed;
  // Not synced: if the write is lost, the runs are back with the totals and floor as before.
  rocksdb::Status s = db_->db->Write(rocksdb::WriteOptions(), &wb);
  if (!s.ok()) {
    RecordWriteError(s, "delivery index trim");
    return FromRocks(s, "trim the delivery index");
  }
  delivery_index_.SetTotals(trim.totals);
  delivery_index_.NoteTrimmed(trim);
  return trim.removed;
}

absl::StatusOr<std::vector<Watermark>> RocksWal::Watermarks() {
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  return WatermarkStore::Read(*db_, nullptr);
}

absl::StatusOr<std::vector<Watermark>> RocksWal::WatermarksOf(std::string_view topic) {
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  const std::string name(topic);
  return WatermarkStore::Read(*db_, &name);
}

}  // namespace kspool::wal
