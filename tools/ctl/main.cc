// kspoolctl: talk to a running agent (send, commit-point, stats). WAL inspection of a
// stopped agent's directory comes with the inspection commands.
//
// Exit codes: 0 success; 1 the agent answered with an error or could not be reached;
// 2 bad usage.
#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <nlohmann/json.hpp>

#include "tools/ctl/agent_client.h"

namespace {

std::string FormatMs(int64_t ms) {
  time_t secs = static_cast<time_t>(ms / 1000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char buf[64];
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  char out[80];
  snprintf(out, sizeof(out), "%s.%03dZ", buf, static_cast<int>(ms % 1000));
  return out;
}

int Fail(const absl::Status& s) {
  std::cerr << "kspoolctl: " << s.ToString() << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kspoolctl: inspect and operate a kspool agent.\n"
               "Exit codes: 0 success, 1 the agent returned an error or was unreachable, "
               "2 bad usage."};
  app.require_subcommand(1);
  std::string agent = "127.0.0.1:7411";
  int timeout_ms = 10000;
  bool json = false;
  app.add_option("--agent", agent, "Agent gRPC address HOST:PORT or unix:PATH")
      ->envname("KSPOOL_AGENT")
      ->capture_default_str();
  app.add_option("--timeout-ms", timeout_ms, "Deadline of each call")->capture_default_str();
  app.add_flag("--json", json, "Print JSON instead of text");

  auto* send = app.add_subcommand("send", "Send messages (values as arguments, or stdin lines)");
  std::string topic, key;
  std::vector<std::string> values;
  std::optional<int32_t> partition;
  send->add_option("--topic", topic, "Topic")->required();
  send->add_option("--key", key, "Key of every message");
  send->add_option("--partition", partition, "Explicit partition");
  send->add_option("values", values, "Values; without any, one message per stdin line");
  auto* cp = app.add_subcommand("commit-point", "Show the agent's commit points");
  auto* stats = app.add_subcommand("stats", "Show the agent's WAL statistics");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  kspool::ctl::AgentClient client(agent, timeout_ms);

  if (*send) {
    if (values.empty()) {
      for (std::string line; std::getline(std::cin, line);) values.push_back(line);
    }
    kspool::v1::SendRequest req;
    for (const std::string& v : values) {
      auto* m = req.add_messages();
      m->set_topic(topic);
      m->set_value(v);
      if (send->count("--key")) m->set_key(key);
      if (partition) m->set_partition(*partition);
    }
    auto r = client.Send(req);
    if (!r.ok()) return Fail(r.status());
    if (json) {
      nlohmann::json j = {{"sequence", r->sequence()}, {"receive_time_ms", r->receive_time_ms()}};
      std::cout << j.dump() << "\n";
    } else {
      std::cout << "accepted " << r->sequence_size() << " message(s), sequence "
                << r->sequence(0) << ".." << r->sequence(r->sequence_size() - 1)
                << ", received " << FormatMs(r->receive_time_ms()) << "\n";
    }
  } else if (*cp) {
    auto r = client.GetCommitPoint();
    if (!r.ok()) return Fail(r.status());
    if (json) {
      nlohmann::json j = {{"commit_point_ms", r->commit_point_ms()}, {"now_ms", r->now_ms()}};
      for (const auto& t : r->topics()) j["topics"][t.topic()] = t.commit_point_ms();
      std::cout << j.dump() << "\n";
    } else {
      std::cout << "commit point  " << FormatMs(r->commit_point_ms()) << "  (lag "
                << (r->now_ms() - r->commit_point_ms()) << " ms)\n";
      for (const auto& t : r->topics()) {
        std::cout << "  " << t.topic() << "  " << FormatMs(t.commit_point_ms()) << "\n";
      }
    }
  } else if (*stats) {
    auto r = client.GetWalStats();
    if (!r.ok()) return Fail(r.status());
    if (json) {
      nlohmann::json j = {{"entries", r->entries()},         {"bytes", r->bytes()},
                          {"next_sequence", r->next_sequence()},
                          {"oldest_sequence", r->oldest_sequence()},
                          {"agent_id", r->agent_id()},       {"inflight", r->inflight_messages()}};
      for (const auto& t : r->topics()) {
        j["topics"][t.topic()] = {{"entries", t.entries()},   {"bytes", t.bytes()},
                                  {"accepted", t.accepted()}, {"delivered", t.delivered()}};
      }
      std::cout << j.dump() << "\n";
    } else {
      std::cout << "agent " << r->agent_id() << ": " << r->entries() << " entries, "
                << r->bytes() << " bytes pending, " << r->inflight_messages()
                << " in flight, next sequence " << r->next_sequence() << "\n";
      for (const auto& t : r->topics()) {
        std::cout << "  " << t.topic() << ": pending " << t.entries() << ", accepted "
                  << t.accepted() << ", delivered " << t.delivered() << "\n";
      }
    }
  }
  return 0;
}
