// The largest message the agent accepts, derived from the size Kafka accepts, so that an
// acknowledged message is never refused by librdkafka or the broker for its size (it
// would end in the dead letters as msg_size_too_large).
//
// A message the agent accepts is counted as key + value + client header keys and values
// (RequestLimits, agent/validate/request_validator.cc). What Kafka counts against its limit
// (librdkafka's message.max.bytes, default 1,000,000; the broker's message.max.bytes and
// the topic's max.message.bytes, default 1,048,588) is the record batch holding it:
//
//   record batch header (v2), once per batch ....................................  61
//     baseOffset 8, batchLength 4, partitionLeaderEpoch 4, magic 1, crc 4,
//     attributes 2, lastOffsetDelta 4, baseTimestamp 8, maxTimestamp 8,
//     producerId 8, producerEpoch 2, baseSequence 4, recordCount 4
//   record framing: librdkafka's worst case (RD_KAFKAP_MESSAGE_V2_MAX_OVERHEAD) ...  36
//     length varint 5, attributes 1, timestampDelta varint 10, offsetDelta varint 5,
//     keyLength varint 5, valueLength varint 5, headerCount varint 5
//   the agent's headers (agent/kafka/kafka_producer.cc) ...............................  62
//     kspool.agent: keyLength varint 1 + "kspool.agent" 12
//                   + valueLength varint 1 + agent id 16 (16 hex digits)   = 30
//     kspool.seq:   keyLength varint 1 + "kspool.seq" 10
//                   + valueLength varint 1 + decimal uint64, at most 20    = 32
//   client headers: keyLength + valueLength varints (zigzag; any length below
//     2^20 takes at most 3 bytes each), 6 bytes for each of kHeadersBudgeted .... 384
//                                                                              -----
//                                                                                543
// So with librdkafka's default message.max.bytes of 1,000,000 the default
// --max-message-bytes is 1,000,000 - 543 = 999,457: that message, with its headers,
// in a batch of its own, is at most 1,000,000 bytes, which both librdkafka's own check
// (36 + key + value + serialized headers, without the batch header) and the broker's
// (the whole batch) accept. Compression never makes a batch larger: librdkafka sends
// it uncompressed when compressing does not shrink it.
#pragma once

#include <cstdint>

namespace kspool::agent {

// Client headers the arithmetic makes room for: --max-headers' default. A message with
// more headers than this (if --max-headers allows it) may need up to 6 more bytes each.
inline constexpr uint64_t kHeadersBudgeted = 64;

inline constexpr uint64_t kKafkaBatchHeaderBytes = 61;
inline constexpr uint64_t kKafkaRecordFramingBytes = 5 + 1 + 10 + 5 + 5 + 5 + 5;
inline constexpr uint64_t kAgentHeaderBytes = (1 + 12 + 1 + 16) + (1 + 10 + 1 + 20);
inline constexpr uint64_t kClientHeaderFramingBytes = kHeadersBudgeted * (3 + 3);
// Everything Kafka counts beyond key + value + client header keys and values.
inline constexpr uint64_t kKafkaMessageOverheadBytes =
    kKafkaBatchHeaderBytes + kKafkaRecordFramingBytes + kAgentHeaderBytes +
    kClientHeaderFramingBytes;
static_assert(kKafkaMessageOverheadBytes == 543);

// The --max-message-bytes that fits a Kafka limit of `kafka_max_bytes`.
constexpr uint64_t MaxMessageBytesFor(uint64_t kafka_max_bytes) {
  return kafka_max_bytes - kKafkaMessageOverheadBytes;
}

// librdkafka's default message.max.bytes.
inline constexpr uint64_t kLibrdkafkaDefaultMessageMaxBytes = 1'000'000;
// The largest message.max.bytes librdkafka takes.
inline constexpr uint64_t kLibrdkafkaLargestMessageMaxBytes = 1'000'000'000;

inline constexpr uint64_t kDefaultMaxMessageBytes =
    MaxMessageBytesFor(kLibrdkafkaDefaultMessageMaxBytes);  // 999,457
// The flag's upper bound: no librdkafka setting could carry a larger message. It also
// keeps the gRPC receive limit (2 x this + 64 MiB, agent.cc) below INT32_MAX.
inline constexpr uint64_t kLargestMaxMessageBytes =
    MaxMessageBytesFor(kLibrdkafkaLargestMessageMaxBytes);  // 999,999,457
static_assert(kLargestMaxMessageBytes * 2 + (64 << 20) < INT32_MAX);

}  // namespace kspool::agent
