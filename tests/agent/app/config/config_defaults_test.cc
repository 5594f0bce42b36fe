// Each default has one home: the components' option structs (wal::Options, DrainOptions,
// RequestLimits, HeartbeatOptions, SocketFileOptions, GrpcListenerOptions'
// kDefaultMaxConnections) or Config itself, and the flags show it as text
// through the Format* functions, which must give back what they were given.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "agent/app/config/config.h"
#include "tests/agent/app/config/parse_args.h"

namespace kspool::agent {
namespace {

TEST(ConfigDefaults, DurationsAreWrittenAsAUserWouldAndParseBack) {
  EXPECT_EQ(FormatDurationMs(0), "0");
  EXPECT_EQ(FormatDurationMs(1500), "1500ms");
  EXPECT_EQ(FormatDurationMs(90'000), "90s");
  EXPECT_EQ(FormatDurationMs(300'000), "5m");
  EXPECT_EQ(FormatDurationMs(3'600'000), "1h");
  EXPECT_EQ(FormatDurationMs(86'400'000), "24h") << "a single day reads 24h";
  EXPECT_EQ(FormatDurationMs(2 * 86'400'000ull), "2d");
  EXPECT_EQ(FormatDurationMs(7 * 86'400'000ull), "7d");
  for (uint64_t ms : std::vector<uint64_t>{0, 1, 999, 1000, 61'000, 3'600'000, 86'400'000,
                                          90'000'000, 7 * 86'400'000ull, kMaxDurationMs}) {
    absl::StatusOr<uint64_t> back = ParseDurationMs(FormatDurationMs(ms));
    ASSERT_TRUE(back.ok()) << ms << ": " << back.status();
    EXPECT_EQ(*back, ms);
  }
}

TEST(ConfigDefaults, SizesAreWrittenAsAUserWouldAndParseBack) {
  EXPECT_EQ(FormatByteSize({0}), "0");
  EXPECT_EQ(FormatByteSize({1000}), "1000");
  EXPECT_EQ(FormatByteSize({2048}), "2KiB");
  EXPECT_EQ(FormatByteSize({64ull << 20}), "64MiB");
  EXPECT_EQ(FormatByteSize({3ull << 30}), "3GiB");
  EXPECT_EQ(FormatByteSize({0, 10}), "10%");
  EXPECT_EQ(FormatByteSize({0, 2.5}), "2.5%");
  for (ByteSize b : {ByteSize{0}, ByteSize{1}, ByteSize{1536}, ByteSize{256ull << 20},
                     ByteSize{5ull << 40}, ByteSize{0, 10}, ByteSize{0, 0.5}}) {
    absl::StatusOr<ByteSize> back = ParseByteSize(FormatByteSize(b));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->bytes, b.bytes);
    EXPECT_EQ(back->percent, b.percent);
  }
}

TEST(ConfigDefaults, ModesAreFourOctalDigitsAndParseBack) {
  EXPECT_EQ(FormatSocketMode(0660), "0660");
  EXPECT_EQ(FormatSocketMode(0600), "0600");
  EXPECT_EQ(FormatSocketMode(07), "0007");
  for (uint32_t mode : {0u, 07u, 0660u, 0777u, 07777u}) {
    absl::StatusOr<uint32_t> back = ParseSocketMode(FormatSocketMode(mode));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, mode);
  }
}

// Without flags, the drain, the request limits, the heartbeats, the gRPC listener's
// connection cap and the sockets get their components' own defaults: Config writes none
// of them again.
TEST(ConfigDefaults, ComponentsKeepTheirOwnDefaults) {
  ParseOutcome p = ParseArgs({});
  ASSERT_FALSE(p.exit) << p.output;
  const Config& c = p.config;
  const DrainOptions d;
  EXPECT_EQ(c.drain.max_inflight_messages, d.max_inflight_messages);
  EXPECT_EQ(c.drain.max_inflight_bytes, d.max_inflight_bytes);
  EXPECT_EQ(c.drain.retry_backoff_ms, d.retry_backoff_ms);
  EXPECT_EQ(c.drain.retry_backoff_max_ms, d.retry_backoff_max_ms);
  EXPECT_EQ(c.drain.commit_point_interval_ms, d.commit_point_interval_ms);
  EXPECT_EQ(c.drain.shutdown_grace_ms, d.shutdown_grace_ms);
  EXPECT_EQ(c.drain.max_message_age_ms, d.max_message_age_ms);
  EXPECT_EQ(c.drain.unknown_topic_checks, d.unknown_topic_checks);
  EXPECT_EQ(c.drain.wal_reopen_interval_ms, d.wal_reopen_interval_ms);
  const RequestLimits l;
  EXPECT_EQ(c.limits.max_message_bytes, l.max_message_bytes);
  EXPECT_EQ(c.limits.max_batch_messages, l.max_batch_messages);
  EXPECT_EQ(c.limits.max_headers, l.max_headers);
  EXPECT_EQ(c.limits.max_future_timestamp_ms, l.max_future_timestamp_ms);
  const HeartbeatOptions h;
  EXPECT_EQ(c.heartbeat.interval_ms, h.interval_ms);
  EXPECT_EQ(c.heartbeat.topics, h.topics);
  EXPECT_EQ(c.max_connections, GrpcListenerOptions{}.max_connections);
  const SocketFileOptions s;
  EXPECT_EQ(c.listen_socket.mode, s.mode);
  EXPECT_EQ(c.bruce_socket.mode, s.mode);
  // The WAL's: the library's, but where the agent sets limits of its own.
  const wal::Options w;
  EXPECT_EQ(c.wal.max_bytes, w.max_bytes);
  EXPECT_EQ(c.wal.max_queue_bytes, w.max_queue_bytes);
  EXPECT_EQ(c.wal.group_commit_delay_us, w.group_commit_delay_us);
  EXPECT_EQ(c.wal.delivery_retention_ms, w.delivery_retention_ms);
  EXPECT_EQ(c.wal.delivery_retention_bytes, w.delivery_retention_bytes);
  EXPECT_EQ(c.wal.commit_lease_ms, w.commit_lease_ms);
  EXPECT_EQ(c.wal.dir, "/var/lib/kspool/wal");
  EXPECT_EQ(c.wal.max_dead_letter_age_ms, 7 * 86'400'000ll);
  EXPECT_EQ(c.wal.topic_idle_forget_ms, 86'400'000ll);
  EXPECT_EQ(c.wal.max_tracked_topics, 10000u);
  EXPECT_FALSE(c.wal.read_only);
}

// --help shows each default as the struct holds it, in the units the flag takes.
TEST(ConfigDefaults, HelpShowsTheStructsDefaults) {
  ParseOutcome p = ParseArgs({"--help"});
  ASSERT_TRUE(p.exit);
  EXPECT_EQ(p.exit_code, 0);
  for (const char* shown :
       {"--max-append-queue-bytes TEXT=64MiB", "--dead-letter-max-bytes TEXT=10%",
        "--dead-letter-max-age TEXT=7d", "--topic-idle-forget TEXT=24h",
        "--delivery-retention TEXT=1h", "--delivery-retention-bytes TEXT=256MiB",
        "--max-future-timestamp TEXT=1h", "--idle-timeout TEXT=5m",
        "--max-receive-memory TEXT=256MiB", "--max-waiting-memory TEXT=256MiB",
        "--listen-mode TEXT=0660",
        "--bruce-socket-mode TEXT=0660", "--max-message-age TEXT=0",
        "--wal-dir TEXT=/var/lib/kspool/wal"}) {
    EXPECT_NE(p.output.find(shown), std::string::npos) << shown << "\n" << p.output;
  }
}

}  // namespace
}  // namespace kspool::agent
