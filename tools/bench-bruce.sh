#!/usr/bin/env bash
# The Bruce/Dory-format benchmark: kspool-devkafka, a fresh kspool-agent (and WAL) per run
# with a Bruce datagram socket, and `kspool-bench --bruce-datagram` (4 senders, 100 B
# values, SECONDS per phase): the datagram rate (sent, durable, delivered), then 4
# clients doing single-message unary gRPC Sends for as long, in the same run.
# Env: BUILD (default build), RUNS (3), SECONDS_PER_PHASE (10), OUT (a temp dir).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BUILD:-build}
RUNS=${RUNS:-3}
SECS=${SECONDS_PER_PHASE:-10}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/kspool-bench-bruce.XXXXXX")}
mkdir -p "$OUT"
KAFKA_PID="" AGENT_PID=""
cleanup() {
  [ -n "$AGENT_PID" ] && kill -TERM "$AGENT_PID" 2>/dev/null && wait "$AGENT_PID" 2>/dev/null || true
  [ -n "$KAFKA_PID" ] && kill -TERM "$KAFKA_PID" 2>/dev/null && wait "$KAFKA_PID" 2>/dev/null || true
}
trap cleanup EXIT
wait_for() { for _ in $(seq 300); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }

"$BIN"/tools/kspool-devkafka --brokers 3 --topic bench-0:8 </dev/null >"$OUT/devkafka.out" 2>"$OUT/devkafka.log" &
KAFKA_PID=$!
wait_for "$OUT/devkafka.out" READY
BROKERS=$(sed -n 's/^BOOTSTRAP //p' "$OUT/devkafka.out")
for i in $(seq "$RUNS"); do
  : >"$OUT/agent.out"
  "$BIN"/agent/kspool-agent --wal-dir "$OUT/wal" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    --kafka-brokers "$BROKERS" --log-level warn --bruce-datagram-socket "$OUT/bruce.sock" \
    >"$OUT/agent.out" 2>>"$OUT/agent.log" &
  AGENT_PID=$!
  wait_for "$OUT/agent.out" "kspool-agent ready"
  AGENT=$(sed -n 's/.*grpc=\([^ ]*\).*/\1/p' "$OUT/agent.out")
  "$BIN"/tools/kspool-bench --agent "$AGENT" --bruce-datagram "$OUT/bruce.sock" \
    --duration "$SECS" --json >"$OUT/run-$i.json"
  cat "$OUT/run-$i.json"
  kill -TERM "$AGENT_PID"; wait "$AGENT_PID" || true; AGENT_PID=""
  rm -rf "$OUT/wal"
done
python3 - "$OUT" "$RUNS" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
rs = [json.load(open(f"{out}/run-{i}.json")) for i in range(1, runs + 1)]
for key in ("sent_per_s", "durable_per_s", "delivered_per_s", "unary_acked_per_s", "ratio_to_unary"):
    v = [r[key] for r in rs]
    print(f"{key:20s} median {statistics.median(v):>10,.1f}  runs {' '.join(f'{x:,.1f}' for x in v)}")
PY
