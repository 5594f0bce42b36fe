// Editing a closed WAL directory behind kspool's back, through RocksDB itself: how tests
// make corrupt records. The column families are the WAL's (FORMAT.md).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "rocksdb/db.h"

namespace kspool::testing {

// Applies `edit` to the stored bytes of log entry `seq` in the (closed) WAL at `dir`;
// an error if the directory does not open or the entry is not there.
inline rocksdb::Status EditLogEntry(const std::string& dir, uint64_t seq,
                                    const std::function<void(std::string*)>& edit) {
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
      {"default", {}}, {"log", {}}, {"meta", {}}, {"dead", {}}};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(rocksdb::DBOptions(), dir, cfs, &handles, &db);
  if (!s.ok()) return s;
  std::string key(8, '\0');  // big-endian sequence number
  for (int i = 0; i < 8; ++i) key[i] = static_cast<char>(seq >> (8 * (7 - i)));
  std::string value;
  s = db->Get({}, handles[1], key, &value);
  if (s.ok()) {
    edit(&value);
    rocksdb::WriteOptions wo;
    wo.sync = true;
    s = db->Put(wo, handles[1], key, value);
  }
  for (auto* h : handles) db->DestroyColumnFamilyHandle(h);
  delete db;
  return s;
}

}  // namespace kspool::testing
