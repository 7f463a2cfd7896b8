#!/usr/bin/env bash
# Checks that no AVX-512 or AMX code can run below its CPU tier (docs/cpu.md): CI runs it as
# the ctest test isa.check. Every function of BINARY that holds an EVEX-encoded (AVX-512)
# or AMX instruction must be defined only in translation units compiled with tier flags.
# A function that a baseline (x86-64-v3) object defines too, as an external or weak symbol
# (an inline function or template instantiated in both), is a leak: the linker keeps one
# copy of it, maybe the AVX-512 one, and an AVX2-only CPU would then fault in baseline code.
# Fails naming each such function. bash, awk, nm and objdump only.
#
# Usage: scripts/check_isa.sh BUILD_DIR BINARY...   (BUILD_DIR holds compile_commands.json)
set -euo pipefail
build="$1"; shift
[ -f "$build/compile_commands.json" ] || { echo "check_isa: $build/compile_commands.json not found" >&2; exit 2; }
[ "$#" -ge 1 ] || { echo "usage: $0 BUILD_DIR BINARY..." >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Objects compiled without tier flags (our baseline code), from the compile commands.
awk '/"command":/ {
       if (match($0, / -o [^ ]+\.o /)) {
         obj = substr($0, RSTART + 4, RLENGTH - 5)
         if ($0 !~ /-mavx512f/ && $0 !~ /-march=native/) print obj
       }
     }' "$build/compile_commands.json" > "$tmp/baseline_objs"
if grep -q -- '-march=native' "$build/compile_commands.json"; then
  echo "check_isa: this build uses -march=native (VIDAX_NATIVE=ON): nothing to check"; exit 0
fi
(cd "$build" && while read -r o; do if [ -f "$o" ]; then nm --defined-only --extern-only "$o" 2>/dev/null || true; fi; done < "$tmp/baseline_objs") |
  awk 'NF >= 3 && $2 ~ /^[TWVi]$/ { print $3 }' | sort -u > "$tmp/baseline_syms"
[ -s "$tmp/baseline_syms" ] || { echo "check_isa: found no baseline objects under $build" >&2; exit 2; }

status=0
for bin in "$@"; do
  # Functions of the binary with an EVEX prefix (0x62, after optional legacy prefixes) or an AMX mnemonic.
  objdump -d --insn-width=16 "$bin" | awk -F'\t' '
    /^[0-9a-f]+ <.*>:$/ { fn = $0; sub(/^[0-9a-f]+ </, "", fn); sub(/>:$/, "", fn); next }
    NF >= 3 {
      b = $2; sub(/^ +/, "", b)
      while (b ~ /^(26|2e|36|3e|64|65|66|67|f0|f2|f3) /) b = substr(b, 4)
      if (b ~ /^62 / || $3 ~ /^(tile|tdp|ldtilecfg|sttilecfg)/) hit[fn] = 1
    }
    END { for (f in hit) print f }' | sort -u > "$tmp/hits"
  leaks=$(comm -12 "$tmp/hits" "$tmp/baseline_syms" || true)
  echo "check_isa: $(basename "$bin"): $(wc -l < "$tmp/hits") functions hold AVX-512/AMX code"
  if [ -n "$leaks" ]; then
    echo "check_isa: $(basename "$bin"): AVX-512/AMX code in functions that baseline objects define too:"
    echo "$leaks" | c++filt | sed 's/^/  /'
    status=1
  fi
done
exit $status
