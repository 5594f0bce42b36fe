#!/usr/bin/env bash
# T1's load (8 clients x 100 messages of 100 B per Send) with two kspool-agent binaries,
# interleaved (the order alternates between rounds), a fresh agent and WAL per run, the
# raw RocksDB ceiling (1,024 messages per synced write) measured in each run. Prints per
# figure each binary's median and runs, and the per-round ratio B / A (median, range,
# every round): the acked rate, the agent's CPU per delivered message, that CPU as a
# multiple of the ceiling writer's, and the CPU of the front-door threads (all but the
# drain, the committer, librdkafka's and RocksDB's).
# Usage: tools/bench-ab.sh A_AGENT_BINARY B_AGENT_BINARY
# Env: ROUNDS (5), SECS (20 per run), BUILD (build: kspool-bench, kspool-devkafka), OUT.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 A_AGENT_BINARY B_AGENT_BINARY" >&2; exit 2; }
A=$(realpath "$1") B=$(realpath "$2")
cd "$(dirname "$0")/.."
BIN=${BUILD:-build}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/kspool-bench-ab.XXXXXX")}
ROUNDS=${ROUNDS:-5}
mkdir -p "$OUT"
ninja -C "$BIN" kspool-bench kspool-devkafka >/dev/null
. tools/bench-common.sh
start_devkafka bench-0:8
run_one() {  # name binary round
  : >"$OUT/agent.out"
  "$2" --wal-dir "$OUT/wal" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    --kafka-brokers "$BROKERS" --log-level warn >"$OUT/agent.out" 2>>"$OUT/agent.log" &
  AGENT_PID=$!
  wait_for "$OUT/agent.out" "kspool-agent ready"
  AGENT=$(sed -n 's/.*grpc=\([^ ]*\).*/\1/p' "$OUT/agent.out")
  "$BIN"/tools/kspool-bench --agent "$AGENT" --agent-pid "$AGENT_PID" --json --clients 8 \
    --batch 100 --size 100 --duration "${SECS:-20}" --drain-wait 60 --ceiling "$OUT" \
    --ceiling-batch 1024 >"$OUT/$1-$3.json"
  stop_agent
  rm -rf "$OUT/wal"
}
for i in $(seq "$ROUNDS"); do
  if [ $((i % 2)) = 1 ]; then run_one a "$A" "$i"; run_one b "$B" "$i"
  else run_one b "$B" "$i"; run_one a "$A" "$i"; fi
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
def ld(name, i): return json.load(open(f"{out}/{name}-{i}.json"))
back = ("kspool-drain", "kspool-walsync", "rdk:", "rocksdb:")
def front(d):
    th = d["cpu"]["agent_threads"]
    return sum(v for k, v in th.items() if not k.startswith(back)) / d["cpu"]["delivered"] * 1e6
figures = (("acked msg/s", lambda d: d["acked_per_s"]),
           ("agent CPU us per delivered message", lambda d: d["cpu"]["agent_us_per_delivered"]),
           ("agent CPU / ceiling writer's CPU", lambda d: d["ceiling"]["agent_cpu_ratio"]),
           ("front-door threads' CPU us per delivered message", front))
for label, f in figures:
    a = [f(ld("a", i)) for i in range(1, n + 1)]
    b = [f(ld("b", i)) for i in range(1, n + 1)]
    r = [y / x for x, y in zip(a, b)]
    fmt = lambda v: "[" + ", ".join(f"{x:,.3f}" for x in v) + "]"
    print(f"{label}\n  A {statistics.median(a):,.3f} {fmt(a)}\n  B {statistics.median(b):,.3f} {fmt(b)}\n"
          f"  B/A median {statistics.median(r):.3f}, range {min(r):.3f}-{max(r):.3f}, rounds {fmt(r)}")
PY
echo "raw figures: $OUT"
