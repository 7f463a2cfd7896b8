#!/usr/bin/env bash
# The mesh equality tests (docs/parallelism.md) on a GPU machine: builds with CUDA (and NCCL
# when the toolkit has it), then runs the same ctest entries as CI — sp=2, tp=2, cfg=2,
# sp=2 x tp=2, cfg=2 x sp=2 (and tp=4, sp=4) of the Wan DiT golden files and the 3-step tiny
# pipeline, each compared with the single-rank run in the same process — plus the CUDA/NCCL
# unit tests when they were built. Usage (repository root):
#   bench/device/run_parallel_equality.sh [BUILD_DIR]     (default build-device)
# Writes the logs to $OUT (or ./parallel-equality-logs) and exits non-zero on any failure.
# Not run yet: no GPU machine was available in the session that wrote it.
set -euo pipefail
BUILD=${1:-build-device}
LOGS=${OUT:-parallel-equality-logs}
mkdir -p "$LOGS"
JOBS=$(nproc 2>/dev/null || echo 4)
{
  nvidia-smi || true
  mpirun --version | head -1 || true
} > "$LOGS/machine.txt" 2>&1
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVIDAX_BENCH=OFF -DVIDAX_CUDA=AUTO \
  > "$LOGS/configure.txt" 2>&1
grep -E "NCCL|CUDA" "$LOGS/configure.txt" || true
cmake --build "$BUILD" --target test_parallel test_dist -j"$JOBS" > "$LOGS/build.txt" 2>&1
if grep -q "test_cuda" "$BUILD/build.ninja"; then
  cmake --build "$BUILD" --target test_cuda -j"$JOBS" >> "$LOGS/build.txt" 2>&1
fi
cd "$BUILD"
status=0
ctest -R "^(parallel|dist)\." --output-on-failure -V > "../$LOGS/ctest_parallel.txt" 2>&1 || status=1
if [ -x tests/test_cuda ] || [ -x test_cuda ]; then
  ctest -L cuda --output-on-failure -V > "../$LOGS/ctest_cuda.txt" 2>&1 || status=1
fi
# The equality lines (sharded vs single rank, per mesh and file).
grep -hE "vs single rank|Ulysses|weights, tp=" "../$LOGS/ctest_parallel.txt" | sed 's/^[0-9]*: //' | sort -u \
  > "../$LOGS/summary.txt" || true
cat "../$LOGS/summary.txt"
tail -5 "../$LOGS/ctest_parallel.txt"
exit $status
