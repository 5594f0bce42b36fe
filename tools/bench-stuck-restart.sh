#!/usr/bin/env bash
# T4's restart with the backlog behind one stuck partition of a keyed topic (issue 42,
# defect 6): every record is part-settled, so the WAL holds one bitmap per record, and
# opening (which must not read them) and the first Send after a crash are measured on it.
# kspool-devkafka (3 brokers, topic bench-0 with 8 partitions, partition 3 without a
# leader) + kspool-agent + kspool-bench on loopback:
#   1. keyed 1 KB messages in requests of 100 (1024 keys over the 8 partitions) until the
#      WAL directory holds BACKLOG_BYTES (default 10 GB): the drain delivers 7/8 of each
#      record, and every record keeps its partition-3 messages and a bitmap;
#   2. SIGKILL; the directory's size (du) and its bitmaps (kspoolctl wal verify);
#   3. the agent restarted on it, RUNS times (default 3, SIGKILL between): the time from
#      its start until a Send to another topic is accepted (target <= 2 s), and its log's
#      open line.
# Knobs: BACKLOG_BYTES, RUNS, OUT (/tmp/kspool-bench-stuck), BUILD (build).
set -euo pipefail
cd "$(dirname "$0")/.."
BACKLOG_BYTES=${BACKLOG_BYTES:-10000000000}
RUNS=${RUNS:-3}
OUT=${OUT:-/tmp/kspool-bench-stuck}
BUILD=${BUILD:-build}
ninja -C "$BUILD" -j2 kspool-agent kspool-devkafka kspool-bench kspoolctl >/dev/null
BIN=$BUILD
rm -rf "$OUT" && mkdir -p "$OUT"
. tools/bench-common.sh
LOG_LEVEL=info
now() { date +%s.%N; }
since() { python3 -c "print(round($(now) - $1, 2))"; }
crash_agent() { kill -KILL "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null || true; AGENT_PID=""; }
FLAGS=(--wal-max-bytes $((BACKLOG_BYTES * 3 / 2)))

start_devkafka bench-0:8 probe:1
kafka_cmd "leader bench-0 3 none" >/dev/null
start_agent "$OUT/wal" "${FLAGS[@]}"
T0=$(now)
"$BIN"/tools/kspool-bench --agent "$AGENT" --keys --clients 8 --batch 100 --size 1000 \
  --count $((BACKLOG_BYTES / 1000)) >"$OUT/fill.json"
echo "filled in $(since "$T0") s" >&2
sleep 5  # the drain settles what it can of the last records
crash_agent
WAL_DISK=$(du -sb "$OUT/wal" | cut -f1)
BITMAPS=$("$BIN"/tools/kspoolctl --json wal verify "$OUT/wal" |
  python3 -c "import json,sys; print(json.load(sys.stdin)['bitmaps'])")
echo "WAL ${WAL_DISK} bytes on disk, ${BITMAPS} bitmaps" >&2
times=()
for i in $(seq "$RUNS"); do
  T0=$(now)
  start_agent "$OUT/wal" "${FLAGS[@]}"
  until "$BIN"/tools/kspoolctl --agent "$AGENT" --timeout-ms 1000 send --topic probe restart-probe \
      >/dev/null 2>&1; do sleep 0.01; done
  times+=("$(since "$T0")")
  crash_agent
done
grep -m3 -i "opened\|open " "$OUT/agent.log" | tail -3 >&2 || true
echo "backlog $((BACKLOG_BYTES / 1000)) keyed messages, WAL $((WAL_DISK / 1000000)) MB on disk, $BITMAPS bitmaps; restart until a Send is accepted: ${times[*]} s (target <= 2 s)" | tee "$OUT/table.txt"
