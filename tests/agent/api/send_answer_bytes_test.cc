// The estimate charged to --max-waiting-memory for a WAIT_FOR_KAFKA request's answer
// before the request is taken (SpoolService::AnswerEstimateBytes): it covers the
// serialized answer, which is what an answer holds until written (the stream serializes
// it as soon as it completes), whatever the topic names and the numbers in it, discards'
// texts aside (charged when they come); and it does not overstate a typical answer by
// more than twice (it decides how many messages may wait).
#include <gtest/gtest.h>

#include <string>

#include "agent/api/spool_service.h"

namespace kspool::agent {
namespace {

// An answer of `n` outcomes, as the agent builds it (ToProto).
kspool::v1::SendResponse Answer(size_t n, const std::string& topic, bool discarded,
                                uint64_t first_seq) {
  kspool::v1::SendResponse reply;
  reply.set_receive_time_ms(1'700'000'000'000);
  for (size_t i = 0; i < n; ++i) {
    reply.add_sequence(first_seq + i);
    wal::Outcome o;
    o.seq = first_seq + i;
    o.topic = topic;
    o.time_ms = 1'700'000'000'000;
    if (discarded) {
      o.state = wal::Outcome::State::kDiscarded;  // partition and offset -1: 10 bytes each
    } else {
      o.state = wal::Outcome::State::kDelivered;
      o.partition = 1000;
      o.offset = int64_t{1} << 40;
    }
    ToProto(o, reply.add_deliveries());
  }
  return reply;
}

TEST(SendAnswerBytes, TheEstimateCoversTheSerializedAnswer) {
  for (size_t n : {1, 10, 1000, 10000}) {
    for (const std::string& topic : {std::string("t"), std::string(200, 'c')}) {
      for (bool discarded : {false, true}) {
        // Sequence numbers near 2^63: the longest varints.
        const kspool::v1::SendResponse reply =
            Answer(n, topic, discarded, (uint64_t{1} << 63) - 20'000);
        const uint64_t estimate = SpoolService::AnswerEstimateBytes(n, n * topic.size());
        EXPECT_GE(estimate, reply.ByteSizeLong())
            << n << " messages, topic of " << topic.size() << (discarded ? ", discarded" : "");
      }
    }
  }
}

TEST(SendAnswerBytes, ATypicalAnswerIsAtLeastHalfItsEstimate) {
  const kspool::v1::SendResponse reply = Answer(5000, "orders", false, 1'000'000'000);
  const uint64_t estimate = SpoolService::AnswerEstimateBytes(5000, 5000 * 6);
  EXPECT_LE(estimate, 2 * reply.ByteSizeLong()) << reply.ByteSizeLong() << " bytes";
}

}  // namespace
}  // namespace kspool::agent
