#!/usr/bin/env bash
# Configures and builds packfs into a build directory. Usage:
#   scripts/build.sh [BUILD_DIR] [extra cmake args...]     (default BUILD_DIR: build)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$dir" -- -k 0
