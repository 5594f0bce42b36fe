#include "fault_commands.h"

#include <strings.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>
#include <utility>

namespace kspool::devkafka {
namespace {

constexpr int kMaxPartitions = 10000;
constexpr int kMaxRttMs = 3600 * 1000;
constexpr int kMaxErrorCount = 100000;

std::vector<std::string> Split(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// User text echoed in a reply: printable, bounded, quoted.
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s.substr(0, 64)) out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  return out + (s.size() > 64 ? "...'" : "'");
}

bool ParseInt(const std::string& s, int64_t min, int64_t max, int64_t* out) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < min || v > max) return false;
  *out = v;
  return true;
}

std::string MockError(rd_kafka_resp_err_t err) {
  return std::string("ERR ") + rd_kafka_err2name(err) + ": " + rd_kafka_err2str(err);
}

// Java client / KIP names for codes librdkafka spells differently: {alias, librdkafka name}.
constexpr std::pair<const char*, const char*> kErrorAliases[] = {
    {"NOT_LEADER_OR_FOLLOWER", "NOT_LEADER_FOR_PARTITION"},
    {"UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_OR_PART"},
    {"MESSAGE_TOO_LARGE", "MSG_SIZE_TOO_LARGE"},
    {"CORRUPT_MESSAGE", "INVALID_MSG"},
    {"NONE", "NO_ERROR"},
};

constexpr std::pair<const char*, int16_t> kApiKeys[] = {
    {"Produce", 0},          {"Fetch", 1},
    {"ListOffsets", 2},      {"Metadata", 3},
    {"OffsetCommit", 8},     {"OffsetFetch", 9},
    {"FindCoordinator", 10}, {"JoinGroup", 11},
    {"Heartbeat", 12},       {"LeaveGroup", 13},
    {"SyncGroup", 14},       {"ApiVersions", 18},
    {"InitProducerId", 22},  {"AddPartitionsToTxn", 24},
    {"EndTxn", 26},
};

}  // namespace

FaultCommands::FaultCommands(rd_kafka_mock_cluster_t* mcluster, int broker_count)
    : mcluster_(mcluster), broker_count_(broker_count) {}

const char* FaultCommands::Usage() {
  return "  ping                                   reply OK pong\n"
         "  broker down|up ID|all                  drop connections and refuse new ones / accept\n"
         "                                         again (leaders do not move)\n"
         "  broker rtt ID|all MS                   delay responses by MS ms (0 clears)\n"
         "  topic create NAME PARTITIONS           create a topic, RF = min(3, brokers)\n"
         "  topic error NAME ERRNAME               error for NAME in Metadata (NO_ERROR clears)\n"
         "  request error APIKEY COUNT ERRNAME...  fail the next COUNT APIKEY requests to any\n"
         "                                         broker (one ERRNAME repeats, else COUNT names)\n"
         "  request clear APIKEY                   drop pending injected errors for APIKEY\n"
         "  leader TOPIC PARTITION ID|none         move the partition leader\n"
         "  (topic error / leader on a missing topic create it, with 4 / PARTITION+1 partitions)\n"
         "  shutdown                               reply OK, then exit 0\n"
         "  APIKEY: a number, or Produce Fetch ListOffsets Metadata FindCoordinator "
         "InitProducerId\n"
         "  OffsetCommit OffsetFetch JoinGroup Heartbeat SyncGroup ApiVersions EndTxn ...\n"
         "  ERRNAME: a Kafka error name (NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, _TRANSPORT =\n"
         "  disconnect, ...) or numeric code. Each reply is one line: OK... or ERR <reason>.\n";
}

bool FaultCommands::ParseErrorName(const std::string& text, rd_kafka_resp_err_t* err) {
  if (text.empty()) return false;
  const rd_kafka_err_desc* descs = nullptr;
  size_t count = 0;
  rd_kafka_get_err_descs(&descs, &count);
  const bool numeric = std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '-';
  int64_t code = 0;
  if (numeric && !ParseInt(text, INT32_MIN, INT32_MAX, &code)) return false;
  std::string name = text;
  if (strncasecmp(name.c_str(), "RD_KAFKA_RESP_ERR_", 18) == 0) name.erase(0, 18);
  for (const auto& [alias, real_name] : kErrorAliases) {
    if (strcasecmp(name.c_str(), alias) == 0) name = real_name;
  }
  for (size_t i = 0; i < count; ++i) {
    const rd_kafka_err_desc& d = descs[i];
    if (d.name == nullptr || d.desc == nullptr) continue;  // Gaps, _BEGIN and _END.
    if (numeric ? d.code == code : strcasecmp(name.c_str(), d.name) == 0) {
      *err = d.code;
      return true;
    }
  }
  return false;
}

bool FaultCommands::ParseApiKey(const std::string& text, int16_t* api_key) {
  int64_t v = 0;
  if (ParseInt(text, 0, INT16_MAX, &v)) {
    *api_key = static_cast<int16_t>(v);
    return true;
  }
  for (const auto& [name, key] : kApiKeys) {
    if (strcasecmp(text.c_str(), name) == 0) {
      *api_key = key;
      return true;
    }
  }
  return false;
}

bool FaultCommands::IsValidTopicName(const std::string& name) {
  if (name.empty() || name.size() > 249 || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

bool FaultCommands::ParseBrokerId(const std::string& text, bool allow_all, int32_t* id,
                                  std::string* error) const {
  if (allow_all && Lower(text) == "all") {
    *id = -1;
    return true;
  }
  int64_t v = 0;
  if (!ParseInt(text, INT32_MIN, INT32_MAX, &v)) {
    *error = "bad broker id " + Quote(text) + " (expected 1.." + std::to_string(broker_count_) +
             (allow_all ? " or all)" : ")");
    return false;
  }
  if (v < 1 || v > broker_count_) {
    *error = "broker id " + std::to_string(v) + " out of range 1.." + std::to_string(broker_count_);
    return false;
  }
  *id = static_cast<int32_t>(v);
  return true;
}

void FaultCommands::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  mcluster_ = nullptr;
}

std::string FaultCommands::Execute(const std::string& line) {
  const Args args = Split(line);
  if (args.empty() || args[0][0] == '#') return "";
  std::lock_guard<std::mutex> lock(mu_);
  if (mcluster_ == nullptr) return "ERR shutting down";
  const std::string verb = Lower(args[0]);
  if (verb == "ping") return args.size() == 1 ? "OK pong" : "ERR usage: ping";
  if (verb == "shutdown") {
    if (args.size() != 1) return "ERR usage: shutdown";
    shutdown_requested_ = true;
    return "OK";
  }
  if (verb == "help") {  // Usage() on one line, whitespace runs collapsed.
    std::string text = "OK";
    for (const std::string& word : Split(Usage())) text += " " + word;
    return text;
  }
  if (verb == "broker") return DoBroker(args);
  if (verb == "topic") return DoTopic(args);
  if (verb == "request") return DoRequest(args);
  if (verb == "leader") return DoLeader(args);
  return "ERR unknown command " + Quote(args[0]) + " (try: help)";
}

std::string FaultCommands::DoBroker(const Args& args) {
  const std::string sub = args.size() > 1 ? Lower(args[1]) : "";
  if (sub != "down" && sub != "up" && sub != "rtt") {
    return "ERR unknown broker subcommand " + Quote(sub) + " (expected down, up or rtt)";
  }
  if (args.size() != (sub == "rtt" ? 4u : 3u)) {
    return sub == "rtt" ? "ERR usage: broker rtt ID|all MS"
                        : "ERR usage: broker " + sub + " ID|all";
  }
  std::string error;
  int32_t id = 0;
  if (!ParseBrokerId(args[2], true, &id, &error)) return "ERR " + error;
  int64_t ms = 0;
  if (sub == "rtt" && !ParseInt(args[3], 0, kMaxRttMs, &ms)) {
    return "ERR bad rtt " + Quote(args[3]) + " (expected 0.." + std::to_string(kMaxRttMs) + " ms)";
  }
  // "all" is applied broker by broker, so the ids are exactly 1..N.
  for (int32_t b = (id == -1 ? 1 : id); b <= (id == -1 ? broker_count_ : id); ++b) {
    rd_kafka_resp_err_t err =
        sub == "down" ? rd_kafka_mock_broker_set_down(mcluster_, b)
        : sub == "up" ? rd_kafka_mock_broker_set_up(mcluster_, b)
                      : rd_kafka_mock_broker_set_rtt(mcluster_, b, static_cast<int>(ms));
    if (err) return MockError(err);
  }
  return "OK";
}

std::string FaultCommands::DoTopic(const Args& args) {
  const std::string sub = args.size() > 1 ? Lower(args[1]) : "";
  if (sub != "create" && sub != "error") {
    return "ERR unknown topic subcommand " + Quote(sub) + " (expected create or error)";
  }
  if (args.size() != 4) {
    return sub == "create" ? "ERR usage: topic create NAME PARTITIONS"
                           : "ERR usage: topic error NAME ERRNAME";
  }
  const std::string& name = args[2];
  if (!IsValidTopicName(name)) return "ERR bad topic name " + Quote(name);
  if (sub == "create") {
    int64_t partitions = 0;
    if (!ParseInt(args[3], 1, kMaxPartitions, &partitions)) {
      return "ERR bad partition count " + Quote(args[3]) + " (expected 1.." +
             std::to_string(kMaxPartitions) + ")";
    }
    const int rf = std::min(3, broker_count_);
    rd_kafka_resp_err_t err =
        rd_kafka_mock_topic_create(mcluster_, name.c_str(), static_cast<int>(partitions), rf);
    return err ? MockError(err) : "OK";
  }
  rd_kafka_resp_err_t code;
  if (!ParseErrorName(args[3], &code)) return "ERR unknown error name " + args[3];
  rd_kafka_mock_topic_set_error(mcluster_, name.c_str(), code);
  return "OK";
}

std::string FaultCommands::DoRequest(const Args& args) {
  const std::string sub = args.size() > 1 ? Lower(args[1]) : "";
  if (sub != "error" && sub != "clear") {
    return "ERR unknown request subcommand " + Quote(sub) + " (expected error or clear)";
  }
  if (sub == "clear" && args.size() != 3) return "ERR usage: request clear APIKEY";
  if (sub == "error" && args.size() < 5) {
    return "ERR usage: request error APIKEY COUNT ERRNAME [ERRNAME...]";
  }
  int16_t api_key = 0;
  if (!ParseApiKey(args[2], &api_key)) return "ERR unknown api key " + Quote(args[2]);
  if (sub == "clear") {
    rd_kafka_mock_clear_request_errors(mcluster_, api_key);
    return "OK";
  }
  int64_t count = 0;
  if (!ParseInt(args[3], 1, kMaxErrorCount, &count)) {
    return "ERR bad count " + Quote(args[3]) + " (expected 1.." + std::to_string(kMaxErrorCount) +
           ")";
  }
  std::vector<rd_kafka_resp_err_t> errors;
  for (size_t i = 4; i < args.size(); ++i) {
    rd_kafka_resp_err_t code;
    if (!ParseErrorName(args[i], &code)) return "ERR unknown error name " + args[i];
    errors.push_back(code);
  }
  if (errors.size() == 1) errors.resize(static_cast<size_t>(count), errors[0]);
  if (errors.size() != static_cast<size_t>(count)) {
    return "ERR count " + std::to_string(count) + " does not match " +
           std::to_string(args.size() - 4) + " error names";
  }
  rd_kafka_mock_push_request_errors_array(mcluster_, api_key, errors.size(), errors.data());
  return "OK";
}

std::string FaultCommands::DoLeader(const Args& args) {
  if (args.size() != 4) return "ERR usage: leader TOPIC PARTITION ID|none";
  if (!IsValidTopicName(args[1])) return "ERR bad topic name " + Quote(args[1]);
  int64_t partition = 0;
  if (!ParseInt(args[2], 0, kMaxPartitions - 1, &partition)) {
    return "ERR bad partition " + Quote(args[2]) + " (expected 0.." +
           std::to_string(kMaxPartitions - 1) + ")";
  }
  int32_t id = -1;
  std::string error;
  const std::string who = Lower(args[3]);
  if (who != "none" && who != "-1" && !ParseBrokerId(args[3], false, &id, &error)) {
    return "ERR " + error;
  }
  rd_kafka_resp_err_t err = rd_kafka_mock_partition_set_leader(mcluster_, args[1].c_str(),
                                                               static_cast<int32_t>(partition), id);
  return err ? MockError(err) : "OK";
}

}  // namespace kspool::devkafka
