#!/usr/bin/env bash
# Runs the packfs test suite: installs dependencies (with the benchmark contenders), builds with
# g++ (-Werror) and runs ctest while clang builds with AddressSanitizer + UndefinedBehaviorSanitizer
# in the background, runs the quick benchmark as a smoke test (in the background), runs ctest
# again on the clang build, then each libFuzzer target for 30 s (PACKFS_FUZZ_SECONDS).
# Usage: scripts/test.sh [--fast]   (--fast: the g++ build, its tests and the quick bench)
# The quick bench (bench/run.sh --quick without its ffmpeg-bound video and LeRobot parts, about a
# minute) reuses the g++ build and writes its results to a temporary directory, not
# bench/results/. It fails only when the bench breaks (a crash, wrong bytes from any contender,
# packfs failing to mount or read), never on speed.
set -euo pipefail
cd "$(dirname "$0")/.."
# Nothing here reads a terminal: a tool that prompts fails instead of waiting.
exec < /dev/null
scripts/install-deps.sh --bench

# Each step's line says when it started, in seconds since this script did.
step() { echo "== [$SECONDS s] $*"; }
jobs=$(nproc)
# Tests spend much of their time waiting (mounts, servers, child processes), so one more than the
# cores keeps both busy; none of them asserts on time.
test_jobs=$((jobs + 1))
# CI's builds keep line tables only (-g1: enough for sanitizer and crash stack traces; full
# debug info is a fifth of the compile time) and build the test code itself at -O1.
ci_flags=(-DPACKFS_WERROR=ON -DCMAKE_UNITY_BUILD=ON "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
step "g++ build (-Wall -Wextra -Werror)"
# g++ 12 at -O1 warns "may be used uninitialized" inside std::optional copies (a known false
# positive of that optimization level), so the test code leaves that one warning out.
CC=gcc CXX=g++ scripts/build.sh build-ci "${ci_flags[@]}" \
  "-DPACKFS_TEST_COMPILE_OPTIONS=-O1;-Wno-maybe-uninitialized"
fast=0
[[ "${1:-}" == "--fast" ]] && fast=1
logs=$(mktemp -d /tmp/packfs-test-logs.XXXXXX)
results=$logs/bench
mkdir -p "$results"
clang_pid=
bench_pid=
# A failing step must not leave the background build or bench running.
kill_tree() {
  local c
  for c in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$c"; done
  kill "$1" 2>/dev/null || true
}
cleanup() {
  for p in $clang_pid $bench_pid ${fuzz_pid:-} ${watchdog_pid:-}; do kill_tree "$p"; done
  wait 2>/dev/null || true
  rm -rf "$logs"
}
trap cleanup EXIT

# A hang must end the run with a report, not run into CI's time limit: after PACKFS_TEST_BUDGET
# seconds (default 3600; a whole run takes about 1,100 s on 2 cores) the watchdog prints what runs
# and where it waits, aborts the FUSE connections of packfs and the bench's contenders (readers
# stuck on a hung server then fail with ENOTCONN, which ctest's own timeout cannot do for a
# process blocked in the kernel) and stops the run's steps, so it fails with that report.
budget=${PACKFS_TEST_BUDGET:-3600}
main_pid=$$
(
  sleep "$budget"
  echo "== [$SECONDS s] test.sh still running after $budget s (PACKFS_TEST_BUDGET):" \
       "stopping it" >&2
  : > "$logs/watchdog-fired"
  scripts/hang-report.sh --abort >&2
  sleep 20
  for c in $(pgrep -P "$main_pid"); do
    [[ "$c" == "$BASHPID" ]] || kill_tree "$c"
  done
) &
watchdog_pid=$!

if ((!fast)); then
  # The g++ tests spend much of their time waiting on mounts, servers and child processes, so
  # the clang build (ASan + UBSan, -Werror) runs beside them at a lower priority and takes the
  # idle CPU. The same build carries libFuzzer's coverage instrumentation and the fuzz targets,
  # so the fuzzing step below needs no build of its own.
  step "clang build with ASan + UBSan (-Werror), in the background beside the g++ tests"
  (CC=clang CXX=clang++ nice -n 10 scripts/build.sh build-asan "${ci_flags[@]}" \
     -DPACKFS_SANITIZE=ON -DPACKFS_FUZZ=ON > "$logs/clang-build.log" 2>&1) &
  clang_pid=$!
fi

# ctest lists a test binary in which some test called GTEST_SKIP (its main exits 77) as
# "***Skipped", never as passed. The skips and their reasons are printed; a FUSE suite that skipped
# on a machine where /dev/fuse works left the mount untested, and that fails the run.
fuse_works=0
[[ -r /dev/fuse && -w /dev/fuse ]] && command -v fusermount3 > /dev/null && fuse_works=1
check_skips() {  # BUILD_DIR CTEST_LOG
  local skipped
  skipped=$(sed -nE 's/.*Test +#[0-9]+: ([A-Za-z0-9_]+) .*\*\*\*Skipped.*/\1/p' "$2")
  [[ -z $skipped ]] && return 0
  echo "skipped test binaries: $(echo $skipped)"
  grep -hE '^(packfs-test-skipped: |SKIP: )' "$1/Testing/Temporary/LastTest.log" | sort -u || true
  if ((fuse_works)) && grep -qE '^(fuse_|hang_report_test$)' <<< "$skipped"; then
    echo "a FUSE test suite skipped on a machine where /dev/fuse works (reasons above)" >&2
    return 1
  fi
}

step "tests (g++)"
(cd build-ci && ctest --output-on-failure -j "$test_jobs") | tee "$logs/ctest-gcc.log"
check_skips build-ci "$logs/ctest-gcc.log"

# The quick bench only reads the g++ build, so it runs while the clang build finishes and its
# tests run.
step "quick bench, in the background (smoke test: checks bytes, never speed)"
# The video and LeRobot parts spend their time encoding test videos with ffmpeg (their code paths
# are covered by fuse_lerobot_test and mp4_slice_test), so CI's smoke run leaves them out.
bench/run.sh --quick --only small --only large --only midsize --only mount --only pack --only remote \
  --only scale --only shared --only epoch \
  --build build-ci --out "$results" > "$logs/bench.log" 2>&1 &
bench_pid=$!
finish_bench() {
  local pid=$bench_pid
  bench_pid=
  if ! wait "$pid"; then
    cat "$logs/bench.log"
    if [[ -e "$logs/watchdog-fired" ]]; then
      echo "quick bench FAILED: the watchdog stopped it after $budget s (its hang report," \
           "earlier in this output, says where it waited)" >&2
    else
      echo "quick bench FAILED (see above; BROKEN lines say why)" >&2
    fi
    exit 1
  fi
  step "quick bench: $(tail -n 1 "$logs/bench.log")"
}

if ((!fast)); then
  pid=$clang_pid
  clang_pid=
  if ! wait "$pid"; then
    cat "$logs/clang-build.log"
    echo "clang build FAILED (see above)" >&2
    exit 1
  fi
  step "clang build done"
  # Fuzzing runs as many targets at once as there are cores, so when the count does not divide
  # evenly the last round would leave cores idle: those targets run beside the ASan tests instead.
  fuzz_secs=${PACKFS_FUZZ_SECONDS:-30}
  fuzz_targets=()
  for f in tests/fuzz/*_fuzz.cc; do fuzz_targets+=("$(basename "$f" .cc)"); done
  early=$(( ${#fuzz_targets[@]} % jobs ))
  fuzz_pid=
  if ((early > 0)); then
    PACKFS_FUZZ_BUILD=build-asan scripts/fuzz.sh "$fuzz_secs" "${fuzz_targets[@]:0:early}" \
      > "$logs/fuzz-early.log" 2>&1 &
    fuzz_pid=$!
  fi
  step "tests (clang, ASan + UBSan)"
  # Sanitizer reports also go to files: a daemonized packfs has no stderr, so without a log
  # path its findings would be lost. Any report file fails the run. The shell-script tests
  # (package, man pages, completion, the LeRobot generator, the hang report) check no compiled
  # code of their own and run once, above.
  sanlogs=$logs/sanitizer
  mkdir -p "$sanlogs"
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:log_path=$sanlogs/asan \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$sanlogs/ubsan PACKFS_SANITIZED=1 \
     ctest --output-on-failure -j "$test_jobs" -E '^(package_test|manpage_test|completion_test|lerobot_generator_test|hang_report_test)$') |
    tee "$logs/ctest-asan.log" || { cat "$sanlogs"/* 2>/dev/null; exit 1; }
  check_skips build-asan "$logs/ctest-asan.log"
  if compgen -G "$sanlogs/*" > /dev/null; then
    cat "$sanlogs"/*
    echo "sanitizer reports above (from a test or a daemonized packfs)" >&2
    exit 1
  fi
  finish_bench
  step "fuzzing (each target $fuzz_secs s; scripts/fuzz.sh for longer runs)"
  if [[ -n $fuzz_pid ]]; then
    pid=$fuzz_pid
    fuzz_pid=
    wait "$pid" || { cat "$logs/fuzz-early.log"; exit 1; }
    grep '^== ' "$logs/fuzz-early.log"
  fi
  PACKFS_FUZZ_BUILD=build-asan scripts/fuzz.sh "$fuzz_secs" "${fuzz_targets[@]:early}"
  step "all passed"
else
  finish_bench
fi
