#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) into build-fuzz/ and runs
# each for FUZZ_SECONDS (default 45) from the committed seed corpus in
# fuzz/corpus/<target>. Exits non-zero when a target crashes; the crashing
# input is kept under build-fuzz/artifacts/ (turn it into a test in tests/io).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${FUZZ_SECONDS:-45}
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
JOBS=${JOBS:-2}
TARGETS=(safetensors_header pickle checkpoint_file)

if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz.sh: clang++ not found (scripts/install-deps.sh installs it)" >&2
  exit 1
fi

CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVIDAX_FUZZ=ON \
  -DVIDAX_TESTS=OFF -DVIDAX_BENCH=OFF -DVIDAX_CUDA=OFF >/dev/null
cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]/#/fuzz_}"

mkdir -p "$BUILD/artifacts"
status=0
for t in "${TARGETS[@]}"; do
  work="$BUILD/corpus/$t"  # new inputs land here, never in the committed seeds
  mkdir -p "$work"
  echo "fuzz.sh: fuzz_$t for ${SECS}s"
  if ! "$BUILD/fuzz/fuzz_$t" "$work" "fuzz/corpus/$t" -dict="fuzz/$t.dict" -max_total_time="$SECS" \
      -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
      -artifact_prefix="$BUILD/artifacts/$t-" 2>"$BUILD/fuzz_$t.log"; then
    echo "fuzz.sh: fuzz_$t FAILED; see $BUILD/fuzz_$t.log and $BUILD/artifacts/" >&2
    tail -n 40 "$BUILD/fuzz_$t.log" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|cov:" "$BUILD/fuzz_$t.log" | tail -n 2
  fi
done
exit $status
