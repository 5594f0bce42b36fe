#!/usr/bin/env bash
# Installs the Debian 12 packages kspool builds, tests and runs with. Needs root (or sudo).
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# The last line is for the package and its tests: dpkg-shlibdeps (dpkg-dev, file) computes
# its dependencies, systemd-analyze verifies the unit, python3-yaml reads the manifests.
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build pkg-config ccache clang libclang-rt-14-dev \
  librdkafka-dev librocksdb-dev \
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
  prometheus-cpp-dev libgtest-dev libgmock-dev libabsl-dev \
  libcli11-dev libspdlog-dev nlohmann-json3-dev libtomlplusplus-dev libssl-dev openssl \
  kcat python3 python3-grpcio python3-protobuf curl libfaketime strace util-linux \
  dpkg-dev file adduser systemd python3-yaml >/dev/null
# promtool (the alert rules' tests) comes only with the Prometheus server in Debian 12.
# Where this installs it, the server it would start is stopped and disabled again.
if ! dpkg-query -W -f='${Status}' prometheus 2>/dev/null | grep -q 'ok installed'; then
  $SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  if [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --now prometheus.service >/dev/null 2>&1 || true
  fi
fi
echo "install-deps: done"
