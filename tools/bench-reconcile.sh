#!/usr/bin/env bash
# What reconciliation costs a restart: kspool-devkafka (3 brokers, topic bench-0 with 8
# partitions) + kspool-agent + kspool-bench, all on loopback. Each round (RUNS, default
# 3) starts a fresh kspool-devkafka and WAL:
#   1. A warm-up of 20,000 keyed messages, delivered: every partition has a settled
#      watermark.
#   2. With every broker down, COUNT keyed messages (default 1,000,000, 100 B each, 1024
#      keys over the 8 partitions) are acknowledged; the agent stops; its WAL is copied.
#   3. Brokers up, the agent delivers them all and stops: Kafka holds every message, and
#      the copy of the WAL holds them all unsettled (in doubt), as after a crash that lost
#      every settle.
#   4. The copy is put back and the agent restarted on it with reconciliation (the
#      default), then put back again and restarted with --reconcile-max-hold 0 (off:
#      every message produced again). For each start: the time until a Send is accepted,
#      and until the WAL is empty (every entry settled: found in Kafka, or delivered
#      again); for the reconciling one, how long the topic was held and the copies found.
# kspool-devkafka (librdkafka's mock cluster) keeps at most 5 MiB or 100,000 message sets
# per partition, dropping the oldest: beyond about 270,000 messages of 100 B over 8
# partitions, the oldest copies are gone before they are read back, and those messages
# are produced again (a real broker keeps them by its retention).
# Prints one table (also $OUT/table.txt): every round's figures and their medians, and
# the ratio of the two drain times within each round. Knobs: COUNT, RUNS, OUT
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
entries() { "$BIN"/tools/kspoolctl --agent "$AGENT" --json status | python3 -c "import json,sys; print(json.load(sys.stdin)['entries'])"; }
bench() { "$BIN"/tools/kspool-bench --agent "$AGENT" --keys --clients 8 --batch 100 --size 100 "$@"; }

prepare() {  # a fresh cluster holding COUNT messages, and a WAL copy holding them in doubt
  start_devkafka bench-0:8
  rm -rf "$OUT/wal" "$OUT/wal.in-doubt"
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
}
restart() {  # on|off, round: a start on the put-back WAL, until it is empty
  rm -rf "$OUT/wal" && cp -a "$OUT/wal.in-doubt" "$OUT/wal"
  : >"$OUT/agent.log"
  local t0; t0=$(now)
  if [ "$1" = on ]; then start_agent "$OUT/wal"; else start_agent "$OUT/wal" --reconcile-max-hold 0; fi
  until "$BIN"/tools/kspoolctl --agent "$AGENT" --timeout-ms 1000 send --topic probe-"$2" x >/dev/null 2>&1; do sleep 0.01; done
  local accepted; accepted=$(since "$t0")
  until [ "$(entries)" = 0 ]; do sleep 0.2; done
  local held found
  held=$(sed -n "s/.*topic 'bench-0' reconciled in \([0-9]*\) ms.*/\1/p" "$OUT/agent.log" | tail -1)
  found=$(sed -n "s/.*topic 'bench-0' reconciled in .* ms; \([0-9]*\) in-doubt.*/\1/p" "$OUT/agent.log" | tail -1)
  echo "$1 $2 $accepted $(since "$t0") ${held:-0} ${found:-0}" >>"$OUT/runs.txt"
  stop_agent
}
for i in $(seq "$RUNS"); do
  echo "round $i of $RUNS: $COUNT messages..." >&2
  prepare
  restart on "$i"
  restart off "$i"
  cleanup; KAFKA_PID=""
done

python3 - "$OUT" "$COUNT" <<'PY' | tee "$OUT/table.txt"
import statistics, sys
out, count = sys.argv[1], int(sys.argv[2])
rows = [l.split() for l in open(f"{out}/runs.txt")]
by = {(m, r): (float(a), float(d), float(h) / 1000, int(f)) for m, r, a, d, h, f in rows}
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
print(f"  topic held while read back:        {fmt(col('on', 2))}")
print(f"  copies found, per round: {', '.join(str(x) for x in col('on', 3))} of {count}")
PY
