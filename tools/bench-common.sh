# Sourced by the bench-*.sh scripts: kspool-devkafka and kspool-agent as child processes
# on loopback, stopped on exit. Needs BIN (the build directory) and OUT (a directory).
# start_devkafka TOPIC...: BROKERS and CONTROL are set; kafka_cmd LINE sends it a control
# command ("broker down all"). start_agent WAL_DIR [FLAGS...]: AGENT (its gRPC address)
# and AGENT_PID are set; LOG_LEVEL (warn), AGENT_ARGS and AGENT_BIN (another agent
# binary) apply. stop_agent: SIGTERM, wait.
KAFKA_PID="" AGENT_PID=""
cleanup() {
  [ -n "$AGENT_PID" ] && kill -TERM "$AGENT_PID" 2>/dev/null && wait "$AGENT_PID" 2>/dev/null || true
  [ -n "$KAFKA_PID" ] && kill -TERM "$KAFKA_PID" 2>/dev/null && wait "$KAFKA_PID" 2>/dev/null || true
}
trap cleanup EXIT
wait_for() { for _ in $(seq 300); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }
kafka_cmd() { python3 -c "import socket,sys; s=socket.create_connection(('${CONTROL%:*}',${CONTROL##*:})); s.sendall(b'$1\n'); print(s.recv(99).decode().strip())"; }
start_devkafka() {
  local topics=()
  for t in "$@"; do topics+=(--topic "$t"); done
  "$BIN"/tools/kspool-devkafka --brokers 3 "${topics[@]}" </dev/null >"$OUT/devkafka.out" 2>"$OUT/devkafka.log" &
  KAFKA_PID=$!
  wait_for "$OUT/devkafka.out" READY
  BROKERS=$(sed -n 's/^BOOTSTRAP //p' "$OUT/devkafka.out")
  CONTROL=$(sed -n 's/^CONTROL //p' "$OUT/devkafka.out")
}
start_agent() {
  : >"$OUT/agent.out"
  local wal=$1; shift
  "${AGENT_BIN:-$BIN/agent/kspool-agent}" --wal-dir "$wal" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    --kafka-brokers "$BROKERS" --log-level "${LOG_LEVEL:-warn}" ${AGENT_ARGS:-} "$@" \
    >"$OUT/agent.out" 2>>"$OUT/agent.log" &
  AGENT_PID=$!
  wait_for "$OUT/agent.out" "kspool-agent ready"
  AGENT=$(sed -n 's/.*grpc=\([^ ]*\).*/\1/p' "$OUT/agent.out")
}
stop_agent() { kill -TERM "$AGENT_PID"; wait "$AGENT_PID" || true; AGENT_PID=""; }
