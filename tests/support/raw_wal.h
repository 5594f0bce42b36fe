// Editing a closed WAL directory behind kspool's back, through RocksDB itself: how tests
// make corrupt records. The column families are the WAL's (FORMAT.md).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rocksdb/db.h"
#include "wal/settled_bits_merge.h"

namespace kspool::testing {

using RawHandles = std::map<std::string, rocksdb::ColumnFamilyHandle*>;

using RawOptions = std::function<void(const std::string& cf, rocksdb::ColumnFamilyOptions*)>;

// Opens the (closed) WAL at `dir` with every column family it has (RocksDB refuses an
// open that leaves one out) and runs `edit` on it, with the handles by name; `options`,
// when given, sets a column family's options for this open.
inline rocksdb::Status WithRawWal(
    const std::string& dir, const std::function<rocksdb::Status(rocksdb::DB*, RawHandles&)>& edit,
    const RawOptions& options = nullptr) {
  std::vector<std::string> names;
  rocksdb::Status s = rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), dir, &names);
  if (!s.ok()) return s;
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  for (const std::string& n : names) {
    rocksdb::ColumnFamilyOptions o;
    if (n == "meta") o.merge_operator = wal::SettledBitsMerge();  // settled_in/ operands
    if (options) options(n, &o);
    cfs.emplace_back(n, o);
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  s = rocksdb::DB::Open(rocksdb::DBOptions(), dir, cfs, &handles, &db);
  if (!s.ok()) return s;
  RawHandles by_name;
  for (size_t i = 0; i < names.size(); ++i) by_name[names[i]] = handles[i];
  s = edit(db, by_name);
  for (auto* h : handles) db->DestroyColumnFamilyHandle(h);
  delete db;
  return s;
}

// Applies `edit` to the stored bytes of the log record holding entry `seq` in the
// (closed) WAL at `dir`: a version-1 record (its key the 8-byte sequence number) or a
// batch record (its key the last number it holds and its count, so the first key at or
// after `seq` is the one that holds it); an error if the directory does not open or no
// record holds `seq`. `*key_size`, when given, is set to the key's length (8 or 12), and
// `*first`, `*last` to the first and last entries the record holds.
inline rocksdb::Status EditLogEntry(const std::string& dir, uint64_t seq,
                                    const std::function<void(std::string*)>& edit,
                                    size_t* key_size = nullptr, uint64_t* first = nullptr,
                                    uint64_t* last_seq = nullptr) {
  return WithRawWal(dir, [&](rocksdb::DB* db, RawHandles& cf) {
    std::string target(8, '\0');  // big-endian sequence number
    for (int i = 0; i < 8; ++i) target[i] = static_cast<char>(seq >> (8 * (7 - i)));
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator({}, cf.at("log")));
    it->Seek(target);
    if (!it->status().ok()) return it->status();
    if (!it->Valid()) return rocksdb::Status::NotFound("no log record at or after the entry");
    const std::string key = it->key().ToString();
    uint64_t last = 0, count = 1;
    for (int i = 0; i < 8; ++i) last = (last << 8) | static_cast<uint8_t>(key[i]);
    if (key.size() == 12) {
      count = 0;
      for (int i = 8; i < 12; ++i) count = (count << 8) | static_cast<uint8_t>(key[i]);
    }
    if (key.size() != 8 && key.size() != 12) return rocksdb::Status::Corruption("odd log key");
    if (seq + count <= last) return rocksdb::Status::NotFound("no log record holds the entry");
    std::string value = it->value().ToString();
    it.reset();
    edit(&value);
    if (key_size) *key_size = key.size();
    if (first) *first = last + 1 - count;
    if (last_seq) *last_seq = last;
    rocksdb::WriteOptions wo;
    wo.sync = true;
    return db->Put(wo, cf.at("log"), key, value);
  });
}

// Rewrites the (closed) WAL's log into table files of about `table_bytes` each, in one
// level below level 0, so that a scan steps from one table file to the next inside a
// level; `*files` is how many that level then holds.
inline rocksdb::Status SpreadLogOverTables(const std::string& dir, uint64_t table_bytes,
                                           uint64_t* files) {
  return WithRawWal(
      dir,
      [&](rocksdb::DB* db, RawHandles& cf) {
        rocksdb::CompactRangeOptions o;
        o.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
        rocksdb::Status s = db->CompactRange(o, cf.at("log"), nullptr, nullptr);
        if (!s.ok()) return s;
        *files = 0;
        for (int level = 1; level < 7 && *files == 0; ++level) {
          std::string n;
          if (db->GetProperty(cf.at("log"), "rocksdb.num-files-at-level" + std::to_string(level),
                              &n)) {
            *files = std::stoull(n);
          }
        }
        return s;
      },
      [&](const std::string& name, rocksdb::ColumnFamilyOptions* o) {
        if (name == "log") o->target_file_size_base = table_bytes;
      });
}

}  // namespace kspool::testing
