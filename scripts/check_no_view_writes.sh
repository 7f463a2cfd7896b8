#!/usr/bin/env bash
# No write into an existing tensor's memory in model code (DESIGN.md principle 5: a view that is
# written through is a bug class, the RoPE `addcmul_` on a slice that a copy-semantics framework
# silently dropped). In vidax's API the only ways to write into memory a tensor already holds are
#   copy_into(src, dst)       dst may be a view (slice, select, permute) of another tensor
#   *_inplace(...)            named so (DESIGN.md: ops are out-of-place unless named *_inplace)
#   data_ptr() / data<T>()    raw pointers ("for kernels and I/O only", core/tensor.h)
#   Tensor::from_buffer(...)  a second handle on existing bytes
# so a grep for them is precise: this fails, naming file:line, on each one in src/models/ and
# src/nn/ (comments aside), unless the line or the one above says `view-write-ok: <why>` (e.g. an
# in-place all-reduce of a tensor the function just made and nothing else sees).
#   scripts/check_no_view_writes.sh [REPO_ROOT]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
pattern='(^|[^A-Za-z0-9_])copy_into[[:space:]]*\(|_inplace[[:space:]]*\(|data_ptr[[:space:]]*\(|(\.|->)data[[:space:]]*<|from_buffer[[:space:]]*\('
problems=0
checked=0
while IFS= read -r -d '' f; do
  checked=$((checked + 1))
  # awk: strip // comments and block-comment lines, keep line numbers; allow a marked line.
  hits=$(awk -v pat="$pattern" '
    { line = $0; code = line; sub(/\/\/.*$/, "", code); if (code ~ /^[[:space:]]*\*/) code = "";
      if (code ~ pat && line !~ /view-write-ok:/ && prev !~ /view-write-ok:/) print NR ": " line;
      prev = line }' "$f")
  if [ -n "$hits" ]; then
    while IFS= read -r h; do
      echo "${f#$root/}:${h%%:*}: a write into existing tensor memory in model code (copy_into, *_inplace, data_ptr/data<T>, from_buffer):${h#*:}"
      problems=$((problems + 1))
    done <<< "$hits"
  fi
done < <(find "$root/src/models" "$root/src/nn" -type f \( -name '*.h' -o -name '*.cpp' \) -print0)
if [ "$problems" -gt 0 ]; then
  echo "check_no_view_writes: $problems line(s); compute a new tensor with ops:: instead (or mark a proven-safe line 'view-write-ok: why')"
  exit 1
fi
echo "check_no_view_writes: OK, $checked files of src/models and src/nn write into no existing tensor"
