#!/usr/bin/env bash
# The alert rules: `promtool check rules` (syntax, templates) and `promtool test rules`
# on tests/deploy/alerts_test.yml, which must make every alert of the rules file fire
# and resolve (checked here: promtool itself does not require it).
# Usage: tests/deploy/alerts_test.sh REPO_ROOT
set -euo pipefail
ROOT=$(realpath "${1:-.}")
RULES=$ROOT/deploy/prometheus/kspool-alerts.yml
TESTS=$ROOT/tests/deploy/alerts_test.yml
command -v promtool >/dev/null || { echo "FAIL: promtool not found (Debian: apt-get install prometheus; tools/install-deps.sh does)"; exit 1; }
promtool check rules "$RULES"
(cd "$(dirname "$TESTS")" && promtool test rules "$(basename "$TESTS")")
# Each alert: some eval expects it firing, and a later eval expects it resolved.
"${PYTHON3:-python3}" - "$RULES" "$TESTS" <<'PY'
import sys, yaml
rules, tests = (yaml.safe_load(open(p)) for p in sys.argv[1:3])
alerts = [r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r]
missing = []
for a in alerts:
    evals = [t for case in tests["tests"] for t in case.get("alert_rule_test", [])
             if t["alertname"] == a]
    def seconds(t):  # eval_time: 90s, 5m, 1h
        v = str(t["eval_time"])
        return int(v[:-1]) * {"s": 1, "m": 60, "h": 3600}[v[-1]]
    fired = [seconds(t) for t in evals if t.get("exp_alerts")]
    resolved = [seconds(t) for t in evals if not t.get("exp_alerts")]
    if not fired or not any(r > min(fired) for r in resolved):
        missing.append(a)
if missing:
    sys.exit("FAIL: alerts not tested to fire and then resolve: " + ", ".join(missing))
print(f"ok: all {len(alerts)} alerts fire and resolve in the tests")
PY
