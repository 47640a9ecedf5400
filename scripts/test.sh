#!/usr/bin/env bash
# Runs the packfs test suite: installs dependencies (with the benchmark contenders), builds with
# g++ (-Werror) and runs ctest, runs the quick benchmark as a smoke test (in the background, while
# clang builds with AddressSanitizer + UndefinedBehaviorSanitizer), runs ctest again on the clang
# build, then each libFuzzer target briefly.
# Usage: scripts/test.sh [--fast]   (--fast: the g++ build, its tests and the quick bench)
# The quick bench (bench/run.sh --quick without its ffmpeg-bound video and LeRobot parts, about a
# minute) reuses the g++ build and writes its
# results to a temporary directory, not bench/results/. It fails only when the bench breaks
# (a crash, wrong bytes from any contender, packfs failing to mount or read), never on speed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --bench

jobs=$(nproc)
# Tests spend much of their time waiting (mounts, servers, child processes), so one more than the
# cores keeps both busy; none of them asserts on time.
test_jobs=$((jobs + 1))
echo "== g++ build (-Wall -Wextra -Werror)"
CC=gcc CXX=g++ scripts/build.sh build-ci -DPACKFS_WERROR=ON -DCMAKE_UNITY_BUILD=ON
echo "== tests (g++)"
(cd build-ci && ctest --output-on-failure -j "$test_jobs")

# The quick bench only reads the g++ build, so it runs while the clang build compiles.
echo "== quick bench, in the background (smoke test: checks bytes, never speed)"
results=$(mktemp -d /tmp/packfs-bench-results.XXXXXX)
trap 'rm -rf "$results"' EXIT
# The video and LeRobot parts spend their time encoding test videos with ffmpeg (their code paths
# are covered by fuse_lerobot_test and mp4_slice_test), so CI's smoke run leaves them out.
bench/run.sh --quick --only small --only large --only mount --only pack --only remote \
  --build build-ci --out "$results" > "$results/log" 2>&1 &
bench_pid=$!
finish_bench() {
  if ! wait "$bench_pid"; then
    cat "$results/log"
    echo "quick bench FAILED (see above; BROKEN lines say why)" >&2
    exit 1
  fi
  echo "== quick bench: $(tail -n 1 "$results/log")"
}

if [[ "${1:-}" != "--fast" ]]; then
  echo "== clang build with ASan + UBSan (-Werror)"
  # The same build carries libFuzzer's coverage instrumentation and the fuzz targets, so the
  # fuzzing step below needs no build of its own.
  CC=clang CXX=clang++ scripts/build.sh build-asan -DPACKFS_WERROR=ON -DPACKFS_SANITIZE=ON \
    -DCMAKE_UNITY_BUILD=ON \
    -DPACKFS_FUZZ=ON
  finish_bench
  echo "== tests (clang, ASan + UBSan)"
  # Sanitizer reports also go to files: a daemonized packfs has no stderr, so without a log
  # path its findings would be lost. Any report file fails the run. The shell-script tests
  # (package, man pages, completion, the LeRobot generator) check no compiled code of their own
  # and run once, above.
  sanlogs=$(mktemp -d /tmp/packfs-sanitizer.XXXXXX)
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:log_path=$sanlogs/asan \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$sanlogs/ubsan PACKFS_SANITIZED=1 \
     ctest --output-on-failure -j "$test_jobs" -E '^(package_test|manpage_test|completion_test|lerobot_generator_test)$') ||
    { cat "$sanlogs"/* 2>/dev/null; exit 1; }
  if compgen -G "$sanlogs/*" > /dev/null; then
    cat "$sanlogs"/*
    echo "sanitizer reports above (from a test or a daemonized packfs)" >&2
    exit 1
  fi
  rm -rf "$sanlogs"
  echo "== fuzzing (each target ${PACKFS_FUZZ_SECONDS:-30} s; scripts/fuzz.sh for longer runs)"
  PACKFS_FUZZ_BUILD=build-asan scripts/fuzz.sh "${PACKFS_FUZZ_SECONDS:-30}"
else
  finish_bench
fi
