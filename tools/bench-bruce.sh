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
. tools/bench-common.sh
start_devkafka bench-0:8
for i in $(seq "$RUNS"); do
  start_agent "$OUT/wal" --bruce-datagram-socket "$OUT/bruce.sock"
  "$BIN"/tools/kspool-bench --agent "$AGENT" --bruce-datagram "$OUT/bruce.sock" \
    --duration "$SECS" --json >"$OUT/run-$i.json"
  cat "$OUT/run-$i.json"
  stop_agent
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
