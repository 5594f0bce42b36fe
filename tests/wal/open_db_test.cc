// The log column family's compression by level (open_db.cc): what a flush or the first
// compaction writes is read soon and deleted, so it is stored as is; what a backlog pushes
// to level 2 and below is compressed. Read back from the table files' own properties.
#include "wal/open_db.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "rocksdb/table_properties.h"
#include "tests/support/temp_dir.h"
#include "wal/info_log.h"

namespace kspool::wal {
namespace {

class OpenDbLog : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<OpenDb>> db =
        OpenDb::Open(dir_.path(), nullptr, NewInfoLog(nullptr));
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = std::move(db).value();
    // Text that LZ4 shrinks several times over, as log lines do.
    const std::string value(4096, 'x');
    for (int i = 0; i < 256; ++i) {
      char key[16];
      snprintf(key, sizeof(key), "%08d", i);
      ASSERT_TRUE(db_->db->Put(rocksdb::WriteOptions(), db_->log, key, value).ok());
    }
    ASSERT_TRUE(db_->db->Flush(rocksdb::FlushOptions(), db_->log).ok());
  }

  // The compression of each of the log's table files, by level.
  std::map<int, std::set<std::string>> CompressionByLevel() {
    rocksdb::ColumnFamilyMetaData meta;
    db_->db->GetColumnFamilyMetaData(db_->log, &meta);
    rocksdb::TablePropertiesCollection props;
    EXPECT_TRUE(db_->db->GetPropertiesOfAllTables(db_->log, &props).ok());
    std::map<int, std::set<std::string>> out;
    for (const auto& level : meta.levels) {
      for (const auto& file : level.files) {
        auto p = props.find(file.db_path + file.name);
        EXPECT_NE(p, props.end()) << file.db_path + file.name;
        if (p != props.end()) out[level.level].insert(p->second->compression_name);
      }
    }
    return out;
  }

  kspool::testing::TempDir dir_;
  std::unique_ptr<OpenDb> db_;
};

TEST_F(OpenDbLog, FlushedTablesAreNotCompressed) {
  const auto by_level = CompressionByLevel();
  ASSERT_EQ(by_level.count(0), 1u) << "the flush wrote no level-0 table";
  EXPECT_EQ(by_level.at(0), std::set<std::string>{"NoCompression"});
}

TEST_F(OpenDbLog, ABacklogMovedBelowLevelOneIsCompressed) {
  const uint64_t before = kspool::testing::TableBytes(dir_.path());
  // A real compaction of the flushed tables into level 2 (not a move of the files), with
  // the compression the column family's options give that level.
  rocksdb::ColumnFamilyMetaData meta;
  db_->db->GetColumnFamilyMetaData(db_->log, &meta);
  std::vector<std::string> level0;
  for (const auto& f : meta.levels[0].files) level0.push_back(f.name);
  ASSERT_FALSE(level0.empty());
  rocksdb::CompactionOptions by_options;
  by_options.compression = rocksdb::kDisableCompressionOption;
  ASSERT_TRUE(db_->db->CompactFiles(by_options, db_->log, level0, /*output_level=*/2).ok());
  const auto by_level = CompressionByLevel();
  ASSERT_EQ(by_level.count(2), 1u) << "the compaction wrote no level-2 table";
  EXPECT_EQ(by_level.at(2), std::set<std::string>{"LZ4"});
  EXPECT_LT(kspool::testing::TableBytes(dir_.path()), before / 4);
}

}  // namespace
}  // namespace kspool::wal
