// What the reconciliation tests check against a real agent and kspool-devkafka: every
// acknowledged message in Kafka exactly once (a consumer over every partition), and
// GetDeliveryStatus naming that copy; the agent's log lines about reconciliation.
#pragma once

#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/agent_process.h"
#include "tests/support/kafka_reader.h"

namespace kspool::testing {

struct Copy {
  std::string topic;
  int32_t partition;
  int64_t offset;
};

// Every copy of each sequence number in `topics`, as the consumer finds them.
inline std::map<uint64_t, std::vector<Copy>> ReadCopies(const std::string& brokers,
                                                 const std::vector<std::string>& topics,
                                                 size_t expected) {
  std::map<uint64_t, std::vector<Copy>> copies;
  for (const std::string& t : topics) {
    for (const ConsumedRecord& r :
         ReadTopic(brokers, t, expected / topics.size() / 2,
                                    std::chrono::seconds(20))) {
      copies[r.seq].push_back({t, r.partition, r.offset});
    }
  }
  return copies;
}

// Checks every acked seq is in Kafka exactly once and GetDeliveryStatus names that copy.
// Returns the number of duplicates.
inline size_t CheckExactlyOnce(AgentProcess& agent, const std::map<uint64_t, std::string>& acked,
                        const std::map<uint64_t, std::vector<Copy>>& copies) {
  size_t lost = 0, duplicates = 0;
  std::vector<uint64_t> seqs;
  for (const auto& [seq, topic] : acked) {
    auto c = copies.find(seq);
    if (c == copies.end()) {
      ++lost;
      continue;
    }
    duplicates += c->second.size() - 1;
    if (c->second.size() > 1) {
      std::string where;
      for (const Copy& x : c->second) {
        where += " " + x.topic + "[" + std::to_string(x.partition) + "]@" + std::to_string(x.offset);
      }
      std::printf("duplicate: seq %llu at%s\n", static_cast<unsigned long long>(seq), where.c_str());
    }
    seqs.push_back(seq);
  }
  EXPECT_EQ(lost, 0u) << "acked messages missing from Kafka";
  for (size_t i = 0; i < seqs.size(); i += 5000) {
    kspool::v1::GetDeliveryStatusRequest req;
    for (size_t k = i; k < std::min(seqs.size(), i + 5000); ++k) req.add_sequences(seqs[k]);
    kspool::v1::GetDeliveryStatusResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::Status s = agent.spool().GetDeliveryStatus(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    if (!s.ok()) break;
    for (const kspool::v1::DeliveryStatus& st : resp.statuses()) {
      const Copy& c = copies.at(st.sequence()).back();
      const std::vector<Copy>& all = copies.at(st.sequence());
      EXPECT_EQ(st.state(), kspool::v1::DeliveryStatus::DELIVERED) << st.sequence();
      const bool names_a_copy = std::any_of(all.begin(), all.end(), [&](const Copy& x) {
        return x.topic == st.topic() && x.partition == st.partition() && x.offset == st.offset();
      });
      EXPECT_TRUE(names_a_copy) << "seq " << st.sequence() << " status says " << st.topic() << "["
                                << st.partition() << "]@" << st.offset() << ", Kafka has it at "
                                << c.topic << "[" << c.partition << "]@" << c.offset;
    }
  }
  return duplicates;
}

inline std::string ReadLog(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The agent's lines about reconciliation, for a failure's report.
inline std::string ReconcileLines(const std::string& path) {
  std::istringstream in(ReadLog(path));
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.find("reconcile") != std::string::npos || line.find("wal: opened") != std::string::npos) {
      out += line + "\n";
    }
  }
  return out;
}

}  // namespace kspool::testing
