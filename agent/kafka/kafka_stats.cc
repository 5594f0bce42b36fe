#include "agent/kafka/kafka_stats.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace kspool::agent {
namespace {

// A SAX handler that follows the nesting depth: the top-level object is depth 1, the
// "brokers" object depth 2, each broker depth 3 (its own objects, such as "rtt" or
// "toppars", deeper). Returning false from a callback ends the parse: at the end of
// "brokers", so the topics after it are never read.
class BrokerScan : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t v) override { return Number(v); }
  bool number_unsigned(number_unsigned_t v) override {
    return Number(static_cast<int64_t>(std::min<uint64_t>(v, INT64_MAX)));
  }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t& v) override {
    if (InBroker() && key_ == "state") up_state_ = (v == "UP");
    return true;
  }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    ++depth_;
    if (depth_ == 2 && key_ == "brokers") in_brokers_ = true;
    if (in_brokers_ && depth_ == 3) {  // a broker begins
      nodeid_ = -1;
      up_state_ = false;
    }
    return true;
  }
  bool key(string_t& k) override {
    key_ = k;
    return true;
  }
  bool end_object() override {
    if (in_brokers_ && depth_ == 3 && nodeid_ >= 0 && up_state_) ++up_;
    if (in_brokers_ && depth_ == 2) {
      done_ = true;
      return false;  // "brokers" is read: stop before the topics
    }
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

  std::optional<int> result() const { return done_ ? std::optional<int>(up_) : std::nullopt; }

 private:
  bool InBroker() const { return in_brokers_ && depth_ == 3; }
  bool Number(int64_t v) {
    if (InBroker() && key_ == "nodeid") nodeid_ = v;
    return true;
  }

  int depth_ = 0;
  std::string key_;
  bool in_brokers_ = false, done_ = false;
  int64_t nodeid_ = -1;
  bool up_state_ = false;
  int up_ = 0;
};

}  // namespace

std::optional<int> BrokersUpInStats(const char* json, size_t len) {
  BrokerScan scan;
  // false when the scan stopped (its purpose) or the text is malformed: result() tells.
  (void)nlohmann::json::sax_parse(json, json + len, &scan, nlohmann::json::input_format_t::json,
                                  /*strict=*/false);
  return scan.result();
}

}  // namespace kspool::agent
