#!/usr/bin/env python3
"""Golden files for the `t5.encoder` parity kind (DESIGN.md §4) and the
relative-position bucket fixture.

Writes
  tests/golden/t5_umt5_official.safetensors   Wan's wan/modules/t5.py T5Encoder, shared_pos=False (UMT5)
  tests/golden/t5_shared_official.safetensors Wan's T5Encoder, shared_pos=True (plain T5 layout)
  tests/text/data/t5_umt5_official_bf16.safetensors  the UMT5 one run in bf16 like T5EncoderModel (bf16
      params; compare with --precision bf16; not in tests/golden/, whose files must pass at fp32)
  tests/golden/t5_umt5_hf.safetensors         transformers UMT5EncoderModel (per-layer bias)
  tests/golden/t5_t5v11_hf.safetensors        transformers T5EncoderModel, gated-gelu (T5 v1.1, shared bias)
  tests/text/data/t5_buckets.json             Wan's _relative_position_bucket for rel = -1023..1023
  tests/golden/t5_umt5_wide.safetensors       the UMT5 one with rows of 256 values (dim 256, ffn 512,
      one layer), so that every GGUF block type applies (`vidax parity --quantize`, docs/quantization.md);
      `python tools/golden/t5_encoder.py wide` writes only this one

Each golden: __metadata__ kind="t5.encoder", config = the reference's own config
(official T5Encoder init args, or the transformers config dict); parameters under
the reference's state_dict names (fp32); input.ids [B,L] I64, input.mask [B,L] I64
(right-padded, ids 0 = <pad> past each length); output [B,L,dim] = the encoder's full
output. Official code is imported from $WAN21_REPO (default /work/ref/Wan2.1).
Tiny random configs; norm weights and position tables are re-drawn so that a
skipped multiplication or a wrong bucket shows up.
"""
import json
import os

import torch
from safetensors.torch import save_file
from wan_reference import load

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDEN = os.path.join(ROOT, "tests", "golden")
DATA = os.path.join(ROOT, "tests", "text", "data")


def perturb_(model, pos_names):
    """Re-draw norm weights (init = ones would hide a missing multiply) and the
    relative-position tables (init std is tiny)."""
    g = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or "layer_norm" in name:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif any(s in name for s in pos_names):
                p.copy_(torch.randn(p.shape, generator=g))


def make_inputs(vocab, lengths, L, seed):
    g = torch.Generator().manual_seed(seed)
    B = len(lengths)
    ids = torch.zeros(B, L, dtype=torch.int64)
    mask = torch.zeros(B, L, dtype=torch.int64)
    for b, n in enumerate(lengths):
        ids[b, : n - 1] = torch.randint(3, vocab, (n - 1,), generator=g)
        ids[b, n - 1] = 1  # </s>
        mask[b, :n] = 1
    return ids, mask


def save(name, kind_config, state, ids, mask, out, directory=GOLDEN):
    # Parameters keep the dtype the reference ran with (F32, or BF16 for the bf16 golden).
    tensors = {k: v.detach().contiguous() for k, v in state.items()}
    tensors["input.ids"] = ids.contiguous()
    tensors["input.mask"] = mask.contiguous()
    tensors["output"] = out.detach().float().contiguous()
    meta = {"kind": "t5.encoder", "config": json.dumps(kind_config), "generator": "tools/golden/t5_encoder.py",
            "torch": torch.__version__, "reference_dtype": str(out.dtype).replace("torch.", "")}
    path = os.path.join(directory, name)
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path} ({os.path.getsize(path)} bytes), output {tuple(out.shape)} rms {out.pow(2).mean().sqrt():.3f}")


def official(t5, shared_pos, name, seed, dtype=torch.float32, directory=GOLDEN, **sizes):
    torch.manual_seed(seed)
    cfg = dict(vocab=96, dim=32, dim_attn=48, dim_ffn=40, num_heads=4, num_layers=3, num_buckets=32,
               shared_pos=shared_pos)
    cfg.update(sizes)
    model = t5.T5Encoder(**cfg, dropout=0.0).eval()
    perturb_(model, ["pos_embedding"])
    # bf16: as T5EncoderModel runs it (umt5_xxl(dtype=bf16): every parameter bf16, no autocast).
    model = model.to(dtype)
    # L = 150 > max_distance 128: covers exact, log and clipped buckets.
    ids, mask = make_inputs(cfg["vocab"], [150, 41], 150, seed)
    with torch.no_grad():
        out = model(ids, mask)
    save(name, cfg, model.state_dict(), ids, mask, out, directory)


def transformers_model(model_cls, config_cls, model_type, name, seed):
    torch.manual_seed(seed)
    config = config_cls(vocab_size=96, d_model=32, d_kv=12, d_ff=40, num_layers=3, num_heads=4,
                        relative_attention_num_buckets=32, relative_attention_max_distance=128,
                        feed_forward_proj="gated-gelu", dropout_rate=0.0, layer_norm_epsilon=1e-6,
                        is_encoder_decoder=False, use_cache=False)
    config._attn_implementation = "eager"
    model = model_cls(config).eval()
    perturb_(model, ["relative_attention_bias"])
    ids, mask = make_inputs(config.vocab_size, [140, 23], 140, seed)
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask).last_hidden_state
    state = model.state_dict()
    # As save_pretrained stores it: the tied encoder.embed_tokens is not written.
    if "encoder.embed_tokens.weight" in state and "shared.weight" in state:
        del state["encoder.embed_tokens.weight"]
    cfg = json.loads(config.to_json_string())
    assert cfg["model_type"] == model_type, cfg["model_type"]
    save(name, cfg, state, ids, mask, out)


def buckets(t5):
    emb = t5.T5RelativeEmbedding(32, 4, bidirectional=True, max_dist=128)
    rel_pos = torch.arange(-1023, 1024).unsqueeze(0)  # one query row: rel = key - query
    out = {"rel_min": -1023,
           "bidirectional_32_128": emb._relative_position_bucket(rel_pos.clone())[0].tolist()}
    uni = t5.T5RelativeEmbedding(32, 4, bidirectional=False, max_dist=128)
    out["unidirectional_32_128"] = uni._relative_position_bucket(rel_pos.clone())[0].tolist()
    path = os.path.join(DATA, "t5_buckets.json")
    with open(path, "w") as f:
        json.dump(out, f)
    print(f"wrote {path}")


def main():
    t5 = load("wan.modules.t5")
    if len(os.sys.argv) > 1 and os.sys.argv[1] == "wide":
        official(t5, False, "t5_umt5_wide.safetensors", 6, vocab=128, dim=256, dim_attn=256, dim_ffn=512,
                 num_layers=1)
        return
    from transformers import T5Config, T5EncoderModel, UMT5Config, UMT5EncoderModel
    os.makedirs(GOLDEN, exist_ok=True)
    official(t5, False, "t5_umt5_official.safetensors", 1)
    official(t5, True, "t5_shared_official.safetensors", 2)
    # The reference run in bf16 (Wan's T5 dtype): compare with `vidax parity --precision bf16`.
    # Kept out of tests/golden/ (whose files must pass at the fp32 bound): tests/text/data/.
    official(t5, False, "t5_umt5_official_bf16.safetensors", 5, dtype=torch.bfloat16, directory=DATA)
    transformers_model(UMT5EncoderModel, UMT5Config, "umt5", "t5_umt5_hf.safetensors", 3)
    transformers_model(T5EncoderModel, T5Config, "t5", "t5_t5v11_hf.safetensors", 4)
    buckets(t5)


if __name__ == "__main__":
    main()
