// Editing a closed WAL directory behind kspool's back, through RocksDB itself: how tests
// make corrupt records. The column families are the WAL's (FORMAT.md).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "rocksdb/db.h"

namespace kspool::testing {

using RawHandles = std::map<std::string, rocksdb::ColumnFamilyHandle*>;

// Opens the (closed) WAL at `dir` with every column family it has (RocksDB refuses an
// open that leaves one out) and runs `edit` on it, with the handles by name.
inline rocksdb::Status WithRawWal(const std::string& dir,
                                  const std::function<rocksdb::Status(rocksdb::DB*, RawHandles&)>& edit) {
  std::vector<std::string> names;
  rocksdb::Status s = rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), dir, &names);
  if (!s.ok()) return s;
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  for (const std::string& n : names) cfs.emplace_back(n, rocksdb::ColumnFamilyOptions());
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

// Applies `edit` to the stored bytes of log entry `seq` in the (closed) WAL at `dir`;
// an error if the directory does not open or the entry is not there.
inline rocksdb::Status EditLogEntry(const std::string& dir, uint64_t seq,
                                    const std::function<void(std::string*)>& edit) {
  return WithRawWal(dir, [&](rocksdb::DB* db, RawHandles& cf) {
    std::string key(8, '\0');  // big-endian sequence number
    for (int i = 0; i < 8; ++i) key[i] = static_cast<char>(seq >> (8 * (7 - i)));
    std::string value;
    rocksdb::Status s = db->Get({}, cf.at("log"), key, &value);
    if (!s.ok()) return s;
    edit(&value);
    rocksdb::WriteOptions wo;
    wo.sync = true;
    return db->Put(wo, cf.at("log"), key, value);
  });
}

}  // namespace kspool::testing
