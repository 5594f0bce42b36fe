#!/usr/bin/env bash
# Installs the Debian 12 packages kspool builds, tests and runs with. Needs root (or sudo).
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build pkg-config ccache clang libclang-rt-14-dev \
  librdkafka-dev librocksdb-dev \
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
  prometheus-cpp-dev libgtest-dev libgmock-dev libabsl-dev \
  libcli11-dev libspdlog-dev nlohmann-json3-dev libtomlplusplus-dev libssl-dev openssl \
  kcat python3 python3-grpcio python3-protobuf curl libfaketime strace util-linux >/dev/null
echo "install-deps: done"
