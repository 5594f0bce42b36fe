// `wal verify DIR`: reads every record and dead letter and checks what the WAL promises
// (FORMAT.md): each record passes its checksum and version check, sequence numbers
// strictly increase and stay below next_seq, receive times never decrease, and the
// persisted counters agree with the log (pending = accepted - delivered - discarded), and
// the bitmaps of part-settled records each have their record, its length, and add up to
// the held counters.
#include <iostream>
#include <set>

#include "tools/ctl/commands.h"
#include "tools/ctl/entry_view.h"
#include "tools/ctl/exit_codes.h"
#include "tools/ctl/wal_access.h"

namespace kspool::ctl {
namespace {

// Problems of one kind; keeps the first kMaxKept, counts all.
struct Findings {
  static constexpr size_t kMaxKept = 1000;
  std::vector<std::string> kept;
  uint64_t count = 0;
  void Add(std::string what) {
    if (kept.size() < kMaxKept) kept.push_back(std::move(what));
    ++count;
  }
};

struct Verification {
  uint64_t entries = 0, bytes = 0, dead_letters = 0;
  std::optional<uint64_t> first_seq, last_seq;
  Findings corrupt, order, ledger, dead, bitmaps;
  uint64_t bitmap_count = 0;
  std::vector<Json> corrupt_json;
  uint64_t problems() const {
    return corrupt.count + order.count + ledger.count + dead.count + bitmaps.count;
  }
};

void CheckLedger(const wal::Stats& stats, const std::map<std::string, wal::Counts>& live,
                 const wal::Counts& unknown_topic, Findings* out) {
  std::set<std::string> topics;
  for (const auto& [t, c] : stats.topics) topics.insert(t);
  for (const auto& [t, c] : live) topics.insert(t);
  wal::Counts want_total, have_total;
  for (const std::string& t : topics) {
    auto s = stats.topics.find(t);
    const wal::Counts want = s == stats.topics.end() ? wal::Counts{} : s->second.pending();
    auto l = live.find(t);
    const wal::Counts have = l == live.end() ? wal::Counts{} : l->second;
    want_total = {want_total.count + want.count, want_total.bytes + want.bytes};
    have_total = {have_total.count + have.count, have_total.bytes + have.bytes};
    // With corrupt records of unknown topic, only the totals can be compared.
    if (unknown_topic.count == 0 && (want.count != have.count || want.bytes != have.bytes)) {
      out->Add("topic " + t + ": the counters say " + std::to_string(want.count) + " entries (" +
               std::to_string(want.bytes) + " bytes) pending, the log holds " +
               std::to_string(have.count) + " (" + std::to_string(have.bytes) + " bytes)");
    }
  }
  have_total = {have_total.count + unknown_topic.count, have_total.bytes + unknown_topic.bytes};
  if (unknown_topic.count > 0 &&
      (want_total.count != have_total.count || want_total.bytes != have_total.bytes)) {
    out->Add("the counters say " + std::to_string(want_total.count) + " entries (" +
             std::to_string(want_total.bytes) + " bytes) pending, the log holds " +
             std::to_string(have_total.count) + " (" + std::to_string(have_total.bytes) + " bytes)");
  }
}

// The bitmaps of part-settled records (FORMAT.md, "Settling part of a record").
void CheckBitmaps(const wal::Stats& stats, const wal::BitmapCheck& b, Findings* out) {
  for (const std::string& k : b.orphans) out->Add(k + ": its record is gone (an orphan)");
  for (const std::string& k : b.bad_length) out->Add(k + ": not a bitmap of its record");
  for (const std::string& k : b.all_set) out->Add(k + ": every message settled, the record is still there");
  for (const std::string& k : b.unreadable) out->Add(k + ": its record does not verify");
  std::set<std::string> topics;
  for (const auto& [t, s] : stats.topics) topics.insert(t);
  for (const auto& [t, c] : b.held) topics.insert(t);
  for (const std::string& t : topics) {
    auto s = stats.topics.find(t);
    const wal::Counts want = s == stats.topics.end() ? wal::Counts{} : s->second.held;
    auto h = b.held.find(t);
    const wal::Counts have = h == b.held.end() ? wal::Counts{} : h->second;
    // A WAL written before the held counters existed has none (0): not a problem.
    if ((want.count == 0 && want.bytes == 0) || (want.count == have.count && want.bytes == have.bytes)) {
      continue;
    }
    out->Add("topic " + t + ": the counters say " + std::to_string(want.count) +
             " settled messages (" + std::to_string(want.bytes) +
             " bytes) held in part-settled records, the bitmaps say " +
             std::to_string(have.count) + " (" + std::to_string(have.bytes) + " bytes)");
  }
}

void PrintFindings(const std::string& label, const Findings& f) {
  for (const std::string& line : f.kept) std::cout << label << line << "\n";
  if (f.count > f.kept.size()) {
    std::cout << label << "... and " << (f.count - f.kept.size()) << " more\n";
  }
}

Json FindingsJson(const Findings& f) {
  return {{"count", f.count}, {"first", f.kept}};
}

}  // namespace

int WalVerify(const std::string& dir, const Output& out) {
  absl::StatusOr<std::unique_ptr<wal::Wal>> opened = OpenForReading(dir);
  if (!opened.ok()) return Fail(opened.status());
  wal::Inspection& wal = **opened;
  const wal::Stats stats = wal.GetStats();
  Verification v;
  std::map<std::string, wal::Counts> live;
  wal::Counts unknown_topic;
  std::optional<std::pair<uint64_t, int64_t>> last_time;  // seq, receive time
  absl::Status scan = ForEachEntry(wal, 0, {"verifying the log", stats.entries}, [&](const wal::Entry& e) {
    const std::string seq = "seq " + std::to_string(e.seq);
    if (v.last_seq && e.seq <= *v.last_seq) v.order.Add(seq + " follows seq " + std::to_string(*v.last_seq));
    if (e.seq >= stats.next_seq) {
      v.order.Add(seq + " is not below the next sequence number " + std::to_string(stats.next_seq));
    }
    if (!v.first_seq) v.first_seq = e.seq;
    v.last_seq = e.seq;
    ++v.entries;
    v.bytes += e.size;
    const std::string topic = TopicOf(e);
    wal::Counts& c = topic.empty() ? unknown_topic : live[topic];
    c.count += 1;
    c.bytes += e.size;
    if (!e.status.ok()) {
      v.corrupt.Add(seq + " (topic " + (topic.empty() ? "unknown" : topic) + "): " + e.status.ToString());
      if (v.corrupt_json.size() < Findings::kMaxKept) {
        v.corrupt_json.push_back({{"seq", e.seq}, {"topic", topic}, {"error", e.status.ToString()}});
      }
      return true;
    }
    const int64_t t = e.record.receive_time_ms;
    if (last_time && t < last_time->second) {
      v.order.Add(seq + " was received at " + FormatTime(t) + ", before seq " +
                  std::to_string(last_time->first) + " (" + FormatTime(last_time->second) + ")");
    }
    last_time = {e.seq, t};
    return true;
  });
  // Damage below the record level (a RocksDB block checksum) is corruption too.
  if (absl::IsDataLoss(scan)) v.corrupt.Add("the log cannot be read past seq " +
                                            std::to_string(v.last_seq.value_or(0)) + ": " +
                                            std::string(scan.message()));
  else if (!scan.ok()) return Fail(scan);
  if (scan.ok()) CheckLedger(stats, live, unknown_topic, &v.ledger);
  absl::StatusOr<wal::BitmapCheck> bitmaps = wal.CheckBitmaps();
  if (absl::IsDataLoss(bitmaps.status())) {
    v.bitmaps.Add("the bitmaps cannot be read: " + std::string(bitmaps.status().message()));
  } else if (!bitmaps.ok()) {
    return Fail(bitmaps.status());
  } else {
    v.bitmap_count = bitmaps->bitmaps;
    CheckBitmaps(stats, *bitmaps, &v.bitmaps);
  }

  absl::Status dead = ForEachDeadLetter(wal, 0, {"verifying the dead letters"}, [&](const wal::DeadLetter& d) {
    ++v.dead_letters;
    // A quarantined record was undecodable when it was discarded; any other must decode.
    const wal::Entry e = EntryOf(d);
    if (!e.status.ok() && d.reason != "corrupt") {
      v.dead.Add("seq " + std::to_string(d.seq) + " (" + d.reason + "): " + e.status.ToString());
    }
    return true;
  });
  if (absl::IsDataLoss(dead) || absl::IsFailedPrecondition(dead)) {
    v.dead.Add("the dead letters cannot be read past " + std::to_string(v.dead_letters) + ": " +
               std::string(dead.message()));
  } else if (!dead.ok()) {
    return Fail(dead);
  }

  const bool ok = v.problems() == 0;
  if (out.json) {
    Json j = {{"dir", dir},
                        {"ok", ok},
                        {"problems", v.problems()},
                        {"entries", v.entries},
                        {"bytes", v.bytes},
                        {"first_seq", v.first_seq ? Json(*v.first_seq) : Json()},
                        {"last_seq", v.last_seq ? Json(*v.last_seq) : Json()},
                        {"next_seq", stats.next_seq},
                        {"corrupt", v.corrupt_json},
                        {"corrupt_count", v.corrupt.count},
                        {"order", FindingsJson(v.order)},
                        {"ledger", FindingsJson(v.ledger)},
                        {"bitmaps", v.bitmap_count},
                        {"bitmap_problems", FindingsJson(v.bitmaps)},
                        {"dead_letters", v.dead_letters},
                        {"dead_letter_problems", FindingsJson(v.dead)}};
    std::cout << JsonLine(j) << "\n";
  } else {
    std::cout << "log            " << v.entries << " entries (" << v.bytes << " bytes)";
    if (v.first_seq) std::cout << ", sequence " << *v.first_seq << ".." << *v.last_seq;
    std::cout << ", next " << stats.next_seq << "\n";
    if (v.corrupt.count == 0) std::cout << "records        ok\n";
    PrintFindings("corrupt        ", v.corrupt);
    if (v.order.count == 0) std::cout << "order          ok\n";
    PrintFindings("order          ", v.order);
    if (v.ledger.count == 0 && scan.ok()) std::cout << "ledger         ok\n";
    PrintFindings("ledger         ", v.ledger);
    std::cout << "bitmaps        " << v.bitmap_count << (v.bitmaps.count == 0 ? ", ok" : "") << "\n";
    PrintFindings("bitmap         ", v.bitmaps);
    std::cout << "dead letters   " << v.dead_letters << (v.dead.count == 0 ? ", ok" : "") << "\n";
    PrintFindings("dead letter    ", v.dead);
    std::cout << "result         "
              << (ok ? std::string("ok") : "CORRUPT: " + std::to_string(v.problems()) + " problem(s)")
              << "\n";
  }
  return ok ? kExitOk : kExitCorrupt;
}

}  // namespace kspool::ctl
