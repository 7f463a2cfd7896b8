#!/usr/bin/env bash
# Fetches the pinned XLA CPU PJRT plugin wheel with pip and unpacks its C API header and its
# shared object into the cache folder .deps/pjrt/ (gitignored; docs/pjrt.md, docs/dependencies.md).
# CMake finds the header there (option VIDAX_PJRT); the tests load the plugin from there.
#
#   .deps/pjrt/include/xla/pjrt/c/pjrt_c_api.h   the header (from xla-cpu-pjrt only)
#   .deps/pjrt/xla_cpu_pjrt.so                   the primary plugin (xla-cpu-pjrt 0.0.1)
#   .deps/pjrt/lammps_cpu_pjrt.so                the fallback plugin (lammps-jax-pjrt-cpu 0.11.2)
#
# The primary source is tried first; the fallback is fetched when the primary cannot be (its
# wheel ships no header: with it alone the build has no PJRT header, and says so). Nothing of a
# wheel is committed. VIDAX_PJRT_FETCH=0 skips the fetch (an offline host; the build then runs
# without PJRT unless the folder is already filled). Re-running with the files present does nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${VIDAX_PJRT_FETCH:-1}" = 0 ]; then
  echo "fetch-pjrt-plugin: VIDAX_PJRT_FETCH=0, skipped"
  exit 0
fi
dest=.deps/pjrt
mkdir -p "$dest/wheels" "$dest/include/xla/pjrt/c"
PY=${PYTHON:-python3}

# name==version  member of the plugin in the wheel  file name in $dest  header member ("" = none)
SOURCES=(
  "xla-cpu-pjrt==0.0.1 xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so xla_cpu_pjrt.so xla_plugins/xla_cpu_pjrt/include/pjrt_c_api.h"
  "lammps-jax-pjrt-cpu==0.11.2 lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so lammps_cpu_pjrt.so -"
)

fetch() {  # spec so_member so_name header_member
  local spec=$1 so_member=$2 so_name=$3 header=$4
  if [ -f "$dest/$so_name" ] && { [ "$header" = - ] || [ -f "$dest/include/xla/pjrt/c/pjrt_c_api.h" ]; }; then
    echo "fetch-pjrt-plugin: $spec already in $dest"
    return 0
  fi
  local dir="$dest/wheels/${spec%%==*}"
  rm -rf "$dir" && mkdir -p "$dir"
  if ! "$PY" -m pip download --no-deps --only-binary=:all: --disable-pip-version-check -q -d "$dir" "$spec"; then
    echo "fetch-pjrt-plugin: pip could not download $spec" >&2
    return 1
  fi
  local whl
  whl=$(ls "$dir"/*.whl | head -n1)
  "$PY" - "$whl" "$so_member" "$dest/$so_name" "$header" "$dest/include/xla/pjrt/c/pjrt_c_api.h" <<'PYEOF'
import shutil, sys, zipfile
whl, so_member, so_out, header, header_out = sys.argv[1:]
with zipfile.ZipFile(whl) as z:
    pairs = [(so_member, so_out)] + ([(header, header_out)] if header != "-" else [])
    for member, out in pairs:
        with z.open(member) as src, open(out + ".part", "wb") as dst:
            shutil.copyfileobj(src, dst)
        import os; os.replace(out + ".part", out)
PYEOF
  rm -rf "$dir"
  echo "fetch-pjrt-plugin: $spec -> $dest/$so_name"
}

ok=0
if fetch ${SOURCES[0]}; then ok=1; fi
# The fallback source: fetched when the primary failed (VIDAX_PJRT_FALLBACK=1 fetches it anyway,
# which the tests then also run against).
if [ $ok = 0 ] || [ "${VIDAX_PJRT_FALLBACK:-0}" = 1 ]; then
  if fetch ${SOURCES[1]}; then ok=1; fi
fi
if [ $ok = 0 ]; then
  echo "fetch-pjrt-plugin: no PJRT CPU plugin could be fetched; the build goes on without PJRT" >&2
fi
