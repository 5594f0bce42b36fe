// `send`, `status`, `report`, `commit-point`: a running agent, over its gRPC services.
#include <iostream>

#include "agent/delivery/discard_report.h"
#include "tools/ctl/agent_client.h"
#include "tools/ctl/commands.h"
#include "tools/ctl/delivery_view.h"
#include "tools/ctl/entry_view.h"
#include "tools/ctl/exit_codes.h"

namespace kspool::ctl {
namespace {

std::string Lag(int64_t now_ms, int64_t point_ms) {
  return FormatTime(point_ms) + " (lag " + FormatAge(now_ms - point_ms) + ")";
}

void AddOutcomeRows(const std::string& topic, const char* when,
                    const google::protobuf::RepeatedPtrField<kspool::v1::OutcomeCount>& in,
                    Table* table) {
  for (const auto& o : in) {
    table->Add({topic, o.outcome(), when, std::to_string(o.count()), std::to_string(o.bytes()),
                FormatTime(o.earliest_receive_ms()), FormatTime(o.latest_receive_ms())});
  }
}

// A WAIT_FOR_KAFKA Send that ended (its deadline passed) after the agent had accepted
// the messages: their sequence numbers, from the trailing metadata, so they can be
// asked for later.
int NotConfirmed(const absl::Status& s, const std::string& sequences, const Output& out) {
  std::cerr << "kspoolctl: " << s.message() << "\n"
            << "kspoolctl: the messages were accepted (fsynced) and will be delivered or "
               "discarded; their outcome is not known yet\n";
  if (out.json) {
    std::cout << JsonLine({{"sequences", sequences},
                           {"confirmed", false},
                           {"code", absl::StatusCodeToString(s.code())}})
              << "\n";
  } else {
    std::cout << "accepted sequence " << sequences
              << ", outcome not known yet; ask with: kspoolctl delivery " << sequences << "\n";
  }
  return kExitNotConfirmed;
}

void PrintBruceRejected(const kspool::v1::GetDiscardReportResponse& r) {
  if (r.bruce_rejected_size() == 0) return;
  std::cout << "\nbruce input refused since the agent started:";
  for (const auto& c : r.bruce_rejected()) std::cout << " " << c.reason() << "=" << c.count();
  std::cout << "\n";
  for (const auto& k : r.bruce_recent()) {
    std::cout << "  " << FormatTime(k.time_ms()) << " " << k.reason() << " (" << k.transport()
              << ", " << k.size() << " bytes): " << k.error() << "\n";
  }
}

}  // namespace

int AgentSend(const AgentTarget& agent, SendOptions options, const Output& out) {
  if (options.values.empty()) {
    for (std::string line; std::getline(std::cin, line);) options.values.push_back(line);
  }
  if (options.values.empty()) {
    std::cerr << "kspoolctl: nothing to send: give values as arguments or lines on stdin\n";
    return kExitUsage;
  }
  kspool::v1::SendRequest req;
  for (const std::string& v : options.values) {
    auto* m = req.add_messages();
    m->set_topic(options.topic);
    m->set_value(v);
    if (options.key) m->set_key(*options.key);
    if (options.partition) m->set_partition(*options.partition);
    for (const auto& [k, hv] : options.headers) {
      auto* h = m->add_headers();
      h->set_key(k);
      h->set_value(hv);
    }
  }
  if (options.wait_for_kafka) req.set_wait_for(kspool::v1::WAIT_FOR_KAFKA);
  AgentClient client(agent.address, agent.timeout_ms, agent.tls);
  std::string trailer_sequences;
  absl::StatusOr<kspool::v1::SendResponse> r = client.Send(req, &trailer_sequences);
  if (!r.ok() && !trailer_sequences.empty())
    return NotConfirmed(r.status(), trailer_sequences, out);
  if (!r.ok()) return Fail(r.status());
  if (options.wait_for_kafka && r->deliveries_size() != r->sequence_size()) {
    // An agent from before WAIT_FOR_KAFKA ignores the field and answers at the WAL write.
    std::cerr << "kspoolctl: the agent accepted sequence " << r->sequence(0) << ".."
              << r->sequence(r->sequence_size() - 1)
              << " but sent no outcomes: it does not support --wait kafka\n";
    return kExitError;
  }
  if (out.json) {
    Json j = {{"sequence", r->sequence()}, {"receive_time_ms", r->receive_time_ms()}};
    if (options.wait_for_kafka) {
      j["deliveries"] = Json::array();
      for (const auto& d : r->deliveries()) j["deliveries"].push_back(DeliveryJson(d));
    }
    std::cout << JsonLine(j) << "\n";
    return kExitOk;
  }
  std::cout << "accepted " << r->sequence_size() << " message(s), sequence " << r->sequence(0)
            << ".." << r->sequence(r->sequence_size() - 1) << ", received "
            << FormatTime(r->receive_time_ms()) << "\n";
  if (options.wait_for_kafka) {
    Table table = DeliveryTable();
    for (const auto& d : r->deliveries()) AddDeliveryRow(d, &table);
    table.Print(std::cout);
  }
  return kExitOk;
}

int AgentStatus(const AgentTarget& agent, const Output& out) {
  AgentClient client(agent.address, agent.timeout_ms, agent.tls);
  absl::StatusOr<kspool::v1::GetWalStatsResponse> s = client.GetWalStats();
  if (!s.ok()) return Fail(s.status());
  absl::StatusOr<kspool::v1::GetCommitPointResponse> cp = client.GetCommitPoint();
  if (!cp.ok()) return Fail(cp.status());
  std::map<std::string, int64_t> points;
  for (const auto& t : cp->topics()) points[t.topic()] = t.commit_point_ms();
  if (out.json) {
    // The fields of the former `stats` command stay where they were.
    Json j = {{"agent_id", s->agent_id()},
              {"entries", s->entries()},
              {"bytes", s->bytes()},
              {"next_sequence", s->next_sequence()},
              {"oldest_sequence", s->oldest_sequence()},
              {"inflight", s->inflight_messages()},
              {"commit_point_ms", cp->commit_point_ms()},
              {"now_ms", cp->now_ms()}};
    j["topics"] = Json::object();
    for (const auto& t : s->topics()) {
      j["topics"][t.topic()] = {{"entries", t.entries()},
                                {"bytes", t.bytes()},
                                {"accepted", t.accepted()},
                                {"delivered", t.delivered()}};
      if (points.count(t.topic())) j["topics"][t.topic()]["commit_point_ms"] = points[t.topic()];
    }
    std::cout << JsonLine(j) << "\n";
    return kExitOk;
  }
  std::cout << "agent          " << s->agent_id() << " at " << agent.address << "\n"
            << "entries        " << s->entries() << " (" << s->bytes() << " bytes), "
            << s->inflight_messages() << " in flight\n"
            << "oldest seq     "
            << (s->oldest_sequence() ? std::to_string(s->oldest_sequence()) : "-") << "\n"
            << "next sequence  " << s->next_sequence() << "\n"
            << "commit point   " << Lag(cp->now_ms(), cp->commit_point_ms()) << "\n";
  if (s->topics().empty()) return kExitOk;
  Table topics({"TOPIC", ">PENDING", ">BYTES", ">ACCEPTED", ">DELIVERED", "COMMIT POINT"});
  for (const auto& t : s->topics()) {
    topics.Add({t.topic(), std::to_string(t.entries()), std::to_string(t.bytes()),
                std::to_string(t.accepted()), std::to_string(t.delivered()),
                points.count(t.topic()) ? FormatTime(points[t.topic()]) : "-"});
  }
  std::cout << "\n";
  topics.Print(std::cout);
  return kExitOk;
}

int AgentReport(const AgentTarget& agent, const Output& out) {
  AgentClient client(agent.address, agent.timeout_ms, agent.tls);
  absl::StatusOr<kspool::v1::GetDiscardReportResponse> r = client.GetDiscardReport();
  if (!r.ok()) return Fail(r.status());
  if (out.json) {
    // The agent's own /discards page, from the same function (one line here).
    std::cout << agent::ReportToJson(*r).dump(-1, ' ', false,
                                              nlohmann::json::error_handler_t::replace)
              << "\n";
    return kExitOk;
  }
  std::cout << "commit point   " << Lag(r->now_ms(), r->commit_point_ms()) << "\n";
  PrintBruceRejected(*r);
  if (r->topics().empty()) return kExitOk;
  Table outcomes({"TOPIC", "OUTCOME", "RECEIVED", ">COUNT", ">BYTES", "EARLIEST", "LATEST"});
  Table ledger({"TOPIC", ">ACCEPTED", ">DELIVERED", ">DISCARDED", ">PENDING", "HOLDS"});
  for (const auto& t : r->topics()) {
    AddOutcomeRows(t.topic(), "at or before", t.at_or_before(), &outcomes);
    AddOutcomeRows(t.topic(), "after", t.after(), &outcomes);
    const bool holds = t.accepted() == t.delivered() + t.discarded() + t.pending();
    ledger.Add({t.topic(), std::to_string(t.accepted()), std::to_string(t.delivered()),
                std::to_string(t.discarded()), std::to_string(t.pending()), holds ? "yes" : "NO"});
  }
  std::cout << "\nsettled messages, by when they were received (relative to the commit point)\n";
  if (outcomes.empty())
    std::cout << "  none yet\n";
  else
    outcomes.Print(std::cout);
  std::cout << "\nledger: accepted = delivered + discarded + pending\n";
  ledger.Print(std::cout);
  return kExitOk;
}

int AgentCommitPoint(const AgentTarget& agent, const Output& out) {
  AgentClient client(agent.address, agent.timeout_ms, agent.tls);
  absl::StatusOr<kspool::v1::GetCommitPointResponse> r = client.GetCommitPoint();
  if (!r.ok()) return Fail(r.status());
  if (out.json) {
    Json j = {{"commit_point_ms", r->commit_point_ms()}, {"now_ms", r->now_ms()}};
    j["topics"] = Json::object();
    for (const auto& t : r->topics()) j["topics"][t.topic()] = t.commit_point_ms();
    std::cout << JsonLine(j) << "\n";
    return kExitOk;
  }
  std::cout << "commit point   " << Lag(r->now_ms(), r->commit_point_ms()) << "\n";
  Table topics({"TOPIC", "COMMIT POINT", ">LAG"});
  for (const auto& t : r->topics()) {
    topics.Add(
        {t.topic(), FormatTime(t.commit_point_ms()), FormatAge(r->now_ms() - t.commit_point_ms())});
  }
  if (!topics.empty()) {
    std::cout << "\n";
    topics.Print(std::cout);
  }
  return kExitOk;
}

}  // namespace kspool::ctl
