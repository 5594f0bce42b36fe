// AccessControl: the --acl rules in force (docs/SECURITY.md, "Access control") and the checks
// the gRPC services make with them: topics a call may send to, the admin right, and
// per-identity quotas (token buckets). Reload() replaces the rules from the file; an
// unusable file keeps the rules in force (a warning and
// kspool_degraded_events_total{event="acl_reload_failed"}). AclReloader calls it when the
// file changes; the agent also on SIGHUP.
//
// Quotas: a call is charged to one rule's quota (AclRules::QuotaRule: its own identity's
// first, else the first "*" rule's). A rule naming an identity has one bucket per kind
// (messages, bytes) for every caller with that identity; a "*" rule has a bucket per
// caller, keyed by the caller's first identity, at most kMaxCallerBuckets of them (full,
// i.e. idle, ones are evicted; beyond that, the callers share one bucket). Bursts: one
// second of the rate. Buckets survive a reload when their rule keeps its rates.
// Metric labels (kspool_acl_denied_total, kspool_quota_refused_total): the caller's
// first identity that the file names, as the file writes it, else "other", so that the
// label set is bounded by the file.
// Rules that change under a long call (a WatchDeliveries stream): OnReload() registers
// a callback that each successful Reload() calls once the new rules are in force, so
// the call can check its caller again and end itself.
// Thread safety: every method may be called from any thread; a call's checks see one
// version of the rules (the one For() took).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "agent/security/acl_rules.h"
#include "agent/stats/metrics.h"
#include "base/token_bucket.h"
#include "base/clock.h"
#include "base/mutex.h"

namespace kspool::agent {

class AccessControl {
 public:
  static constexpr size_t kMaxCallerBuckets = 10000;

  // `rules`: as loaded from `path` at start (the config check made sure it parses).
  AccessControl(AclRules rules, std::string path, Metrics* metrics, Clock* clock);

  // Re-reads the file. Unusable: logged, counted, the rules in force stay; the error
  // is returned. Serialized (the watcher and SIGHUP may both call it).
  absl::Status Reload();
  const std::string& path() const { return path_; }

  // What one caller (its identities, agent/security/peer_identity.h) may do under the rules in
  // force now.
  class Caller {
   public:
    bool Allows(std::string_view topic) const { return AclRules::Allows(set_, topic); }
    bool admin() const { return AclRules::AllowsAdmin(set_); }
    const std::vector<std::string>& identities() const { return identities_; }

   private:
    friend class AccessControl;
    std::vector<std::string> identities_;
    std::shared_ptr<const AclRules> rules_;
    AclRuleSet set_;
  };
  Caller For(std::vector<std::string> identities) const;

  // Stops its callback from being called by reloads that start after it is gone; one
  // already calling it finishes, so the callback holds only what may outlive this
  // (weak pointers, values). May outlive the AccessControl.
  class Subscription {
   public:
    Subscription() = default;
    ~Subscription();
    Subscription(Subscription&& other) noexcept { *this = std::move(other); }
    Subscription& operator=(Subscription&& other) noexcept;

   private:
    friend class AccessControl;
    struct Registry;
    void Reset();
    std::weak_ptr<Registry> registry_;
    uint64_t id_ = 0;
  };
  // `on_reload` is called after each successful Reload(), on the reloading thread (the
  // file watcher's or SIGHUP's), with no lock of this class held; it must be quick.
  [[nodiscard]] Subscription OnReload(std::function<void()> on_reload);

  // OK if `caller` may send to every topic_at(i), i < n; else PERMISSION_DENIED naming
  // the identities and the first forbidden topic ("<what> <i>" says where it was),
  // counted. Repeated topics are checked once.
  absl::Status CheckTopics(const Caller& caller, size_t n,
                           absl::FunctionRef<std::string_view(size_t)> topic_at, const char* what);
  // OK if `caller` has the admin right; else PERMISSION_DENIED naming `method`, counted.
  absl::Status CheckAdmin(const Caller& caller, std::string_view method);
  // Charges `messages` and `bytes` to the caller's quota, if any. Over it:
  // RESOURCE_EXHAUSTED, nothing charged, *retry_after_ms when the buckets allow it.
  absl::Status ChargeQuota(const Caller& caller, uint64_t messages, uint64_t bytes,
                           int64_t* retry_after_ms);

 private:
  struct Buckets {
    double messages_per_second = 0, bytes_per_second = 0;
    std::unique_ptr<TokenBucket> messages, bytes;  // null: no quota of the kind
  };
  std::shared_ptr<const AclRules> Current() const;
  static std::string Label(const Caller& caller);
  Buckets* BucketsLocked(const AclRule& rule, const std::string& key, int64_t now_ms)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(quota_mu_);

  const std::string path_;
  Metrics* const metrics_;
  Clock* const clock_;
  Mutex reload_mu_;  // one Reload at a time
  mutable Mutex mu_;
  std::shared_ptr<const AclRules> rules_ ABSL_GUARDED_BY(mu_);
  Mutex quota_mu_;
  absl::flat_hash_map<std::string, Buckets> buckets_ ABSL_GUARDED_BY(quota_mu_);
  size_t caller_buckets_ ABSL_GUARDED_BY(quota_mu_) = 0;  // of "*" rules
  const std::shared_ptr<Subscription::Registry> registry_;
};

struct AccessControl::Subscription::Registry {
  Mutex mu;
  uint64_t next_id ABSL_GUARDED_BY(mu) = 1;
  std::map<uint64_t, std::function<void()>> callbacks ABSL_GUARDED_BY(mu);
};

// The identities as a message names them: "cn:a, spiffe://x".
std::string JoinIdentities(const std::vector<std::string>& identities);

}  // namespace kspool::agent
