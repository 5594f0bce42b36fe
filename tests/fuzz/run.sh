#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/CMakeLists.txt: the main project configured
# with clang and -DKSPOOL_FUZZ=ON, a unity build; only the *_fuzzer targets and the
# libraries they link are built: 373 CPU-seconds from a cold cache) into build-fuzz/ and runs each one for FUZZ_SECONDS (default 30; longer runs outside CI, e.g. FUZZ_SECONDS=600) over a
# temporary copy of its seed corpus (tests/fuzz/corpus/<target>/; the checked-in corpus
# never grows), after replaying every input under tests/fuzz/regressions/<target>/.
# Exits non-zero if any fuzzer crashes; crashing inputs are kept under build-fuzz/crashes/.
# Usage: tests/fuzz/run.sh [record|request|config|bruce|acl]...   (default: all five)
# Env: FUZZ_SECONDS (per target), JOBS (build parallelism, default 2), FUZZ_MAX_LEN (4096).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
FUZZ_MAX_LEN=${FUZZ_MAX_LEN:-4096}
JOBS=${JOBS:-2}
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(record request config bruce acl)

# A build-fuzz/ configured from tests/fuzz alone (before the fuzzers linked the
# project's libraries) cannot be reconfigured from the root: start it afresh.
if [ -f build-fuzz/CMakeCache.txt ] &&
   ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$root" build-fuzz/CMakeCache.txt; then
  rm -rf build-fuzz/CMakeCache.txt build-fuzz/CMakeFiles
fi
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DKSPOOL_FUZZ=ON -DBUILD_TESTING=OFF -DCMAKE_UNITY_BUILD=ON >/dev/null
ninja -C build-fuzz -j"$JOBS" $(printf '%s_fuzzer ' "${targets[@]}")

work=$(mktemp -d "${TMPDIR:-/tmp}/kspool-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
crashdir=$root/build-fuzz/crashes
mkdir -p "$crashdir"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

passed=0 failed=0
for t in "${targets[@]}"; do
  bin=$root/build-fuzz/${t}_fuzzer
  echo "=== fuzz: $t ==="
  ok=1

  # Regression inputs: each must run cleanly.
  mapfile -t regs < <(find "tests/fuzz/regressions/$t" -type f ! -name .gitkeep 2>/dev/null | sort)
  if [ ${#regs[@]} -gt 0 ]; then
    if "$bin" "${regs[@]}" >"$work/$t.regress.log" 2>&1; then
      echo "regressions: ${#regs[@]} inputs ok"
    else
      ok=0
      tail -n 40 "$work/$t.regress.log"
      echo "FAIL: $t regression input crashed (see the log above; inputs under tests/fuzz/regressions/$t/)"
    fi
  else
    echo "regressions: none"
  fi

  # Bounded fuzzing over a throwaway copy of the seed corpus.
  corpus=$work/$t.corpus
  mkdir -p "$corpus"
  cp -r "tests/fuzz/corpus/$t/." "$corpus/"
  rm -f "$corpus/.gitkeep"
  mkdir -p "$crashdir/$t"
  log=$work/$t.log
  fuzz_ok=1
  "$bin" -max_total_time="$FUZZ_SECONDS" -max_len="$FUZZ_MAX_LEN" -print_final_stats=1 \
    -artifact_prefix="$crashdir/$t/" "$corpus" >"$log" 2>&1 || fuzz_ok=0
  # libFuzzer's progress: the first and last status lines and the final stats.
  grep -E '^#[0-9]+[[:space:]]+INITED' "$log" || true
  grep -E '^#[0-9]+[[:space:]]+(pulse|NEW|REDUCE|DONE)' "$log" | tail -n 1 || true
  grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' "$log" || true
  if [ $fuzz_ok -eq 0 ]; then
    ok=0
    # The report: from the first sanitizer/property message on.
    sed -n '/ERROR: \|property violated\|runtime error/,$p' "$log" | head -n 80
    if grep -q 'Test unit written to' "$log"; then
      grep -E 'Test unit written to' "$log" | sed 's/^.*Test unit written to /FAIL: crashing input written to /'
    else
      echo "FAIL: $t fuzzer exited non-zero without writing a crashing input (see the log above)"
    fi
  fi

  if [ $ok -eq 1 ]; then
    passed=$((passed + 1))
    echo "ok: $t"
  else
    failed=$((failed + 1))
    echo "FAIL: $t"
  fi
done

echo "fuzz: $passed passed, $failed failed"
[ $failed -eq 0 ]
