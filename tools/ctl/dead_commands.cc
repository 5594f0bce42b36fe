// `dead list|show|replay|purge DIR`: the dead letters, i.e. discarded messages kept with
// their reason. Replay and purge write; they open the WAL only while no agent holds it.
#include <iostream>
#include <set>

#include "tools/ctl/commands.h"
#include "tools/ctl/entry_view.h"
#include "tools/ctl/exit_codes.h"
#include "tools/ctl/wal_access.h"

namespace kspool::ctl {
namespace {

// Replay and purge go in bounded atomic batches; each is a whole number of dead letters.
constexpr size_t kBatch = 1000;

bool Matches(const DeadSelection& sel, const std::set<uint64_t>& seqs, const wal::DeadLetter& d) {
  if (!seqs.empty() && !seqs.count(d.seq)) return false;
  if (sel.reason && d.reason != *sel.reason) return false;
  return !sel.topic || TopicOf(EntryOf(d)) == *sel.topic;
}

struct Selected {
  std::vector<uint64_t> seqs;
  std::vector<uint64_t> undecodable;  // selected by a filter, but cannot be replayed
};

// The dead letters `sel` chooses. NOT_FOUND if a --seq names no dead letter.
absl::StatusOr<Selected> Select(wal::Inspection& wal, const DeadSelection& sel,
                                bool decodable_only) {
  const std::set<uint64_t> seqs(sel.seqs.begin(), sel.seqs.end());
  std::set<uint64_t> missing = seqs;
  Selected out;
  absl::Status s = ForEachDeadLetter(wal, sel.from_seq, {"selecting dead letters"}, [&](const wal::DeadLetter& d) {
    missing.erase(d.seq);
    if (!Matches(sel, seqs, d)) return true;
    // Named explicitly, an undecodable one goes through, and the WAL refuses it clearly.
    if (decodable_only && !seqs.count(d.seq) && !EntryOf(d).status.ok()) {
      out.undecodable.push_back(d.seq);
    } else {
      out.seqs.push_back(d.seq);
    }
    return true;
  });
  if (!s.ok()) return s;
  if (!missing.empty()) {
    std::string list;
    for (uint64_t m : missing) list += (list.empty() ? "" : ", ") + std::to_string(m);
    return absl::NotFoundError("no dead letter with sequence number " + list);
  }
  return out;
}

int Unchosen(const char* verb) {
  std::cerr << "kspoolctl: choose the dead letters to " << verb
            << " with --seq, --topic, --reason, or --all\n";
  return kExitUsage;
}

}  // namespace

int DeadList(const std::string& dir, const DeadSelection& sel, const Output& out) {
  absl::StatusOr<std::unique_ptr<wal::Wal>> opened = OpenForReading(dir);
  if (!opened.ok()) return Fail(opened.status());
  const std::set<uint64_t> seqs(sel.seqs.begin(), sel.seqs.end());
  if (!out.json) std::cout << DeadListHeader() << "\n";
  uint64_t shown = 0;
  absl::Status s = ForEachDeadLetter(**opened, sel.from_seq, {"listing dead letters", 0, true},
                                     [&](const wal::DeadLetter& d) {
    if (!Matches(sel, seqs, d)) return true;
    if (out.json) {
      std::cout << JsonLine(DeadLetterJson(d, out.value_format, /*full=*/false)) << "\n";
    } else {
      std::cout << DeadListLine(d) << "\n";
    }
    return sel.limit == 0 || ++shown < sel.limit;
  });
  std::cout.flush();
  return s.ok() ? kExitOk : Fail(s);
}

int DeadShow(const std::string& dir, uint64_t seq, const Output& out) {
  absl::StatusOr<std::unique_ptr<wal::Wal>> opened = OpenForReading(dir);
  if (!opened.ok()) return Fail(opened.status());
  std::vector<wal::DeadLetter> found;
  if (absl::Status s = (*opened)->ScanDeadLetters(seq, 1, &found); !s.ok()) return Fail(s);
  if (found.empty() || found[0].seq != seq) {
    return Fail(absl::NotFoundError("no dead letter with sequence number " + std::to_string(seq)));
  }
  if (out.json) {
    std::cout << JsonLine(DeadLetterJson(found[0], out.value_format, /*full=*/true)) << "\n";
  } else {
    PrintDeadLetter(std::cout, found[0], out.value_format);
  }
  return kExitOk;
}

int DeadReplay(const std::string& dir, const DeadSelection& sel, const Output& out) {
  if (!sel.chosen()) return Unchosen("replay");
  absl::StatusOr<std::unique_ptr<wal::Wal>> opened = OpenForWriting(dir);
  if (!opened.ok()) return Fail(opened.status());
  wal::Wal& wal = **opened;
  absl::StatusOr<Selected> selected = Select(wal, sel, /*decodable_only=*/true);
  if (!selected.ok()) return Fail(selected.status());
  for (uint64_t seq : selected->undecodable) {
    std::cerr << "kspoolctl: skipping dead letter " << seq
              << ": it holds no decodable record, so it cannot be replayed (only purged)\n";
  }
  std::vector<wal::ReplayedEntry> replayed;
  absl::Status status;
  for (size_t i = 0; i < selected->seqs.size() && status.ok(); i += kBatch) {
    std::vector<uint64_t> batch(selected->seqs.begin() + i,
                                selected->seqs.begin() + std::min(i + kBatch, selected->seqs.size()));
    absl::StatusOr<std::vector<wal::ReplayedEntry>> r = wal.ReplayDeadLetters(batch);
    if (r.ok()) replayed.insert(replayed.end(), r->begin(), r->end());
    else status = r.status();
  }
  if (out.json) {
    Json j = {{"count", replayed.size()}, {"replayed", Json::array()},
                        {"skipped_undecodable", selected->undecodable}};
    for (const wal::ReplayedEntry& r : replayed) {
      j["replayed"].push_back({{"dead_seq", r.dead_seq}, {"seq", r.seq}, {"topic", r.topic},
                               {"receive_time_ms", r.receive_time_ms}});
    }
    std::cout << JsonLine(j) << "\n";
  } else {
    for (const wal::ReplayedEntry& r : replayed) {
      std::cout << "dead letter " << r.dead_seq << " -> seq " << r.seq << " (topic " << r.topic << ")\n";
    }
    if (replayed.empty() && status.ok()) {
      std::cout << "no dead letters match; nothing replayed\n";
    } else {
      std::cout << "replayed " << replayed.size()
                << " dead letter(s) into the log; the next agent on this WAL delivers them\n";
    }
  }
  return status.ok() ? kExitOk : Fail(status);
}

int DeadPurge(const std::string& dir, const DeadSelection& sel, bool confirmed, const Output& out) {
  if (!sel.chosen()) return Unchosen("purge");
  absl::StatusOr<std::unique_ptr<wal::Wal>> opened =
      confirmed ? OpenForWriting(dir) : OpenForReading(dir);
  if (!opened.ok()) return Fail(opened.status());
  wal::Wal& wal = **opened;
  absl::StatusOr<Selected> selected = Select(wal, sel, /*decodable_only=*/false);
  if (!selected.ok()) return Fail(selected.status());
  const std::vector<uint64_t>& seqs = selected->seqs;
  if (!confirmed) {
    if (out.json) {
      std::cout << JsonLine({{"would_purge", seqs}, {"count", 0}}) << "\n";
    } else {
      std::cout << "would purge " << seqs.size() << " dead letter(s)";
      for (size_t i = 0; i < seqs.size() && i < 20; ++i) std::cout << (i ? ", " : ": ") << seqs[i];
      std::cout << (seqs.size() > 20 ? ", ...\n" : "\n");
    }
    std::cerr << "kspoolctl: purging deletes them for good; add --yes to do it\n";
    return kExitUsage;
  }
  std::vector<uint64_t> purged;
  absl::Status status;
  for (size_t i = 0; i < seqs.size() && status.ok(); i += kBatch) {
    std::vector<uint64_t> batch(seqs.begin() + i, seqs.begin() + std::min(i + kBatch, seqs.size()));
    status = wal.PurgeDeadLetters(batch);
    if (status.ok()) purged.insert(purged.end(), batch.begin(), batch.end());
  }
  if (out.json) {
    std::cout << JsonLine({{"purged", purged}, {"count", purged.size()}}) << "\n";
  } else {
    std::cout << "purged " << purged.size() << " dead letter(s)\n";
  }
  return status.ok() ? kExitOk : Fail(status);
}

}  // namespace kspool::ctl
