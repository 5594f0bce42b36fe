// What one record read back from Kafka says about who produced it: every record kspool
// produces carries the headers kspool.agent (the agent's id) and kspool.seq (the entry's
// sequence number, in decimal; KafkaProducer::Produce). PartitionScanner uses this to find
// an agent's own records after a restart.
// Thread safety: pure functions.
#pragma once

#include <librdkafka/rdkafka.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kspool::agent {

inline constexpr std::string_view kAgentHeader = "kspool.agent";
inline constexpr std::string_view kSeqHeader = "kspool.seq";

// A kspool.seq value: decimal digits only, fitting in 64 bits; nullopt otherwise (empty,
// a sign, spaces, other characters, too large).
std::optional<uint64_t> ParseKspoolSeq(std::string_view text);

enum class RecordOwner {
  kOther,            // no kspool.agent header, or another agent's id
  kOurs,             // this agent's id and a readable kspool.seq
  kOursMalformedSeq  // this agent's id, but kspool.seq missing or unreadable
};

struct RecordMark {
  RecordOwner owner = RecordOwner::kOther;
  uint64_t seq = 0;         // set when owner is kOurs
  size_t header_bytes = 0;  // names and values of all the record's headers
};

// Reads `msg`'s headers (a message without error). When a header appears more than once
// the first one counts: the producer writes its two headers before the client's, and the
// agent refuses client headers named kspool.* anyway.
RecordMark MarkRecord(const rd_kafka_message_t* msg, std::string_view agent_id);

}  // namespace kspool::agent
