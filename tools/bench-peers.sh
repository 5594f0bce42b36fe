#!/usr/bin/env bash
# The peer benchmark: kspool against rsyslog (imtcp in, omkafka out), each forwarding
# 100-byte messages to the same kspool-devkafka (librdkafka's mock cluster on loopback,
# topic bench-0 with 8 partitions, as bench-suite.sh). Five forwarders run for SECONDS
# each, in ROUNDS interleaved rounds (every forwarder once per round, the order rotating
# by one between rounds), each run on a fresh process with a fresh WAL / queue directory:
#   rsyslog-mem         rsyslogd, in-memory action queue (not durable)
#   rsyslog-disk        rsyslogd, disk action queue with every queue write fsynced
#   kspool-bruce-tcp    kspool-agent --bruce-tcp, fed like rsyslog: one TCP connection
#   kspool-grpc-batch   kspool-agent, gRPC: 8 clients x 100 messages per Send (T1's load)
#   kspool-grpc-single  kspool-agent, gRPC: 64 clients x 1 message per Send (T2's load)
# The senders are kspool-bench's: for rsyslog, `--tcp-lines` writes RFC 3164 lines
# ("<134>Jan  1 00:00:00 bench bench: " + 100 random printable bytes + "\n") on one TCP
# connection; for kspool's Bruce TCP input, `--bruce-tcp` writes Bruce AnyPartition
# messages with the same kind of 100-byte values on one connection. Both are closed loop,
# blocking writes of ~16 KiB of whole messages, so they go as fast as the forwarder reads.
# rsyslog forwards only the message text (template "%msg:2:$%": the 100 bytes, no
# newline), so every forwarder puts 100-byte values into Kafka.
#
# What it measures, per run: the messages Kafka received (the sum of bench-0's partitions'
# high watermarks before and after, `kspool-bench --kafka-offsets/--kafka-wait`, not what
# the sender counted), polled after the load until the forwarder has delivered all it
# took in (the sender's count), or its deliveries stopped for IDLE seconds, or DRAIN_WAIT
# seconds passed. Delivered msg/s = delivered / (load start .. the last rise); CPU per
# delivered message = the forwarder process's utime+stime (/proc/PID/stat, all threads)
# over the same span / delivered. The table (also $OUT/table.md) gives the median and
# range over the rounds, every round, and ratios taken within each round: kspool's CPU
# per message over rsyslog-mem's (gRPC batched, Bruce TCP), and kspool Bruce TCP's rate
# over rsyslog-mem's; after each round, RocksDB alone writes 1,024 messages of 100 B per
# synced write for 5 s (`kspool-bench --ceiling-only`), and kspool's CPU per message is
# also given over that writer's, per round; then the Kafka client alone for 3 s each
# (`kspool-bench --kafka-ceiling`): kspool's own producer with its settings and its two
# headers per record, and plain librdkafka with omkafka's settings here; then gRPC alone
# for 5 s (`kspool-bench --grpc-ceiling`): a process that answers every Send of T1's load
# (8 clients x 100 messages) at once and does nothing else. kspool's floor is RocksDB
# alone plus its producer alone: the CPU a message costs written once and sent once,
# before it is read back, settled, parsed from gRPC or tracked by the drain; with gRPC
# alone added, the least its gRPC batched path can cost. And since kspool writes a Send's
# messages for a topic as one record, RocksDB alone once more in that layout (10,000-byte
# values, 3 per synced write; per message: its CPU over 100): the floor in kspool's own
# layout, and the floor with no WAL at all (producer + gRPC). Raw figures:
# $OUT/<forwarder>-<round>.json (+ .load.json, the sender's report, and .kafka.json, the
# count), rsyslog's configs and logs in $OUT/rs-*.
#
# rsyslog configuration (rsyslog 8.2302 from Debian; rsyslogd -n -f CONF -i PIDFILE as a
# child process, its own work directory, only imtcp and omkafka loaded):
#   input(type="imtcp" port="0" listenPortFileName=... ruleset="fwd"), rsyslog's default
#   main queue (in memory) in front; in ruleset "fwd" one action:
#   action(type="omkafka" broker=[the mock's three brokers] topic="bench-0"
#     template="payload" partitions.auto="on" (librdkafka spreads messages over the 8
#     partitions, as kspool's murmur2_random does without keys)
#     confParam=["compression.codec=lz4", "queue.buffering.max.messages=1000000",
#       "queue.buffering.max.kbytes=1048576"] (kspool's own librdkafka defaults; acks
#       stays librdkafka's default, all, as kspool's; linger stays librdkafka's 5 ms)
#     queue.size="100000" queue.dequeueBatchSize="1024" (larger batches for throughput,
#       as rsyslog's queue documentation advises; the action queue's default is 128)
#   rsyslog-mem:  queue.type="LinkedList"
#   rsyslog-disk: queue.type="Disk" queue.filename="kafka" queue.spoolDirectory=...
#     queue.syncQueueFiles="on" (an fsync after each write to the queue's files);
#     queue.checkpointInterval is left at its default (no forced checkpoint of the queue's
#     state file), which flatters rsyslog's durable mode if anything.
#   omkafka hands messages to librdkafka asynchronously, so in both modes a message has
#   left rsyslog's queue before Kafka acknowledged it; kspool keeps it in its WAL until then.
# No connection options were needed for omkafka to reach the mock cluster.
#
# Env: ROUNDS (3), SECONDS (20, each load), DRAIN_WAIT (60: the longest wait after a load
# for deliveries), IDLE (5: seconds without a new delivery that end the wait), OUT
# (/tmp/kspool-bench-peers), BUILD (build), JOBS (2, ninja's), AGENT_ARGS (extra
# kspool-agent flags), FORWARDERS (the list above, space-separated, to run a subset; a
# kspool forwarder named NAME@X runs the agent binary in $AGENT_X instead of the build's,
# to compare two builds within the same rounds, e.g. AGENT_A=/tmp/a AGENT_B=/tmp/b
# FORWARDERS="kspool-bruce-tcp@A kspool-bruce-tcp@B"; the table then adds @B ÷ @A per
# round).
# Installs rsyslog and rsyslog-kafka with apt-get when missing (needs root then). A
# default run took 6 min 43 s on the 2-core VM (2026-12-03; about 2 min 15 s a round).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
LOAD_S=$(printenv SECONDS || echo 20)  # bash's own SECONDS counts up; read the environment's
DRAIN_WAIT=${DRAIN_WAIT:-60}
IDLE=${IDLE:-5}
OUT=${OUT:-/tmp/kspool-bench-peers}
BUILD=${BUILD:-build}
FORWARDERS=(${FORWARDERS:-rsyslog-mem rsyslog-disk kspool-bruce-tcp kspool-grpc-batch kspool-grpc-single})
if ! command -v rsyslogd >/dev/null || ! ls /usr/lib/*/rsyslog/omkafka.so >/dev/null 2>&1; then
  echo "installing rsyslog and rsyslog-kafka..." >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y rsyslog rsyslog-kafka >/dev/null
fi
RSYSLOGD=$(command -v rsyslogd || echo /usr/sbin/rsyslogd)
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$BUILD" -j "${JOBS:-2}" kspool-agent kspool-devkafka kspool-bench >/dev/null
BIN=$BUILD
rm -rf "$OUT" && mkdir -p "$OUT"

. tools/bench-common.sh
RSYSLOG_PID=""
stop_rsyslog() {
  [ -n "$RSYSLOG_PID" ] && kill -TERM "$RSYSLOG_PID" 2>/dev/null && wait "$RSYSLOG_PID" 2>/dev/null || true
  RSYSLOG_PID=""
}
trap 'stop_rsyslog; cleanup' EXIT
cpu_s() { awk '{ sub(/.*\) /, ""); print ($12 + $13) / '"$(getconf CLK_TCK)"' }' /proc/"$1"/stat; }
json() { python3 -c "import json,sys; d=json.load(open('$1')); print($2)"; }
bench() { "$BIN"/tools/kspool-bench "$@"; }
start_devkafka bench-0:8

# start_rsyslog mem|disk DIR: RSYSLOG_PID and RSYSLOG_PORT are set.
start_rsyslog() {
  local mode=$1 dir=$2 queue brokers
  rm -rf "$dir" && mkdir -p "$dir/work" "$dir/queue"
  brokers=\"${BROKERS//,/\",\"}\"
  if [ "$mode" = disk ]; then
    queue="queue.type=\"Disk\" queue.filename=\"kafka\" queue.spoolDirectory=\"$dir/queue\" queue.syncQueueFiles=\"on\""
  else
    queue="queue.type=\"LinkedList\""
  fi
  cat >"$dir/rsyslog.conf" <<EOF
global(workDirectory="$dir/work")
module(load="imtcp")
module(load="omkafka")
template(name="payload" type="string" string="%msg:2:\$%")
ruleset(name="fwd") {
  action(type="omkafka" name="kafka" broker=[$brokers] topic="bench-0" template="payload"
         partitions.auto="on"
         confParam=["compression.codec=lz4", "queue.buffering.max.messages=1000000",
                    "queue.buffering.max.kbytes=1048576"]
         $queue queue.size="100000" queue.dequeueBatchSize="1024")
}
input(type="imtcp" port="0" listenPortFileName="$dir/port" ruleset="fwd")
# rsyslog's own messages (the default ruleset): to a file
action(type="omfile" file="$dir/rsyslogd.log")
EOF
  "$RSYSLOGD" -n -f "$dir/rsyslog.conf" -i "$dir/rsyslogd.pid" </dev/null >"$dir/stdout" 2>&1 &
  RSYSLOG_PID=$!
  for _ in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.1; done
  [ -s "$dir/port" ] || { echo "rsyslogd did not start: $(cat "$dir/stdout")" >&2; exit 1; }
  RSYSLOG_PORT=$(tr -d '\n' <"$dir/port")
}

# run_one FORWARDER ROUND POSITION: one load, then the count in Kafka.
run_one() {
  local f=$1 round=$2 pos=$3 pid feed w0 t0 c0 t1 taken var
  local base="$OUT/$f-$round"
  echo "round $round/$ROUNDS: $f for ${LOAD_S}s..." >&2
  if [[ $f == *@* ]]; then var=AGENT_${f##*@}; AGENT_BIN=${!var:?$var is not set}; else AGENT_BIN=""; fi
  case ${f%@*} in
    rsyslog-mem | rsyslog-disk)
      start_rsyslog "${f#rsyslog-}" "$OUT/rs-$f-$round"
      pid=$RSYSLOG_PID feed=(--tcp-lines "127.0.0.1:$RSYSLOG_PORT") ;;
    kspool-bruce-tcp)
      start_agent "$OUT/wal" --bruce-tcp 127.0.0.1:0
      pid=$AGENT_PID feed=(--bruce-tcp "$(sed -n 's/.* bruce_tcp=\([^ ]*\).*/\1/p' "$OUT/agent.out")") ;;
    kspool-grpc-batch)
      start_agent "$OUT/wal"
      pid=$AGENT_PID feed=(--agent "$AGENT" --clients 8 --batch 100 --json) ;;
    kspool-grpc-single)
      start_agent "$OUT/wal"
      pid=$AGENT_PID feed=(--agent "$AGENT" --clients 64 --batch 1 --json) ;;
    *) echo "unknown forwarder $f" >&2; exit 2 ;;
  esac
  w0=$(bench --kafka-offsets "$BROKERS" | python3 -c "import json,sys; print(json.load(sys.stdin)['offsets'])")
  t0=$(date +%s.%N) c0=$(cpu_s "$pid")
  bench "${feed[@]}" --size 100 --duration "$LOAD_S" >"$base.load.json"
  t1=$(date +%s.%N)
  taken=$(json "$base.load.json" "d.get('sent', d.get('acked'))")
  bench --kafka-wait "$BROKERS" --from "$w0" --expect "$taken" --forwarder-pid "$pid" \
    --idle "$IDLE" --drain-wait "$DRAIN_WAIT" >"$base.kafka.json"
  python3 - "$base" "$f" "$round" "$pos" "$taken" "$t0" "$t1" "$c0" <<'PY'
import json, sys
base, f, rnd, pos, taken, t0, t1, c0 = sys.argv[1:]
k = json.load(open(base + ".kafka.json"))
span = float(t1) - float(t0) + k["last_change_s"]
cpu = k["pid_cpu_s"] - float(c0)
d = k["delivered"]
json.dump({"forwarder": f, "round": int(rnd), "position": int(pos), "taken_in": int(taken),
           "delivered": d, "all_delivered": k["reached"], "seconds": span,
           "delivered_per_s": d / span if span > 0 else 0, "cpu_s": cpu,
           "cpu_us_per_delivered": cpu / d * 1e6 if d else 0}, open(base + ".json", "w"))
PY
  if [ "$pid" = "$RSYSLOG_PID" ]; then stop_rsyslog; rm -rf "$OUT/rs-$f-$round/queue"; else stop_agent; rm -rf "$OUT/wal"; fi
}

START=$(date +%s)
n=${#FORWARDERS[@]}
for round in $(seq "$ROUNDS"); do
  for k in $(seq 0 $((n - 1))); do
    run_one "${FORWARDERS[$(((round - 1 + k) % n))]}" "$round" $((k + 1))
  done
  # The raw ceiling beside them: RocksDB alone, 1,024 messages of 100 B per synced write.
  echo "round $round/$ROUNDS: raw RocksDB ceiling for 5s..." >&2
  bench --ceiling-only "$OUT" --ceiling-batch 1024 --size 100 --duration 5 \
    >"$OUT/ceiling-$round.json"
  # RocksDB alone again, written as kspool lays a gRPC batched load out: 10,000-byte
  # values (a record of 100 messages of 100 B), 3 per synced write (~300 messages, about
  # its group commit under T1's load).
  echo "round $round/$ROUNDS: RocksDB ceiling with kspool's record layout for 5s..." >&2
  rm -rf "$OUT/ceiling-records"
  bench --ceiling-only "$OUT/ceiling-records" --ceiling-batch 3 --size 10000 --duration 5 \
    >"$OUT/ceiling-records-$round.json"
  rm -rf "$OUT/ceiling-records"
  # And the Kafka client alone: kspool's producer (its settings and headers), then
  # librdkafka as omkafka is configured here.
  for mode in kspool plain; do
    echo "round $round/$ROUNDS: Kafka client alone ($mode) for 3s..." >&2
    bench --kafka-ceiling "$BROKERS" --kafka-ceiling-mode "$mode" --size 100 --duration 3 \
      >"$OUT/kafka-ceiling-$mode-$round.json"
  done
  # And gRPC alone: the gRPC batched load against a server that only answers.
  echo "round $round/$ROUNDS: gRPC alone for 5s..." >&2
  bench --grpc-ceiling --clients 8 --batch 100 --size 100 --duration 5 \
    >"$OUT/grpc-ceiling-$round.json"
done
ELAPSED=$(($(date +%s) - START))

python3 - "$OUT" "$ROUNDS" "$LOAD_S" "$ELAPSED" "${FORWARDERS[@]}" <<'PY' | tee "$OUT/table.md"
import json, os, platform, statistics, sys, time
out, rounds, load_s, elapsed, fws = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5:]
runs = {f: [json.load(open(f"{out}/{f}-{r}.json")) for r in range(1, rounds + 1)] for f in fws}
def mr(vals, fmt):
    """Median, then the range when there is more than one value."""
    m = fmt.format(statistics.median(vals))
    return m if len(vals) < 2 else f"{m} ({fmt.format(min(vals))}–{fmt.format(max(vals))})"
label = {"rsyslog-mem": "rsyslog, memory queue (imtcp, 1 TCP connection)",
         "rsyslog-disk": "rsyslog, disk queue fsynced (imtcp, 1 TCP connection)",
         "kspool-bruce-tcp": "kspool, Bruce TCP input (1 TCP connection)",
         "kspool-grpc-batch": "kspool, gRPC 8 clients x 100 msgs per Send",
         "kspool-grpc-single": "kspool, gRPC 64 clients x 1 msg per Send"}
print(f"Peer benchmark, {time.strftime('%Y-%m-%d')}, {platform.node()}: {os.cpu_count()} cores; "
      f"ROUNDS={rounds} SECONDS={load_s}, 100-byte messages to kspool-devkafka (bench-0, 8 "
      f"partitions); {elapsed} s in all\n")
print("| forwarder | delivered msg/s (in Kafka) | CPU per delivered msg (µs) | delivered / taken in |")
print("| --- | ---: | ---: | ---: |")
for f in fws:
    rs = runs[f]
    name = label.get(f.split("@")[0], f) + (f" [{f.split('@')[1]}]" if "@" in f else "")
    print(f"| {name} | {mr([r['delivered_per_s'] for r in rs], '{:,.0f}')} | "
          f"{mr([r['cpu_us_per_delivered'] for r in rs], '{:.2f}')} | "
          f"{sum(r['delivered'] for r in rs):,} / {sum(r['taken_in'] for r in rs):,} |")
def ratio(name, a, b, key):
    if a in runs and b in runs:
        v = [x[key] / y[key] if y[key] else 0 for x, y in zip(runs[a], runs[b])]
        print(f"| {name} | {mr(v, '{:.2f}')} | {' '.join(f'{x:.2f}' for x in v)} |")
print("\n| ratio, within each round | median (range) | rounds |")
print("| --- | ---: | --- |")
ratio("kspool gRPC batched CPU/msg ÷ rsyslog memory queue CPU/msg", "kspool-grpc-batch", "rsyslog-mem", "cpu_us_per_delivered")
ratio("kspool Bruce TCP CPU/msg ÷ rsyslog memory queue CPU/msg", "kspool-bruce-tcp", "rsyslog-mem", "cpu_us_per_delivered")
ratio("kspool Bruce TCP msg/s ÷ rsyslog memory queue msg/s", "kspool-bruce-tcp", "rsyslog-mem", "delivered_per_s")
# Two builds within the same rounds (NAME@A, NAME@B): B over A.
for a in fws:
    b = a[:-2] + "@B" if a.endswith("@A") else None
    if b in runs:
        ratio(f"{b} CPU/msg ÷ {a}", b, a, "cpu_us_per_delivered")
        ratio(f"{b} msg/s ÷ {a}", b, a, "delivered_per_s")
ceiling = [json.load(open(f"{out}/ceiling-{r}.json"))["ceiling"] for r in range(1, rounds + 1)]
for f, name in (("kspool-grpc-batch", "kspool gRPC batched"), ("kspool-bruce-tcp", "kspool Bruce TCP")):
    if f in runs:
        v = [x["cpu_us_per_delivered"] / c["cpu_us_per_message"] for x, c in zip(runs[f], ceiling)]
        print(f"| {name} CPU/msg ÷ raw RocksDB's (1,024 × 100 B per synced write) | {mr(v, '{:.2f}')} | "
              f"{' '.join(f'{x:.2f}' for x in v)} |")
kc = {m: [json.load(open(f"{out}/kafka-ceiling-{m}-{r}.json"))["kafka_ceiling"] for r in range(1, rounds + 1)]
      for m in ("kspool", "plain")}
# kspool's floor: what RocksDB alone spends writing a message plus what its Kafka producer
# alone spends sending it, before any reading back, settling, gRPC or drain bookkeeping.
floor = [c["cpu_us_per_message"] + k["cpu_us_per_message"] for c, k in zip(ceiling, kc["kspool"])]
def row(name, v):
    print(f"| {name} | {mr(v, '{:.2f}')} | {' '.join(f'{x:.2f}' for x in v)} |")
row("kspool's Kafka producer alone CPU/msg ÷ raw RocksDB's", [k["cpu_us_per_message"] / c["cpu_us_per_message"] for k, c in zip(kc["kspool"], ceiling)])
row("kspool's floor (raw RocksDB + its producer alone) ÷ raw RocksDB's", [f / c["cpu_us_per_message"] for f, c in zip(floor, ceiling)])
gc = [json.load(open(f"{out}/grpc-ceiling-{r}.json"))["grpc_ceiling"] for r in range(1, rounds + 1)]
row("gRPC alone (a server that only answers T1's Sends) CPU/msg ÷ raw RocksDB's", [g["cpu_us_per_message"] / c["cpu_us_per_message"] for g, c in zip(gc, ceiling)])
floor_grpc = [f + g["cpu_us_per_message"] for f, g in zip(floor, gc)]
row("kspool's floor with gRPC (raw RocksDB + its producer alone + gRPC alone) ÷ raw RocksDB's", [f / c["cpu_us_per_message"] for f, c in zip(floor_grpc, ceiling)])
# The same with the WAL write as kspool lays it out (per 100-byte message: a record's CPU
# over the 100 messages it holds), and without any WAL write.
rec = [json.load(open(f"{out}/ceiling-records-{r}.json"))["ceiling"] for r in range(1, rounds + 1)]
rec_us = [x["cpu_us_per_message"] * 100 / x["size"] for x in rec]
row("RocksDB alone, kspool's record layout (100 × 100 B per record, 3 per synced write) CPU/msg ÷ raw RocksDB's", [x / c["cpu_us_per_message"] for x, c in zip(rec_us, ceiling)])
floor_rec = [x + k["cpu_us_per_message"] + g["cpu_us_per_message"] for x, k, g in zip(rec_us, kc["kspool"], gc)]
row("kspool's floor with gRPC, its record layout (that write + its producer alone + gRPC alone) ÷ raw RocksDB's", [f / c["cpu_us_per_message"] for f, c in zip(floor_rec, ceiling)])
row("its producer alone + gRPC alone (no WAL at all) ÷ raw RocksDB's", [(k["cpu_us_per_message"] + g["cpu_us_per_message"]) / c["cpu_us_per_message"] for k, g, c in zip(kc["kspool"], gc, ceiling)])
if "kspool-grpc-batch" in runs:
    row("kspool gRPC batched CPU/msg ÷ its floor with gRPC, its record layout", [x["cpu_us_per_delivered"] / f for x, f in zip(runs["kspool-grpc-batch"], floor_rec)])
    row("kspool gRPC batched CPU/msg ÷ its floor with gRPC", [x["cpu_us_per_delivered"] / f for x, f in zip(runs["kspool-grpc-batch"], floor_grpc)])
    row("kspool gRPC batched CPU/msg ÷ its floor", [x["cpu_us_per_delivered"] / f for x, f in zip(runs["kspool-grpc-batch"], floor)])
if "rsyslog-mem" in runs:
    row("rsyslog memory queue CPU/msg ÷ plain librdkafka alone", [x["cpu_us_per_delivered"] / k["cpu_us_per_message"] for x, k in zip(runs["rsyslog-mem"], kc["plain"])])
print("\nRaw RocksDB ceiling per round (1,024 × 100 B per synced write): " +
      ", ".join(f"{c['messages_per_s']:,.0f} msg/s at {c['cpu_us_per_message']:.2f} µs" for c in ceiling))
print("\nKafka client alone per round, kspool's producer (acks=all, idempotence, lz4, headers "
      "kspool.agent and kspool.seq): " +
      ", ".join(f"{k['messages_per_s']:,.0f} msg/s at {k['cpu_us_per_message']:.2f} µs" for k in kc["kspool"]))
print("Kafka client alone per round, plain librdkafka (omkafka's settings here: lz4, no headers): " +
      ", ".join(f"{k['messages_per_s']:,.0f} msg/s at {k['cpu_us_per_message']:.2f} µs" for k in kc["plain"]))
print("RocksDB alone per round, kspool's record layout (3 × 10,000 B per synced write), per 100-B message: " +
      ", ".join(f"{x:.2f} µs" for x in rec_us))
print("gRPC alone per round (8 clients x 100 x 100 B per Send, answered at once): " +
      ", ".join(f"{g['messages_per_s']:,.0f} msg/s at {g['cpu_us_per_message']:.2f} µs" for g in gc))
print("\n| round | # | forwarder | taken in | delivered in Kafka | all? | s | msg/s | CPU s | µs/msg |")
print("| ---: | ---: | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |")
for r in sorted((r for f in fws for r in runs[f]), key=lambda r: (r["round"], r["position"])):
    print(f"| {r['round']} | {r['position']} | {r['forwarder']} | {r['taken_in']:,} | {r['delivered']:,} | "
          f"{'yes' if r['all_delivered'] else 'no'} | {r['seconds']:.1f} | {r['delivered_per_s']:,.0f} | "
          f"{r['cpu_s']:.2f} | {r['cpu_us_per_delivered']:.2f} |")
PY
