#!/usr/bin/env bash
# Installs the Debian 12 packages vidax-cpp builds against (see docs/dependencies.md).
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
PKGS=(
  build-essential cmake ninja-build pkg-config git
  libopenblas-dev libdnnl-dev ocl-icd-opencl-dev opencl-headers libomp-dev
  libzip-dev nlohmann-json3-dev libcli11-dev libfmt-dev
  libsentencepiece-dev sentencepiece
  libavcodec-dev libavformat-dev libavutil-dev libswscale-dev libswresample-dev
  libopenmpi-dev openmpi-bin
  libcpp-httplib-dev libsqlite3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  chromium  # headless, for the serve page's browser test (tests/serve/test_web_page.cpp)
  clang libclang-rt-14-dev
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# The pinned XLA CPU PJRT plugin (header + .so) into .deps/pjrt/ (docs/pjrt.md); never fatal.
"$(dirname "$0")/fetch-pjrt-plugin.sh" || echo "install-deps: the PJRT plugin fetch failed; building without PJRT" >&2
