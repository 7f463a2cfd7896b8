#!/usr/bin/env python3
"""Golden files for HunyuanVideo 1.5's LLM text encoder (kind hunyuan1.5.text.qwen, docs/parity.md),
run through the official TextEncoder (hyvideo/models/text_encoders/__init__.py of
Tencent-Hunyuan/HunyuanVideo-1.5, imported from $HUNYUAN15_REPO) on tiny random transformers
Qwen2.5-VL models, fp32, on the CPU, as the pipeline's encode_prompt calls it
(hunyuan_video_pipeline.py: text2tokens(prompts, data_type="video", max_length=text_len), then
encode(..., data_type="video")).

Each model is a Qwen2_5_VLForConditionalGeneration (tiny text and vision configs, seeded random
weights) saved with save_pretrained into a temporary folder, loaded by the official
TextEncoder(text_encoder_type="llm", ...) (its load_text_encoder: AutoModel.from_pretrained, then
.language_model, the Qwen2_5_VLTextModel) with the real load_tokenizer on
tests/text/data/qwen2_bpe (tools/golden/qwen2_tokenizer_fixture.py: run it first). Nothing is
stubbed. The parameters written are the text model's own tensors (TextEncoder.model.state_dict(),
without the loader's final_layer_norm alias of norm), under the names of the layout the file tests.

Writes (tests/golden/hunyuan15/)
  hy15_text_qwen.safetensors   the text model's names (layout "transformers"); hidden 32, 4 heads /
      2 kv heads (head_dim 8, mrope_section [1, 1, 2]), 4 layers; the pipeline's TextEncoder args
      (li-dit-encode-video-json, hidden_state_skip_layer 2, apply_final_norm false), text_len 20;
      config in transformers 5's spelling (text_config, rope_parameters)
  hy15_text_qwen_published.safetensors  the names Qwen2.5-VL-7B-Instruct is published under
      (model.*, lm_head.weight, the vision tower's visual.*: read and ignored); hidden 16, 2 heads /
      1 kv head, 3 layers, rope_theta 1e4, rms_norm_eps 1e-5; li-dit-encode-image-json,
      hidden_state_skip_layer 1 with apply_final_norm true, text_len 14; the config written flat
      as the Hub's config.json is (text fields at the top, rope_scaling {"type": "mrope"})

  tests/hunyuan15/data/qwen_mrope_text.safetensors  transformers' Qwen2_5_VLRotaryEmbedding of the
      7B's text config (head_dim 128, mrope_section [16, 24, 24], rope_theta 1e6) on text positions
      (the same position in all three grids, as the text model makes them): cos / sin [P, 128] at
      positions 0, 1, 2, 3, 100, 555, 1107 (the pipeline's longest: text_len 1000 + crop_start 108),
      and positions; what the engine's Llama RoPE (inv_freq, rotate-half) must equal

Tensors: input.input_ids [B, L] (I64), input.attention_mask [B, L] (I64): what text2tokens made
from the prompts in __metadata__.prompts (L = text_len + crop_start); output =
TextEncoderModelOutput.hidden_state [B, text_len, hidden] (hidden_states[-(skip + 1)], cropped),
output.attention_mask its cropped mask (I64). __metadata__.config: the TextEncoder args
(text_encoder_type, max_length = text_len, hidden_state_skip_layer, apply_final_norm,
use_attention_mask, prompt_template {name, crop_start as the constructor computed it}, data_type)
and text_encoder_config (the model's config.json).

Usage: HUNYUAN15_REPO=/work/ref/hunyuan15 python tools/golden/hunyuan15_text.py
"""
import json
import os
import tempfile

import torch
import transformers
from safetensors.torch import save_file

import hunyuan_reference
hunyuan_reference.HUNYUAN_REPO = os.environ.get("HUNYUAN15_REPO", "/work/ref/hunyuan15")

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "tests", "golden", "hunyuan15")
TOKENIZER = os.path.join(ROOT, "tests", "text", "data", "qwen2_bpe")

PROMPTS = ["A panda, 4K",
           "\u4e00\u53ea\u5c0f\u732b\u5728\u8349\u5730\u4e0a\u5954\u8dd1 \u2014 "
           "a long prompt that the text length cuts: the camera pans slowly across the harbour at dawn"]
VISION = dict(depth=1, hidden_size=16, intermediate_size=24, num_heads=2, in_channels=3, patch_size=2,
              spatial_merge_size=1, temporal_patch_size=1, window_size=4, out_hidden_size=None,
              fullatt_block_indexes=[0])
TEXT = dict(vocab_size=928, hidden_size=32, intermediate_size=48, num_hidden_layers=4, num_attention_heads=4,
            num_key_value_heads=2, rms_norm_eps=1e-6, max_position_embeddings=512, hidden_act="silu",
            use_sliding_window=False, bos_token_id=900, eos_token_id=902, pad_token_id=None,
            rope_parameters=dict(rope_type="default", rope_theta=1000000.0,
                                                           mrope_section=[1, 1, 2]))
# Flat, as the Hub's Qwen2.5-VL config.json (transformers reads the text fields from the top).
PUBLISHED = dict(model_type="qwen2_5_vl", architectures=["Qwen2_5_VLForConditionalGeneration"], vocab_size=928,
                 hidden_size=16, intermediate_size=40, num_hidden_layers=3, num_attention_heads=2,
                 num_key_value_heads=1, rms_norm_eps=1e-5, max_position_embeddings=512, hidden_act="silu",
                 use_sliding_window=False, sliding_window=32768, max_window_layers=3, rope_theta=10000.0,
                 bos_token_id=900, eos_token_id=902, rope_scaling={"type": "mrope", "mrope_section": [1, 1, 2]}, tie_word_embeddings=False)


def randomize_(model, seed):
    """Seeded weights of unit-scale activations (hunyuan_text.py's rule); every 1-D weight (the
    norms, the vision merger's ln_q) away from 1 so that a skipped multiply shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            elif p.dim() == 1:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif "embed" in name and "patch" not in name:
                p.copy_(torch.randn(p.shape, generator=g))
            else:  # linear [out, in] (a conv: [out, in, ...])
                p.copy_(torch.randn(p.shape, generator=g) / p[0].numel() ** 0.5)


def save(name, tensors, config, prompts, text_len):
    meta = {"kind": "hunyuan1.5.text.qwen", "config": json.dumps(config), "prompts": json.dumps(prompts),
            "text_len": str(text_len), "generator": "tools/golden/hunyuan15_text.py",
            "reference": "Tencent-Hunyuan/HunyuanVideo-1.5 hyvideo/models/text_encoders/__init__.py TextEncoder",
            "commit": "60783e7", "torch": torch.__version__, "transformers": transformers.__version__}
    hunyuan_reference.save_golden(os.path.join(OUT, name), tensors, meta)


def run(te, name, config, template_name, skip, final_norm, text_len, seed, layout):
    with tempfile.TemporaryDirectory() as tmp:
        torch.manual_seed(0)
        if "text_config" in config:
            cfg = transformers.Qwen2_5_VLConfig(**config)
        else:
            cfg = transformers.Qwen2_5_VLConfig.from_dict(config)
        model = transformers.Qwen2_5_VLForConditionalGeneration(cfg)
        randomize_(model, seed)
        model.save_pretrained(tmp)
        tmpl = {"template": te.PROMPT_TEMPLATE[template_name]["template"], "crop_start": -1}
        enc = te.TextEncoder(text_encoder_type="llm", tokenizer_type="llm", text_encoder_path=tmp, tokenizer_path=TOKENIZER,
                             max_length=text_len, text_encoder_precision="fp32", prompt_template=dict(tmpl),
                             prompt_template_video=dict(tmpl), hidden_state_skip_layer=skip,
                             apply_final_norm=final_norm, reproduce=False)
        with open(os.path.join(tmp, "config.json")) as f:
            saved_config = json.load(f)
        visual = {k: v for k, v in model.model.visual.state_dict().items()}
        lm_head = model.lm_head.weight
    crop_start = enc.prompt_template_video["crop_start"]
    tokens = enc.text2tokens(PROMPTS, data_type="video", max_length=text_len)
    with torch.no_grad():
        o = enc.encode(tokens, data_type="video")
    assert o.hidden_state.shape[1] == text_len, o.hidden_state.shape
    # load_text_encoder's alias `final_layer_norm = norm` puts the norm in the state dict twice;
    # the checkpoints hold it once (norm.weight).
    text_sd = {k: v for k, v in enc.model.state_dict().items() if not k.startswith("final_layer_norm.")}
    assert torch.equal(enc.model.state_dict()["final_layer_norm.weight"], text_sd["norm.weight"])
    if layout == "transformers":
        params = dict(text_sd)
    else:  # the Hub's Qwen2_5_VLForConditionalGeneration names
        params = {"model." + k: v for k, v in text_sd.items()}
        params.update({"visual." + k: v for k, v in visual.items()})
        params["lm_head.weight"] = lm_head
    tensors = dict(params)
    tensors["input.input_ids"] = tokens["input_ids"]
    tensors["input.attention_mask"] = tokens["attention_mask"]
    tensors["output"] = o.hidden_state
    tensors["output.attention_mask"] = o.attention_mask
    config_out = {"text_encoder_type": "llm", "max_length": text_len, "hidden_state_skip_layer": skip,
                  "apply_final_norm": final_norm, "use_attention_mask": True, "data_type": "video",
                  "prompt_template": {"name": template_name, "crop_start": crop_start},
                  "text_encoder_config": saved_config if layout == "transformers" else config}
    print(f"{name}: crop_start {crop_start}, ids {tuple(tokens['input_ids'].shape)}, "
          f"mask sums {tokens['attention_mask'].sum(1).tolist()}")
    save(name, tensors, config_out, PROMPTS, text_len)


def mrope_tables():
    cfg = transformers.Qwen2_5_VLConfig(text_config=dict(hidden_size=3584, num_attention_heads=28,
                                                         num_key_value_heads=4, rope_parameters=dict(
                                                             rope_type="default", rope_theta=1000000.0,
                                                             mrope_section=[16, 24, 24]))).text_config
    rope = transformers.models.qwen2_5_vl.modeling_qwen2_5_vl.Qwen2_5_VLRotaryEmbedding(cfg)
    pos = torch.tensor([0, 1, 2, 3, 100, 555, 1107], dtype=torch.int64)
    x = torch.zeros(1, len(pos), 128)
    cos, sin = rope(x, pos.view(1, 1, -1).expand(3, 1, -1))
    path = os.path.join(ROOT, "tests", "hunyuan15", "data", "qwen_mrope_text.safetensors")
    save_file({"positions": pos, "cos": cos[0].contiguous(), "sin": sin[0].contiguous()}, path,
              metadata={"generator": "tools/golden/hunyuan15_text.py", "transformers": transformers.__version__,
                        "reference": "transformers Qwen2_5_VLRotaryEmbedding (text positions)"})
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def main():
    os.makedirs(OUT, exist_ok=True)
    mrope_tables()
    te = hunyuan_reference.load("hyvideo.models.text_encoders")
    run(te, "hy15_text_qwen.safetensors", dict(text_config=TEXT, vision_config=dict(VISION, out_hidden_size=32)),
        "li-dit-encode-video-json", 2, False, 20, 11, "transformers")
    run(te, "hy15_text_qwen_published.safetensors", dict(PUBLISHED, vision_config=dict(VISION, out_hidden_size=16)),
        "li-dit-encode-image-json", 1, True, 14, 12, "published")


if __name__ == "__main__":
    main()
