#!/usr/bin/env bash
# The PJRT path on the H200 host (issue 21, docs/pjrt.md "The GPU host"): builds a minimal vidax
# (VIDAX_MINIMAL: no OpenBLAS, libzip, libav, sentencepiece, serve, MPI, CUDA, tests), runs the Wan
# DiT goldens through the host's CUDA PJRT plugin (jax-cuda13-pjrt in its Python), then times
# Wan 2.1 1.3B at 480x832x81 with CFG (two DiT forwards per step, random weights of the real
# shapes) and prints s/step and MFU against 989 TFLOP/s (H200 bf16 dense). Inside 10 minutes:
# each phase has its own timeout.
#
# The host has a compiler, nvcc 13.0, cmake and ninja, but no Debian -dev packages and no
# network: the header-only dependencies travel with the tree. On a machine that has them, once:
#   bench/device/pjrt_h200.sh --prepare      # -> .deps/host/include: nlohmann/, CLI/, the PJRT C API header (~1.5 MiB)
# then on the host, from the repository root (with .deps/host carried):
#   bench/device/pjrt_h200.sh                # env: VIDAX_PJRT_PLUGIN (default: found in python3), STEPS (2),
#                                            #      BUILD (build-minimal), DOT (default | highest),
#                                            #      MODEL, FRAMES, HEIGHT, WIDTH (default the issue's 1.3B 480x832x81),
#                                            #      ATTN_BLOCK (4096 keys a block of the lowered attention)
# Logs and bench.json go to $OUT (or ./pjrt-h200-logs); exits non-zero when a golden fails or a phase fails.
# Not run on a GPU yet: no machine was lent in the session that wrote it. Dry-run on the CPU host with the
# CPU plugin standing in (docs/pjrt.md "The GPU host"):
#   VIDAX_PJRT_PLUGIN=.deps/pjrt/xla_cpu_pjrt.so MODEL=wan2.1-tiny-demo FRAMES=5 HEIGHT=32 WIDTH=48 \
#     OUT=/tmp/pjrt-dry bench/device/pjrt_h200.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
HOST_INC=.deps/host/include

if [ "${1:-}" = "--prepare" ]; then
  mkdir -p "$HOST_INC/xla/pjrt/c"
  for d in nlohmann CLI; do
    [ -d "/usr/include/$d" ] || { echo "no /usr/include/$d here (install nlohmann-json3-dev / libcli11-dev)" >&2; exit 1; }
    rm -rf "${HOST_INC:?}/$d" && cp -r "/usr/include/$d" "$HOST_INC/"
  done
  hdr=$(ls .deps/pjrt/include/xla/pjrt/c/pjrt_c_api.h 2>/dev/null || true)
  [ -n "$hdr" ] || { echo "no .deps/pjrt/include/xla/pjrt/c/pjrt_c_api.h: run scripts/fetch-pjrt-plugin.sh" >&2; exit 1; }
  cp "$hdr" "$HOST_INC/xla/pjrt/c/"
  du -sh .deps/host
  exit 0
fi

LOGS=${OUT:-pjrt-h200-logs}
BUILD=${BUILD:-build-minimal}
STEPS=${STEPS:-2}
DOT=${DOT:-default}
# The timed shape (the issue's; a dry run on a CPU host: MODEL=wan2.1-tiny-demo FRAMES=5 HEIGHT=32 WIDTH=48).
MODEL=${MODEL:-wan2.1-t2v-1.3b}
FRAMES=${FRAMES:-81}
HEIGHT=${HEIGHT:-480}
WIDTH=${WIDTH:-832}
# Keys per block of the lowered attention: 4096 keeps 8 blocks at 32760 tokens (6.4 GB of fp32 scores
# a block on the 139 GB GPU); 0 = the default (~256 MiB a block: 256 blocks there).
ATTN_BLOCK=${ATTN_BLOCK:-4096}
mkdir -p "$LOGS"
T0=$(date +%s)
elapsed() { echo $(( $(date +%s) - T0 )); }
say() { echo "[$(elapsed) s] $*" | tee -a "$LOGS/summary.txt"; }

{ nvidia-smi || true; cmake --version | head -1; ninja --version; ${CXX:-c++} --version | head -1; nvcc --version | tail -1 || true; } \
  > "$LOGS/machine.txt" 2>&1 || true

# The plugin: $VIDAX_PJRT_PLUGIN, else the jax-cuda13-pjrt wheel of the host's Python.
PLUGIN=${VIDAX_PJRT_PLUGIN:-}
if [ -z "$PLUGIN" ]; then
  PLUGIN=$(python3 - <<'PY' 2>/dev/null || true
import importlib.util, os
for name in ("jax_plugins.xla_cuda13", "jax_plugins.xla_cuda12"):
    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        spec = None
    if spec and spec.submodule_search_locations:
        for d in spec.submodule_search_locations:
            p = os.path.join(d, "xla_cuda_plugin.so")
            if os.path.exists(p):
                print(p); raise SystemExit
PY
)
fi
[ -n "$PLUGIN" ] && [ -f "$PLUGIN" ] || { say "FAIL: no CUDA PJRT plugin (set VIDAX_PJRT_PLUGIN)"; exit 1; }
say "plugin $PLUGIN"

# The PJRT C API header: carried (.deps/host/include), else .deps/pjrt/include.
PJRT_INC=$HOST_INC
[ -f "$PJRT_INC/xla/pjrt/c/pjrt_c_api.h" ] || PJRT_INC=.deps/pjrt/include
[ -f "$PJRT_INC/xla/pjrt/c/pjrt_c_api.h" ] || { say "FAIL: no pjrt_c_api.h (run --prepare where the header is, carry .deps/host)"; exit 1; }

# 1. The minimal build (only the CLI).
say "configure + build ($BUILD, VIDAX_MINIMAL)"
if ! timeout 300 bash -c "cmake -S . -B '$BUILD' -G Ninja -DCMAKE_BUILD_TYPE=Release -DVIDAX_MINIMAL=ON -DVIDAX_TESTS=OFF \
      -DVIDAX_BENCH=OFF -DVIDAX_CUDA=OFF -DVIDAX_PJRT=ON -DVIDAX_PJRT_INCLUDE_DIR='$PWD/$PJRT_INC' \
      -DVIDAX_EXTRA_INCLUDE_DIR='$PWD/$HOST_INC' && cmake --build '$BUILD' --target vidax_app -j$(nproc)" \
      > "$LOGS/build.txt" 2>&1; then
  tail -30 "$LOGS/build.txt"; say "FAIL: build"; exit 1
fi
VIDAX=$BUILD/bin/vidax
export VIDAX_PJRT_PLUGIN=$PLUGIN VIDAX_PJRT_CACHE=$PWD/$BUILD/pjrt-cache
"$VIDAX" models --system | tee -a "$LOGS/summary.txt"

# 2. The Wan DiT goldens through the GPU plugin (fp32 bound, dots at HIGHEST).
status=0
for f in wan_dit_tiny wan_dit_tiny_b2 wan_dit_diffusers_tiny wan_dit_heads4_odd_b2 wan_dit_i2v_tiny \
         wan_dit_flf2v_tiny wan_dit_block1536; do
  if timeout 120 "$VIDAX" parity "tests/golden/$f.safetensors" --device pjrt > "$LOGS/parity_$f.txt" 2>&1; then
    say "golden $f: $(tail -1 "$LOGS/parity_$f.txt")"
  else
    say "golden $f: FAIL ($(tail -1 "$LOGS/parity_$f.txt"))"; status=1
  fi
done

# 3. Wan 2.1 1.3B, 480x832x81, CFG: a step is two DiT forwards; compile timed apart.
left=$(( 570 - $(elapsed) ))
say "bench: $MODEL ${HEIGHT}x${WIDTH}x${FRAMES} CFG, $STEPS steps, dot precision $DOT (time left ${left} s)"
if timeout "$left" "$VIDAX" bench --model "$MODEL" --random-weights --frames "$FRAMES" --height "$HEIGHT" --width "$WIDTH" \
     --steps "$STEPS" --cfg --precision bf16 --device pjrt --no-cpu-baseline --pjrt-dot-precision "$DOT" --pjrt-attention-block "$ATTN_BLOCK" --json \
     > "$LOGS/bench.json" 2> "$LOGS/bench.txt"; then
  python3 - "$LOGS/bench.json" <<'PY' | tee -a "$LOGS/summary.txt"
import json, sys
r = json.load(open(sys.argv[1])); p = r["pjrt"]
s = p["step_seconds_median"]; flops = r["step_flops"]
print(f"{r['model']} {r['width']}x{r['height']}x{r['frames']} ({r['tokens']} tokens), CFG: {s:.3f} s/step "
      f"(min {p['step_seconds_min']:.3f}), {flops/1e12:.1f} TFLOP/step, MFU {flops/s/989e12*100:.1f} % of 989 TFLOP/s bf16")
print(f"compile {p['compile_seconds']:.1f} s (cache hit: {p['cache_hit']}), first step {p['first_step_seconds']:.1f} s, "
      f"platform {p['session']['platform']} {p['session']['platform_version']}, dots {p['session']['dot_precision']}, "
      f"attention block {p['attention_block'] or 'auto'}")
PY
else
  tail -20 "$LOGS/bench.txt"; say "FAIL: bench (exit or timeout)"; status=1
fi
say "done in $(elapsed) s"
exit $status
