#include "agent/validate/request_validator.h"

#include <gtest/gtest.h>

namespace kspool::agent {
namespace {

using kspool::v1::wire::SendRequest;

constexpr int64_t kNow = 1'700'000'000'000;  // the agent's wall clock in these tests

SendRequest OneMessage(const std::string& topic) {
  SendRequest r;
  auto* m = r.add_messages();
  m->set_topic(topic);
  m->set_value("v");
  return r;
}

std::string Error(const SendRequest& r, RequestLimits limits = {}) {
  absl::Status s = ValidateSendRequest(r, limits, kNow);
  if (s.ok()) return "OK";
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  return std::string(s.message());
}

// A request of three good messages whose message 2 gets `edit`.
template <typename Edit>
SendRequest ThirdMessage(Edit edit) {
  SendRequest r = OneMessage("ok");
  *r.add_messages() = r.messages(0);
  *r.add_messages() = r.messages(0);
  edit(r.mutable_messages(2));
  return r;
}

TEST(RequestValidator, AcceptsAGoodRequest) { EXPECT_EQ(Error(OneMessage("a.b_c-1")), "OK"); }

TEST(RequestValidator, RejectsAnEmptyRequest) {
  EXPECT_EQ(Error(SendRequest()), "request has no messages");
}

TEST(RequestValidator, TopicNamesFollowKafkaRules) {
  EXPECT_EQ(Error(OneMessage(std::string(249, 'a'))), "OK");
  EXPECT_NE(Error(OneMessage("")).find("message 0: topic: topic is empty"), std::string::npos);
  EXPECT_NE(Error(OneMessage(std::string(250, 'a'))).find("at most 249"), std::string::npos);
  EXPECT_NE(Error(OneMessage(".")).find("message 0: topic"), std::string::npos);
  EXPECT_NE(Error(OneMessage("..")).find("message 0: topic"), std::string::npos);
  EXPECT_NE(Error(OneMessage("a/b")).find("outside [a-zA-Z0-9._-]"), std::string::npos);
  EXPECT_NE(Error(OneMessage("a b")).find("0x20"), std::string::npos);
}

TEST(RequestValidator, NamesTheIndexOfTheBadMessage) {
  SendRequest r = ThirdMessage([](auto* m) { m->set_partition(-2); });
  EXPECT_EQ(Error(r), "message 2: partition: -2 is below -1");
}

TEST(RequestValidator, NamesAnInvalidUtf8Topic) {
  SendRequest r = ThirdMessage([](auto* m) { m->set_topic("t\xff\xfe"); });
  EXPECT_EQ(Error(r), "message 2: topic: not valid UTF-8");
}

TEST(RequestValidator, NamesAHeaderKeyThatIsNotValidUtf8) {
  SendRequest r = ThirdMessage([](auto* m) {
    m->add_headers()->set_key("fine");
    m->add_headers()->set_key("bad\xc3(");  // a truncated two-byte sequence
  });
  EXPECT_EQ(Error(r), "message 2: headers[1].key: not valid UTF-8");
}

TEST(RequestValidator, HeaderValuesAreBytesAndNeedNotBeUtf8) {
  SendRequest r = OneMessage("t");
  auto* h = r.mutable_messages(0)->add_headers();
  h->set_key("k");
  h->set_value("\xff\x00\xfe");
  EXPECT_EQ(Error(r), "OK");
}

TEST(RequestValidator, RefusesAReservedHeaderNamingMessageHeaderAndKey) {
  SendRequest r = ThirdMessage([](auto* m) {
    m->add_headers()->set_key("trace");
    m->add_headers()->set_key("kspool.seq");
  });
  EXPECT_EQ(Error(r),
            "message 2: headers[1].key: \"kspool.seq\": headers starting with \"kspool.\" are "
            "reserved for the agent");
}

TEST(RequestValidator, ReservedPrefixIsExactlyKspoolDot) {
  SendRequest r = OneMessage("t");
  r.mutable_messages(0)->add_headers()->set_key("kspool");     // no dot
  r.mutable_messages(0)->add_headers()->set_key("kspoolx.a");  // another prefix
  r.mutable_messages(0)->add_headers()->set_key("KSPOOL.seq");  // keys are case-sensitive
  EXPECT_EQ(Error(r), "OK");
}

TEST(RequestValidator, RefusesATimestampTooFarInTheFuture) {
  RequestLimits limits;
  limits.max_future_timestamp_ms = 60'000;
  SendRequest ok = ThirdMessage([](auto* m) { m->set_timestamp_ms(kNow + 60'000); });
  EXPECT_EQ(Error(ok, limits), "OK");
  SendRequest r = ThirdMessage([](auto* m) { m->set_timestamp_ms(kNow + 60'001); });
  EXPECT_EQ(Error(r, limits),
            "message 2: timestamp_ms: 1700000060001 is more than --max-future-timestamp (60000 "
            "ms) ahead of the agent's clock (1700000000000)");
  SendRequest max = ThirdMessage([](auto* m) { m->set_timestamp_ms(INT64_MAX); });
  EXPECT_NE(Error(max, limits).find("message 2: timestamp_ms: 9223372036854775807 is more"),
            std::string::npos);
}

TEST(RequestValidator, RefusesANegativeTimestamp) {
  SendRequest r = ThirdMessage([](auto* m) { m->set_timestamp_ms(-1); });
  EXPECT_EQ(Error(r), "message 2: timestamp_ms: -1 is before the Unix epoch");
  SendRequest min = ThirdMessage([](auto* m) { m->set_timestamp_ms(INT64_MIN); });
  EXPECT_NE(Error(min).find("message 2: timestamp_ms: -9223372036854775808"), std::string::npos);
}

TEST(RequestValidator, AcceptsAnExplicitZeroTimestamp) {
  SendRequest r = OneMessage("t");
  r.mutable_messages(0)->set_timestamp_ms(0);
  ASSERT_TRUE(r.messages(0).has_timestamp_ms());
  EXPECT_EQ(Error(r), "OK");
}

TEST(RequestValidator, RefusesTooManyHeaders) {
  RequestLimits limits;
  limits.max_headers = 3;
  SendRequest ok = ThirdMessage([](auto* m) {
    for (int h = 0; h < 3; ++h) m->add_headers()->set_key("h");
  });
  EXPECT_EQ(Error(ok, limits), "OK");
  SendRequest r = ThirdMessage([](auto* m) {
    for (int h = 0; h < 4; ++h) m->add_headers()->set_key("h");
  });
  EXPECT_EQ(Error(r, limits), "message 2: headers: 4 headers; --max-headers is 3");
}

TEST(RequestValidator, RejectsEmptyHeaderKey) {
  SendRequest r = OneMessage("t");
  r.mutable_messages(0)->add_headers()->set_value("x");
  EXPECT_EQ(Error(r), "message 0: headers[0].key: is empty");
}

TEST(RequestValidator, EnforcesSizeLimits) {
  RequestLimits limits{100, 2};
  SendRequest r = OneMessage("t");
  r.mutable_messages(0)->set_value(std::string(101, 'x'));
  EXPECT_NE(Error(r, limits).find("message 0: value: 101 bytes exceeds --max-message-bytes 100"),
            std::string::npos);
  r.mutable_messages(0)->set_value(std::string(60, 'x'));
  r.mutable_messages(0)->set_key(std::string(50, 'k'));
  EXPECT_NE(Error(r, limits).find("message 0: message: 110 bytes"), std::string::npos);
  SendRequest many = OneMessage("t");
  many.add_messages()->set_topic("t");
  many.add_messages()->set_topic("t");
  EXPECT_NE(Error(many, limits).find("3 messages; --max-batch-messages is 2"), std::string::npos);
}

}  // namespace
}  // namespace kspool::agent
