// Key and fixed-width value encodings of the WAL's column families (see FORMAT.md).
// Internal to wal/. Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "wal/stats.h"

namespace kspool::wal::keys {

inline std::string Seq(uint64_t seq) {
  std::string k(8, '\0');
  for (int i = 0; i < 8; ++i) k[i] = static_cast<char>(seq >> (8 * (7 - i)));
  return k;
}
inline uint64_t ParseSeq(std::string_view k) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8 && i < k.size(); ++i) v = (v << 8) | static_cast<uint8_t>(k[i]);
  return v;
}

inline std::string U64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(v >> (8 * i));
  return s;
}
inline uint64_t ParseU64(std::string_view s, size_t offset = 0) {
  uint64_t v = 0;
  if (s.size() < offset + 8) return 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(s[offset + i]);
  return v;
}
inline std::string EncodeCounts(const Counts& c) { return U64(c.count) + U64(c.bytes); }
inline Counts ParseCounts(std::string_view s) { return {ParseU64(s, 0), ParseU64(s, 8)}; }
// `accepted/<topic>`: the counts, then the receive time of the topic's last append
// (absent in WALs written before it was added).
inline std::string EncodeAccepted(const Counts& c, int64_t last_receive_ms) {
  return EncodeCounts(c) + U64(static_cast<uint64_t>(last_receive_ms));
}
inline std::optional<int64_t> ParseAcceptedLast(std::string_view s) {
  if (s.size() < 24) return std::nullopt;
  return static_cast<int64_t>(ParseU64(s, 16));
}

inline constexpr std::string_view kFormatVersion = "format_version";
inline constexpr std::string_view kAgentId = "agent_id";
inline constexpr std::string_view kNextSeq = "next_seq";
inline constexpr std::string_view kHead = "head_seq";
inline constexpr std::string_view kLastReceive = "last_receive_ms";
inline constexpr std::string_view kCommitPoint = "commit_point_ms";
inline constexpr std::string_view kCommitPointTopicPrefix = "commit_point_ms/";
inline constexpr std::string_view kCommitCeiling = "commit_ceiling_ms";
inline constexpr std::string_view kLeasedPoint = "leased_point_ms";
inline constexpr std::string_view kLeasedPointTopicPrefix = "leased_point_ms/";
inline constexpr std::string_view kAcceptedPrefix = "accepted/";
inline constexpr std::string_view kDeliveredPrefix = "delivered/";
inline constexpr std::string_view kDiscardedPrefix = "discarded/";
// `held/<topic>`: u64 count, u64 bytes of its settled messages whose batch record is
// still stored (FORMAT.md, "Settling part of a record").
inline constexpr std::string_view kHeldPrefix = "held/";
inline constexpr std::string_view kDeadLetters = "dead_letters";
inline constexpr std::string_view kDeadDroppedPrefix = "dead_dropped/";
inline constexpr std::string_view kReceiveFloor = "receive_floor_ms";
inline constexpr std::string_view kReportPoint = "report_point_ms";
inline constexpr std::string_view kDeliveryIndex = "delivery_index";
inline constexpr std::string_view kDeliveryFloor = "delivery_floor_seq";
// Present once no entry is stored below head_seq (FORMAT.md, "Deletes").
inline constexpr std::string_view kNoneBelowHead = "none_below_head";
// `watermark/<topic>/<partition as 8 hex digits>` (FORMAT.md, "Settled watermarks").
inline constexpr std::string_view kWatermarkPrefix = "watermark/";
// `settled_in/<a batch record's 12-byte log key as 24 hex digits>`: which of the record's
// messages are settled, a bit each (FORMAT.md, "Settling part of a record").
inline constexpr std::string_view kSettledInPrefix = "settled_in/";
inline std::string SettledIn(std::string_view log_key) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string k(kSettledInPrefix);
  for (char c : log_key) {
    k += kHex[static_cast<uint8_t>(c) >> 4];
    k += kHex[static_cast<uint8_t>(c) & 0xf];
  }
  return k;
}

// `routing/<topic>` (FORMAT.md, "Routing bounds").
inline constexpr std::string_view kRoutingPrefix = "routing/";
inline std::string Routing(std::string_view topic) {
  return std::string(kRoutingPrefix) + std::string(topic);
}

inline std::string Accepted(std::string_view topic) {
  return std::string(kAcceptedPrefix) + std::string(topic);
}
inline std::string Delivered(std::string_view topic) {
  return std::string(kDeliveredPrefix) + std::string(topic);
}
// Topic names cannot contain '/', so the split back is unambiguous.
inline std::string Held(std::string_view topic) {
  return std::string(kHeldPrefix) + std::string(topic);
}
inline std::string Discarded(std::string_view topic, std::string_view reason) {
  return std::string(kDiscardedPrefix) + std::string(topic) + "/" + std::string(reason);
}
inline std::string DeadDropped(std::string_view topic, std::string_view limit) {
  return std::string(kDeadDroppedPrefix) + std::string(topic) + "/" + std::string(limit);
}
inline std::string TopicCommitPoint(std::string_view topic) {
  return std::string(kCommitPointTopicPrefix) + std::string(topic);
}
inline std::string TopicLeasedPoint(std::string_view topic) {
  return std::string(kLeasedPointTopicPrefix) + std::string(topic);
}
// Every watermark of `topic` starts with this (topic names cannot contain '/').
inline std::string WatermarkTopicPrefix(std::string_view topic) {
  return std::string(kWatermarkPrefix) + std::string(topic) + "/";
}
inline std::string Watermark(std::string_view topic, int32_t partition) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string k = WatermarkTopicPrefix(topic);
  const auto p = static_cast<uint32_t>(partition);
  for (int shift = 28; shift >= 0; shift -= 4) k += kHex[(p >> shift) & 0xf];
  return k;
}
// `tally/<topic>/<partition as 8 hex digits>`: u64 count, then the SeqSketch of the
// distinct sequence numbers delivered there (FORMAT.md, "Delivery tallies").
inline constexpr std::string_view kTallyPrefix = "tally/";
inline std::string Tally(std::string_view topic, int32_t partition) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string k = std::string(kTallyPrefix) + std::string(topic) + "/";
  const auto p = static_cast<uint32_t>(partition);
  for (int shift = 28; shift >= 0; shift -= 4) k += kHex[(p >> shift) & 0xf];
  return k;
}
// The topic and partition of a `watermark/` key; false if it is not one this build writes.
inline bool ParseWatermark(std::string_view k, std::string* topic, int32_t* partition) {
  if (k.substr(0, kWatermarkPrefix.size()) != kWatermarkPrefix) return false;
  k.remove_prefix(kWatermarkPrefix.size());
  const size_t slash = k.rfind('/');
  if (slash == std::string_view::npos || slash == 0 || k.size() - slash - 1 != 8) return false;
  uint32_t p = 0;
  for (char c : k.substr(slash + 1)) {
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return false;
    p = (p << 4) | static_cast<uint32_t>(d);
  }
  if (p > 0x7fffffffu) return false;
  *topic = std::string(k.substr(0, slash));
  *partition = static_cast<int32_t>(p);
  return true;
}

}  // namespace kspool::wal::keys
