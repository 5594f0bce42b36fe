#include "tests/agent/kafka/scan_test_records.h"

#include <librdkafka/rdkafka.h>

#include <chrono>

namespace kspool::testing {

TestRecord Ours(uint64_t seq, std::string value) {
  return With({{"kspool.agent", kAgent}, {"kspool.seq", std::to_string(seq)}}, std::move(value));
}

TestRecord With(std::vector<std::pair<std::string, std::string>> headers, std::string value) {
  TestRecord r;
  r.value = std::move(value);
  r.headers = std::move(headers);
  return r;
}

namespace {
void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* offsets = static_cast<std::vector<int64_t>*>(opaque);
  const size_t i = reinterpret_cast<uintptr_t>(m->_private);
  (*offsets)[i] = m->err ? -1 : m->offset;
}
}  // namespace

std::vector<int64_t> ProduceRecords(const std::string& brokers, const std::string& topic,
                                    int32_t partition, const std::vector<TestRecord>& records,
                                    bool separate_batches) {
  std::vector<int64_t> offsets(records.size(), -1);
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", brokers.c_str(), err, sizeof(err));
  rd_kafka_conf_set(conf, "linger.ms", "5", err, sizeof(err));
  rd_kafka_conf_set(conf, "enable.idempotence", "true", err, sizeof(err));
  rd_kafka_conf_set(conf, "log_level", "3", err, sizeof(err));
  rd_kafka_conf_set_opaque(conf, &offsets);
  rd_kafka_conf_set_dr_msg_cb(conf, &OnDelivery);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (!rk) {
    ADD_FAILURE() << err;
    return offsets;
  }
  for (size_t i = 0; i < records.size(); ++i) {
    const TestRecord& r = records[i];
    rd_kafka_headers_t* hdrs = rd_kafka_headers_new(r.headers.size());
    for (const auto& [k, v] : r.headers) {
      rd_kafka_header_add(hdrs, k.data(), k.size(), v.data(), v.size());
    }
    const rd_kafka_resp_err_t e = rd_kafka_producev(
        rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_VALUE(const_cast<char*>(r.value.data()), r.value.size()),
        RD_KAFKA_V_TIMESTAMP(r.timestamp_ms), RD_KAFKA_V_HEADERS(hdrs),
        RD_KAFKA_V_OPAQUE(reinterpret_cast<void*>(static_cast<uintptr_t>(i))), RD_KAFKA_V_END);
    if (e) {
      rd_kafka_headers_destroy(hdrs);
      ADD_FAILURE() << "produce: " << rd_kafka_err2str(e);
      break;
    }
    if (separate_batches) rd_kafka_flush(rk, 20000);
  }
  rd_kafka_flush(rk, 20000);
  rd_kafka_destroy(rk);
  for (size_t i = 0; i < offsets.size(); ++i) {
    if (offsets[i] < 0) ADD_FAILURE() << "record " << i << " not delivered";
  }
  return offsets;
}

void ScannerTest::StartKafka(const std::vector<std::string>& topics) {
  kafka_ = std::make_unique<DevKafka>(dir_.path(), 3, topics);
}

std::unique_ptr<agent::PartitionScanner> ScannerTest::NewScanner(
    const std::vector<std::string>& options) {
  auto s = agent::PartitionScanner::Create(kafka_->bootstrap(), options);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(s).value() : nullptr;
}

}  // namespace kspool::testing
