"""Writes the parameter key lists (name, dtype, shape) of the real Wan 2.1
checkpoints, in every layout the translator reads, to tests/translate/data/.

The lists come from the reference model classes instantiated on the meta
device (no weights are downloaded or allocated):
  original  : WanModel (wan/modules/model.py), WanVAE_ (vae.py), T5Encoder (t5.py, umt5-xxl)
  diffusers : WanTransformer3DModel, AutoencoderKLWan (diffusers), UMT5EncoderModel (transformers)
configured exactly as the published checkpoints (Wan2.1 configs, diffusers'
scripts/convert_wan_to_diffusers.py, the google/umt5-xxl config.json).

dtype = what the published file stores: the DiT safetensors (both layouts) and
the VAE are float32, the UMT5 encoder is bfloat16 (models_t5_umt5-xxl-enc-bf16.pth;
the diffusers converter loads text_encoder/ in bf16).

Usage: WAN21_REPO=/work/ref/Wan2.1 python tools/golden/wan_keylists.py [OUT_DIR]
Run on a developer machine; only its text output is committed.
"""
import json
import os
import sys

import torch
from wan_reference import WAN21_REPO, load

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "translate", "data")

DTYPE = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16"}


def import_wan_modules():
    """WanModel, WanVAE_ and T5Encoder from the official module files."""
    return load("wan.modules.model").WanModel, load("wan.modules.vae").WanVAE_, load("wan.modules.t5").T5Encoder


def write(name, header, sd, dtype):
    path = os.path.join(OUT, name)
    n_params = 0
    lines = []
    for k in sorted(sd):
        t = sd[k]
        n_params += t.numel()
        shape = ",".join(str(d) for d in t.shape)
        lines.append(f"{k}\t{DTYPE[dtype]}\t[{shape}]")
    with open(path, "w") as f:
        for h in header:
            f.write(f"# {h}\n")
        f.write(f"# tensors: {len(sd)}\n# parameters: {n_params}\n")
        f.write("\n".join(lines) + "\n")
    print(f"{path}: {len(sd)} tensors, {n_params} parameters")


def meta_state_dict(make):
    with torch.device("meta"):
        m = make()
    return m.state_dict()


# ---- configs ---------------------------------------------------------------
# WanModel init args (wan/configs/wan_t2v_1_3B.py, wan_t2v_14B.py, wan_i2v_14B.py).
DIT = {
    "t2v_1.3b": dict(model_type="t2v", patch_size=(1, 2, 2), text_len=512, in_dim=16, dim=1536, ffn_dim=8960,
                     freq_dim=256, text_dim=4096, out_dim=16, num_heads=12, num_layers=30, window_size=(-1, -1),
                     qk_norm=True, cross_attn_norm=True, eps=1e-6),
    "t2v_14b": dict(model_type="t2v", patch_size=(1, 2, 2), text_len=512, in_dim=16, dim=5120, ffn_dim=13824,
                    freq_dim=256, text_dim=4096, out_dim=16, num_heads=40, num_layers=40, window_size=(-1, -1),
                    qk_norm=True, cross_attn_norm=True, eps=1e-6),
    "i2v_14b": dict(model_type="i2v", patch_size=(1, 2, 2), text_len=512, in_dim=36, dim=5120, ffn_dim=13824,
                    freq_dim=256, text_dim=4096, out_dim=16, num_heads=40, num_layers=40, window_size=(-1, -1),
                    qk_norm=True, cross_attn_norm=True, eps=1e-6),
    "flf2v_14b": dict(model_type="flf2v", patch_size=(1, 2, 2), text_len=512, in_dim=36, dim=5120, ffn_dim=13824,
                      freq_dim=256, text_dim=4096, out_dim=16, num_heads=40, num_layers=40, window_size=(-1, -1),
                      qk_norm=True, cross_attn_norm=True, eps=1e-6),
    # A tiny config with the same naming (what golden files use).
    "tiny": dict(model_type="t2v", patch_size=(1, 2, 2), text_len=512, in_dim=4, dim=64, ffn_dim=96,
                 freq_dim=32, text_dim=48, out_dim=4, num_heads=2, num_layers=2, window_size=(-1, -1),
                 qk_norm=True, cross_attn_norm=True, eps=1e-6),
}


def diffusers_dit_config(c):
    """convert_wan_to_diffusers.get_transformer_config, written from the WanModel args."""
    d = dict(attention_head_dim=c["dim"] // c["num_heads"], cross_attn_norm=c["cross_attn_norm"], eps=c["eps"],
             ffn_dim=c["ffn_dim"], freq_dim=c["freq_dim"], in_channels=c["in_dim"],
             num_attention_heads=c["num_heads"], num_layers=c["num_layers"], out_channels=c["out_dim"],
             patch_size=list(c["patch_size"]), qk_norm="rms_norm_across_heads", text_dim=c["text_dim"],
             added_kv_proj_dim=None)
    if c["model_type"] in ("i2v", "flf2v"):
        d.update(image_dim=1280, added_kv_proj_dim=c["dim"])
    if c["model_type"] == "flf2v":
        d.update(pos_embed_seq_len=257 * 2)
    return d


# WanVAE_ args of _video_vae (vae.py) and the diffusers AutoencoderKLWan equivalent.
VAE = dict(dim=96, z_dim=16, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
           temperal_downsample=[False, True, True], dropout=0.0)
VAE_DIFFUSERS = dict(base_dim=96, z_dim=16, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
                     temperal_downsample=[False, True, True], dropout=0.0)
# A tiny VAE with a different res-block count (the diffusers regrouping depends on it).
VAE_TINY = dict(VAE, dim=8, z_dim=4, num_res_blocks=1)
VAE_TINY_DIFFUSERS = dict(VAE_DIFFUSERS, base_dim=8, z_dim=4, num_res_blocks=1)

# umt5_xxl(encoder_only=True) args (t5.py) and google/umt5-xxl config.json (written by hand).
T5 = dict(vocab=256384, dim=4096, dim_attn=4096, dim_ffn=10240, num_heads=64, num_layers=24, num_buckets=32,
          shared_pos=False, dropout=0.1)
UMT5_XXL_HF = dict(vocab_size=256384, d_model=4096, d_kv=64, d_ff=10240, num_layers=24, num_decoder_layers=24,
                   num_heads=64, relative_attention_num_buckets=32, relative_attention_max_distance=128,
                   dropout_rate=0.1, layer_norm_epsilon=1e-6, feed_forward_proj="gated-gelu",
                   is_encoder_decoder=True, tie_word_embeddings=False, pad_token_id=0, eos_token_id=1,
                   decoder_start_token_id=0, scalable_attention=True, use_cache=True)


def hf_saved_keys(model):
    """Keys save_pretrained writes: tied duplicates are dropped (only the source
    of each tie is stored)."""
    sd = model.state_dict()
    tied = getattr(model, "_tied_weights_keys", None) or {}
    drop = set(tied.keys()) if isinstance(tied, dict) else set(tied)
    return {k: v for k, v in sd.items() if k not in drop}


def main():
    os.makedirs(OUT, exist_ok=True)
    WanModel, WanVAE_, T5Encoder = import_wan_modules()
    from diffusers import AutoencoderKLWan, WanTransformer3DModel
    from transformers import UMT5Config, UMT5EncoderModel

    import diffusers
    import transformers
    versions = f"torch {torch.__version__}, diffusers {diffusers.__version__}, transformers {transformers.__version__}"
    wan_src = f"Wan-Video/Wan2.1 at {WAN21_REPO}"

    for variant, cfg in DIT.items():
        dtype = torch.float32
        sd = meta_state_dict(lambda: WanModel(**cfg))
        write(f"wan2.1_dit_{variant}.original.txt",
              [f"Wan 2.1 DiT {variant}, layout original (WanModel state_dict, {wan_src})",
               f"config: {json.dumps(cfg)}", versions], sd, dtype)
        dcfg = diffusers_dit_config(cfg)
        sd = meta_state_dict(lambda: WanTransformer3DModel(**dcfg))
        write(f"wan2.1_dit_{variant}.diffusers.txt",
              [f"Wan 2.1 DiT {variant}, layout diffusers (WanTransformer3DModel state_dict)",
               f"config: {json.dumps(dcfg)}", versions], sd, dtype)

    sd = meta_state_dict(lambda: WanVAE_(**VAE))
    write("wan2.1_vae.original.txt", [f"Wan 2.1 VAE, layout original (WanVAE_ state_dict, {wan_src})",
                                      f"config: {json.dumps(VAE)}", versions], sd, torch.float32)
    sd = meta_state_dict(lambda: AutoencoderKLWan(**VAE_DIFFUSERS))
    write("wan2.1_vae.diffusers.txt", ["Wan 2.1 VAE, layout diffusers (AutoencoderKLWan state_dict)",
                                       f"config: {json.dumps(VAE_DIFFUSERS)}", versions], sd, torch.float32)

    sd = meta_state_dict(lambda: WanVAE_(**VAE_TINY))
    write("wan2.1_vae_tiny.original.txt", [f"tiny Wan 2.1 VAE, layout original (WanVAE_ state_dict, {wan_src})",
                                           f"config: {json.dumps(VAE_TINY)}", versions], sd, torch.float32)
    sd = meta_state_dict(lambda: AutoencoderKLWan(**VAE_TINY_DIFFUSERS))
    write("wan2.1_vae_tiny.diffusers.txt", ["tiny Wan 2.1 VAE, layout diffusers (AutoencoderKLWan state_dict)",
                                            f"config: {json.dumps(VAE_TINY_DIFFUSERS)}", versions], sd, torch.float32)

    sd = meta_state_dict(lambda: T5Encoder(**T5))
    write("umt5_xxl.original.txt", [f"UMT5-XXL encoder, layout original (T5Encoder state_dict, {wan_src})",
                                    f"config: {json.dumps(T5)}", versions], sd, torch.bfloat16)
    with torch.device("meta"):
        m = UMT5EncoderModel(UMT5Config(**UMT5_XXL_HF))
    write("umt5_xxl.diffusers.txt",
          ["UMT5-XXL encoder, layout diffusers text_encoder/ (transformers UMT5EncoderModel, as save_pretrained "
           "writes it: tied duplicates dropped)", f"config: {json.dumps(UMT5_XXL_HF)}", versions],
          hf_saved_keys(m), torch.bfloat16)


if __name__ == "__main__":
    main()
