#!/usr/bin/env bash
# The standard performance suite: kspool-devkafka + kspool-agent + kspool-bench on this
# machine, all on loopback. Prints one table (also in $OUT/table.txt;
# each load's JSON report is beside it).
#   T1 batched: 8 clients x 100 msgs x 100 B per Send, with the raw RocksDB ceiling at
#      CEILING_BATCH messages per synced write (default 1024)
#   T2 single-message Sends from 64 clients, with the raw ceiling at 1 message per synced
#      write; then open loop at half that rate for p99
#   T3 long run (T3_COUNT messages, default 20M): last tenth vs first tenth
#   T4 backlog with Kafka down (BACKLOG_BYTES, default 10 GB): agent RSS, restart
#      time until a Send is accepted, drain rate once Kafka returns
#   T5 SendStream: 64 clients, each keeping 32 single-message requests in flight on one
#      stream; compared with T2 of the same round
#   T6 T1's load with wait_for=WAIT_FOR_WAL, then with WAIT_FOR_KAFKA (each response
#      checked: one DELIVERED status with partition and offset per message); the ratio
#      of the two rates, the Kafka-confirmed latency p50/p99
#   TA (only when SUITE holds "a", e.g. SUITE=a) T1's load without --ceiling twice per
#      round, interleaved (the order alternates between rounds): plaintext without --acl,
#      and mTLS with a 100-rule --acl whose rule 100 is the bench's client certificate
#      (send bench-*, admin, a quota too high to bite, so its bucket is charged); the
#      ratio of the two rates. The CA and certificates are made with openssl in $OUT/pki
# T1, T2, T5, T6 and TA run RUNS times (default 3) in rounds, each load on a fresh agent and
# WAL; the table shows the median of each figure, with every run's value in brackets,
# and ratios are taken within a round. T3 and T4 run once. Every load also reports the
# agent's CPU per message and how busy the machine was (other work shares its cores);
# for T1, T2 and T4 also the agent's CPU (utime + stime from /proc) per delivered message,
# from the start of the load until the WAL is drained (T4: from Kafka's return); for T1
# also the raw ceiling writer's own CPU per message and the agent's as a multiple of it
# (both move with the VM's speed, their ratio much less).
# Knobs: T1_SECONDS (60, also each TA load), T2_SECONDS (20), T5_SECONDS (10), T6_SECONDS
# (10, each of its two loads), T3_COUNT, BACKLOG_BYTES, OUT (/tmp/kspool-bench), SUITE
# (which of 123456a to run, default 123456: TA only when asked), RUNS (3), AGENT_ARGS
# (extra kspool-agent flags, e.g.
# "--kafka-option linger.ms=1"), AGENT_BIN (another kspool-agent binary, e.g. an earlier
# release's, to compare). Message values are random (incompressible).
set -euo pipefail
cd "$(dirname "$0")/.."
T1_SECONDS=${T1_SECONDS:-60}
T2_SECONDS=${T2_SECONDS:-20}
T5_SECONDS=${T5_SECONDS:-10}
T6_SECONDS=${T6_SECONDS:-10}
T3_COUNT=${T3_COUNT:-20000000}
BACKLOG_BYTES=${BACKLOG_BYTES:-10000000000}
OUT=${OUT:-/tmp/kspool-bench}
BUILD=${BUILD:-build}
SUITE=${SUITE:-123456}
CEILING_BATCH=${CEILING_BATCH:-1024}
RUNS=${RUNS:-3}
run() { [[ "$SUITE" == *"$1"* ]]; }
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$BUILD" -j2 kspool-agent kspool-devkafka kspool-bench kspoolctl >/dev/null
BIN=$BUILD
rm -rf "$OUT" && mkdir -p "$OUT"

. tools/bench-common.sh
cpu_s() { awk '{ sub(/.*\) /, ""); print ($12 + $13) / '"$(getconf CLK_TCK)"' }' /proc/"$1"/stat; }
json() { python3 -c "import json,sys; d=json.load(open('$1')); print($2)"; }
start_devkafka bench-0:8
bench() { "$BIN"/tools/kspool-bench --agent "$AGENT" --agent-pid "$AGENT_PID" --json "$@"; }

# TA: a CA, the agent's certificate (127.0.0.1), the bench's client certificate
# (cn:bench), and 99 rules for other services before the bench's.
if run a; then
  PKI="$OUT/pki"; mkdir -p "$PKI"
  ec() { echo "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"; }
  openssl req -x509 $(ec) -keyout "$PKI/ca.key" -out "$PKI/ca.pem" -days 2 -subj "/CN=bench CA" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
  for who in server:localhost bench:bench; do
    f=${who%%:*}; cn=${who#*:}
    printf 'basicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$PKI/$f.ext"
    openssl req -new $(ec) -keyout "$PKI/$f.key" -out "$PKI/$f.csr" -subj "/CN=$cn" 2>/dev/null
    openssl x509 -req -in "$PKI/$f.csr" -CA "$PKI/ca.pem" -CAkey "$PKI/ca.key" \
      -set_serial "0x$(openssl rand -hex 8)" -days 1 -extfile "$PKI/$f.ext" -out "$PKI/$f.pem" 2>/dev/null
  done
  for r in $(seq 99); do
    printf '[[allow]]\nidentity = "cn:service-%d"\nsend = ["service-%d", "service-%d.*"]\nmessages_per_second = 50000\n\n' "$r" "$r" "$r"
  done >"$PKI/acl.toml"
  printf '[[allow]]\nidentity = "cn:bench"\nsend = ["bench-*"]\nadmin = true\nmessages_per_second = 1_000_000_000\nbytes_per_second = 1_000_000_000_000\n' >>"$PKI/acl.toml"
  ACL_AGENT=(--tls-cert "$PKI/server.pem" --tls-key "$PKI/server.key" --tls-client-ca "$PKI/ca.pem" --acl "$PKI/acl.toml")
  ACL_BENCH=(--tls-ca "$PKI/ca.pem" --tls-cert "$PKI/bench.pem" --tls-key "$PKI/bench.key")
fi
ta_load() {  # plain|acl, round
  echo "TA T1 load, $1, run $2 of $RUNS..." >&2
  if [ "$1" = acl ]; then start_agent "$OUT/walA" "${ACL_AGENT[@]}"; else start_agent "$OUT/walA"; fi
  if [ "$1" = acl ]; then B=("${ACL_BENCH[@]}"); else B=(); fi
  bench --clients 8 --batch 100 --size 100 --duration "$T1_SECONDS" --drain-wait 60 "${B[@]}" >"$OUT/ta${1:0:1}-$2.json"
  stop_agent
  rm -rf "$OUT/walA"
}

for i in $(seq "$RUNS"); do
if run a; then
  if [ $((i % 2)) = 1 ]; then ta_load plain "$i"; ta_load acl "$i"; else ta_load acl "$i"; ta_load plain "$i"; fi
fi
if run 1; then
  echo "T1 batched, run $i of $RUNS..." >&2
  start_agent "$OUT/wal1"
  bench --clients 8 --batch 100 --size 100 --duration "$T1_SECONDS" --drain-wait 60 \
    --ceiling "$OUT" --ceiling-batch "$CEILING_BATCH" >"$OUT/t1-$i.json"
  stop_agent
  rm -rf "$OUT/wal1"
fi
if run 2; then
  echo "T2 single-message, run $i of $RUNS..." >&2
  start_agent "$OUT/wal2"
  bench --clients 64 --batch 1 --size 100 --duration "$T2_SECONDS" --drain-wait 30 \
    --ceiling "$OUT" --ceiling-batch 1 >"$OUT/t2a-$i.json"
  HALF=$(json "$OUT/t2a-$i.json" "int(d['acked_per_s']/2)")
  bench --clients 64 --batch 1 --size 100 --duration "$T2_SECONDS" --rate "$HALF" --drain-wait 30 >"$OUT/t2b-$i.json"
  stop_agent
  rm -rf "$OUT/wal2"
fi
if run 5; then
  echo "T5 SendStream, run $i of $RUNS..." >&2
  start_agent "$OUT/wal5"
  bench --stream --clients 64 --in-flight 32 --batch 1 --size 100 --duration "$T5_SECONDS" --drain-wait 30 >"$OUT/t5-$i.json"
  stop_agent
  rm -rf "$OUT/wal5"
fi
if run 6; then
  for w in wal kafka; do
    echo "T6 batched, wait for $w, run $i of $RUNS..." >&2
    start_agent "$OUT/wal6"
    bench --clients 8 --batch 100 --size 100 --duration "$T6_SECONDS" --wait-for "$w" --drain-wait 30 >"$OUT/t6${w:0:1}-$i.json"
    stop_agent
    rm -rf "$OUT/wal6"
  done
fi
done
if run 3; then
  echo "T3 long run ($T3_COUNT messages)..." >&2
  start_agent "$OUT/wal3"
  bench --clients 8 --batch 100 --size 100 --count "$T3_COUNT" --drain-wait 120 >"$OUT/t3.json"
  stop_agent
  rm -rf "$OUT/wal3"
fi
if ! run 4; then
  echo 0 >"$OUT/rss_fill_kb"; echo 0 >"$OUT/rss_drain_kb"
  RESTART_S=0 DRAIN_RATE=0 BACKLOG=0 WAL_DISK=0 DRAIN_CPU_US=0
else

echo "T4 backlog ($BACKLOG_BYTES bytes with Kafka down)..." >&2
start_agent "$OUT/wal4"
kafka_cmd "broker down all" >/dev/null
( peak=0; while kill -0 "$AGENT_PID" 2>/dev/null; do
    r=$(awk '/VmRSS/{print $2}' /proc/"$AGENT_PID"/status 2>/dev/null || echo 0)
    [ "${r:-0}" -gt "$peak" ] && peak=$r && echo "$peak" >"$OUT/rss_fill_kb"; sleep 0.5; done ) &
bench --clients 8 --batch 100 --size 1000 --count $((BACKLOG_BYTES / 1000)) >"$OUT/t4fill.json"
stop_agent
WAL_DISK=$(du -sb "$OUT/wal4" | cut -f1)
T0=$(date +%s.%N)
start_agent "$OUT/wal4"
until "$BIN"/tools/kspoolctl --agent "$AGENT" --timeout-ms 1000 send --topic bench-0 restart-probe >/dev/null 2>&1; do sleep 0.01; done
RESTART_S=$(python3 -c "print(round($(date +%s.%N) - $T0, 2))")
( peak=0; while kill -0 "$AGENT_PID" 2>/dev/null; do
    r=$(awk '/VmRSS/{print $2}' /proc/"$AGENT_PID"/status 2>/dev/null || echo 0)
    [ "${r:-0}" -gt "$peak" ] && peak=$r && echo "$peak" >"$OUT/rss_drain_kb"; sleep 0.5; done ) &
BACKLOG=$("$BIN"/tools/kspoolctl --agent "$AGENT" --json stats | python3 -c "import json,sys; print(json.load(sys.stdin)['entries'])")
D0=$(date +%s.%N)
C0=$(cpu_s "$AGENT_PID")
kafka_cmd "broker up all" >/dev/null
until [ "$("$BIN"/tools/kspoolctl --agent "$AGENT" --json stats | python3 -c "import json,sys; print(json.load(sys.stdin)['entries'])")" = 0 ]; do sleep 1; done
DRAIN_RATE=$(python3 -c "print(int($BACKLOG / ($(date +%s.%N) - $D0)))")
DRAIN_CPU_US=$(python3 -c "print(($(cpu_s "$AGENT_PID") - $C0) / $BACKLOG * 1e6)")
stop_agent
rm -rf "$OUT/wal4"
fi

AGENT_ARGS=${AGENT_ARGS:-} python3 - "$OUT" "$RESTART_S" "$DRAIN_RATE" "$BACKLOG" "$WAL_DISK" "$DRAIN_CPU_US" <<'PY' | tee "$OUT/table.txt"
import json, sys, platform, os
out, restart_s, drain_rate, backlog, wal_disk = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
drain_cpu_us = float(sys.argv[6])
from collections import defaultdict
def ld(n):
    try: return json.load(open(f"{out}/{n}.json"))
    except FileNotFoundError: return None
def runs(n):
    return [d for d in (ld(f"{n}-{i}") for i in range(1, 100)) if d] if ld(f"{n}-1") else []
t1, t2a, t2b, t3 = runs("t1"), runs("t2a"), runs("t2b"), ld("t3")
t5, t6w, t6k = runs("t5"), runs("t6w"), runs("t6k")
tap, taa = runs("tap"), runs("taa")
rss_fill = int(open(f"{out}/rss_fill_kb").read()) // 1024
rss_drain = int(open(f"{out}/rss_drain_kb").read()) // 1024
def med(docs, f, fmt):
    """The median of f over the runs, then every run's value."""
    vals = [f(d) for d in docs]
    m = sorted(vals)[len(vals) // 2]
    return fmt.format(m) + ("" if len(vals) < 2 else "  [" + " ".join(fmt.format(v) for v in vals) + "]")
def ratio(a, b):
    """The median of a/b taken round by round (a[i] and b[i] ran in the same round)."""
    return med([x / y if y else 0 for x, y in zip(a, b)], lambda v: v, "{:.2f}")
def rate(d): return d['acked_per_s']
def errors(d): return d.get('errors', sum(d['failures'].values()))
def cpu(d): return d.get('cpu', {}).get('agent_us_per_msg', 0)
def cpu_delivered(d): return d.get('cpu', {}).get('agent_us_per_delivered', 0)
def ceiling(d): return d.get('ceiling', {}).get('messages_per_s', 0)
def ceiling_cpu(d): return d.get('ceiling', {}).get('cpu_us_per_message', 0)
def cpu_ratio(d): return d.get('ceiling', {}).get('agent_cpu_ratio', 0)
def busy(d): return 100 * d.get('cpu', {}).get('machine_busy', 0)
rows = []
if t1: rows += [
 ("T1 batched 8x100x100B: acked msg/s", ">= 250,000", med(t1, lambda d: d['acked_per_s'], "{:,.0f}")),
 ("T1 delivered msg/s during the run", ">= 250,000", med(t1, lambda d: d['delivered_per_s'], "{:,.0f}")),
 ("T1 backlog after run (messages)", "not growing", med(t1, lambda d: d['backlog_after'], "{:,}")),
 ("T1 then drained in (s)", "", med(t1, lambda d: d['drained_after_s'], "{:.1f}")),
 ("T1 committed batch (msgs/fsync)", "", med(t1, lambda d: d['group_commit_messages'], "{:.0f}")),
 (f"T1 raw RocksDB ceiling, synced batches of {t1[0]['ceiling']['batch']} (msg/s)", "", med(t1, ceiling, "{:,.0f}")),
 ("T1 acked msg/s / that ceiling, same run", ">= 0.50", ratio([rate(d) for d in t1], [ceiling(d) for d in t1])),
 ("T1 agent CPU per delivered message (us)", "<= 3.0", med(t1, cpu_delivered, "{:.2f}")),
 ("T1 raw ceiling's CPU per message, same run (us)", "", med(t1, ceiling_cpu, "{:.2f}")),
 ("T1 agent CPU per message / the ceiling's, same run", "", med(t1, cpu_ratio, "{:.1f}")),
 ("T1 machine busy during the run (%)", "", med(t1, busy, "{:.0f}")),
 ("T1 Send p99 (ms)", "", med(t1, lambda d: d['latency_ms']['p99'], "{:.1f}"))]
if t2a: rows += [
 ("T2 single-message, 64 clients: acks/s", ">= 25,000", med(t2a, lambda d: d['acked_per_s'], "{:,.0f}")),
 ("T2 raw RocksDB ceiling, synced batches of 1 (msg/s)", "", med(t2a, ceiling, "{:,.0f}")),
 ("T2 acks/s / that ceiling, same run", ">= 3.0", ratio([rate(d) for d in t2a], [ceiling(d) for d in t2a])),
 ("T2 open loop at half that rate: p99 (ms)", "<= 10 ms", med(t2b, lambda d: d['latency_ms']['p99'], "{:.1f}")),
 ("T2 open loop rate (msg/s)", "", med(t2b, lambda d: d['acked_per_s'], "{:,.0f}"))]
if t2a: rows += [
 ("T2 agent CPU per delivered message (us)", "", med(t2a, cpu_delivered, "{:.2f}")),
 ("T2 machine busy during the run (%)", "", med(t2a, busy, "{:.0f}"))]
if t5: rows += [
 ("T5 SendStream 64 x 32 in flight x 1 msg: acks/s", ">= 4x T2", med(t5, rate, "{:,.0f}"))]
if t5 and len(t2a) == len(t5): rows += [
 ("T5 / T2 acks/s, same round", ">= 4.0", ratio([rate(d) for d in t5], [rate(d) for d in t2a]))]
if t5: rows += [
 ("T5 errors (failed requests + bad responses)", "0", med(t5, errors, "{:,}")),
 ("T5 latency p50 / p99 (ms)", "", med(t5, lambda d: d['latency_ms']['p50'], "{:.1f}") + " / " + med(t5, lambda d: d['latency_ms']['p99'], "{:.1f}")),
 ("T5 agent CPU per message (us)", "", med(t5, cpu, "{:.1f}")),
 ("T5 machine busy during the run (%)", "", med(t5, busy, "{:.0f}"))]
if t6w and t6k: rows += [
 ("T6 8x100x100B WAIT_FOR_WAL: acked msg/s", "", med(t6w, rate, "{:,.0f}")),
 ("T6 same with WAIT_FOR_KAFKA: acked msg/s", "", med(t6k, rate, "{:,.0f}")),
 ("T6 KAFKA / WAL acked msg/s, same round", ">= 0.80", ratio([rate(d) for d in t6k], [rate(d) for d in t6w])),
 ("T6 Kafka-confirmed latency p50 (ms)", "", med(t6k, lambda d: d['latency_ms']['p50'], "{:.1f}")),
 ("T6 Kafka-confirmed latency p99 (ms)", "", med(t6k, lambda d: d['latency_ms']['p99'], "{:.1f}")),
 ("T6 of which in the agent, receive to outcome p50/p99 (ms)", "", med(t6k, lambda d: d.get('outcome_ms', {}).get('p50', 0), "{:.0f}") + " / " + med(t6k, lambda d: d.get('outcome_ms', {}).get('p99', 0), "{:.0f}")),
 ("T6 WAIT_FOR_KAFKA errors (failed + bad statuses)", "0", med(t6k, errors, "{:,}")),
 ("T6 agent CPU per message, WAL / KAFKA (us)", "", med(t6w, cpu, "{:.1f}") + " / " + med(t6k, cpu, "{:.1f}")),
 ("T6 machine busy, WAL / KAFKA (%)", "", med(t6w, busy, "{:.0f}") + " / " + med(t6k, busy, "{:.0f}"))]
if tap and taa: rows += [
 ("TA T1 load, plaintext, no --acl: acked msg/s", "", med(tap, rate, "{:,.0f}")),
 ("TA T1 load, mTLS + 100-rule --acl: acked msg/s", "", med(taa, rate, "{:,.0f}")),
 ("TA mTLS+ACL / plain acked msg/s, same round", ">= 0.85", ratio([rate(d) for d in taa], [rate(d) for d in tap])),
 ("TA errors, plain / mTLS+ACL", "0 / 0", med(tap, errors, "{:,}") + " / " + med(taa, errors, "{:,}")),
 ("TA agent CPU per message, plain / mTLS+ACL (us)", "", med(tap, cpu, "{:.1f}") + " / " + med(taa, cpu, "{:.1f}"))]
if t3: rows += [
 (f"T3 long run {t3['acked']:,} msgs: last/first tenth", ">= 0.90", f"{t3.get('last_over_first', 0):.2f} ({t3.get('first_tenth_per_s',0):,.0f} -> {t3.get('last_tenth_per_s',0):,.0f} msg/s)")]
if backlog: rows += [
 (f"T4 backlog {backlog:,} msgs, {wal_disk/1e9:.1f} GB on disk: RSS fill/drain", "<= 300 MB", f"{rss_fill} / {rss_drain} MB"),
 ("T4 restart until a Send is accepted", "<= 2 s", f"{restart_s:.2f} s"),
 ("T4 drain rate after Kafka returns", ">= T1 target", f"{drain_rate:,} msg/s"),
 ("T4 agent CPU per delivered message while draining (us)", "", f"{drain_cpu_us:.2f}"),
]
print(f"kspool bench suite on {platform.node()}: {os.cpu_count()} cores, {platform.platform()}")
if os.environ.get("AGENT_ARGS"): print(f"agent flags: {os.environ['AGENT_ARGS']}")
w = max(len(r[0]) for r in rows)
print(f"{'measure':<{w}}  {'target':<12}  result")
for r in rows: print(f"{r[0]:<{w}}  {r[1]:<12}  {r[2]}")
PY
