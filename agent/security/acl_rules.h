// AclRules: the access rules of an --acl file (docs/SECURITY.md, "Access control"), parsed and
// checked, with the lookups a call needs. Pure: no I/O but LoadAclFile, no clock.
//
// File format (TOML, ASCII: other characters as \uXXXX escapes in strings): any number
// of [[allow]] tables with the keys
//   identity             string, required: "cn:…", "dns:…", "uri:<SAN URI>", "uid:N",
//                        "gid:N", "anonymous", or "*" (every caller). Anything else is
//                        an older file's bare SAN URI ("spiffe://…"): it means "uri:" + it
//                        (CanonicalIdentity), so such files keep working; a certificate
//                        can no longer name "cn:…" with a URI.
//   send                 array of topic patterns: a topic name, or a prefix ending in "*"
//                        ("orders.*"; "*" alone is every topic); default none
//   admin                bool: the Admin service and WatchDeliveries; default false
//   messages_per_second  optional quota (> 0)
//   bytes_per_second     optional quota (> 0), bytes of requests as received
// Anything else (an unknown key, a wrong type, an empty identity, a "*" inside a
// pattern, a quota <= 0) is an error naming the rule (1-based, file order), the key and
// the line.
//
// Semantics: a call has several identities (agent/security/peer_identity.h). A topic is allowed
// if some rule whose identity is one of them, or "*", allows it; admin likewise. A call
// is charged to one quota (QuotaRule): the first rule in file order with a quota that
// names one of its identities, else the first "*" rule with a quota (the default).
// Thread safety: immutable once built; share it freely.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"

namespace kspool::agent {

// The prefixes of identities, one per kind (agent/security/peer_identity.h).
inline constexpr const char* kIdentityKinds[] = {"cn:", "dns:", "uri:", "uid:", "gid:"};

// The identity a rule's `identity` names: as written if it is "*", "anonymous" or starts
// with one of kIdentityKinds; else "uri:" + it (an older file's bare SAN URI).
std::string CanonicalIdentity(std::string_view written);

struct AclRule {
  std::string identity;                     // as the file writes it; "*": every caller
  int line = 0;                             // in the file, for messages
  absl::flat_hash_set<std::string> topics;  // exact names
  std::vector<std::string> prefixes;        // "orders." of "orders.*"; "" of "*"
  bool admin = false;
  double messages_per_second = 0;  // 0: no quota of the kind
  double bytes_per_second = 0;
  bool has_quota() const { return messages_per_second > 0 || bytes_per_second > 0; }
  bool Allows(std::string_view topic) const;
};

// The rules that apply to one call's identities, in file order.
using AclRuleSet = absl::InlinedVector<const AclRule*, 4>;

class AclRules {
 public:
  // `source` names the text in errors (the file's path).
  [[nodiscard]] static absl::StatusOr<AclRules> Parse(std::string_view text,
                                                      const std::string& source);

  const std::vector<AclRule>& rules() const { return rules_; }
  // The rules naming one of `identities`, or "*", in file order.
  AclRuleSet Applicable(const std::vector<std::string>& identities) const;
  static bool Allows(const AclRuleSet& rules, std::string_view topic);
  static bool AllowsAdmin(const AclRuleSet& rules);
  // The rule whose quota a call with `rules` is charged to (see above), or null.
  static const AclRule* QuotaRule(const AclRuleSet& rules);
  // True if the file names `identity` (a caller's, canonical) in a rule ("*" is no name).
  bool Names(std::string_view identity) const { return Written(identity) != nullptr; }
  // The caller's `identity` as the first rule naming it writes it (metric labels keep
  // an older file's "spiffe://…" spelling), or null if no rule names it.
  const std::string* Written(std::string_view identity) const;

 private:
  std::vector<AclRule> rules_;
  absl::flat_hash_map<std::string, std::vector<size_t>> by_identity_;  // indexes into rules_
  std::vector<size_t> any_;                                            // rules of "*"
};

// Reads `path` and parses it; errors start with the path.
[[nodiscard]] absl::StatusOr<AclRules> LoadAclFile(const std::string& path);

// What identifies a version of the file (inode, size, modification time; a missing
// file is a version too): the watcher compares it to see a replacement.
std::string AclFileFingerprint(const std::string& path);

}  // namespace kspool::agent
