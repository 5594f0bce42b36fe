// libFuzzer target for the --acl file parser (agent/security/acl_rules.h) on any bytes.
// Properties:
//   - Parse never throws (toml++ is built without exceptions) nor crashes;
//   - an error is INVALID_ARGUMENT with a message;
//   - accepted rules have a non-empty identity, quotas that are 0 (none) or above 0,
//     and patterns without a "*" (the star was taken off the prefixes); matching any
//     topic with them terminates and agrees with the rules: a topic a rule names
//     exactly is allowed to a caller with that rule's identity (in its canonical form:
//     a bare SAN URI as written means "uri:" + it).
// Build and run: tests/fuzz/run.sh acl.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "agent/security/acl_rules.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<kspool::agent::AclRules> rules = kspool::agent::AclRules::Parse(text, "fuzz.toml");
  if (!rules.ok()) {
    if (rules.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
    if (rules.status().message().empty()) std::abort();
    return 0;
  }
  for (const kspool::agent::AclRule& r : rules->rules()) {
    if (r.identity.empty()) std::abort();
    if (r.messages_per_second < 0 || r.bytes_per_second < 0) std::abort();
    for (const std::string& p : r.prefixes) {
      if (p.find('*') != std::string::npos) std::abort();
    }
    for (const std::string& t : r.topics) {
      if (t.find('*') != std::string::npos) std::abort();
      const std::string caller = kspool::agent::CanonicalIdentity(r.identity);
      if (!kspool::agent::AclRules::Allows(rules->Applicable({caller}), t)) std::abort();
    }
  }
  return 0;
}
