#include "tests/support/kafka_reader.h"

#include <librdkafka/rdkafka.h>

#include <cstring>
#include <stdexcept>

namespace kspool::testing {

std::vector<ConsumedRecord> ReadTopic(const std::string& brokers, const std::string& topic,
                                      size_t min_records, std::chrono::milliseconds timeout) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", brokers.c_str(), err, sizeof(err));
  rd_kafka_conf_set(conf, "group.id", "kspool-test-reader", err, sizeof(err));
  rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof(err));
  rd_kafka_conf_set(conf, "enable.partition.eof", "true", err, sizeof(err));
  rd_kafka_conf_set(conf, "log_level", "3", err, sizeof(err));
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  if (!rk) throw std::runtime_error(std::string("consumer: ") + err);
  rd_kafka_poll_set_consumer(rk);

  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  if (rd_kafka_metadata(rk, 0, rkt, &md, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR || md->topic_cnt < 1) {
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    throw std::runtime_error("no metadata for topic " + topic);
  }
  int partitions = md->topics[0].partition_cnt;
  rd_kafka_metadata_destroy(md);
  rd_kafka_topic_destroy(rkt);
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p) {
    rd_kafka_topic_partition_list_add(parts, topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  }
  rd_kafka_assign(rk, parts);
  rd_kafka_topic_partition_list_destroy(parts);

  std::vector<ConsumedRecord> out;
  std::map<int32_t, bool> at_eof;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
    if (!m) continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      at_eof[m->partition] = true;
    } else if (!m->err) {
      at_eof[m->partition] = false;
      ConsumedRecord r;
      r.partition = m->partition;
      r.offset = m->offset;
      if (m->key) r.key.emplace(static_cast<const char*>(m->key), m->key_len);
      if (m->payload) r.value.assign(static_cast<const char*>(m->payload), m->len);
      r.timestamp_ms = rd_kafka_message_timestamp(m, nullptr);
      rd_kafka_headers_t* hdrs = nullptr;
      if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const char* name;
        const void* val;
        size_t size;
        for (size_t i = 0; rd_kafka_header_get_all(hdrs, i, &name, &val, &size) == 0; ++i) {
          std::string v(static_cast<const char*>(val), size);
          if (std::strcmp(name, "kspool.seq") == 0) r.seq = std::stoull(v);
          if (std::strcmp(name, "kspool.agent") == 0) r.agent = v;
          r.headers.emplace_back(name, v);
        }
      }
      out.push_back(std::move(r));
    }
    rd_kafka_message_destroy(m);
    bool all_eof = static_cast<int>(at_eof.size()) == partitions;
    for (auto& [p, eof] : at_eof) all_eof = all_eof && eof;
    if (out.size() >= min_records && all_eof) break;
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return out;
}

}  // namespace kspool::testing
