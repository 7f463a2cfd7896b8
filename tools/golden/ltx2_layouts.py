"""The LTX-2 DiT golden ltx2_dit_av23.safetensors (tools/golden/ltx2_dit.py: the official LTXModel's
weights, inputs and outputs) written again with its weights under the two other layouts the
translator reads (src/models/ltx2/checkpoint_keys.h), everything else unchanged:

  ltx2_dit_av23_comfyui.safetensors    every parameter under `model.diffusion_model.` (the official
                                       single file's and ComfyUI's transformer files' prefix, which
                                       ltx-core's LTXV_MODEL_COMFY_RENAMING_MAP strips)
  ltx2_dit_av23_diffusers.safetensors  diffusers' names: convert_ltx2_transformer_to_diffusers (diffusers
                                       0.42.1) plus prompt_adaln_single -> prompt_adaln (2.3's prompt AdaLN,
                                       which that converter does not rename), loaded STRICTLY into an
                                       LTX2VideoTransformer3DModel of the same config and saved from its
                                       own state_dict (so every name is the diffusers model's)

The engine must load each through the component and give the same output as the official file, bit
for bit (tests/translate/test_ltx2_keys.cpp).

Usage: /work/venv-golden/bin/python tools/golden/ltx2_layouts.py [--dir tests/golden/ltx2]
"""
import argparse
import json
import os

import torch
from diffusers import LTX2VideoTransformer3DModel
from diffusers.loaders.single_file_utils import convert_ltx2_transformer_to_diffusers
from safetensors import safe_open
from safetensors.torch import save_file

IO = ("input.", "output.", "inter.")


def diffusers_config(cfg):
    # LTX2VideoTransformer3DModel's spelling of the official transformer config.
    return dict(in_channels=cfg["in_channels"], out_channels=cfg["out_channels"],
                num_attention_heads=cfg["num_attention_heads"], attention_head_dim=cfg["attention_head_dim"],
                cross_attention_dim=cfg["cross_attention_dim"], audio_in_channels=cfg["audio_in_channels"],
                audio_out_channels=cfg["audio_out_channels"], audio_num_attention_heads=cfg["audio_num_attention_heads"],
                audio_attention_head_dim=cfg["audio_attention_head_dim"],
                audio_cross_attention_dim=cfg["audio_cross_attention_dim"], num_layers=cfg["num_layers"],
                rope_type=cfg["rope_type"], gated_attn=cfg.get("apply_gated_attention", False),
                audio_gated_attn=cfg.get("apply_gated_attention", False),
                cross_attn_mod=cfg.get("cross_attention_adaln", False),
                audio_cross_attn_mod=cfg.get("cross_attention_adaln", False),
                use_prompt_embeddings=not cfg.get("caption_proj_before_connector", False),
                ff_bias=cfg.get("ff_bias", True), audio_ff_bias=cfg.get("audio_ff_bias", True),
                use_prompt_adaln_single=cfg.get("use_prompt_adaln_single", True),
                use_keyframes_abs_pos_embedding=cfg.get("use_keyframes_abs_pos_embedding", False),
                timestep_scale_multiplier=cfg["timestep_scale_multiplier"],
                cross_attn_timestep_scale_multiplier=cfg["av_ca_timestep_scale_multiplier"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="tests/golden/ltx2")
    args = ap.parse_args()
    src = os.path.join(args.dir, "ltx2_dit_av23.safetensors")
    with safe_open(src, "pt") as f:
        meta = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    io = {k: v for k, v in tensors.items() if k.startswith(IO)}
    params = {k: v for k, v in tensors.items() if not k.startswith(IO)}
    cfg = json.loads(meta["config"])
    note = lambda layout: {**meta, "generator": "tools/golden/ltx2_layouts.py",
                           "layout": layout, "source": "ltx2_dit_av23.safetensors (" + meta["generator"] + ")"}

    comfy = {"model.diffusion_model." + k: v for k, v in params.items()}
    out = os.path.join(args.dir, "ltx2_dit_av23_comfyui.safetensors")
    save_file({**comfy, **io}, out, metadata=note("comfyui"))
    print(f"wrote {out} ({os.path.getsize(out)} bytes)")

    conv = convert_ltx2_transformer_to_diffusers(dict(params))
    conv = {k.replace("prompt_adaln_single.", "prompt_adaln."): v for k, v in conv.items()}
    model = LTX2VideoTransformer3DModel(**diffusers_config(cfg))
    model.load_state_dict(conv, strict=True)
    sd = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    for k, v in sd.items():
        assert torch.equal(v, conv[k]), k
    out = os.path.join(args.dir, "ltx2_dit_av23_diffusers.safetensors")
    save_file({**sd, **io}, out, metadata=note("diffusers"))
    print(f"wrote {out} ({os.path.getsize(out)} bytes, {len(sd)} parameters)")


if __name__ == "__main__":
    main()
