#include "agent/delivery/discard_report.h"

#include "absl/strings/escaping.h"

namespace kspool::agent {
namespace {

void AddOutcomes(const std::map<std::string, wal::OutcomeCounts>& from,
                 google::protobuf::RepeatedPtrField<kspool::v1::OutcomeCount>* to) {
  for (const auto& [outcome, c] : from) {
    if (c.count == 0) continue;
    auto* o = to->Add();
    o->set_outcome(outcome);
    o->set_count(c.count);
    o->set_bytes(c.bytes);
    o->set_earliest_receive_ms(c.min_receive_ms);
    o->set_latest_receive_ms(c.max_receive_ms);
  }
}

nlohmann::json OutcomesJson(const google::protobuf::RepeatedPtrField<kspool::v1::OutcomeCount>& in) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& o : in) {
    j[o.outcome()] = {{"count", o.count()},
                      {"bytes", o.bytes()},
                      {"earliest_receive_ms", o.earliest_receive_ms()},
                      {"latest_receive_ms", o.latest_receive_ms()}};
  }
  return j;
}

}  // namespace

kspool::v1::GetDiscardReportResponse ReportToProto(const wal::Report& report, int64_t now_ms) {
  kspool::v1::GetDiscardReportResponse out;
  out.set_commit_point_ms(report.commit_point_ms);
  out.set_now_ms(now_ms);
  for (const auto& [topic, stats] : report.ledger) {
    auto* t = out.add_topics();
    t->set_topic(topic);
    auto before = report.at_or_before.find(topic);
    if (before != report.at_or_before.end()) AddOutcomes(before->second, t->mutable_at_or_before());
    auto after = report.after.find(topic);
    if (after != report.after.end()) AddOutcomes(after->second, t->mutable_after());
    uint64_t discarded = 0;
    for (const auto& [reason, c] : stats.discarded) discarded += c.count;
    t->set_accepted(stats.accepted.count);
    t->set_delivered(stats.delivered.count);
    t->set_discarded(discarded);
    t->set_pending(stats.pending().count);
  }
  return out;
}

nlohmann::json ReportToJson(const kspool::v1::GetDiscardReportResponse& r) {
  nlohmann::json j = {{"commit_point_ms", r.commit_point_ms()}, {"now_ms", r.now_ms()}};
  j["topics"] = nlohmann::json::object();
  for (const auto& t : r.topics()) {
    j["topics"][t.topic()] = {
        {"at_or_before", OutcomesJson(t.at_or_before())},
        {"after", OutcomesJson(t.after())},
        {"ledger",
         {{"accepted", t.accepted()},
          {"delivered", t.delivered()},
          {"discarded", t.discarded()},
          {"pending", t.pending()},
          {"holds", t.accepted() == t.delivered() + t.discarded() + t.pending()}}}};
  }
  if (r.bruce_rejected_size() > 0) {
    nlohmann::json counts = nlohmann::json::object();
    for (const auto& c : r.bruce_rejected()) counts[c.reason()] = c.count();
    nlohmann::json recent = nlohmann::json::array();
    for (const auto& k : r.bruce_recent()) {
      recent.push_back({{"reason", k.reason()},
                        {"time_ms", k.time_ms()},
                        {"transport", k.transport()},
                        {"size", k.size()},
                        {"first_bytes_base64", absl::Base64Escape(k.first_bytes())},
                        {"error", k.error()}});
    }
    j["bruce_rejected"] = {{"counts", counts}, {"recent", recent}};
  }
  return j;
}

}  // namespace kspool::agent
