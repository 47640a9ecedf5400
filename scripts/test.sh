#!/usr/bin/env bash
# Runs the packfs test suite: installs dependencies, builds with g++ (-Werror) and runs ctest, then
# builds with clang under AddressSanitizer + UndefinedBehaviorSanitizer and runs ctest again.
# Usage: scripts/test.sh [--fast]   (--fast: the g++ build only)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

jobs=$(nproc)
echo "== g++ build (-Wall -Wextra -Werror)"
CC=gcc CXX=g++ scripts/build.sh build-ci -DPACKFS_WERROR=ON
echo "== tests (g++)"
(cd build-ci && ctest --output-on-failure -j "$jobs")

if [[ "${1:-}" != "--fast" ]]; then
  echo "== clang build with ASan + UBSan (-Werror)"
  CC=clang CXX=clang++ scripts/build.sh build-asan -DPACKFS_WERROR=ON -DPACKFS_SANITIZE=ON
  echo "== tests (clang, ASan + UBSan)"
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 PACKFS_SANITIZED=1 \
     ctest --output-on-failure -j "$jobs")
fi
