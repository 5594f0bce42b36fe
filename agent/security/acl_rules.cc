#include "agent/security/acl_rules.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>

// Errors as values: toml::parse returns a result instead of throwing.
#define TOML_EXCEPTIONS 0
#include <toml++/toml.h>

namespace kspool::agent {
namespace {

const char* TypeName(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    default:
      return "a date or time";
  }
}

// "rule 2 (line 7): send[1]: …"
absl::Status RuleError(size_t index, const toml::node& at, const std::string& what) {
  return absl::InvalidArgumentError("rule " + std::to_string(index + 1) + " (line " +
                                    std::to_string(at.source().begin.line) + "): " + what);
}

bool IsTopicChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

// A topic name or a prefix ending in "*"; adds it to `rule`. "" when fine, else why not.
std::string AddPattern(const std::string& p, AclRule* rule) {
  if (p.empty()) return "an empty topic pattern";
  const size_t star = p.find('*');
  if (star != std::string::npos && star != p.size() - 1) {
    return "\"" + p + "\": a * may only end a topic pattern";
  }
  const std::string name = star == std::string::npos ? p : p.substr(0, star);
  for (char c : name) {
    if (!IsTopicChar(c)) return "\"" + p + "\": a topic has only the characters [a-zA-Z0-9._-]";
  }
  if (star == std::string::npos) {
    rule->topics.insert(name);
  } else {
    rule->prefixes.push_back(name);
  }
  return {};
}

// A quota: a number > 0 (integer or float).
absl::Status ParseQuota(size_t index, std::string_view key, const toml::node& n, double* out) {
  if (!n.is_number()) {
    return RuleError(index, n, std::string(key) + ": a number, not " + TypeName(n));
  }
  *out = n.is_integer() ? static_cast<double>(n.as_integer()->get()) : n.as_floating_point()->get();
  if (!(*out > 0) || *out > 1e18) {
    return RuleError(index, n, std::string(key) + ": must be above 0 (leave it out for no quota)");
  }
  return absl::OkStatus();
}

absl::StatusOr<AclRule> ParseRule(size_t index, const toml::node& node) {
  const toml::table* t = node.as_table();
  if (t == nullptr) return RuleError(index, node, "[[allow]] must be a table");
  AclRule rule;
  rule.line = static_cast<int>(node.source().begin.line);
  bool has_identity = false;
  for (const auto& [key, value] : *t) {
    const std::string_view k = key.str();
    if (k == "identity") {
      const auto* s = value.as_string();
      if (s == nullptr)
        return RuleError(index, value, "identity: a string, not " + std::string(TypeName(value)));
      if (s->get().empty()) return RuleError(index, value, "identity: must not be empty");
      rule.identity = s->get();
      has_identity = true;
    } else if (k == "send") {
      const toml::array* a = value.as_array();
      if (a == nullptr)
        return RuleError(index, value,
                         "send: an array of topic patterns, not " + std::string(TypeName(value)));
      for (size_t i = 0; i < a->size(); ++i) {
        const toml::node& e = *a->get(i);
        const std::string at = "send[" + std::to_string(i) + "]: ";
        const auto* s = e.as_string();
        if (s == nullptr) return RuleError(index, e, at + "a string, not " + TypeName(e));
        if (std::string why = AddPattern(s->get(), &rule); !why.empty()) {
          return RuleError(index, e, at + why);
        }
      }
    } else if (k == "admin") {
      const auto* b = value.as_boolean();
      if (b == nullptr)
        return RuleError(index, value, "admin: true or false, not " + std::string(TypeName(value)));
      rule.admin = b->get();
    } else if (k == "messages_per_second") {
      if (absl::Status s = ParseQuota(index, k, value, &rule.messages_per_second); !s.ok())
        return s;
    } else if (k == "bytes_per_second") {
      if (absl::Status s = ParseQuota(index, k, value, &rule.bytes_per_second); !s.ok()) return s;
    } else {
      return RuleError(index, value,
                       "unknown key \"" + std::string(k) +
                           "\" (known: identity, send, admin, messages_per_second, "
                           "bytes_per_second)");
    }
  }
  if (!has_identity) return RuleError(index, node, "identity: missing");
  return rule;
}

}  // namespace

std::string CanonicalIdentity(std::string_view written) {
  if (written == "*" || written == "anonymous") return std::string(written);
  for (const char* kind : kIdentityKinds) {
    if (written.substr(0, std::char_traits<char>::length(kind)) == kind) {
      return std::string(written);
    }
  }
  return "uri:" + std::string(written);
}

bool AclRule::Allows(std::string_view topic) const {
  if (!topics.empty() && topics.contains(absl::string_view(topic.data(), topic.size()))) {
    return true;
  }
  for (const std::string& p : prefixes) {
    if (topic.size() >= p.size() && topic.compare(0, p.size(), p) == 0) return true;
  }
  return false;
}

absl::StatusOr<AclRules> AclRules::Parse(std::string_view text, const std::string& source) {
  // ASCII only: toml++ 3.3 reaches __builtin_unreachable (undefined behaviour) on some
  // non-ASCII characters outside strings (found by tests/fuzz acl_fuzzer). Identities
  // and topics are ASCII anyway; anything else can be written as a \uXXXX escape.
  int line = 1;
  for (char c : text) {
    if (c == '\n') ++line;
    if (static_cast<unsigned char>(c) >= 0x80) {
      return absl::InvalidArgumentError(
          "line " + std::to_string(line) +
          ": a non-ASCII character (the file is ASCII; in a string, write \\uXXXX)");
    }
  }
  toml::parse_result parsed = toml::parse(text, source);
  if (!parsed) {
    const toml::parse_error& e = parsed.error();
    return absl::InvalidArgumentError("line " + std::to_string(e.source().begin.line) + ": " +
                                      std::string(e.description()));
  }
  AclRules out;
  const toml::table& top = parsed.table();
  for (const auto& [key, value] : top) {
    if (key.str() != "allow") {
      return absl::InvalidArgumentError("line " + std::to_string(key.source().begin.line) +
                                        ": unknown key \"" + std::string(key.str()) +
                                        "\" (the file holds [[allow]] rules only)");
    }
    const toml::array* rules = value.as_array();
    if (rules == nullptr) {
      return absl::InvalidArgumentError("line " + std::to_string(value.source().begin.line) +
                                        ": allow must be an array of tables ([[allow]])");
    }
    for (size_t i = 0; i < rules->size(); ++i) {
      absl::StatusOr<AclRule> rule = ParseRule(i, *rules->get(i));
      if (!rule.ok()) return rule.status();
      out.rules_.push_back(std::move(rule).value());
    }
  }
  for (size_t i = 0; i < out.rules_.size(); ++i) {
    const std::string& id = out.rules_[i].identity;
    if (id == "*") {
      out.any_.push_back(i);
    } else {
      out.by_identity_[CanonicalIdentity(id)].push_back(i);
    }
  }
  return out;
}

AclRuleSet AclRules::Applicable(const std::vector<std::string>& identities) const {
  absl::InlinedVector<size_t, 8> indexes(any_.begin(), any_.end());
  for (const std::string& id : identities) {
    auto it = by_identity_.find(id);
    if (it != by_identity_.end())
      indexes.insert(indexes.end(), it->second.begin(), it->second.end());
  }
  std::sort(indexes.begin(), indexes.end());
  AclRuleSet out;
  for (size_t i = 0; i < indexes.size(); ++i) {
    if (i == 0 || indexes[i] != indexes[i - 1]) out.push_back(&rules_[indexes[i]]);
  }
  return out;
}

const std::string* AclRules::Written(std::string_view identity) const {
  // absl's own string_view: Debian's absl does not alias std::string_view.
  auto it = by_identity_.find(absl::string_view(identity.data(), identity.size()));
  if (it == by_identity_.end()) return nullptr;
  return &rules_[it->second.front()].identity;
}

bool AclRules::Allows(const AclRuleSet& rules, std::string_view topic) {
  for (const AclRule* r : rules) {
    if (r->Allows(topic)) return true;
  }
  return false;
}

bool AclRules::AllowsAdmin(const AclRuleSet& rules) {
  for (const AclRule* r : rules) {
    if (r->admin) return true;
  }
  return false;
}

const AclRule* AclRules::QuotaRule(const AclRuleSet& rules) {
  const AclRule* any = nullptr;  // the first "*" rule with a quota: the default
  for (const AclRule* r : rules) {
    if (!r->has_quota()) continue;
    if (r->identity != "*") return r;
    if (any == nullptr) any = r;
  }
  return any;
}

absl::StatusOr<AclRules> LoadAclFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::InvalidArgumentError(path + ": cannot be read");
  absl::StatusOr<AclRules> rules = AclRules::Parse(text.str(), path);
  if (!rules.ok()) {
    return absl::InvalidArgumentError(path + ": " + std::string(rules.status().message()));
  }
  return rules;
}

std::string AclFileFingerprint(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return "-";
  return std::to_string(st.st_ino) + "," + std::to_string(st.st_size) + "," +
         std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

}  // namespace kspool::agent
