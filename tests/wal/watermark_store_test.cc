// WatermarkStore (watermark_store.h) against a real database: memory holds the tracked
// topics' maxima only, a forgotten topic's stay on disk, and a settle of a topic memory
// does not hold reads them first, so a watermark never decreases.
#include "wal/watermark_store.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"
#include "wal/info_log.h"

namespace kspool::wal {
namespace {

class WatermarkStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<OpenDb>> db =
        OpenDb::Open(dir_.path(), nullptr, NewInfoLog(nullptr));
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = std::move(db).value();
  }

  static Outcome Delivered(const std::string& topic, int32_t partition, int64_t offset) {
    Outcome o;
    o.state = Outcome::State::kDelivered;
    o.topic = topic;
    o.partition = partition;
    o.offset = offset;
    return o;
  }

  // One settle's share: plans, writes the batch, applies; the keys it wrote.
  size_t Settle(const std::vector<Outcome>& outcomes) {
    rocksdb::WriteBatch wb;
    const WatermarkStore::Raised raised = store_.Plan(outcomes, *db_, &wb);
    EXPECT_TRUE(db_->db->Write(rocksdb::WriteOptions(), &wb).ok());
    store_.Apply(raised);
    return raised.size();
  }

  std::vector<Watermark> Stored(const std::string& topic) {
    absl::StatusOr<std::vector<Watermark>> w = WatermarkStore::Read(*db_, &topic);
    EXPECT_TRUE(w.ok()) << w.status();
    return w.ok() ? *w : std::vector<Watermark>{};
  }

  kspool::testing::TempDir dir_;
  std::unique_ptr<OpenDb> db_;
  WatermarkStore store_;
};

TEST_F(WatermarkStoreTest, AForgottenTopicLeavesMemoryAndItsStoredMaximaStillWin) {
  ASSERT_EQ(Settle({Delivered("a", 0, 500), Delivered("a", 1, 7), Delivered("b", 0, 3)}), 3u);
  EXPECT_EQ(store_.resident_topics(), 2u);
  store_.Forget({"a"});
  EXPECT_EQ(store_.resident_topics(), 1u) << "a forgotten topic gives its memory back";
  EXPECT_EQ(Stored("a"), (std::vector<Watermark>{{"a", 0, 500}, {"a", 1, 7}}));
  // It returns: a lower offset (a late settle, a recreated topic) writes nothing; a
  // higher one raises only its own partition.
  EXPECT_EQ(Settle({Delivered("a", 0, 20)}), 0u) << "would have lowered the stored 500";
  EXPECT_EQ(Settle({Delivered("a", 1, 8)}), 1u);
  EXPECT_EQ(Stored("a"), (std::vector<Watermark>{{"a", 0, 500}, {"a", 1, 8}}));
  EXPECT_EQ(store_.resident_topics(), 2u);
}

TEST_F(WatermarkStoreTest, LoadKeepsOnlyTheTrackedTopicsInMemory) {
  ASSERT_EQ(Settle({Delivered("a", 0, 500), Delivered("b", 0, 3)}), 2u);
  absl::StatusOr<std::vector<Watermark>> all = WatermarkStore::Read(*db_, nullptr);
  ASSERT_TRUE(all.ok()) << all.status();
  WatermarkStore reopened;
  reopened.Load(*all, {"b"});
  EXPECT_EQ(reopened.resident_topics(), 1u);
  rocksdb::WriteBatch wb;
  EXPECT_TRUE(reopened.Plan({Delivered("a", 0, 499)}, *db_, &wb).empty())
      << "read from disk at its first settle: 499 is below the stored 500";
  EXPECT_EQ(wb.Count(), 0u);
  EXPECT_EQ(reopened.resident_topics(), 2u);
}

}  // namespace
}  // namespace kspool::wal
