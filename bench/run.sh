#!/usr/bin/env bash
# Runs the packfs benchmarks (see bench/bench.py --help): bench/run.sh [--quick] [--only NAME] ...
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --bench
scripts/build.sh build >/dev/null
exec python3 bench/bench.py "$@"
