#!/usr/bin/env bash
# Checks that the includes of src/ follow the layer table src/layers.txt (docs/architecture.md,
# "Layers"); CI runs it as the ctest test layers.check. Fails, naming file:line and the rule, on
#   - an include of a folder that is not on the includer's line (upward, or a layer below not listed),
#   - a listed dependency that no file of the layer includes (the table says what each layer includes),
#   - a dependency listed on or after its user's line (the table runs bottom to top: no cycles),
#   - a folder of src/ missing from the table, or a table line without its folder.
# apps/ may include any layer. bash, grep and awk only: nothing to build, no Python in the test path.
#
# Usage: scripts/check_layers.sh [ROOT]   (ROOT: a tree holding src/ and apps/; default: this repository)
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root"
table=src/layers.txt
[ -f "$table" ] || { echo "check_layers: $root/$table not found" >&2; exit 2; }

folders=$(find src -mindepth 1 -maxdepth 1 -type d -printf '%f ' | sort)
# file:line:text of every `#include "folder/..."` (system headers use <>).
includes=$(grep -rnE --include='*.cpp' --include='*.h' --include='*.hpp' --include='*.cu' --include='*.cuh' \
             --include='*.inc' '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"/]+/' src $( [ -d apps ] && echo apps ) | sort -t: -k1,1 -k2,2n || true)

awk -v table="$table" -v folders="$folders" '
function problem(s) { print s; ++problems }
BEGIN {
  problems = 0; layers = 0
  while ((getline raw < table) > 0) {
    ++n
    line = raw; sub(/#.*/, "", line)
    if (line ~ /^[[:space:]]*$/) continue
    if (line !~ /^[a-z_][a-z0-9_]*:/) { problem(table ":" n ": not `name: deps`: " raw); continue }
    name = line; sub(/:.*/, "", name)
    rest = line; sub(/^[^:]*:/, "", rest)
    if (name in rank) { problem(table ":" n ": " name " is listed twice (first on line " at[name] ")"); continue }
    rank[name] = ++layers; at[name] = n; order[layers] = name; deps[name] = ""
    m = split(rest, d, /[[:space:]]+/)
    for (i = 1; i <= m; ++i) {
      if (d[i] == "") continue
      if (!(d[i] in rank))
        problem(table ":" n ": " name " depends on " d[i] ", which is not listed above it (the table runs bottom to top; a dependency on itself or a later line is a cycle)")
      allow[name, d[i]] = 1; deps[name] = deps[name] " " d[i]
    }
  }
  close(table)
  nf = split(folders, f, " ")
  for (i = 1; i <= nf; ++i) {
    present[f[i]] = 1
    if (!(f[i] in rank)) problem("src/" f[i] "/: a folder of src/ missing from " table " (add a line `" f[i] ": <the folders it includes>`)")
  }
  for (i = 1; i <= layers; ++i)
    if (!(order[i] in present)) problem(table ":" at[order[i]] ": " order[i] " has no folder src/" order[i] "/")
}
{
  file = $0; sub(/:.*/, "", file)
  rest = substr($0, length(file) + 2); ln = rest; sub(/:.*/, "", ln)
  text = substr(rest, length(ln) + 2)
  match(text, /"[^"]+"/); inc = substr(text, RSTART + 1, RLENGTH - 2)
  target = inc; sub(/\/.*/, "", target)
  ++scanned
  if (file ~ /^apps\//) next              # apps may include any layer
  mod = file; sub(/^src\//, "", mod)
  if (mod !~ /\//) next                   # a file directly in src/ belongs to no layer
  sub(/\/.*/, "", mod)
  if (!(mod in rank)) next                # reported above
  if (target == mod) next
  if (!(target in rank)) { problem(file ":" ln ": includes \"" inc "\", but " target "/ is not a layer of " table); next }
  if ((mod, target) in allow) { used[mod, target] = 1; next }
  why = rank[target] > rank[mod] ? "an upward include: " target " is above " mod : target " is below " mod " but not on its line"
  problem(file ":" ln ": " mod " includes \"" inc "\" (" why "); " table ":" at[mod] " allows " mod ":" (deps[mod] == "" ? " no other layer" : deps[mod]))
}
END {
  for (i = 1; i <= layers; ++i) {
    name = order[i]; m = split(deps[name], d, " ")
    for (j = 1; j <= m; ++j)
      if (!((name, d[j]) in used))
        problem(table ":" at[name] ": " name " lists " d[j] ", but no file in src/" name "/ includes " d[j] "/ (drop it: each line says what its layer includes)")
  }
  if (problems) { print "check_layers: " problems " problem(s); the layers are documented in docs/architecture.md"; exit 1 }
  print "check_layers: OK, " scanned " includes across " layers " layers follow " table
}' <<< "$includes"
