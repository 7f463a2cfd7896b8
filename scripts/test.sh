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
# OpenMP threads that wait at a barrier sleep instead of spinning: ctest runs
# tests side by side on few cores, where spinning burns the cores the other
# test needs (a VAE memory test took 154 CPU s for 2 s of work without it).
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
ctest --output-on-failure -j "$(nproc)" --timeout 1500
