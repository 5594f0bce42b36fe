// FaultCommands: parses one line of the kspool-devkafka control protocol ("broker down 2",
// "request error Produce 3 NOT_LEADER_OR_FOLLOWER", ...) and applies it to a librdkafka mock
// cluster. Every call returns exactly one reply line (no newline) that starts with "OK" or
// "ERR <reason>"; nothing throws.
//
// Thread-safety: Execute() and Close() are safe to call from any thread; commands are
// serialized by an internal mutex. The static helpers are pure and thread-safe. The mock
// cluster must outlive this object, or Close() must be called before destroying it.
#pragma once

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace kspool::devkafka {

class FaultCommands {
 public:
  // `broker_count` is the number of brokers in `mcluster` (ids 1..broker_count).
  FaultCommands(rd_kafka_mock_cluster_t* mcluster, int broker_count);

  FaultCommands(const FaultCommands&) = delete;
  FaultCommands& operator=(const FaultCommands&) = delete;

  // Parses and applies one command line. Blank lines and lines starting with '#' return an
  // empty string (the caller sends no reply for them).
  std::string Execute(const std::string& line);

  // After Close() every command replies "ERR shutting down"; call before destroying the
  // cluster. Waits for a command in progress to finish.
  void Close();

  // True once a "shutdown" command has been executed.
  bool shutdown_requested() const { return shutdown_requested_.load(); }

  // The command syntax, one command per line (--help prints it; "help" replies with it on
  // one line).
  static const char* Usage();

  // Maps a Kafka error name ("NOT_LEADER_FOR_PARTITION", alias "NOT_LEADER_OR_FOLLOWER",
  // local "_TRANSPORT"), case-insensitively, or a numeric code, to an error code.
  static bool ParseErrorName(const std::string& name, rd_kafka_resp_err_t* err);

  // Maps an API key name ("Produce", case-insensitive) or a number 0..32767 to a key.
  static bool ParseApiKey(const std::string& name, int16_t* api_key);

  // Kafka's legal topic names: 1..249 chars of [a-zA-Z0-9._-], not "." or "..".
  static bool IsValidTopicName(const std::string& name);

 private:
  using Args = std::vector<std::string>;

  std::string DoBroker(const Args& args);
  std::string DoTopic(const Args& args);
  std::string DoRequest(const Args& args);
  std::string DoLeader(const Args& args);

  // Parses "1".."N" or "all" (-> -1, only if allow_all). On failure sets *error.
  bool ParseBrokerId(const std::string& text, bool allow_all, int32_t* id,
                     std::string* error) const;

  rd_kafka_mock_cluster_t* mcluster_;  // Not owned; null after Close().
  const int broker_count_;
  std::mutex mu_;
  std::atomic<bool> shutdown_requested_{false};
};

}  // namespace kspool::devkafka
