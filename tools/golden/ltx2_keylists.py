"""Writes the parameter key lists (name, dtype, shape) of the LTX-2 DiT in the layouts the translator
reads to tests/translate/data/ (src/models/ltx2/checkpoint_keys.h):

  ltx2_dit_19b.original.txt    the OFFICIAL ltx_core LTXModel (Lightricks/LTX-2 400fd31, from $LTX2_CORE)
                               built by LTXModelConfigurator at the LTX-2 19B size (LTXModel's own
                               defaults: 48 blocks, video 32 x 128, audio 32 x 64, in/out 128) with the
                               caption projection inside the transformer (caption_channels 3840, the
                               19B's caption_proj_before_connector false)
  ltx2_dit_19b.diffusers.txt   diffusers' LTX2VideoTransformer3DModel with its default config (the same
                               model: diffusers' single-file loader maps Lightricks/LTX-2 to it)
  ltx2_dit_tiny23.original.txt a tiny LTX-2.3-style model (gated attention, cross-attention AdaLN with the
                               prompt AdaLN, bias-free video FFN, the keyframe marker), official names
  ltx2_dit_tiny23.diffusers.txt the same as LTX2VideoTransformer3DModel (gated_attn, cross_attn_mod,
                               use_prompt_embeddings False, ff_bias False, use_keyframes_abs_pos_embedding)

Each list comes from the model's own state_dict on the meta device (nothing allocated). The script
also checks that diffusers' convert_ltx2_transformer_to_diffusers maps the official names onto the
diffusers model's names, except for 2.3's prompt AdaLN (prompt_adaln_single -> prompt_adaln, which the
converter leaves unrenamed: it prints those names). dtype: BF16, what the published files store.

Usage: /work/venv-golden/bin/python tools/golden/ltx2_keylists.py [OUT_DIR]
"""
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ltx2_dit import BASE, LTXModelConfigurator  # noqa: E402  (also puts ltx_core on the path)

import diffusers  # noqa: E402
import transformers  # noqa: E402
from diffusers import LTX2VideoTransformer3DModel  # noqa: E402
from diffusers.loaders.single_file_utils import convert_ltx2_transformer_to_diffusers  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "translate", "data")

# LTXModel's defaults are the 19B sizes; BASE carries the fixed values the configurator checks.
SIZES_19B = dict(num_attention_heads=32, attention_head_dim=128, in_channels=128, out_channels=128,
                 cross_attention_dim=4096, audio_num_attention_heads=32, audio_attention_head_dim=64,
                 audio_in_channels=128, audio_out_channels=128, audio_cross_attention_dim=2048, num_layers=48,
                 caption_proj_before_connector=False, caption_channels=3840)
CFG_19B = {**BASE, **SIZES_19B}
CFG_TINY23 = {**BASE, "apply_gated_attention": True, "cross_attention_adaln": True, "use_prompt_adaln_single": True,
              "ff_bias": False, "use_keyframes_abs_pos_embedding": True}
DIFFUSERS_TINY23 = dict(in_channels=16, out_channels=16, num_attention_heads=2, attention_head_dim=16,
                        cross_attention_dim=32, audio_in_channels=8, audio_out_channels=8, audio_num_attention_heads=2,
                        audio_attention_head_dim=8, audio_cross_attention_dim=16, num_layers=2, rope_type="split",
                        gated_attn=True, audio_gated_attn=True, cross_attn_mod=True, audio_cross_attn_mod=True,
                        use_prompt_embeddings=False, ff_bias=False, use_keyframes_abs_pos_embedding=True)


def write(name, header, sd):
    path = os.path.join(OUT, name)
    n = 0
    lines = []
    for k in sorted(sd):
        n += sd[k].numel()
        lines.append(f"{k}\tBF16\t[{','.join(str(d) for d in sd[k].shape)}]")
    with open(path, "w") as f:
        for h in header:
            f.write(f"# {h}\n")
        f.write(f"# torch {torch.__version__}, diffusers {diffusers.__version__}, transformers {transformers.__version__}\n")
        f.write(f"# tensors: {len(sd)}\n# parameters: {n}\n")
        f.write("\n".join(lines) + "\n")
    print(f"{path}: {len(sd)} tensors, {n} parameters")


def official(cfg):
    with torch.device("meta"):
        return LTXModelConfigurator.from_metadata({"config": {"transformer": cfg}}).state_dict()


def check_converter(orig, diff):
    conv = convert_ltx2_transformer_to_diffusers({k: k for k in orig})
    missing = sorted(k for k in conv if k not in diff)
    extra = sorted(k for k in diff if k not in conv)
    print(f"  converter: {len(conv)} names, {len(missing)} not diffusers' own: {missing[:4]}...; diffusers-only: {extra[:4]}...")
    for k, v in conv.items():
        if k in diff:
            assert tuple(diff[k].shape) == tuple(orig[v].shape), k


def main():
    os.makedirs(OUT, exist_ok=True)
    o19 = official(CFG_19B)
    with torch.device("meta"):
        d19 = LTX2VideoTransformer3DModel().state_dict()
    check_converter(o19, d19)
    write("ltx2_dit_19b.original.txt",
          ["LTX-2 19B DiT, layout original (ltx_core LTXModel state_dict, Lightricks/LTX-2 400fd31)",
           "config: " + json.dumps({"transformer": {**CFG_19B, "model_type": "ltx av model"}}, sort_keys=True)], o19)
    write("ltx2_dit_19b.diffusers.txt",
          ["LTX-2 19B DiT, layout diffusers (LTX2VideoTransformer3DModel state_dict, default config)",
           "config: " + json.dumps({"_class_name": "LTX2VideoTransformer3DModel"})], d19)
    o23 = official(CFG_TINY23)
    with torch.device("meta"):
        d23 = LTX2VideoTransformer3DModel(**DIFFUSERS_TINY23).state_dict()
    check_converter(o23, d23)
    write("ltx2_dit_tiny23.original.txt",
          ["tiny LTX-2.3-style DiT, layout original (ltx_core LTXModel state_dict, Lightricks/LTX-2 400fd31)",
           "config: " + json.dumps({"transformer": {**CFG_TINY23, "model_type": "ltx av model"}}, sort_keys=True)], o23)
    write("ltx2_dit_tiny23.diffusers.txt",
          ["tiny LTX-2.3-style DiT, layout diffusers (LTX2VideoTransformer3DModel state_dict)",
           "config: " + json.dumps({"_class_name": "LTX2VideoTransformer3DModel", **DIFFUSERS_TINY23}, sort_keys=True)],
          d23)


if __name__ == "__main__":
    main()
