// ReportSplit: the discard report's counts, split at the commit point.
//
// Every settled message is counted, in its Settle batch, under its receive time in the
// `split/a/` keys of `meta`. Saving a commit point T moves the counts received at or
// before T into the cumulative `split/b/` keys, in the same batch as T itself, so a
// report's counts always match its point, also after a crash.
//
// While the commit point is held back (one topic stuck for hours), the other topics'
// settled messages pile up in `split/a/`, one bucket per receive millisecond. So the
// buckets are bounded (Options::max_report_buckets): beyond the bound, adjacent buckets
// are merged pairwise in the Settle batch. A merged bucket spans several milliseconds
// and is folded only once the commit point has passed all of it; the report's point is
// then the commit point, or just below a bucket that straddles it. That point never
// decreases, and at_or_before holds exactly the messages received at or before it, so
// R2 - R1 stays exact.
#include <algorithm>
#include <limits>

#include "wal/coding.h"
#include "wal/keys.h"
#include "wal/report_split.h"

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

void PutBucket(rocksdb::WriteBatch* wb, rocksdb::ColumnFamilyHandle* meta, int64_t bucket,
               const OutcomeTable& table) {
  for (const auto& [topic, outcomes_of] : table) {
    for (const auto& [outcome, c] : outcomes_of) {
      wb->Put(meta, AfterKey(bucket, topic, outcome), EncodeOutcome(c));
    }
  }
}

// The latest receive time a bucket holds; its span is [its key, this].
int64_t BucketMax(const OutcomeTable& table) {
  int64_t m = std::numeric_limits<int64_t>::min();
  for (const auto& [topic, outcomes_of] : table) {
    for (const auto& [outcome, c] : outcomes_of) {
      if (c.count > 0) m = std::max(m, c.max_receive_ms);
    }
  }
  return m;
}

// The bucket a message received at `r` belongs to: the merged bucket whose span holds
// r, else its own millisecond. Buckets stay disjoint.
int64_t BucketFor(const std::map<int64_t, OutcomeTable>& after, int64_t r) {
  auto it = after.upper_bound(r);
  if (it == after.begin()) return r;
  --it;
  return r <= BucketMax(it->second) ? it->first : r;
}

// Merges adjacent buckets pairwise, about halving their number: `after` updated with
// *put becomes the new whole table in *put, written to `wb`. A merged bucket keeps its
// first half's key and spans both halves and the gap between them, where no bucket lies.
void Coarsen(const std::map<int64_t, OutcomeTable>& after,
             std::map<int64_t, OutcomeTable>* put, rocksdb::WriteBatch* wb,
             rocksdb::ColumnFamilyHandle* meta) {
  std::map<int64_t, OutcomeTable> all = after;
  for (auto& [bucket, table] : *put) {
    for (auto& [topic, outcomes_of] : table) {
      for (auto& [outcome, c] : outcomes_of) all[bucket][topic][outcome] = c;
    }
  }
  std::map<int64_t, OutcomeTable> merged;
  for (auto it = all.begin(); it != all.end(); ++it) {
    OutcomeTable& into = merged[it->first];
    into = std::move(it->second);
    auto second = std::next(it);
    if (second == all.end()) break;
    for (const auto& [topic, outcomes_of] : second->second) {
      for (const auto& [outcome, c] : outcomes_of) {
        into[topic][outcome].Add(c);
        wb->Delete(meta, AfterKey(second->first, topic, outcome));
      }
    }
    it = second;
  }
  for (const auto& [bucket, table] : merged) PutBucket(wb, meta, bucket, table);
  *put = std::move(merged);
}

}  // namespace

void OutcomeCounts::Add(const OutcomeCounts& o) {
  if (o.count == 0) return;
  min_receive_ms = count ? std::min(min_receive_ms, o.min_receive_ms) : o.min_receive_ms;
  max_receive_ms = count ? std::max(max_receive_ms, o.max_receive_ms) : o.max_receive_ms;
  count += o.count;
  bytes += o.bytes;
}

void ReportSplit::Split(const std::vector<Outcome>& outcomes, int64_t unknown_receive_ms,
                        rocksdb::ColumnFamilyHandle* meta, rocksdb::WriteBatch* wb,
                        Change* change) const {
  const Outcome* last = nullptr;
  int64_t last_r = 0;
  OutcomeCounts* counts = nullptr;
  for (const Outcome& o : outcomes) {
    // An undecodable record's receive time is unknown; it was not settled when the last
    // commit point was saved, so it counts just after it.
    const int64_t r = o.receive_time_ms ? o.receive_time_ms : unknown_receive_ms;
    // Consecutive outcomes mostly share topic, outcome and receive time (one group
    // commit): look the slot up only when one of them changes.
    if (!last || r != last_r || o.topic != last->topic || o.state != last->state ||
        o.discard_reason != last->discard_reason) {
      const std::string& outcome = o.delivered() ? kDelivered : o.discard_reason;
      const int64_t bucket = BucketFor(after_, r);
      auto [it, fresh] = change->put[bucket][o.topic].try_emplace(outcome);
      if (fresh) {
        auto a = after_.find(bucket);
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
  size_t buckets = after_.size();
  for (const auto& [bucket, table] : change->put) buckets += after_.count(bucket) ? 0 : 1;
  if (buckets > max_buckets_) {
    Coarsen(after_, &change->put, wb, meta);
    change->coarsened = true;
    return;
  }
  for (const auto& [bucket, table] : change->put) PutBucket(wb, meta, bucket, table);
}

void ReportSplit::Apply(Change change) {
  if (change.coarsened) {
    after_ = std::move(change.put);
    ++coarsenings_;
    return;
  }
  for (auto& [bucket, table] : change.put) {
    for (auto& [topic, outcomes_of] : table) {
      for (auto& [outcome, c] : outcomes_of) after_[bucket][topic][outcome] = c;
    }
  }
}

void ReportSplit::PlanFold(int64_t commit_point_ms, rocksdb::ColumnFamilyHandle* meta,
                           rocksdb::WriteBatch* wb, Fold* fold) const {
  fold->before = before_;
  // Every message received at or before the commit point is settled, so a bucket whose
  // span ends at or before it is complete. A merged bucket that straddles the point
  // waits; the report's point is then just below it.
  fold->report_point_ms = commit_point_ms;
  bool changed = false;
  for (const auto& [bucket, table] : after_) {
    if (BucketMax(table) > commit_point_ms) {
      if (bucket <= commit_point_ms) fold->report_point_ms = bucket - 1;
      break;
    }
    for (const auto& [topic, outcomes_of] : table) {
      for (const auto& [outcome, c] : outcomes_of) {
        fold->before[topic][outcome].Add(c);
        wb->Delete(meta, AfterKey(bucket, topic, outcome));
        changed = true;
      }
    }
    fold->last_folded = bucket;
  }
  fold->report_point_ms = std::max(fold->report_point_ms, point_ms_);
  wb->Put(meta, keys::kReportPoint, keys::U64(static_cast<uint64_t>(fold->report_point_ms)));
  if (!changed) return;
  for (const auto& [topic, outcomes_of] : fold->before) {
    for (const auto& [outcome, c] : outcomes_of) {
      wb->Put(meta, BeforeKey(topic, outcome), EncodeOutcome(c));
    }
  }
}

bool ReportSplit::FoldsAt(int64_t commit_point_ms) const {
  return !after_.empty() && BucketMax(after_.begin()->second) <= commit_point_ms;
}

int64_t ReportSplit::PointAt(int64_t commit_point_ms) const {
  // Every message received at or before the commit point is settled, and none waits in
  // a bucket starting at or below the result: at_or_before is exact there.
  int64_t p = commit_point_ms;
  if (!after_.empty() && after_.begin()->first <= commit_point_ms) p = after_.begin()->first - 1;
  return std::max(p, point_ms_);
}

void ReportSplit::Apply(Fold fold) {
  before_ = std::move(fold.before);
  if (fold.last_folded) after_.erase(after_.begin(), after_.upper_bound(*fold.last_folded));
  point_ms_ = fold.report_point_ms;
}

void ReportSplit::PlanForget(const std::vector<std::string>& topics,
                             rocksdb::ColumnFamilyHandle* meta, rocksdb::WriteBatch* wb,
                             Forget* change) const {
  change->topics = topics;
  const std::string forgotten = kForgottenTopics;
  // Moves `table`'s counts of the forgotten topics under `forgotten`, deleting their keys
  // with `key`; true when it moved any.
  auto move = [&](const OutcomeTable& table, auto key, std::map<std::string, OutcomeCounts>* into) {
    bool moved = false;
    for (const std::string& topic : topics) {
      auto t = table.find(topic);
      if (t == table.end()) continue;
      for (const auto& [outcome, c] : t->second) {
        (*into)[outcome].Add(c);
        wb->Delete(meta, key(topic, outcome));
      }
      moved = true;
    }
    return moved;
  };
  auto start = [&](const OutcomeTable& table) {
    auto f = table.find(forgotten);
    return f == table.end() ? std::map<std::string, OutcomeCounts>{} : f->second;
  };
  std::map<std::string, OutcomeCounts> before = start(before_);
  if (move(
          before_, [](const std::string& t, const std::string& o) { return BeforeKey(t, o); },
          &before)) {
    for (const auto& [outcome, c] : before)
      wb->Put(meta, BeforeKey(forgotten, outcome), EncodeOutcome(c));
    change->before[forgotten] = std::move(before);
  }
  for (const auto& [bucket, table] : after_) {
    std::map<std::string, OutcomeCounts> into = start(table);
    const int64_t b = bucket;
    if (!move(
            table, [b](const std::string& t, const std::string& o) { return AfterKey(b, t, o); },
            &into)) {
      continue;
    }
    for (const auto& [outcome, c] : into)
      wb->Put(meta, AfterKey(b, forgotten, outcome), EncodeOutcome(c));
    change->after[b][forgotten] = std::move(into);
  }
}

void ReportSplit::Apply(Forget change) {
  for (const std::string& topic : change.topics) before_.erase(topic);
  for (auto& [topic, outcomes_of] : change.before) before_[topic] = std::move(outcomes_of);
  for (auto& [bucket, table] : after_) {
    for (const std::string& topic : change.topics) table.erase(topic);
  }
  for (auto& [bucket, table] : change.after) {
    for (auto& [topic, outcomes_of] : table) after_[bucket][topic] = std::move(outcomes_of);
  }
}

void ReportSplit::Clear() {
  before_.clear();
  after_.clear();
}

void ReportSplit::Load(std::string_view key, std::string_view value) {
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

Report ReportSplit::Get(const std::map<std::string, TopicStats>& ledger) const {
  Report r;
  r.commit_point_ms = point_ms_;
  r.at_or_before = before_;
  for (const auto& [receive, table] : after_) {
    for (const auto& [topic, outcomes_of] : table) {
      for (const auto& [outcome, c] : outcomes_of) r.after[topic][outcome].Add(c);
    }
  }
  r.ledger = ledger;
  return r;
}

}  // namespace kspool::wal
