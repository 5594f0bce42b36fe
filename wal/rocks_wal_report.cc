// RocksWal: the discard report's counts, split at the commit point.
//
// Every settled message is counted, in its Settle batch, under its receive time in the
// `split/a/` keys of `meta`. Saving a commit point T moves the counts received at or
// before T into the cumulative `split/b/` keys, in the same batch as T itself, so a
// report's counts always match its commit point, also after a crash. The `split/a/`
// keys hold only settled messages newer than the oldest live entry: bounded by the
// drain window, not by the backlog.
#include "wal/coding.h"
#include "wal/keys.h"
#include "wal/rocks_wal.h"

namespace kspool::wal {
namespace {

constexpr std::string_view kBefore = "split/b/";
constexpr std::string_view kAfter = "split/a/";
const std::string kDelivered = kOutcomeDelivered;

std::string BeforeKey(const std::string& topic, const std::string& outcome) {
  return std::string(kBefore) + topic + "/" + outcome;
}
std::string AfterKey(int64_t receive_ms, const std::string& topic, const std::string& outcome) {
  char ts[17];
  snprintf(ts, sizeof(ts), "%016llx", static_cast<unsigned long long>(receive_ms));
  return std::string(kAfter) + ts + "/" + topic + "/" + outcome;
}
std::string EncodeOutcome(const OutcomeCounts& c) {
  std::string v;
  coding::PutFixed64(&v, c.count);
  coding::PutFixed64(&v, c.bytes);
  coding::PutFixed64(&v, static_cast<uint64_t>(c.min_receive_ms));
  coding::PutFixed64(&v, static_cast<uint64_t>(c.max_receive_ms));
  return v;
}
OutcomeCounts DecodeOutcome(std::string_view v) {
  OutcomeCounts c;
  if (v.size() < 32) return c;
  c.count = coding::GetFixed64(v.data());
  c.bytes = coding::GetFixed64(v.data() + 8);
  c.min_receive_ms = static_cast<int64_t>(coding::GetFixed64(v.data() + 16));
  c.max_receive_ms = static_cast<int64_t>(coding::GetFixed64(v.data() + 24));
  return c;
}

}  // namespace

void OutcomeCounts::Add(const OutcomeCounts& o) {
  if (o.count == 0) return;
  min_receive_ms = count ? std::min(min_receive_ms, o.min_receive_ms) : o.min_receive_ms;
  max_receive_ms = count ? std::max(max_receive_ms, o.max_receive_ms) : o.max_receive_ms;
  count += o.count;
  bytes += o.bytes;
}

void RocksWal::SplitSettled(const std::vector<Outcome>& outcomes, rocksdb::WriteBatch* wb,
                            std::map<int64_t, OutcomeTable>* updated) const {
  MutexLock l(&mu_);
  const Outcome* last = nullptr;
  int64_t last_r = 0;
  OutcomeCounts* counts = nullptr;
  for (const Outcome& o : outcomes) {
    // An undecodable record's receive time is unknown; it was not settled at the last
    // saved commit point, so it counts just after it.
    const int64_t r = o.receive_time_ms ? o.receive_time_ms : saved_points_.global_ms + 1;
    // Consecutive outcomes mostly share topic, outcome and receive time (one group
    // commit): look the slot up only when one of them changes.
    if (!last || r != last_r || o.topic != last->topic || o.discard_reason != last->discard_reason) {
      const std::string& outcome = o.discard_reason.empty() ? kDelivered : o.discard_reason;
      auto [it, fresh] = (*updated)[r][o.topic].try_emplace(outcome);
      if (fresh) {
        auto a = after_.find(r);
        if (a != after_.end()) {
          auto t = a->second.find(o.topic);
          if (t != a->second.end()) {
            auto c = t->second.find(outcome);
            if (c != t->second.end()) it->second = c->second;
          }
        }
      }
      counts = &it->second;
      last = &o;
      last_r = r;
    }
    counts->Add({1, o.size, r, r});
  }
  for (const auto& [r, table] : *updated) {
    for (const auto& [topic, outcomes_of] : table) {
      for (const auto& [outcome, c] : outcomes_of) {
        wb->Put(db_->meta, AfterKey(r, topic, outcome), EncodeOutcome(c));
      }
    }
  }
}

void RocksWal::FoldSplit(int64_t commit_point_ms, rocksdb::WriteBatch* wb,
                         OutcomeTable* before) const {
  MutexLock l(&mu_);
  *before = before_;
  bool changed = false;
  for (auto it = after_.begin(); it != after_.end() && it->first <= commit_point_ms; ++it) {
    for (const auto& [topic, outcomes_of] : it->second) {
      for (const auto& [outcome, c] : outcomes_of) {
        (*before)[topic][outcome].Add(c);
        wb->Delete(db_->meta, AfterKey(it->first, topic, outcome));
        changed = true;
      }
    }
  }
  if (!changed) return;
  for (const auto& [topic, outcomes_of] : *before) {
    for (const auto& [outcome, c] : outcomes_of) {
      wb->Put(db_->meta, BeforeKey(topic, outcome), EncodeOutcome(c));
    }
  }
}

void RocksWal::LoadSplit(std::string_view key, std::string_view value) {
  auto split3 = [](std::string_view rest, std::string_view* a, std::string_view* b) {
    size_t slash = rest.rfind('/');
    if (slash == std::string_view::npos) return false;
    *a = rest.substr(0, slash);
    *b = rest.substr(slash + 1);
    return true;
  };
  std::string_view topic, outcome;
  if (key.substr(0, kBefore.size()) == kBefore) {
    if (split3(key.substr(kBefore.size()), &topic, &outcome)) {
      before_[std::string(topic)][std::string(outcome)] = DecodeOutcome(value);
    }
  } else if (key.substr(0, kAfter.size()) == kAfter && key.size() > kAfter.size() + 17) {
    int64_t r = static_cast<int64_t>(
        std::stoull(std::string(key.substr(kAfter.size(), 16)), nullptr, 16));
    if (split3(key.substr(kAfter.size() + 17), &topic, &outcome)) {
      after_[r][std::string(topic)][std::string(outcome)] = DecodeOutcome(value);
    }
  }
}

Report RocksWal::GetReport() const {
  MutexLock l(&mu_);
  Report r;
  r.commit_point_ms = saved_points_.global_ms;
  r.at_or_before = before_;
  for (const auto& [receive, table] : after_) {
    for (const auto& [topic, outcomes_of] : table) {
      for (const auto& [outcome, c] : outcomes_of) r.after[topic][outcome].Add(c);
    }
  }
  r.ledger = topics_;
  return r;
}

}  // namespace kspool::wal
