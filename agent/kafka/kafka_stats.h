// Reads what the agent needs from librdkafka's statistics JSON (statistics.interval.ms):
// how many brokers the client holds a connection to. The JSON lists every topic and
// partition the client knows after its "brokers" object, megabytes a second with
// thousands of topics; parsing all of it on the thread that serves delivery reports
// slowed every delivery (8,000 topic names: seconds per statistics). The scan reads
// only up to the end of "brokers" and stops there.
// Thread safety: a pure function.
#pragma once

#include <cstddef>
#include <optional>

namespace kspool::agent {

// Brokers whose "nodeid" is >= 0 and "state" is "UP" (bootstrap entries have nodeid -1);
// nullopt when the text has no "brokers" object before it ends or turns malformed.
std::optional<int> BrokersUpInStats(const char* json, size_t len);

}  // namespace kspool::agent
