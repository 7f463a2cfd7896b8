#!/usr/bin/env bash
# End to end in well under a minute, no download: install the build
# dependencies, build, write a tiny random-weight Wan 2.1 checkpoint (original
# layout) and run `vidax generate` on it -> out/demo.mp4 (+ out/demo.mp4.json).
# The weights are random, so the video is noise: this shows the path from a
# prompt to an MP4 runs, not what the model draws.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh -DVIDAX_BENCH=OFF
mkdir -p out
build/bin/vidax make-demo --force out/demo-weights  # --force: a rerun replaces the last demo
build/bin/vidax generate --weights out/demo-weights \
  --prompt "a red panda climbing a bamboo tree in the snow" \
  --seed 42 -o out/demo.mp4 "$@"
# LTX-2.3, tiny random weights too: a video with its audio track (AAC) -> out/demo-ltx2.mp4, the
# waveform also as out/demo-ltx2.wav (docs/models/ltx2.md; about a second).
build/bin/vidax make-demo --force out/demo-ltx2-weights --model ltx2.3-tiny-demo
build/bin/vidax generate --weights out/demo-ltx2-weights \
  --prompt "a red panda climbing a bamboo tree in the snow" \
  --seed 42 -o out/demo-ltx2.mp4 --audio-output out/demo-ltx2.wav
