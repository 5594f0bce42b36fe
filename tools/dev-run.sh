#!/usr/bin/env bash
# Builds kspool, starts a local development Kafka (kspool-devkafka: librdkafka's mock
# cluster on loopback) and the agent, sends a message, and shows it arrive and the
# commit point move. Then it keeps both running until Ctrl-C (with --demo it stops).
# Everything listens on 127.0.0.1 only; state lives in a temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."
DEMO_ONLY=0
[ "${1:-}" = "--demo" ] && DEMO_ONLY=1
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build -j"${JOBS:-2}" kspool-agent kspool-devkafka kspoolctl

RUN=$(mktemp -d /tmp/kspool-dev.XXXXXX)
KAFKA_PID="" AGENT_PID=""
cleanup() {
  [ -n "$AGENT_PID" ] && kill -TERM "$AGENT_PID" 2>/dev/null && wait "$AGENT_PID" 2>/dev/null || true
  [ -n "$KAFKA_PID" ] && kill -TERM "$KAFKA_PID" 2>/dev/null && wait "$KAFKA_PID" 2>/dev/null || true
  echo "stopped; logs and WAL in $RUN"
}
trap cleanup EXIT
wait_for() {  # file, pattern
  for _ in $(seq 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "timed out waiting for '$2' in $1" >&2; return 1
}

build/tools/kspool-devkafka --brokers 3 --topic demo:4 </dev/null >"$RUN/devkafka.out" 2>"$RUN/devkafka.log" &
KAFKA_PID=$!
wait_for "$RUN/devkafka.out" READY
BROKERS=$(sed -n 's/^BOOTSTRAP //p' "$RUN/devkafka.out")
CONTROL=$(sed -n 's/^CONTROL //p' "$RUN/devkafka.out")

build/agent/kspool-agent --wal-dir "$RUN/wal" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
  --kafka-brokers "$BROKERS" --heartbeat-interval 10s \
  >"$RUN/agent.out" 2>"$RUN/agent.log" &
AGENT_PID=$!
wait_for "$RUN/agent.out" "kspool-agent ready"
AGENT=$(sed -n 's/.*grpc=\([^ ]*\).*/\1/p' "$RUN/agent.out")
HTTP=$(sed -n 's/.*http=\([^ ]*\).*/\1/p' "$RUN/agent.out")
CTL="build/tools/kspoolctl --agent $AGENT"

echo "dev Kafka: $BROKERS (fault commands: $CONTROL)"
echo "agent:     $AGENT  (WAL $RUN/wal, log $RUN/agent.log, http://$HTTP/metrics)"
echo
echo "\$ kspoolctl send --topic demo --key user-1 'hello kspool'"
$CTL send --topic demo --key user-1 "hello kspool"
sleep 0.5
echo "\$ kspoolctl stats"; $CTL stats
echo "\$ kspoolctl commit-point"; $CTL commit-point
if command -v kcat >/dev/null; then
  echo "\$ kcat -C -t demo  (what reached Kafka, with the kspool headers)"
  kcat -b "$BROKERS" -C -t demo -e -o beginning -q -f 'partition %p offset %o key %k value %s headers %h\n' || true
fi
if command -v curl >/dev/null; then
  echo "\$ curl http://$HTTP/metrics | grep kspool_messages"
  curl -s "http://$HTTP/metrics" | grep '^kspool_messages' || true
fi
[ "$DEMO_ONLY" = 1 ] && exit 0
cat <<TXT

Both keep running. Try, in another shell:
  $CTL send --topic demo one two three
  $CTL commit-point
  $CTL report
  curl http://$HTTP/status
  python3 -c 'import socket;s=socket.create_connection(("${CONTROL%:*}",${CONTROL##*:}));s.sendall(b"broker down all\n");print(s.recv(99))'
Ctrl-C stops both.
TXT
wait "$AGENT_PID"
