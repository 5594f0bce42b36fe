#include "agent/request_validator.h"

#include <gtest/gtest.h>

namespace kspool::agent {
namespace {

kspool::v1::SendRequest OneMessage(const std::string& topic) {
  kspool::v1::SendRequest r;
  auto* m = r.add_messages();
  m->set_topic(topic);
  m->set_value("v");
  return r;
}

std::string Error(const kspool::v1::SendRequest& r, RequestLimits limits = {}) {
  absl::Status s = ValidateSendRequest(r, limits);
  if (s.ok()) return "OK";
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  return std::string(s.message());
}

TEST(RequestValidator, AcceptsAGoodRequest) { EXPECT_EQ(Error(OneMessage("a.b_c-1")), "OK"); }

TEST(RequestValidator, RejectsAnEmptyRequest) {
  EXPECT_EQ(Error(kspool::v1::SendRequest()), "request has no messages");
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
  kspool::v1::SendRequest r = OneMessage("ok");
  r.add_messages()->set_topic("ok");
  auto* bad = r.add_messages();
  bad->set_topic("ok");
  bad->set_partition(-2);
  EXPECT_EQ(Error(r), "message 2: partition: -2 is below -1");
}

TEST(RequestValidator, RejectsEmptyHeaderKey) {
  kspool::v1::SendRequest r = OneMessage("t");
  r.mutable_messages(0)->add_headers()->set_value("x");
  EXPECT_EQ(Error(r), "message 0: headers[0].key: is empty");
}

TEST(RequestValidator, EnforcesSizeLimits) {
  RequestLimits limits{100, 2};
  kspool::v1::SendRequest r = OneMessage("t");
  r.mutable_messages(0)->set_value(std::string(101, 'x'));
  EXPECT_NE(Error(r, limits).find("message 0: value: 101 bytes exceeds --max-message-bytes 100"),
            std::string::npos);
  r.mutable_messages(0)->set_value(std::string(60, 'x'));
  r.mutable_messages(0)->set_key(std::string(50, 'k'));
  EXPECT_NE(Error(r, limits).find("message 0: message: 110 bytes"), std::string::npos);
  kspool::v1::SendRequest many = OneMessage("t");
  many.add_messages()->set_topic("t");
  many.add_messages()->set_topic("t");
  EXPECT_NE(Error(many, limits).find("3 messages; --max-batch-messages is 2"), std::string::npos);
}

}  // namespace
}  // namespace kspool::agent
