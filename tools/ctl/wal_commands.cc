// `wal stats|list|show|dump DIR`: what a WAL holds, read-only.
#include <iostream>

#include "tools/ctl/commands.h"
#include "tools/ctl/entry_view.h"
#include "tools/ctl/exit_codes.h"
#include "tools/ctl/wal_access.h"

namespace kspool::ctl {
namespace {

Json CountsJson(const wal::Counts& c) { return {{"count", c.count}, {"bytes", c.bytes}}; }

std::string CountsText(const wal::Counts& c) {
  return std::to_string(c.count) + " (" + std::to_string(c.bytes) + " bytes)";
}

// "seq 4, received <time> (age 3m05s)", for the oldest and newest entries.
std::string EndText(const std::optional<wal::Entry>& e, int64_t now_ms) {
  if (!e) return "-";
  std::string s = "seq " + std::to_string(e->seq);
  if (!e->status.ok()) return s + " (corrupt: " + e->status.ToString() + ")";
  const int64_t t = e->record.receive_time_ms;
  return s + ", received " + FormatTime(t) + " (age " + FormatAge(now_ms - t) + ")";
}

Json EndJson(const std::optional<wal::Entry>& e) {
  if (!e) return nullptr;
  Json j = {{"seq", e->seq}, {"corrupt", !e->status.ok()}};
  if (e->status.ok()) j["receive_time_ms"] = e->record.receive_time_ms;
  return j;
}

// Reads one live entry; NOT_FOUND with a hint when `seq` is not in the log.
absl::StatusOr<wal::Entry> ReadEntry(wal::Inspection& wal, const std::string& dir, uint64_t seq) {
  std::vector<wal::Entry> page;
  if (absl::Status s = wal.Scan(seq, 1, 1, &page); !s.ok()) return s;
  if (!page.empty() && page[0].seq == seq) return std::move(page[0]);
  std::vector<wal::DeadLetter> dead;
  if (absl::Status s = wal.ScanDeadLetters(seq, 1, &dead); !s.ok()) return s;
  if (!dead.empty() && dead[0].seq == seq) {
    return absl::NotFoundError("sequence " + std::to_string(seq) +
                               " is not in the log but in the dead letters: kspoolctl dead show " +
                               dir + " " + std::to_string(seq));
  }
  return absl::NotFoundError("sequence " + std::to_string(seq) +
                             " is not in the log (delivered, discarded and purged, or never "
                             "assigned; the next sequence number is " +
                             std::to_string(wal.GetStats().next_seq) + ")");
}

}  // namespace

int WalStats(const std::string& dir, const Output& out) {
  absl::StatusOr<std::unique_ptr<wal::Wal>> opened = OpenForReading(dir);
  if (!opened.ok()) return Fail(opened.status());
  wal::Inspection& wal = **opened;
  const wal::Stats stats = wal.GetStats();
  const wal::CommitPoints points = wal.SavedCommitPoints();
  std::optional<wal::Entry> oldest;
  if (stats.oldest_seq) {
    absl::StatusOr<wal::Entry> e = ReadEntry(wal, dir, *stats.oldest_seq);
    if (!e.ok()) return Fail(e.status());
    oldest = std::move(e).value();
  }
  absl::StatusOr<std::optional<wal::Entry>> newest = wal.Newest();
  if (!newest.ok()) return Fail(newest.status());
  absl::StatusOr<std::vector<wal::Watermark>> watermarks = (**opened).Watermarks();
  if (!watermarks.ok()) return Fail(watermarks.status());
  wal::Counts dead;
  std::map<std::string, wal::Counts> dead_by_reason;
  absl::Status s = ForEachDeadLetter(wal, 0, {"counting dead letters"}, [&](const wal::DeadLetter& d) {
    for (wal::Counts* c : {&dead, &dead_by_reason[d.reason]}) {
      c->count += 1;
      c->bytes += d.raw.size();
    }
    return true;
  });
  if (!s.ok()) return Fail(s);
  const int64_t now = NowMillis();

  if (out.json) {
    Json j = {{"dir", dir},
                        {"agent_id", stats.agent_id},
                        {"entries", stats.entries},
                        {"bytes", stats.bytes},
                        {"next_seq", stats.next_seq},
                        {"oldest", EndJson(oldest)},
                        {"newest", EndJson(*newest)},
                        {"commit_point_ms", points.global_ms},
                        {"dead_letters", CountsJson(dead)}};
    j["dead_letters"]["by_reason"] = Json::object();
    for (const auto& [reason, c] : dead_by_reason) j["dead_letters"]["by_reason"][reason] = CountsJson(c);
    j["topics"] = Json::object();
    for (const auto& [topic, t] : stats.topics) {
      Json jt = {{"pending", CountsJson(t.pending())},
                           {"accepted", CountsJson(t.accepted)},
                           {"delivered", CountsJson(t.delivered)},
                           {"discarded", Json::object()}};
      for (const auto& [reason, c] : t.discarded) jt["discarded"][reason] = CountsJson(c);
      auto p = points.topics_ms.find(topic);
      jt["commit_point_ms"] = p == points.topics_ms.end() ? Json() : Json(p->second);
      j["topics"][topic] = std::move(jt);
    }
    j["watermarks"] = Json::array();
    for (const wal::Watermark& w : *watermarks) {
      j["watermarks"].push_back({{"topic", w.topic}, {"partition", w.partition}, {"offset", w.offset}});
    }
    std::cout << JsonLine(j) << "\n";
    return kExitOk;
  }
  std::cout << "WAL            " << dir << "\n"
            << "agent id       " << stats.agent_id << "\n"
            << "entries        " << CountsText({stats.entries, stats.bytes}) << "\n"
            << "oldest         " << EndText(oldest, now) << "\n"
            << "newest         " << EndText(*newest, now) << "\n"
            << "next sequence  " << stats.next_seq << "\n"
            << "commit point   " << FormatTime(points.global_ms) << "\n"
            << "dead letters   " << CountsText(dead) << "\n";
  if (stats.topics.empty()) return kExitOk;  // a watermark's topic has counters
  Table topics({"TOPIC", ">PENDING", ">BYTES", ">ACCEPTED", ">DELIVERED", ">DISCARDED", "COMMIT POINT"});
  Table discards({"TOPIC", "REASON", ">COUNT", ">BYTES"});
  for (const auto& [topic, t] : stats.topics) {
    uint64_t discarded = 0;
    for (const auto& [reason, c] : t.discarded) {
      discarded += c.count;
      discards.Add({topic, reason, std::to_string(c.count), std::to_string(c.bytes)});
    }
    auto p = points.topics_ms.find(topic);
    topics.Add({topic, std::to_string(t.pending().count), std::to_string(t.pending().bytes),
                std::to_string(t.accepted.count), std::to_string(t.delivered.count),
                std::to_string(discarded), p == points.topics_ms.end() ? "-" : FormatTime(p->second)});
  }
  std::cout << "\n";
  topics.Print(std::cout);
  if (!discards.empty()) {
    std::cout << "\ndiscarded, by reason (all time)\n";
    discards.Print(std::cout);
  }
  if (!watermarks->empty()) {
    Table marks({"TOPIC", ">PARTITION", ">WATERMARK"});
    for (const wal::Watermark& w : *watermarks) {
      marks.Add({w.topic, std::to_string(w.partition), std::to_string(w.offset)});
    }
    std::cout << "\nsettled watermarks (highest offset delivered and settled)\n";
    marks.Print(std::cout);
  }
  return kExitOk;
}

int WalList(const std::string& dir, const EntryFilter& filter, const Output& out) {
  absl::StatusOr<std::unique_ptr<wal::Wal>> opened = OpenForReading(dir);
  if (!opened.ok()) return Fail(opened.status());
  wal::Inspection& wal = **opened;
  if (!out.json) std::cout << EntryListHeader() << "\n";
  uint64_t shown = 0;
  absl::Status s = ForEachEntry(
      wal, filter.from_seq, {"listing", wal.GetStats().entries, true}, [&](const wal::Entry& e) {
        if (filter.topic && TopicOf(e) != *filter.topic) return true;
        if (out.json) {
          std::cout << JsonLine(EntryJson(e, out.value_format, /*full=*/false)) << "\n";
        } else {
          std::cout << EntryListLine(e) << "\n";
        }
        return filter.limit == 0 || ++shown < filter.limit;
      });
  std::cout.flush();
  return s.ok() ? kExitOk : Fail(s);
}

int WalShow(const std::string& dir, uint64_t seq, const Output& out) {
  absl::StatusOr<std::unique_ptr<wal::Wal>> opened = OpenForReading(dir);
  if (!opened.ok()) return Fail(opened.status());
  absl::StatusOr<wal::Entry> e = ReadEntry(**opened, dir, seq);
  if (!e.ok()) return Fail(e.status());
  if (out.json) {
    std::cout << JsonLine(EntryJson(*e, out.value_format, /*full=*/true)) << "\n";
  } else {
    PrintEntry(std::cout, *e, out.value_format);
  }
  return e->status.ok() ? kExitOk : kExitCorrupt;
}

int WalDump(const std::string& dir, const EntryFilter& filter, const Output& out) {
  absl::StatusOr<std::unique_ptr<wal::Wal>> opened = OpenForReading(dir);
  if (!opened.ok()) return Fail(opened.status());
  wal::Inspection& wal = **opened;
  uint64_t shown = 0;
  absl::Status s = ForEachEntry(
      wal, filter.from_seq, {"dumping", wal.GetStats().entries, true}, [&](const wal::Entry& e) {
        if (filter.topic && TopicOf(e) != *filter.topic) return true;
        std::cout << JsonLine(EntryJson(e, out.value_format, /*full=*/true)) << "\n";
        return filter.limit == 0 || ++shown < filter.limit;
      });
  std::cout.flush();
  return s.ok() ? kExitOk : Fail(s);
}

}  // namespace kspool::ctl
