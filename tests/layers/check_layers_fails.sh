#!/usr/bin/env bash
# scripts/check_layers.sh fails on a deliberate fault, and its message names where and why.
# Copies src/ and apps/ of REPO to a temporary tree, checks that the copy passes (so the failure
# below is the fault's), puts in one fault, and expects a non-zero exit and the expected line.
#
# Usage: tests/layers/check_layers_fails.sh REPO FAULT
set -euo pipefail
repo=$1 fault=$2
check="$repo/scripts/check_layers.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$repo/src" "$repo/apps" "$tmp/"

bash "$check" "$tmp" >/dev/null || { echo "the unchanged copy of $repo fails the check"; bash "$check" "$tmp"; exit 1; }

# Appends an include to a file of the copy; prints the file:line it landed on.
add_include() {
  printf '#include "%s"\n' "$2" >> "$tmp/$1"
  echo "$1:$(wc -l < "$tmp/$1")"
}

case "$fault" in
  upward_include)  # core (the bottom) includes the pipeline
    at=$(add_include src/core/dtype.cpp pipeline/sampler.h)
    expect="^$at: core includes \"pipeline/sampler.h\" \(an upward include: pipeline is above core\)" ;;
  unlisted_lower_include)  # sched includes nn: below it, but not on its line
    at=$(add_include src/sched/scheduler.cpp nn/linear.h)
    expect="^$at: sched includes \"nn/linear.h\" \(nn is below sched but not on its line\); src/layers.txt:[0-9]+ allows sched:" ;;
  unknown_folder_include)  # a folder that is no layer
    at=$(add_include src/io/video.cpp nowhere/thing.h)
    expect="^$at: includes \"nowhere/thing.h\", but nowhere/ is not a layer of src/layers.txt" ;;
  missing_folder)  # a new folder of src/ not in the table
    mkdir "$tmp/src/newlayer"
    printf '#include "core/error.h"\n' > "$tmp/src/newlayer/a.cpp"
    expect="^src/newlayer/: a folder of src/ missing from src/layers.txt" ;;
  unused_dep)  # the table lists a dependency no file has
    sed -i 's/^sched: /sched: translate /' "$tmp/src/layers.txt"
    expect="^src/layers.txt:[0-9]+: sched lists translate, but no file in src/sched/ includes translate/" ;;
  cycle)  # core depends on a layer listed after it
    sed -i 's/^core:.*/core: io/' "$tmp/src/layers.txt"
    expect="^src/layers.txt:[0-9]+: core depends on io, which is not listed above it" ;;
  *) echo "unknown fault '$fault'"; exit 2 ;;
esac

set +e
out=$(bash "$check" "$tmp" 2>&1)
rc=$?
set -e
if [ "$rc" -eq 0 ]; then
  echo "FAIL: check_layers.sh passed a tree with the fault '$fault':"; echo "$out"; exit 1
fi
if ! grep -qE -- "$expect" <<< "$out"; then
  echo "FAIL: check_layers.sh failed (rc $rc) but no line matches: $expect"; echo "$out"; exit 1
fi
echo "ok: '$fault' fails (rc $rc): $(grep -E -- "$expect" <<< "$out")"
