// The delivery index's run codec (wal/delivery_record.h, FORMAT.md).
#include "wal/delivery_record.h"

#include <gtest/gtest.h>

#include "wal/coding.h"
#include "wal/keys.h"

namespace kspool::wal {
namespace {

DeliveryRun Discarded() {
  DeliveryRun r;
  r.first_seq = 1'000'000'007;
  r.count = 3;
  r.time_ms = 1'700'000'000'123;
  r.topic = "orders";
  r.reason = "msg_size_too_large";
  r.error = "Broker: Message size too large";
  return r;
}

DeliveryRun DeliveredRun() {
  DeliveryRun r;
  r.first_seq = 42;
  r.count = 10'000;
  r.time_ms = 1'700'000'000'999;
  r.partition = 2'147'483'647;
  r.first_offset = 9'000'000'000'000;
  r.topic = "t";
  return r;
}

void ExpectSame(const DeliveryRun& a, const DeliveryRun& b) {
  EXPECT_EQ(a.first_seq, b.first_seq);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.time_ms, b.time_ms);
  EXPECT_EQ(a.partition, b.partition);
  EXPECT_EQ(a.first_offset, b.first_offset);
  EXPECT_EQ(a.topic, b.topic);
  EXPECT_EQ(a.reason, b.reason);
  EXPECT_EQ(a.error, b.error);
}

TEST(DeliveryRunCodec, RoundTripKeepsEveryField) {
  for (const DeliveryRun& r : {Discarded(), DeliveredRun()}) {
    absl::StatusOr<DeliveryRun> back = DecodeDeliveryRun(keys::Seq(r.first_seq), EncodeDeliveryRun(r));
    ASSERT_TRUE(back.ok()) << back.status();
    ExpectSame(*back, r);
  }
}

TEST(DeliveryRunCodec, ARunOfDeliveriesToOnePartitionIsAFewBytes) {
  // 10,000 messages: version, count, state, time, partition, offset, topic, two empties.
  EXPECT_LE(EncodeDeliveryRun(DeliveredRun()).size(), 1u + 2 + 1 + 8 + 5 + 7 + 2 + 2);
}

TEST(DeliveryRunCodec, ExpandsOffsetsOnlyWhenKnown) {
  DeliveryRun d = DeliveredRun();
  EXPECT_EQ(d.At(42).offset, 9'000'000'000'000);
  EXPECT_EQ(d.At(10'041).offset, 9'000'000'009'999);
  EXPECT_EQ(d.At(50).state, Outcome::State::kDelivered);
  DeliveryRun x = Discarded();
  EXPECT_EQ(x.At(x.first_seq + 2).offset, -1) << "a discard has no offset, throughout";
  EXPECT_EQ(x.At(x.first_seq + 2).state, Outcome::State::kDiscarded);
  EXPECT_EQ(x.At(x.first_seq + 2).discard_reason, "msg_size_too_large");
  EXPECT_FALSE(x.Covers(x.first_seq + 3));
  EXPECT_FALSE(x.Covers(x.first_seq - 1));
}

TEST(DeliveryRunCodec, OnlyTheSameOutcomeAtTheNextNumberExtendsARun) {
  Outcome o = Outcome::Delivered(7, "t", 1, 70);
  DeliveryRun r = DeliveryRun::Of(o, 5);
  Outcome next = o;
  next.seq = 8;
  next.offset = 71;
  EXPECT_TRUE(r.Extends(next, 5));
  EXPECT_FALSE(r.Extends(next, 6)) << "another time";
  Outcome changed = next;
  changed.offset = 72;
  EXPECT_FALSE(r.Extends(changed, 5)) << "an offset gap";
  changed = next;
  changed.seq = 9;
  EXPECT_FALSE(r.Extends(changed, 5)) << "a sequence gap";
  changed = next;
  changed.partition = 2;
  EXPECT_FALSE(r.Extends(changed, 5));
  changed = next;
  changed.topic = "u";
  EXPECT_FALSE(r.Extends(changed, 5));
  changed = next;
  changed.state = Outcome::State::kDiscarded;
  changed.discard_reason = "expired";
  EXPECT_FALSE(r.Extends(changed, 5));
}

TEST(DeliveryRunCodec, RejectsBadInputWithDataLoss) {
  const DeliveryRun r = Discarded();
  const std::string key = keys::Seq(r.first_seq), good = EncodeDeliveryRun(r);
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_EQ(DecodeDeliveryRun(key, good.substr(0, n)).status().code(),
              absl::StatusCode::kDataLoss)
        << "truncated to " << n;
  }
  EXPECT_EQ(DecodeDeliveryRun(key, good + "x").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeDeliveryRun(key.substr(1), good).status().code(), absl::StatusCode::kDataLoss);
  // Field by field: count, state, partition; each otherwise well formed.
  auto with = [&](uint64_t count, uint8_t state, uint64_t partition_plus_one) {
    std::string v(1, '\x01');
    coding::PutVarint(&v, count);
    v.push_back(static_cast<char>(state));
    coding::PutFixed64(&v, 1);
    coding::PutVarint(&v, partition_plus_one);
    coding::PutVarint(&v, coding::ZigZag(-1));
    coding::PutBytes(&v, "t");
    coding::PutBytes(&v, state == 2 ? "expired" : "");
    coding::PutBytes(&v, "");
    return DecodeDeliveryRun(key, v).status();
  };
  EXPECT_TRUE(with(1, 1, 0).ok());
  EXPECT_TRUE(with(1, 2, 0).ok());
  EXPECT_EQ(with(0, 1, 0).code(), absl::StatusCode::kDataLoss) << "no messages";
  EXPECT_EQ(with(1, 3, 0).code(), absl::StatusCode::kDataLoss) << "unknown state";
  EXPECT_EQ(with(1, 1, 1ull << 32).code(), absl::StatusCode::kDataLoss) << "partition";
  std::string mismatch = good;
  mismatch[1 + 1] = 1;  // "delivered", with a discard reason (count 3 is one byte)
  EXPECT_EQ(DecodeDeliveryRun(key, mismatch).status().code(), absl::StatusCode::kDataLoss);
  std::string newer = good;
  newer[0] = 2;
  EXPECT_EQ(DecodeDeliveryRun(key, newer).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(DeliveryRunCodec, RejectsRunsThatOverflow) {
  DeliveryRun r = DeliveredRun();
  r.first_seq = UINT64_MAX - 5;
  EXPECT_EQ(DecodeDeliveryRun(keys::Seq(r.first_seq), EncodeDeliveryRun(r)).status().code(),
            absl::StatusCode::kDataLoss);
  r = DeliveredRun();
  r.first_offset = INT64_MAX - 5;
  EXPECT_EQ(DecodeDeliveryRun(keys::Seq(r.first_seq), EncodeDeliveryRun(r)).status().code(),
            absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace kspool::wal
