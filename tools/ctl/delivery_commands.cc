// `delivery` and `watch`: what became of messages, by sequence number, from a running
// agent's delivery index (GetDeliveryStatus, WatchDeliveries).
#include <atomic>
#include <charconv>
#include <iostream>
#include <optional>
#include <string_view>

#include "tools/ctl/agent_client.h"
#include "tools/ctl/commands.h"
#include "tools/ctl/delivery_view.h"
#include "tools/ctl/exit_codes.h"
#include "tools/ctl/stop_signals.h"

namespace kspool::ctl {
namespace {

// Where a reader that stopped can pick up: the sequence after the last one it saw.
std::string ResumeHint(uint64_t next) {
  return "resume with: kspoolctl watch --from " + std::to_string(next);
}

// The lowest sequence the agent's delivery index still holds, from its OUT_OF_RANGE
// message ("... the delivery index starts at N"); nullopt if the text says no such thing.
std::optional<uint64_t> IndexStart(std::string_view message) {
  constexpr std::string_view kStartsAt = "starts at ";
  const size_t at = message.rfind(kStartsAt);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view digits = message.substr(at + kStartsAt.size());
  digits = digits.substr(0, digits.find_first_not_of("0123456789"));
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (digits.empty() || ec != std::errc()) return std::nullopt;
  return n;
}

}  // namespace

int AgentDelivery(const AgentTarget& agent, const std::vector<uint64_t>& sequences,
                  const Output& out) {
  kspool::v1::GetDeliveryStatusRequest req;
  for (uint64_t s : sequences) req.add_sequences(s);
  AgentClient client(agent.address, agent.timeout_ms, agent.tls);
  absl::StatusOr<kspool::v1::GetDeliveryStatusResponse> r = client.GetDeliveryStatus(req);
  if (!r.ok()) return Fail(r.status());
  if (out.json) {
    Json j = {{"statuses", Json::array()}};
    for (const auto& d : r->statuses()) j["statuses"].push_back(DeliveryJson(d));
    std::cout << JsonLine(j) << "\n";
    return kExitOk;
  }
  Table table = DeliveryTable();
  for (const auto& d : r->statuses()) AddDeliveryRow(d, &table);
  table.Print(std::cout);
  return kExitOk;
}

int AgentWatch(const AgentTarget& agent, const WatchOptions& options, const Output& out) {
  // Declared in this order so that they are destroyed in the reverse one: the signal
  // thread is joined before the watch goes, and the call before its channel.
  std::optional<AgentClient> client;
  std::unique_ptr<DeliveryWatch> watch;
  std::atomic<DeliveryWatch*> active{nullptr};
  // Before the channel exists: gRPC's threads must inherit the blocked signals.
  StopSignals signals([&] {
    if (DeliveryWatch* w = active.load()) w->Cancel();
  });
  client.emplace(agent.address, agent.timeout_ms);
  watch = client->WatchDeliveries(options.from_sequence);
  active = watch.get();
  if (signals.stopped()) watch->Cancel();  // the signal came before `active` was set

  uint64_t seen = 0;
  uint64_t next = options.from_sequence;
  kspool::v1::DeliveryStatus d;
  while ((options.count == 0 || seen < options.count) && watch->Next(&d)) {
    ++seen;
    next = d.sequence() + 1;
    // Flushed per line: a pipe reader sees each outcome as it comes.
    std::cout << (out.json ? JsonLine(DeliveryJson(d)) : DeliveryLine(d)) << std::endl;
  }
  const bool reached = options.count != 0 && seen >= options.count;
  if (reached) watch->Cancel();
  absl::Status s = watch->Finish();
  if (reached || signals.stopped()) {
    if (!reached) std::cerr << "kspoolctl: stopped after " << seen << " outcome(s); " << ResumeHint(next) << "\n";
    return kExitOk;
  }
  if (s.code() == absl::StatusCode::kOutOfRange) {
    const std::optional<uint64_t> floor = IndexStart(std::string(s.message()));
    if (floor) {
      std::cerr << "kspoolctl: outcomes below " << *floor
                << " are no longer kept (the agent keeps them for --delivery-retention, in at "
                   "most --delivery-retention-bytes); watch --from "
                << *floor << " or later\n";
    } else {
      std::cerr << "kspoolctl: outcomes from " << next
                << " on are no longer all kept (the agent keeps them for --delivery-retention, "
                   "in at most --delivery-retention-bytes); watch from a later sequence\n";
    }
    std::cerr << "kspoolctl: " << s.message() << "\n";
    return kExitError;
  }
  if (s.ok()) {
    std::cerr << "kspoolctl: the agent ended the feed after " << seen << " outcome(s); " << ResumeHint(next) << "\n";
    return kExitError;
  }
  std::cerr << "kspoolctl: " << s.message() << "\nkspoolctl: " << ResumeHint(next) << "\n";
  return kExitError;
}

}  // namespace kspool::ctl
