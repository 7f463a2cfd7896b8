#!/usr/bin/env bash
# Installs the dependencies, builds, runs the fuzzers for a bounded time, then
# the test suite (ctest, last, so its summary ends the output).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
if [ -x scripts/fuzz.sh ]; then
  scripts/fuzz.sh
fi
cd build
ctest --output-on-failure -j "$(nproc)" --timeout 1500
