#include "agent/security/access_control.h"

#include <spdlog/spdlog.h>

#include <utility>

namespace kspool::agent {
namespace {

constexpr char kOverflowKey[] = "*\n(overflow)";  // no identity holds a newline

}  // namespace

std::string JoinIdentities(const std::vector<std::string>& identities) {
  std::string out;
  for (const std::string& id : identities) {
    if (!out.empty()) out += ", ";
    out += id;
  }
  return out;
}

AccessControl::AccessControl(AclRules rules, std::string path, Metrics* metrics, Clock* clock)
    : path_(std::move(path)),
      metrics_(metrics),
      clock_(clock),
      rules_(std::make_shared<const AclRules>(std::move(rules))),
      registry_(std::make_shared<Subscription::Registry>()) {
  if (metrics_) metrics_->AclRulesLoaded(rules_->rules().size());
}

std::shared_ptr<const AclRules> AccessControl::Current() const {
  MutexLock lock(&mu_);
  return rules_;
}

absl::Status AccessControl::Reload() {
  MutexLock reload(&reload_mu_);
  absl::StatusOr<AclRules> loaded = LoadAclFile(path_);
  if (!loaded.ok()) {
    spdlog::warn("--acl {} changed but cannot be used ({}); the previous rules stay in force",
                 path_, std::string(loaded.status().message()));
    if (metrics_) metrics_->Degraded("acl_reload_failed");
    return loaded.status();
  }
  const size_t n = loaded->rules().size();
  auto next = std::make_shared<const AclRules>(std::move(loaded).value());
  {
    MutexLock lock(&mu_);
    rules_ = std::move(next);
  }
  if (metrics_) metrics_->AclRulesLoaded(n);
  spdlog::info("--acl {} reloaded: {} rule{} in force", path_, n, n == 1 ? "" : "s");
  // Called outside the registry's lock: a callback may end the last holder of its own
  // Subscription, whose destructor takes that lock.
  std::vector<std::function<void()>> callbacks;
  {
    MutexLock lock(&registry_->mu);
    for (const auto& [id, f] : registry_->callbacks) callbacks.push_back(f);
  }
  for (const std::function<void()>& f : callbacks) f();
  return absl::OkStatus();
}

AccessControl::Subscription AccessControl::OnReload(std::function<void()> on_reload) {
  Subscription sub;
  MutexLock lock(&registry_->mu);
  sub.registry_ = registry_;
  sub.id_ = registry_->next_id++;
  registry_->callbacks.emplace(sub.id_, std::move(on_reload));
  return sub;
}

AccessControl::Subscription::~Subscription() { Reset(); }

void AccessControl::Subscription::Reset() {
  if (std::shared_ptr<Registry> r = registry_.lock()) {
    MutexLock lock(&r->mu);
    r->callbacks.erase(id_);
  }
  registry_.reset();
  id_ = 0;
}

AccessControl::Subscription& AccessControl::Subscription::operator=(
    Subscription&& other) noexcept {
  if (this != &other) {
    Reset();
    registry_ = std::move(other.registry_);
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

AccessControl::Caller AccessControl::For(std::vector<std::string> identities) const {
  Caller c;
  c.rules_ = Current();
  c.set_ = c.rules_->Applicable(identities);
  c.identities_ = std::move(identities);
  return c;
}

std::string AccessControl::Label(const Caller& caller) {
  for (const std::string& id : caller.identities_) {
    if (const std::string* written = caller.rules_->Written(id)) return *written;
  }
  return "other";
}

absl::Status AccessControl::CheckTopics(const Caller& caller, size_t n,
                                        absl::FunctionRef<std::string_view(size_t)> topic_at,
                                        const char* what) {
  std::string_view last_allowed;
  bool any_allowed = false;
  for (size_t i = 0; i < n; ++i) {
    const std::string_view topic = topic_at(i);
    // Batches mostly go to one topic: checked once.
    if (any_allowed && topic == last_allowed) continue;
    if (caller.Allows(topic)) {
      last_allowed = topic;
      any_allowed = true;
      continue;
    }
    if (metrics_) metrics_->AclDenied(Label(caller));
    return absl::PermissionDeniedError("identity " + JoinIdentities(caller.identities_) +
                                       " may not send to topic \"" + std::string(topic) + "\" (" +
                                       what + " " + std::to_string(i) + "; see --acl " + path_ +
                                       ")");
  }
  return absl::OkStatus();
}

absl::Status AccessControl::CheckAdmin(const Caller& caller, std::string_view method) {
  if (caller.admin()) return absl::OkStatus();
  if (metrics_) metrics_->AclDenied(Label(caller));
  return absl::PermissionDeniedError("identity " + JoinIdentities(caller.identities_) +
                                     " may not call " +
                                     std::string(method) + " (it needs admin = true in --acl " +
                                     path_ + ")");
}

AccessControl::Buckets* AccessControl::BucketsLocked(const AclRule& rule, const std::string& key,
                                                     int64_t now_ms) {
  if (key[0] == '*' && key != kOverflowKey && caller_buckets_ >= kMaxCallerBuckets &&
      !buckets_.contains(key)) {
    // Idle callers' buckets are full again: forgetting them changes nothing.
    for (auto e = buckets_.begin(); e != buckets_.end();) {
      Buckets& b = e->second;
      const bool idle = e->first[0] == '*' && e->first != kOverflowKey &&
                        (!b.messages || b.messages->full(now_ms)) &&
                        (!b.bytes || b.bytes->full(now_ms));
      if (idle) {
        buckets_.erase(e++);
        --caller_buckets_;
      } else {
        ++e;
      }
    }
    if (caller_buckets_ >= kMaxCallerBuckets) return BucketsLocked(rule, kOverflowKey, now_ms);
  }
  auto [it, added] = buckets_.try_emplace(key);
  if (added && key[0] == '*' && key != kOverflowKey) ++caller_buckets_;
  Buckets& b = it->second;
  if (b.messages_per_second != rule.messages_per_second ||
      b.bytes_per_second != rule.bytes_per_second) {  // new, or its rule changed
    b.messages_per_second = rule.messages_per_second;
    b.bytes_per_second = rule.bytes_per_second;
    b.messages.reset(
        rule.messages_per_second > 0
            ? new TokenBucket(rule.messages_per_second, rule.messages_per_second, now_ms)
            : nullptr);
    b.bytes.reset(rule.bytes_per_second > 0
                      ? new TokenBucket(rule.bytes_per_second, rule.bytes_per_second, now_ms)
                      : nullptr);
  }
  return &b;
}

absl::Status AccessControl::ChargeQuota(const Caller& caller, uint64_t messages, uint64_t bytes,
                                        int64_t* retry_after_ms) {
  const AclRule* rule = AclRules::QuotaRule(caller.set_);
  if (rule == nullptr) return absl::OkStatus();
  // PeerIdentities() is never empty; an empty list (a test's) keys the caller as "".
  const std::string key = rule->identity == "*"
                              ? "*" + (caller.identities_.empty() ? std::string()
                                                                  : caller.identities_.front())
                              : "=" + rule->identity;
  const int64_t now = clock_->MonotonicMillis();
  int64_t wait = 0;
  {
    MutexLock lock(&quota_mu_);
    Buckets* b = BucketsLocked(*rule, key, now);
    if (b->messages) wait = std::max(wait, b->messages->Wait(static_cast<double>(messages), now));
    if (b->bytes) wait = std::max(wait, b->bytes->Wait(static_cast<double>(bytes), now));
    if (wait == 0) {
      if (b->messages) b->messages->TakeNow(static_cast<double>(messages));
      if (b->bytes) b->bytes->TakeNow(static_cast<double>(bytes));
      return absl::OkStatus();
    }
  }
  *retry_after_ms = wait;
  if (metrics_) metrics_->QuotaRefused(Label(caller));
  std::string quota;
  if (rule->messages_per_second > 0)
    quota += std::to_string(static_cast<uint64_t>(rule->messages_per_second)) + " messages/s";
  if (rule->bytes_per_second > 0) {
    quota += std::string(quota.empty() ? "" : ", ") +
             std::to_string(static_cast<uint64_t>(rule->bytes_per_second)) + " bytes/s";
  }
  return absl::ResourceExhaustedError("identity " + JoinIdentities(caller.identities_) +
                                      " is over its quota (" + quota + ", rule of line " +
                                      std::to_string(rule->line) + " in --acl " + path_ +
                                      "): retry in " + std::to_string(wait) + " ms");
}

}  // namespace kspool::agent
