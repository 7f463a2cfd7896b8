"""Golden file for NaN in attention (issue 16): tests/backend/data/attention_nan.safetensors,
read by tests/backend/test_attention_golden.cpp (metadata kind `backend.attention_nan`;
not a `vidax parity` kind, so it lives beside its test, not in tests/golden/, whose
every file test_parity runs).

The reference is the attention call as the Wan reference makes it, flash_attention's
contract ([B, L, N, D] in and out, keys >= k_lens[b] masked), computed the way
tools/golden/wan_dit.py's fp32_attention does on the CPU, with two choices that
matter for NaN, both stated here because torch's paths disagree:
  * torch.nn.functional.scaled_dot_product_attention on its MATH backend, in
    float64. torch's CPU FLASH backend (what SDPA dispatches to by default on the
    CPU) outputs zeros for a query row whose scores are all NaN (it turns a NaN row
    max into "nothing visible"): the very behaviour issue 16 reports in the engine.
    The math path propagates it, as flash_attn on CUDA (the reference's GPU path)
    does. The script records what the flash backend does in the metadata
    (`torch_flash_zeroes_nan_rows`), checked, not compared.
  * a masked key is not part of the problem: keys >= k_lens[b] are sliced away (as
    flash_attn_varlen_func, which the reference calls with k_lens, never reads
    them), and a causal row i sees keys [0, i] (each row computed on its own
    slice). A boolean or -inf attn_mask would let a masked NaN through (NaN + -inf
    = NaN) and torch's flash kernels multiply a hidden key's P = 0 by its NaN V
    inside a partly masked block: artefacts of how a mask is applied, not of
    attention.

Tensors: input.q [B, Lq, H, D], input.k [B, Lk, H, D], input.v [B, Lk, H, Dv] and
input.bias [1, H, Lq, Lk] (a T5-style additive bias), all float32 holding bf16 values
(so the engine's bf16 path runs on the same numbers); output.<case> [B, Lq, H, Dv]
float32 for each case in __metadata__.cases (JSON: name; operand q|k|v|bias, or ""
for none; index [b, l, h, d] of its one NaN, for the bias [-, i, h, j] (see put_nan);
causal; kv_lens; bias: whether the bias is added; nan_count in the output).

Usage: python tools/golden/attention_nan.py [out.safetensors]
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file
from torch.nn.attention import SDPBackend, sdpa_kernel

B, LQ, LK, H, D, DV = 2, 40, 300, 2, 32, 24  # Lk = 300: two AMX key blocks, five AVX-512 tiles

# name, operand, [b, l, h, d], causal, kv_lens, bias, expected NaN count
CASES = [
    ("clean", "", None, False, None, True, 0),
    ("q_one_row", "q", [1, 5, 0, 3], False, None, False, DV),
    ("k_first_tile", "k", [0, 2, 1, 7], False, None, False, LQ * DV),
    ("k_last_tile", "k", [0, 290, 1, 0], False, None, False, LQ * DV),
    ("v_one_column", "v", [1, 150, 0, 9], False, None, False, LQ),
    ("k_masked_by_kv_len", "k", [1, 250, 0, 1], False, [300, 200], False, 0),
    ("v_masked_by_kv_len", "v", [1, 299, 1, 2], False, [300, 200], False, 0),
    ("k_inside_kv_len", "k", [1, 199, 1, 2], False, [300, 200], False, LQ * DV),
    ("k_causal", "k", [0, 20, 0, 5], True, None, False, (LQ - 20) * DV),
    ("v_causal", "v", [0, 20, 0, 5], True, None, False, LQ - 20),
    ("v_causal_unseen_key", "v", [0, 100, 0, 5], True, None, False, 0),
    ("bias_visible_key", "bias", [0, 9, 1, 30], False, [300, 300], True, B * DV),  # shared over the batch
    ("bias_masked_key", "bias", [0, 9, 1, 250], False, [200, 200], True, 0),
]


def put_nan(t, operand, idx):
    """A copy of t with one NaN: q/k/v at [b, l, h, d]; the bias [1, H, Lq, Lk] at
    [0, h, i = l, j = d] (shared over the batch, so every batch row sees it)."""
    t = t.clone()
    b, l, h, d = idx
    if operand == "bias":
        t[0, h, l, d] = float("nan")
    else:
        t[b, l, h, d] = float("nan")
    return t


def attention(q, k, v, bias, kv_lens, causal):
    """[B, L, H, D] in and out; keys >= kv_lens[b] and (causal) keys > i sliced away."""
    out = torch.empty(q.shape[0], q.shape[1], q.shape[2], v.shape[3], dtype=torch.float64)
    for b in range(q.shape[0]):
        lk = kv_lens[b] if kv_lens else k.shape[1]
        rows = [(i, i + 1) for i in range(q.shape[1])] if causal else [(0, q.shape[1])]
        for i0, i1 in rows:
            end = min(lk, i1) if causal else lk  # causal: row i sees keys [0, i]
            qb = q[b:b + 1, i0:i1].transpose(1, 2)
            kb = k[b:b + 1, :end].transpose(1, 2)
            vb = v[b:b + 1, :end].transpose(1, 2)
            mask = None if bias is None else bias[:, :, i0:i1, :end]
            if end == 0:  # no visible key: zeros (the engine's contract; SDPA has no keys to softmax)
                out[b, i0:i1] = 0
                continue
            with sdpa_kernel(SDPBackend.MATH):
                o = torch.nn.functional.scaled_dot_product_attention(qb, kb, vb, attn_mask=mask)
            out[b, i0:i1] = o.transpose(1, 2)[0]
    return out


def flash_zeroes_nan_rows():
    """Whether torch's CPU flash backend outputs zeros for an all-NaN score row."""
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, 1, 6, 8, generator=g) for _ in range(3))
    q[0, 0, 2, 0] = float("nan")
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    return bool((o[0, 0, 2] == 0).all())


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "../../tests/backend/data/attention_nan.safetensors")
    g = torch.Generator().manual_seed(16)

    def bf16_values(*shape, scale=1.0):
        return (torch.randn(*shape, generator=g) * scale).bfloat16().float()

    q, k, v = bf16_values(B, LQ, H, D), bf16_values(B, LK, H, D), bf16_values(B, LK, H, DV)
    bias = bf16_values(1, H, LQ, LK, scale=0.5)
    tensors = {"input.q": q, "input.k": k, "input.v": v, "input.bias": bias}
    cases = []
    for name, operand, idx, causal, kv_lens, with_bias, nan_count in CASES:
        args = {"q": q, "k": k, "v": v, "bias": bias}
        if operand:
            args[operand] = put_nan(args[operand], operand, idx)
        o = attention(*(args[n].double() for n in ("q", "k", "v")), args["bias"].double() if with_bias else None,
                      kv_lens, causal)
        got = int(o.isnan().sum())
        assert got == nan_count, f"{name}: {got} NaNs, expected {nan_count}"
        tensors[f"output.{name}"] = o.float().contiguous()
        cases.append({"name": name, "operand": operand, "index": idx or [0, 0, 0, 0], "causal": causal,
                      "kv_lens": kv_lens or [], "bias": with_bias, "nan_count": nan_count})
    config = {"torch_version": torch.__version__.split("+")[0], "backend": "math, float64",
              "torch_flash_zeroes_nan_rows": flash_zeroes_nan_rows()}
    save_file(tensors, out, metadata={"kind": "backend.attention_nan", "config": json.dumps(config),
                                      "cases": json.dumps(cases)})
    print(f"wrote {out}: {len(cases)} cases, {config}")


if __name__ == "__main__":
    main()
