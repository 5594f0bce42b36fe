#!/usr/bin/env bash
# Builds kspool and runs every test suite. Test labels (tests/CMakeLists.txt) say what a
# test binary covers: unit, integration, crash, faketime, deploy; a second label, tsan,
# marks the binaries ThreadSanitizer can run.
#   build/       all tests (unit, integration, crash, faketime, and deploy: the files of
#                deploy/ checked against the code, promtool, systemd-analyze);
#   package      the Debian package made from build/ (tools/package.sh), installed
#                with apt-get, run as user kspool, purged (tests/deploy/
#                package_install_test.sh; needs root or passwordless sudo);
#   build-asan/  AddressSanitizer + UBSan: the unit and integration tests (not crash;
#                not faketime: libfaketime cannot be preloaded before ASan's runtime;
#                not the simulator's recorded seeds, label sim_seeds, 300 s and more
#                under ASan: two fixed seeds and its random run stay). The code under
#                test is instrumented; the test code is not (tests/CMakeLists.txt: it
#                tripled its compile time), but for the simulator and the fake producer;
#   build-tsan/  clang, ThreadSanitizer and -Wthread-safety: the tests labelled tsan (the
#                target tsan_tests builds exactly them): base/, wal/ and kspoolctl's WAL
#                access, the drain, the Bruce input and the agent's in-process unit tests
#                (concurrent group commit, settling, the drain's lanes, the Bruce ingest's
#                flow control). Not the binaries that start Debian's librdkafka (it
#                crashes under TSan at start) or gRPC (uninstrumented);
#   build-fuzz/  clang + libFuzzer (the main project with -DKSPOOL_FUZZ=ON): the WAL
#                record decoder, the Send request validator, the agent's config parser,
#                the --acl file parser and the Bruce input's decoder, each linking its
#                library, fuzzed for FUZZ_SECONDS (20 here; longer runs outside CI, e.g. FUZZ_SECONDS=600) each, plus their
#                regression inputs (tests/fuzz/run.sh).
# Unity builds (eight sources a translation unit) about halve a cold build: build-asan/
# and build-tsan/ are ones throughout, build/ for its test binaries only
# (-DKSPOOL_UNITY_TESTS=ON: the programs the package ships keep one source a unit, so
# that a source that compiles only beside another (a missing #include) still fails a
# pass; an A/B of the two agents put the unity one's batched-Send CPU 1.07x higher).
# Usage: tools/test.sh [plain|package|asan|tsan|fuzz]...   (default: all five)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=${JOBS:-2}
passes=("$@")
[ ${#passes[@]} -eq 0 ] && passes=(plain package asan tsan fuzz)

configure() {  # dir, extra cmake args...
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
}

summary=()
for pass in "${passes[@]}"; do
  echo "=== $pass ==="
  started=$SECONDS
  case $pass in
    plain)
      configure build -DCMAKE_UNITY_BUILD=OFF -DKSPOOL_UNITY_TESTS=ON
      ninja -C build -j"$JOBS"
      # The soaks (label soak) run by hand: docs/TESTING.md.
      (cd build && ctest --no-tests=error --output-on-failure -j"$JOBS" --timeout 600 -LE soak)
      ;;
    package)
      deb=$(tools/package.sh | tail -1)
      tests/deploy/package_install_test.sh "$deb"
      ;;
    asan)
      configure build-asan -DKSPOOL_SANITIZE=address -DCMAKE_UNITY_BUILD=ON
      ninja -C build-asan -j"$JOBS"
      (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        ctest --no-tests=error --output-on-failure -j"$JOBS" --timeout 600 -L 'unit|integration' \
          -LE sim_seeds)
      ;;
    tsan)
      CC=clang CXX=clang++ configure build-tsan -DKSPOOL_SANITIZE=thread -DKSPOOL_THREAD_SAFETY=ON \
        -DCMAKE_UNITY_BUILD=ON
      ninja -C build-tsan -j"$JOBS" tsan_tests
      (cd build-tsan && TSAN_OPTIONS="halt_on_error=1 suppressions=$ROOT/tests/tsan.supp" \
        ctest --no-tests=error --output-on-failure -j"$JOBS" --timeout 600 -L tsan)
      ;;
    fuzz) FUZZ_SECONDS=${FUZZ_SECONDS:-20} tests/fuzz/run.sh ;;
    *) echo "unknown pass $pass (plain, package, asan, tsan, fuzz)"; exit 2 ;;
  esac
  summary+=("$pass $((SECONDS - started)) s")
  echo "=== $pass passed in $((SECONDS - started)) s ==="
done
# Per-pass wall times, so a slow CI run shows where its time went.
echo "=== all passed: ${summary[*]}; total ${SECONDS} s ==="
