#!/usr/bin/env bash
# The Debian package as an operator uses it, on this machine (needs root or sudo):
#   1. `apt-get install ./kspool_*.deb`: programs, unit, conffile, the kspool user,
#      /var/lib/kspool (kspool, 0700); the installed `kspool-agent --version`;
#      `systemd-analyze verify` of the installed unit;
#   2. the installed agent, run as user kspool with the packaged config (WAL dir and
#      addresses overridden by flags: WAL in /var/lib/kspool/wal, ports picked by the
#      kernel) against the installed kspool-devkafka: one message sent with the
#      installed kspoolctl (--wait kafka) and read back from Kafka with kcat;
#      /healthz and /metrics answer; SIGTERM stops it with exit 0;
#   3. `apt-get purge`: nothing of the package is left but the spool it holds
#      (/var/lib/kspool with the WAL, and the kspool user that owns it);
#   4. install + `systemctl enable` + purge without a WAL: nothing at all is left.
# Refuses to run if kspool is already installed. Whatever happens, it stops what it
# started (by PID) and purges the package (trap).
# Usage: tests/deploy/package_install_test.sh build/kspool_VERSION_ARCH.deb
set -euo pipefail
DEB=$(realpath "$1")
if [ "$(id -u)" != 0 ]; then  # the whole test as root: it installs, and signals user kspool
  sudo -n true 2>/dev/null || { echo "FAIL: needs root or passwordless sudo"; exit 1; }
  exec sudo -n "$0" "$DEB"
fi
export DEBIAN_FRONTEND=noninteractive
APT="apt-get -y -qq -o DPkg::Lock::Timeout=120"  # waits for another apt/dpkg to finish
VERSION=$(dpkg-deb -f "$DEB" Version)
RUN=$(mktemp -d /tmp/kspool-package-test.XXXXXX)
chmod 755 "$RUN"  # the agent (user kspool) writes its stdout/stderr here via the shell
KAFKA_PID="" AGENT_PID=""

fail() { echo "FAIL: $*"; exit 1; }
step() { echo "--- $*"; }
stop_pid() {  # pid: SIGTERM, then SIGKILL after 15 s; only processes this test started
  local pid=$1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }; sleep 0.1; done
  echo "pid $pid ignored SIGTERM for 15 s; killing it"
  kill -KILL "$pid" 2>/dev/null || true
}
cleanup() {
  local rc=$?
  stop_pid "$AGENT_PID"
  stop_pid "$KAFKA_PID"
  if dpkg-query -W kspool >/dev/null 2>&1; then  # installed, half-installed or config-files
    echo "cleanup: purging kspool"
    $APT purge kspool >>"$RUN/apt.log" 2>&1 || true
  fi
  if [ "${OWN_SPOOL:-0}" = 1 ]; then  # the WAL this test made; purge keeps it
    rm -rf /var/lib/kspool
    getent passwd kspool >/dev/null && deluser --system --quiet kspool >>"$RUN/apt.log" 2>&1
    getent group kspool >/dev/null && delgroup --system --quiet kspool >>"$RUN/apt.log" 2>&1
    true
  fi
  [ $rc = 0 ] && rm -rf "$RUN" || echo "logs in $RUN"
}
trap cleanup EXIT
wait_for() {  # file, pattern
  for _ in $(seq 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  fail "timed out waiting for '$2' in $1: $(tail -5 "$1" 2>/dev/null)"
}

# Nothing of an earlier kspool may be in the way: this test must not remove it.
dpkg-query -W kspool >/dev/null 2>&1 && fail "a kspool package is already installed; purge it first"
for p in /etc/kspool /var/lib/kspool /usr/bin/kspool-agent; do
  [ -e "$p" ] && fail "$p exists before the install; this test will not touch it"
done
getent passwd kspool >/dev/null && fail "a user kspool exists before the install"

# Dependencies come from dpkg-shlibdeps (cmake/Packaging.cmake), not a hand-kept list.
depends=$(dpkg-deb -f "$DEB" Depends)
for lib in libc6 librdkafka1 libgrpc++ libprotobuf adduser; do  # RocksDB: linked statically
  [[ "$depends" == *"$lib"* ]] || fail "Depends lacks $lib: $depends"
done

step "apt-get install $DEB"
OWN_SPOOL=1
$APT install "$DEB" >"$RUN/apt.log" 2>&1 || { cat "$RUN/apt.log"; fail "apt-get install"; }
for f in /usr/bin/kspool-agent /usr/bin/kspoolctl /usr/bin/kspool-devkafka /usr/bin/kspool-bench; do
  [ -x "$f" ] || fail "$f is not installed"
done
[ -f /lib/systemd/system/kspool.service ] || fail "the unit is not installed"
dpkg-query -W -f='${Conffiles}\n' kspool | grep -q '^ /etc/kspool/kspool.toml ' ||
  fail "/etc/kspool/kspool.toml is not a conffile"
out=$(/usr/bin/kspool-agent --version)
[ "$out" = "kspool-agent $VERSION" ] || fail "kspool-agent --version printed '$out', not 'kspool-agent $VERSION'"
echo "$out"
IFS=: read -r _ _ uid gid _ home shell < <(getent passwd kspool) || fail "no user kspool"
[ "$uid" -lt 1000 ] || fail "kspool is not a system user (uid $uid)"
[ "$(getent group "$gid" | cut -d: -f1)" = kspool ] || fail "kspool's group is not kspool"
[ "$home" = /var/lib/kspool ] && [ "$shell" = /usr/sbin/nologin ] || fail "kspool: home $home, shell $shell"
[ "$(stat -c '%U:%G %a' /var/lib/kspool)" = "kspool:kspool 700" ] ||
  fail "/var/lib/kspool is $(stat -c '%U:%G %a' /var/lib/kspool), not kspool:kspool 700"

step "systemd-analyze verify /lib/systemd/system/kspool.service"
# Any message (unknown key, missing program, bad value) fails; offline, no systemd needed.
if ! out=$(systemd-analyze verify /lib/systemd/system/kspool.service 2>&1) || [ -n "$out" ]; then
  fail "systemd-analyze verify: $out"
fi

step "the installed agent as user kspool, packaged config, against kspool-devkafka"
/usr/bin/kspool-devkafka --brokers 1 --topic pkgtest:1 </dev/null >"$RUN/devkafka.out" 2>"$RUN/devkafka.log" &
KAFKA_PID=$!
wait_for "$RUN/devkafka.out" READY
BROKERS=$(sed -n 's/^BOOTSTRAP //p' "$RUN/devkafka.out")
# setpriv execs the agent (no process in between): $! is the agent's PID.
setpriv --reuid=kspool --regid=kspool --init-groups --inh-caps=-all -- \
  /usr/bin/kspool-agent --config /etc/kspool/kspool.toml --wal-dir /var/lib/kspool/wal \
  --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --kafka-brokers "$BROKERS" \
  >"$RUN/agent.out" 2>"$RUN/agent.log" &
AGENT_PID=$!
wait_for "$RUN/agent.out" "kspool-agent ready"
[ "$(ps -o user= -p "$AGENT_PID")" = kspool ] || fail "the agent runs as $(ps -o user= -p "$AGENT_PID")"
AGENT=$(sed -n 's/.*grpc=\([^ ]*\).*/\1/p' "$RUN/agent.out")
HTTP=$(sed -n 's/.*http=\([^ ]*\).*/\1/p' "$RUN/agent.out")
/usr/bin/kspoolctl --agent "$AGENT" --timeout-ms 10000 send --topic pkgtest --key k1 --wait kafka \
  "packaged hello" >"$RUN/send.out" || fail "kspoolctl send: $(cat "$RUN/send.out")"
got=$(timeout 20 kcat -b "$BROKERS" -C -t pkgtest -o beginning -c 1 -e -q -f '%k=%s\n') ||
  fail "kcat read nothing from pkgtest"
[ "$got" = "k1=packaged hello" ] || fail "Kafka holds '$got', not 'k1=packaged hello'"
echo "sent and read back: $got"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://$HTTP/healthz")" = 200 ] || fail "/healthz is not 200"
# Read whole before searching: with pipefail, `curl | grep -q` fails when grep stops
# reading before curl has written all of it (SIGPIPE), as it did once.
metrics=$(curl -s "http://$HTTP/metrics")
grep -q "^kspool_build_info{version=\"$VERSION\"} 1" <<<"$metrics" ||
  fail "/metrics has no kspool_build_info{version=\"$VERSION\"}"
[ -n "$(ls /var/lib/kspool/wal)" ] || fail "the WAL in /var/lib/kspool/wal is empty"
[ "$(stat -c %U /var/lib/kspool/wal)" = kspool ] || fail "the WAL is not the kspool user's"
kill -TERM "$AGENT_PID"
rc=0; wait "$AGENT_PID" || rc=$?
AGENT_PID=""
[ $rc = 0 ] || fail "the agent exited $rc after SIGTERM: $(tail -3 "$RUN/agent.log")"
stop_pid "$KAFKA_PID"; KAFKA_PID=""
pgrep -u kspool >/dev/null && fail "processes of user kspool are left: $(pgrep -a -u kspool)"

list_leftovers() {  # every file of the package, and the package's own state, still there
  dpkg-deb -c "$DEB" | awk '{print $6}' | sed 's#^\.##; s#/$##' | while read -r f; do
    [ -z "$f" ] && continue
    if [ -d "$f" ]; then  # shared directories (/etc, /usr/bin, ...) stay; its own go
      case $f in *kspool*) echo "$f" ;; esac
    elif [ -e "$f" ] || [ -L "$f" ]; then echo "$f"; fi
  done
  [ -e /etc/systemd/system/multi-user.target.wants/kspool.service ] && echo "enabled symlink"
  dpkg-query -W kspool >/dev/null 2>&1 && echo "package kspool ($(dpkg-query -W -f='${Status}' kspool))"
  return 0
}

step "apt-get purge kspool (with a WAL in /var/lib/kspool)"
$APT purge kspool >>"$RUN/apt.log" 2>&1 || fail "apt-get purge"
left=$(list_leftovers)
[ -z "$left" ] || fail "purge left: $left"
[ -n "$(ls -A /var/lib/kspool/wal)" ] || fail "purge removed the WAL's files"
getent passwd kspool >/dev/null || fail "purge removed user kspool, who owns the WAL it kept"
echo "left, as documented: /var/lib/kspool ($(du -sh /var/lib/kspool | cut -f1)) and user kspool"
rm -rf /var/lib/kspool
deluser --system --quiet kspool >>"$RUN/apt.log" 2>&1
if getent group kspool >/dev/null; then delgroup --system --quiet kspool >>"$RUN/apt.log" 2>&1; fi
OWN_SPOOL=0

step "install, systemctl enable, purge (no WAL): nothing is left"
OWN_SPOOL=1
$APT install "$DEB" >>"$RUN/apt.log" 2>&1 || fail "apt-get install (again)"
systemctl enable kspool.service >>"$RUN/apt.log" 2>&1 || fail "systemctl enable"
[ -L /etc/systemd/system/multi-user.target.wants/kspool.service ] || fail "enable made no symlink"
$APT purge kspool >>"$RUN/apt.log" 2>&1 || fail "apt-get purge (again)"
left=$(list_leftovers)
for p in /var/lib/kspool /etc/kspool; do [ -e "$p" ] && left="$left $p"; done
getent passwd kspool >/dev/null && left="$left user:kspool"
getent group kspool >/dev/null && left="$left group:kspool"
[ -z "$left" ] || fail "purge left: $left"
OWN_SPOOL=0
echo "ok: package installed, ran as kspool, delivered a message, purged"
