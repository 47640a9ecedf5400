#!/usr/bin/env bash
# Runs the packfs benchmarks side by side and writes bench/results/<date>.{json,md} and charts.
#   bench/run.sh [--quick] [--only NAME]... [--workdir DIR] [--build DIR] [--out DIR]
#                [more options: bench/bench.py --help]
# Installs the contenders (scripts/install-deps.sh --bench), builds what the benchmarks run
# (mkpack, packfs, bench/readfiles) in --build (default build/; configured there only when it has
# no build.ninja yet), then runs bench/bench.py. Exit status 1 means the bench broke (wrong bytes,
# packfs not mounting or reading, a crash), never that something was slow.
# Needs root for cold runs (drop_caches) and for FUSE mounts.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    --build) build=${args[i + 1]:-build} ;;
    --build=*) build=${args[i]#--build=} ;;
  esac
done
scripts/install-deps.sh --bench
# Configure only once: a reconfigure stamps the new git revision into every core object.
[[ -f "$build/build.ninja" ]] ||
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target mkpack packfs readfiles >/dev/null
exec python3 bench/bench.py "$@"
