#!/usr/bin/env bash
# What reconciliation costs a restart: kspool-devkafka (3 brokers, topic bench-0 with 8
# partitions) + kspool-agent + kspool-bench, all on loopback.
#   1. A warm-up of 20,000 keyed messages, delivered: every partition has a settled
#      watermark.
#   2. With every broker down, COUNT keyed messages (default 1,000,000, 100 B each, 1024
#      keys over the 8 partitions) are acknowledged; the agent stops; its WAL is copied.
#   3. Brokers up, the agent delivers them all and stops: Kafka holds every message, and
#      the copy of the WAL holds them all unsettled (in doubt), as after a crash that lost
#      every settle.
#   4. Per round (RUNS, default 3), the copy is put back twice and the agent restarted on
#      it, in alternating order: with reconciliation (the default) and with
#      --reconcile-max-hold 0 (off: every message produced again). For each start: the
#      time until a Send is accepted, and until the WAL is empty (every entry settled:
#      found in Kafka, or delivered again).
# Prints one table (also $OUT/table.txt): every run's figures, their medians, and the
# ratio of the two drain times within each round. Knobs: COUNT, RUNS, OUT
# (/tmp/kspool-bench-reconcile), BUILD (build), AGENT_ARGS.
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-1000000}
RUNS=${RUNS:-3}
OUT=${OUT:-/tmp/kspool-bench-reconcile}
BUILD=${BUILD:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$BUILD" -j2 kspool-agent kspool-devkafka kspool-bench kspoolctl >/dev/null
BIN=$BUILD
rm -rf "$OUT" && mkdir -p "$OUT"

. tools/bench-common.sh
LOG_LEVEL=info
now() { date +%s.%N; }
since() { python3 -c "print(round($(now) - $1, 2))"; }
start_devkafka bench-0:8
entries() { "$BIN"/tools/kspoolctl --agent "$AGENT" --json status | python3 -c "import json,sys; print(json.load(sys.stdin)['entries'])"; }
bench() { "$BIN"/tools/kspool-bench --agent "$AGENT" --keys --clients 8 --batch 100 --size 100 "$@"; }

echo "fill: $COUNT messages with the brokers down..." >&2
start_agent "$OUT/wal"
bench --count 20000 --drain-wait 60 >/dev/null
kafka_cmd "broker down all" >/dev/null
bench --count "$COUNT" >/dev/null
stop_agent
cp -a "$OUT/wal" "$OUT/wal.in-doubt"
kafka_cmd "broker up all" >/dev/null
start_agent "$OUT/wal"
until [ "$(entries)" = 0 ]; do sleep 1; done
stop_agent

restart() {  # on|off, round: a start on the put-back WAL, until it is empty
  rm -rf "$OUT/wal" && cp -a "$OUT/wal.in-doubt" "$OUT/wal"
  local t0; t0=$(now)
  if [ "$1" = on ]; then start_agent "$OUT/wal"; else start_agent "$OUT/wal" --reconcile-max-hold 0; fi
  until "$BIN"/tools/kspoolctl --agent "$AGENT" --timeout-ms 1000 send --topic probe-"$2" x >/dev/null 2>&1; do sleep 0.01; done
  local accepted; accepted=$(since "$t0")
  until [ "$(entries)" = 0 ]; do sleep 0.2; done
  echo "$1 $2 $accepted $(since "$t0")" >>"$OUT/runs.txt"
  stop_agent
}
for i in $(seq "$RUNS"); do
  echo "round $i of $RUNS..." >&2
  if [ $((i % 2)) = 1 ]; then restart on "$i"; restart off "$i"; else restart off "$i"; restart on "$i"; fi
done
FOUND=$(grep -o '[0-9]* in-doubt entries found' "$OUT/agent.log" | tail -1 | cut -d' ' -f1)

python3 - "$OUT" "$COUNT" "${FOUND:-0}" <<'PY' | tee "$OUT/table.txt"
import statistics, sys
out, count, found = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = [l.split() for l in open(f"{out}/runs.txt")]
by = {(m, r): (float(a), float(d)) for m, r, a, d in rows}
rounds = sorted({r for _, r in by}, key=int)
def col(mode, k): return [by[(mode, r)][k] for r in rounds]
def fmt(v): return f"{statistics.median(v):.2f} s [{', '.join(f'{x:.2f}' for x in v)}]"
ratios = [by[("on", r)][1] / by[("off", r)][1] for r in rounds]
print(f"restart on a WAL of {count} in-doubt entries, all already in Kafka (8 partitions)")
print(f"  Send accepted, reconciling:        {fmt(col('on', 0))}")
print(f"  Send accepted, reconciliation off: {fmt(col('off', 0))}")
print(f"  WAL empty, reconciling (found in Kafka, settled): {fmt(col('on', 1))}")
print(f"  WAL empty, reconciliation off (produced again):   {fmt(col('off', 1))}")
print(f"  ratio reconciling / off, per round: {statistics.median(ratios):.2f} [{', '.join(f'{x:.2f}' for x in ratios)}]")
print(f"  copies found by the last reconciling start (log): {found}")
PY
