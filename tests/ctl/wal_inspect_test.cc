// kspoolctl's reading commands on the WAL of a real agent that was SIGKILLed while every
// broker was down (so every entry is still pending): golden text, JSON parsed back, a
// copy with a corrupt record, and what it refuses. Reading changes nothing on disk.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "rocksdb/db.h"
#include "tests/ctl/ctl_runner.h"
#include "tests/ctl/dir_snapshot.h"
#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/temp_dir.h"
#include "wal/settled_bits_merge.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::CtlResult;
using kspool::testing::DevKafka;
using kspool::testing::DirSnapshot;
using kspool::testing::ExpectGolden;
using kspool::testing::Normalize;
using kspool::testing::RunCtl;
using kspool::testing::JsonLines;
using nlohmann::json;
using namespace std::chrono_literals;

const std::string kBinary("\x00\x01\x02\xfe\xff" "binary", 11);
const std::string kLongText =
    "a long value that does not fit in the preview column of wal list, so it is cut short; " +
    std::string(200, 'z');

// Runs `fn` on a WAL's log column family with raw RocksDB, behind kspool's back.
void WithRawRocks(const std::string& dir,
                  const std::function<void(rocksdb::DB*, std::vector<rocksdb::ColumnFamilyHandle*>&)>& fn) {
  rocksdb::DB* db;
  std::vector<rocksdb::ColumnFamilyHandle*> cfh;
  rocksdb::ColumnFamilyOptions meta;
  meta.merge_operator = wal::SettledBitsMerge();  // settled_in/ operands
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
      {"default", {}}, {"log", {}}, {"meta", meta}, {"dead", {}}, {"delivery", {}}};
  ASSERT_TRUE(rocksdb::DB::Open(rocksdb::DBOptions(), dir, cfs, &cfh, &db).ok());
  fn(db, cfh);
  for (auto* c : cfh) db->DestroyColumnFamilyHandle(c);
  delete db;
}

std::string SeqKey(uint64_t seq) {
  std::string key(8, '\0');
  for (int i = 0; i < 8; ++i) key[i] = static_cast<char>(seq >> (8 * (7 - i)));
  return key;
}

class CrashedWalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DevKafka kafka(tmp_.path(), 1, {"orders:2", "audit:1"});
    ASSERT_EQ(kafka.Command("broker down all"), "OK");
    AgentProcess agent(wal_, tmp_.sub("agent.log"), kafka.bootstrap());
    agent_id_ = agent.WalStats().agent_id();
    // Seq 1, through kspoolctl itself.
    CtlResult sent = Ctl({"send", "--agent", agent.address(), "--topic", "orders", "--key", "order-17",
                          "--header", "trace-id=abc123", "--header", "origin=checkout", R"({"total":3})"});
    ASSERT_EQ(sent.exit_code, 0) << sent.err;
    auto send = [&](const std::string& topic, std::optional<std::string> key, const std::string& value,
                    int partition = -1, int64_t client_ts = 0) {
      kspool::v1::SendRequest req;
      auto* m = req.add_messages();
      m->set_topic(topic);
      m->set_value(value);
      if (key) m->set_key(*key);
      if (partition >= 0) m->set_partition(partition);
      if (client_ts) m->set_timestamp_ms(client_ts);
      kspool::v1::SendResponse resp;
      grpc::Status s = agent.Send(req, &resp);
      ASSERT_TRUE(s.ok()) << s.error_message();
    };
    send("orders", "order-18", R"({"total":5})", -1, 1'700'000'000'000);  // seq 2
    send("audit", std::nullopt, "user 42 logged in\nfrom 10.0.0.7");    // seq 3
    send("audit", "", kBinary, 0);                                        // seq 4
    send("orders", "order-19", kLongText);                                // seq 5
    // Both topics' commit points are saved (deterministic output), then the crash.
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (agent.CommitPoint().topics_size() < 2 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(20ms);
    }
    ASSERT_EQ(agent.CommitPoint().topics_size(), 2);
    agent.process().Signal(SIGKILL);
    ASSERT_TRUE(agent.process().Wait(10s).has_value());
  }

  CtlResult Ctl(const std::vector<std::string>& args) { return RunCtl(args, tmp_.path()); }
  // Output with the run's variable parts replaced.
  std::string Stable(const CtlResult& r, const std::string& dir) {
    return Normalize(r.out, {{dir, "<wal>"}, {agent_id_, "<agent-id>"}});
  }
  // Flips a bit in the last byte of the record holding seq 2 (a batch record of its
  // Send's one message: its key is the last number it holds, then the count), in a copy
  // of the WAL.
  std::string CorruptCopy() {
    const std::string copy = tmp_.sub("corrupt");
    std::filesystem::copy(wal_, copy, std::filesystem::copy_options::recursive);
    WithRawRocks(copy, [](rocksdb::DB* db, std::vector<rocksdb::ColumnFamilyHandle*>& cfh) {
      std::unique_ptr<rocksdb::Iterator> it(db->NewIterator({}, cfh[1]));
      it->Seek(SeqKey(2));
      ASSERT_TRUE(it->Valid()) << it->status().ToString();
      const std::string key = it->key().ToString();
      ASSERT_EQ(key, SeqKey(2) + std::string("\0\0\0\1", 4)) << "not seq 2's own record";
      std::string v = it->value().ToString();
      it.reset();
      v[v.size() - 1] ^= 0x20;
      ASSERT_TRUE(db->Put({}, cfh[1], key, v).ok());
    });
    return copy;
  }

  kspool::testing::TempDir tmp_;
  const std::string wal_ = tmp_.sub("wal");
  std::string agent_id_;
};

TEST_F(CrashedWalTest, TextOutputMatchesGoldenAndTheWalIsUnchanged) {
  const auto before = DirSnapshot(wal_);
  struct Case {
    std::string golden;
    std::vector<std::string> args;
  };
  const std::vector<Case> cases = {
      {"wal_stats", {"wal", "stats", wal_}},
      {"wal_list", {"wal", "list", wal_}},
      {"wal_list_filtered", {"wal", "list", wal_, "--topic", "orders", "--from", "2", "--limit", "1"}},
      {"wal_show_headers", {"wal", "show", wal_, "1"}},
      {"wal_show_client_time", {"wal", "show", wal_, "2"}},
      {"wal_show_multiline", {"wal", "show", wal_, "3"}},
      {"wal_show_binary", {"wal", "show", wal_, "4"}},
      {"wal_show_base64", {"wal", "show", wal_, "4", "--value-format", "base64"}},
      {"wal_verify", {"wal", "verify", wal_}},
      {"dead_list_empty", {"dead", "list", wal_}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.golden);
    CtlResult r = Ctl(c.args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    ExpectGolden(c.golden, Stable(r, wal_));
  }
  EXPECT_EQ(DirSnapshot(wal_), before) << "reading changed the WAL directory";
}

TEST_F(CrashedWalTest, JsonOutputParsesBack) {
  CtlResult r = Ctl({"--json", "wal", "stats", wal_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json stats = json::parse(r.out);
  EXPECT_EQ(stats["agent_id"], agent_id_);
  EXPECT_EQ(stats["entries"], 5);
  EXPECT_EQ(stats["next_seq"], 6);
  EXPECT_EQ(stats["oldest"]["seq"], 1);
  EXPECT_EQ(stats["newest"]["seq"], 5);
  EXPECT_EQ(stats["topics"]["orders"]["pending"]["count"], 3);
  EXPECT_EQ(stats["topics"]["audit"]["pending"]["count"], 2);
  EXPECT_EQ(stats["topics"]["orders"]["delivered"]["count"], 0);
  EXPECT_EQ(stats["dead_letters"]["count"], 0);
  EXPECT_GT(stats["commit_point_ms"].get<int64_t>(), 0);

  // --json may also follow the command.
  r = Ctl({"wal", "dump", wal_, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<json> dump = JsonLines(r.out);
  ASSERT_EQ(dump.size(), 5u);
  for (size_t i = 0; i < dump.size(); ++i) EXPECT_EQ(dump[i]["seq"], i + 1);
  EXPECT_EQ(dump[0]["key"], "order-17");
  EXPECT_EQ(dump[0]["value"], R"({"total":3})");
  EXPECT_EQ(dump[0]["value_encoding"], "text");
  ASSERT_EQ(dump[0]["headers"].size(), 2u);
  EXPECT_EQ(dump[0]["headers"][0]["key"], "trace-id");
  EXPECT_EQ(dump[0]["headers"][0]["value"], "abc123");
  EXPECT_EQ(dump[0]["headers"][1]["key"], "origin");
  EXPECT_EQ(dump[1]["client_timestamp_ms"], 1'700'000'000'000);
  EXPECT_TRUE(dump[2]["key"].is_null());
  EXPECT_EQ(dump[2]["value"], "user 42 logged in\nfrom 10.0.0.7");
  EXPECT_EQ(dump[3]["key"], "");
  EXPECT_EQ(dump[3]["partition"], 0);
  EXPECT_TRUE(dump[2]["partition"].is_null());
  EXPECT_EQ(dump[3]["value_encoding"], "hex");
  EXPECT_EQ(dump[3]["value"], "000102feff62696e617279");
  EXPECT_EQ(dump[4]["value"], kLongText);
  EXPECT_LE(dump[0]["receive_time_ms"].get<int64_t>(), dump[4]["receive_time_ms"].get<int64_t>());

  r = Ctl({"--json", "wal", "dump", wal_, "--value-format", "base64", "--topic", "audit"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  dump = JsonLines(r.out);
  ASSERT_EQ(dump.size(), 2u);
  EXPECT_EQ(dump[1]["value"], "AAEC/v9iaW5hcnk=");
  EXPECT_EQ(dump[1]["value_encoding"], "base64");

  r = Ctl({"--json", "wal", "list", wal_, "--topic", "orders"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<json> list = JsonLines(r.out);
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[2]["seq"], 5);
  EXPECT_EQ(list[2]["value_size"], kLongText.size());
  EXPECT_FALSE(list[2].contains("value")) << "a listing has no values; dump has";

  r = Ctl({"--json", "wal", "show", wal_, "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["value"], "000102feff62696e617279");

  r = Ctl({"--json", "wal", "verify", wal_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json verify = json::parse(r.out);
  EXPECT_EQ(verify["ok"], true);
  EXPECT_EQ(verify["entries"], 5);
}

// A bitmap whose record is gone (what the settle's all-settled shortcut once left
// behind) and one of the wrong length are reported, by key.
TEST_F(CrashedWalTest, OrphanAndMalformedBitmapsAreReported) {
  const std::string copy = tmp_.sub("bitmaps");
  std::filesystem::copy(wal_, copy, std::filesystem::copy_options::recursive);
  auto bitmap_key = [](uint64_t last_seq, uint32_t count) {
    std::string log_key = SeqKey(last_seq);
    for (int i = 3; i >= 0; --i) log_key.push_back(static_cast<char>(count >> (8 * i)));
    static constexpr char kHex[] = "0123456789abcdef";
    std::string k = "settled_in/";
    for (char c : log_key) {
      k += kHex[static_cast<uint8_t>(c) >> 4];
      k += kHex[static_cast<uint8_t>(c) & 0xf];
    }
    return k;
  };
  WithRawRocks(copy, [&](rocksdb::DB* db, std::vector<rocksdb::ColumnFamilyHandle*>& cfh) {
    rocksdb::ColumnFamilyHandle* meta = nullptr;
    for (auto* h : cfh) {
      if (h->GetName() == "meta") meta = h;
    }
    ASSERT_NE(meta, nullptr);
    ASSERT_TRUE(db->Put({}, meta, bitmap_key(100, 2), std::string(1, '\x01')).ok());  // no record
    ASSERT_TRUE(db->Put({}, meta, bitmap_key(2, 1), std::string(3, '\x01')).ok());    // 3 bytes for 1
  });
  CtlResult r = Ctl({"--json", "wal", "verify", copy});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  json verify = json::parse(r.out);
  EXPECT_EQ(verify["bitmaps"], 2);
  EXPECT_EQ(verify["bitmap_problems"]["count"], 2);
  const std::string problems = verify["bitmap_problems"]["first"].dump();
  EXPECT_NE(problems.find("orphan"), std::string::npos) << problems;
  EXPECT_NE(problems.find("3 bytes for a record of 1"), std::string::npos) << problems;
}

TEST_F(CrashedWalTest, CorruptRecordIsReportedAndTheRestStillLists) {
  const std::string copy = CorruptCopy();
  CtlResult verify = Ctl({"wal", "verify", copy});
  EXPECT_EQ(verify.exit_code, 3) << verify.err;
  ExpectGolden("corrupt_verify", Stable(verify, copy));

  CtlResult list = Ctl({"wal", "list", copy});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  ExpectGolden("corrupt_list", Stable(list, copy));

  CtlResult show = Ctl({"wal", "show", copy, "2"});
  EXPECT_EQ(show.exit_code, 3) << show.err;
  // The first 16 bytes hold the checksum and receive time, which differ per run.
  ExpectGolden("corrupt_show", std::regex_replace(Stable(show, copy), std::regex("\n00000000 [^\n]*"),
                                                  "\n00000000  <version, checksum, receive time...>"));

  CtlResult stats = Ctl({"wal", "stats", copy});
  EXPECT_EQ(stats.exit_code, 0) << stats.err;

  verify = Ctl({"--json", "wal", "verify", copy});
  EXPECT_EQ(verify.exit_code, 3);
  json v = json::parse(verify.out);
  EXPECT_EQ(v["ok"], false);
  EXPECT_EQ(v["corrupt_count"], 1);
  ASSERT_EQ(v["corrupt"].size(), 1u);
  EXPECT_EQ(v["corrupt"][0]["seq"], 2);
  EXPECT_EQ(v["corrupt"][0]["topic"], "orders");
  EXPECT_NE(v["corrupt"][0]["error"].get<std::string>().find("checksum"), std::string::npos);
  EXPECT_EQ(v["ledger"]["count"], 0) << "a corrupt record still counts under its salvaged topic";

  std::vector<json> lines = JsonLines(Ctl({"--json", "wal", "dump", copy}).out);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[1]["corrupt"], true);
  EXPECT_FALSE(lines[1]["raw"].get<std::string>().empty());
  EXPECT_EQ(lines[2]["corrupt"], false);
  EXPECT_EQ(lines[2]["value"], "user 42 logged in\nfrom 10.0.0.7");
}

TEST_F(CrashedWalTest, NewerFormatVersionIsRefused) {
  const std::string copy = tmp_.sub("newer");
  std::filesystem::copy(wal_, copy, std::filesystem::copy_options::recursive);
  WithRawRocks(copy, [](rocksdb::DB* db, std::vector<rocksdb::ColumnFamilyHandle*>& cfh) {
    ASSERT_TRUE(db->Put({}, cfh[2], "format_version", "4").ok());
  });
  for (const char* cmd : {"stats", "list", "verify"}) {
    CtlResult r = Ctl({"wal", cmd, copy});
    EXPECT_EQ(r.exit_code, 1) << cmd;
    EXPECT_NE(r.err.find("has format version 4; this build reads up to 3"), std::string::npos)
        << r.err;
  }
  CtlResult r = Ctl({"dead", "replay", copy, "--all"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("format version 4"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kspool
