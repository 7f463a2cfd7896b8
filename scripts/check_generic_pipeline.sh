#!/usr/bin/env bash
# The generic pipeline (src/pipeline/) knows no model family: fails, naming file:line, on code
# (comments and string examples in comments aside) that names a registered family or one of its
# variants. The names come from the family folders (src/models/<family>/) and their variant
# prefixes ("wan2.1-..."), so a new family is covered without editing this script.
#   scripts/check_generic_pipeline.sh [REPO_ROOT]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
families=$(find "$root/src/models" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort)
[ -n "$families" ] || { echo "check_generic_pipeline: no family folders under $root/src/models" >&2; exit 1; }
pattern=$(echo "$families" | paste -sd'|')
problems=0
while IFS= read -r -d '' f; do
  # Drop // comments and the text of block-comment lines, then look for a family's name as a word
  # start (wan, Wan, WAN, wan2.1-..., WanDiT, wan::) in what is left.
  hits=$(sed -E 's://.*$::; s:^\s*\*.*$::; s:/\*.*\*/::g' "$f" | grep -n -i -E "(^|[^a-z0-9_])($pattern)" || true)
  if [ -n "$hits" ]; then
    while IFS= read -r h; do
      echo "${f#$root/}:${h%%:*}: the generic pipeline names a family (${pattern}): ${h#*:}"
      problems=$((problems + 1))
    done <<< "$hits"
  fi
done < <(find "$root/src/pipeline" -type f \( -name '*.h' -o -name '*.cpp' \) -print0)
if [ "$problems" -gt 0 ]; then
  echo "check_generic_pipeline: $problems line(s); a family's names belong in src/models/<family>/"
  exit 1
fi
echo "check_generic_pipeline: OK, src/pipeline names none of: $(echo $families)"
