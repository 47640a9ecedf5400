#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang, ASan + UBSan) and runs each for a bounded
# time, starting from the checked-in corpus (plus the broken-archive fixtures when present). New
# inputs go to a scratch corpus; with --merge, those that reach code the checked-in corpus does
# not are added to it (libFuzzer's -merge=1), so CI's short runs start where a long one ended.
# A crash stops the run with the reproducer path; turn it into a regression test (see
# tests/fuzz/README.md).
# Usage: scripts/fuzz.sh [--merge] [SECONDS_PER_TARGET] [TARGET...]   (default 60 s, every target)
set -euo pipefail
cd "$(dirname "$0")/.."
merge=0
if [[ ${1:-} == --merge ]]; then
  merge=1
  shift
fi
secs=${1:-60}
shift || true
# PACKFS_FUZZ_BUILD: an existing build configured with -DPACKFS_FUZZ=ON (CI reuses its ASan
# build); otherwise build-fuzz is configured here.
build=${PACKFS_FUZZ_BUILD:-build-fuzz}
if [[ -z ${PACKFS_FUZZ_BUILD:-} ]]; then
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
    -DCMAKE_CXX_COMPILER=clang++ -DPACKFS_FUZZ=ON -DPACKFS_WERROR=ON >/dev/null
fi
if [[ $# -gt 0 ]]; then
  targets=("$@")
else
  targets=()
  for f in tests/fuzz/*_fuzz.cc; do targets+=("$(basename "$f" .cc)"); done
fi
cmake --build "$build" --target "${targets[@]}"
fixtures=tests/fixtures
work=$(mktemp -d /tmp/packfs-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
# One target: seeds into a scratch corpus, run, report. Returns non-zero on a finding.
run_one() {
  local t=$1 name=${1%_fuzz}
  mkdir -p "$work/$name" "$work/$name-artifacts"
  cp tests/fuzz/corpus/"$name"/* "$work/$name"/ 2>/dev/null || true
  if [[ $name == zip_index && -d $fixtures/interop ]]; then
    find "$fixtures/interop" -name '*.zip' -size -64k -exec cp -t "$work/$name" {} + 2>/dev/null || true
  fi
  if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$build"/tests/fuzz/"$t" -max_total_time="$secs" -max_len=65536 -timeout=20 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$work/$name-artifacts/" "$work/$name" \
      >"$work/$name.log" 2>&1; then
    echo "== $t: FAILURE"
    tail -40 "$work/$name.log"
    mkdir -p fuzz-crashes
    cp "$work/$name-artifacts"/* fuzz-crashes/ 2>/dev/null || true
    echo "fuzz: $t found a failure; reproducer(s) copied to fuzz-crashes/" >&2
    return 1
  fi
  echo "== $t for ${secs}s: $(grep -E '^stat::number_of_executed_units' "$work/$name.log" |
    awk '{print $2}') inputs, $(grep -E 'DONE' "$work/$name.log" | grep -oE "cov: [0-9]+" | cut -d" " -f2) edges"
  if ((merge)); then
    local before
    mkdir -p tests/fuzz/corpus/"$name"
    before=$(find tests/fuzz/corpus/"$name" -type f | wc -l)
    ASAN_OPTIONS=detect_leaks=1 "$build"/tests/fuzz/"$t" -merge=1 -max_len=65536 -timeout=20 \
      -rss_limit_mb=2048 tests/fuzz/corpus/"$name" "$work/$name" >"$work/$name-merge.log" 2>&1 ||
      { tail -20 "$work/$name-merge.log"; echo "fuzz: merging $t's corpus failed" >&2; return 1; }
    echo "== $t: corpus/$name $before -> $(find tests/fuzz/corpus/"$name" -type f | wc -l) inputs"
  fi
}

# As many targets at once as there are cores.
failed=0
running=0
for t in "${targets[@]}"; do
  run_one "$t" &
  running=$((running + 1))
  if ((running >= $(nproc))); then
    wait -n || failed=1
    running=$((running - 1))
  fi
done
while ((running > 0)); do
  wait -n || failed=1
  running=$((running - 1))
done
exit "$failed"
