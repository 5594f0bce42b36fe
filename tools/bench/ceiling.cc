#include "tools/bench/ceiling.h"

#include <chrono>
#include <filesystem>
#include <memory>

#include "rocksdb/db.h"
#include "tools/bench/cpu.h"

namespace kspool::bench {

absl::StatusOr<CeilingResult> MeasureCeiling(const std::string& dir, int batch, int size,
                                             double seconds) {
  const std::string path = dir + "/kspool-bench-ceiling";
  std::filesystem::remove_all(path);
  rocksdb::Options opts;
  opts.create_if_missing = true;
  opts.write_buffer_size = 64 << 20;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(opts, path, &raw);
  if (!s.ok()) return absl::UnavailableError("ceiling: open " + path + ": " + s.ToString());
  std::unique_ptr<rocksdb::DB> db(raw);
  rocksdb::WriteOptions wo;
  wo.sync = true;
  const std::string value(static_cast<size_t>(size), 'v');
  uint64_t seq = 0, syncs = 0;
  const double cpu_start = ProcessCpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    rocksdb::WriteBatch wb;
    for (int i = 0; i < batch; ++i) {
      char key[8];
      for (int b = 0; b < 8; ++b) key[b] = static_cast<char>(seq >> (8 * (7 - b)));
      ++seq;
      wb.Put(rocksdb::Slice(key, 8), value);
    }
    s = db->Write(wo, &wb);
    if (!s.ok()) return absl::UnavailableError("ceiling: write: " + s.ToString());
    ++syncs;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  db.reset();  // waits for its background work
  const double cpu = ProcessCpuSeconds() - cpu_start;
  std::filesystem::remove_all(path);
  return CeilingResult{seq / elapsed, syncs / elapsed, seq ? cpu / double(seq) * 1e6 : 0};
}

}  // namespace kspool::bench
