#include "agent/api/protobuf_log.h"

#include <google/protobuf/stubs/logging.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <sstream>

#include "kspool/v1/spool.pb.h"

namespace kspool::agent {
namespace {

// Captures spdlog's default logger output for the test's lifetime.
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("captured", sink));
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  std::string text() const { return out_.str(); }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::ostringstream out_;
};

size_t Lines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

TEST(ProtobufLog, LibprotobufErrorsGoThroughSpdlogRateLimited) {
  CapturedLog log;
  google::protobuf::LogHandler* previous = google::protobuf::SetLogHandler(nullptr);
  RouteProtobufLogsToSpdlog();
  // A proto3 `string` field with invalid UTF-8: libprotobuf logs an ERROR per parse.
  kspool::v1::Header bad;
  std::string bytes = std::string("\x0a\x02\xff\xfe", 4);
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(bad.ParseFromString(bytes));
  google::protobuf::SetLogHandler(previous);
  const std::string text = log.text();
  EXPECT_NE(text.find("libprotobuf"), std::string::npos) << text;
  EXPECT_NE(text.find("invalid UTF-8"), std::string::npos) << text;
  EXPECT_LE(Lines(text), 10u) << text;
}

}  // namespace
}  // namespace kspool::agent
