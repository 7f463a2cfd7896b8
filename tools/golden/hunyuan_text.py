#!/usr/bin/env python3
"""Golden files for HunyuanVideo 1.0's two text encoders (kinds hunyuan.text.llama and
hunyuan.text.clip, docs/parity.md), run through the official TextEncoder
(hyvideo/text_encoder/__init__.py of Tencent/HunyuanVideo, imported from $HUNYUAN_REPO) on tiny
random transformers models (LlamaModel, CLIPTextModel), fp32, on the CPU.

Each model is saved with save_pretrained into a temporary folder and loaded by the official
TextEncoder(...) (its load_text_encoder: AutoModel / CLIPTextModel.from_pretrained); then
TextEncoder.encode(batch_encoding) runs on token ids made here, as the pipeline's encode_prompt
calls it (text2tokens would make them: the tokenizers are not part of these kinds). Two
stand-ins, both outside the computation:
  - load_tokenizer is replaced by one that loads nothing (no tokenizer is needed to encode ids);
  - for CLIP, load_text_encoder's alias line `text_encoder.final_layer_norm =
    text_encoder.text_model.final_layer_norm` fails under transformers 5 (CLIPTextModel has no
    .text_model any more; its final_layer_norm is already an attribute), so the CLIP model is
    loaded by the same from_pretrained call without that line.

Writes (tests/golden/hunyuan/)
  hunyuan_text_llama.safetensors        LlamaForCausalLM names (model.*, lm_head.weight: how
      HunyuanVideo's ckpts/text_encoder is saved); GQA 4 heads / 2 kv heads; template
      dit-llm-encode (crop_start 36); hidden_state_skip_layer 2, apply_final_norm false (the
      reference's defaults); a batch of 2 right-padded prompts
  hunyuan_text_llama_llama3.safetensors LlamaModel names (diffusers' text_encoder/); one kv head;
      rope_scaling llama3 (factor 8, the Llama-3.1 bands); attention and MLP biases;
      dit-llm-encode-video (crop_start 95); skip 1 with apply_final_norm true
  hunyuan_text_llama_nomask.safetensors the first model again, skip 0 (the final norm's output)
      and use_attention_mask false (no mask reaches the model; no output mask)
  hunyuan_text_llama_prompts.safetensors  end to end: the official TextEncoder.forward(prompts) with
      the real load_tokenizer on tests/text/data/llama3_bpe (tools/golden/llama_tokenizer_fixture.py:
      run it first), template dit-llm-encode, text_len 40: text2tokens then encode; the prompts in
      __metadata__.prompts, the ids text2tokens made as input.input_ids / input.attention_mask;
      a model of that tokenizer's vocabulary (GQA, skip 2 as the reference's defaults)
  hunyuan_text_clip.safetensors         CLIPTextModel as published (text_model.*), quick_gelu,
      eos_token_id 2 (the legacy pooling rule: the position of the largest id), ids padded with
      the end token as the CLIP-L tokenizer does
  hunyuan_text_clip_eos.safetensors     bare names (transformers 5's CLIPTextModel.state_dict()),
      gelu, eos_token_id 7 (the first position of that id) with larger ids in the prompts, so the
      two pooling rules pick different tokens; pad id 0

Tensors: the parameters under those names; input.input_ids [B, L] (I64), input.attention_mask
[B, L] (I64, 1 = token); Llama: output = TextEncoderModelOutput.hidden_state [B, L - crop_start,
hidden], output.attention_mask its cropped mask (I64); CLIP: output = hidden_state (the
pooler_output, [B, hidden]), inter.last_hidden_state [B, L, hidden] (the final norm's output).
__metadata__.config: the TextEncoder init args used (text_encoder_type, max_length,
hidden_state_skip_layer, apply_final_norm, use_attention_mask, prompt_template {template,
crop_start} for the LLM) plus text_encoder_config: the model's config.json (to_dict()).

Usage: HUNYUAN_REPO=/path/to/HunyuanVideo python tools/golden/hunyuan_text.py
"""
import json
import os
import tempfile

import torch
import transformers

from hunyuan_reference import load, save_golden

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "tests", "golden", "hunyuan")

LLAMA = dict(vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=4, num_attention_heads=4,
             num_key_value_heads=2, head_dim=8, rms_norm_eps=1e-5, rope_theta=500000.0, max_position_embeddings=256,
             hidden_act="silu", attention_bias=False, mlp_bias=False, tie_word_embeddings=False,
             bos_token_id=1, eos_token_id=2, pad_token_id=None)
LLAMA3 = dict(LLAMA, num_key_value_heads=1, attention_bias=True, mlp_bias=True,
              rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                original_max_position_embeddings=8192))
CLIP = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4,
            max_position_embeddings=16, hidden_act="quick_gelu", layer_norm_eps=1e-5, bos_token_id=62,
            eos_token_id=2, pad_token_id=1, projection_dim=16)
CLIP_EOS = dict(CLIP, hidden_act="gelu", eos_token_id=7)


def randomize_(model, seed):
    """Seeded weights of unit-scale activations; norm weights away from 1 so that a skipped
    multiply shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if "norm" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            elif "embed" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            else:  # linear [out, in]
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)


def reference_module():
    te = load("hyvideo.text_encoder")
    reference_module.real_load_tokenizer = te.load_tokenizer
    te.load_tokenizer = lambda tokenizer_type, tokenizer_path=None, **kw: (None, tokenizer_path)
    return te


def model_config(model):
    """config.json's dict, without the temporary folder's name."""
    c = model.config.to_dict()
    c.pop("_name_or_path", None)
    return c


def save(name, tensors, kind, config, **extra):
    meta = {**extra, "kind": kind, "config": json.dumps(config), "generator": "tools/golden/hunyuan_text.py",
            "torch": torch.__version__, "transformers": transformers.__version__}
    save_golden(os.path.join(OUT, name), tensors, meta)


def llama_inputs(vocab, lengths, L, seed):
    """Right-padded ids as text2tokens makes them (padding="max_length"); pads hold id 0."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.zeros(len(lengths), L, dtype=torch.int64)
    mask = torch.zeros(len(lengths), L, dtype=torch.int64)
    for b, n in enumerate(lengths):
        ids[b, 0] = 1  # <|begin_of_text|>
        ids[b, 1:n] = torch.randint(3, vocab, (n - 1,), generator=g)
        mask[b, :n] = 1
    return ids, mask


def run_llama(te, cfg, template_name, skip, final_norm, use_mask, lengths, text_len, seed, causal_lm, name,
              model=None):
    constants = load("hyvideo.constants")
    template = constants.PROMPT_TEMPLATE[template_name]
    max_length = text_len + template["crop_start"]  # hyvideo/inference.py: args.text_len + crop_start
    with tempfile.TemporaryDirectory() as tmp:
        if model is None:
            torch.manual_seed(0)
            model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**cfg)) if causal_lm else \
                transformers.LlamaModel(transformers.LlamaConfig(**cfg))
            randomize_(model, seed)
        model.save_pretrained(tmp)
        enc = te.TextEncoder(text_encoder_type="llm", max_length=max_length, text_encoder_precision="fp32",
                             text_encoder_path=tmp, use_attention_mask=use_mask, prompt_template=template,
                             hidden_state_skip_layer=skip, apply_final_norm=final_norm, reproduce=True)
        config = {"text_encoder_type": "llm", "max_length": max_length, "hidden_state_skip_layer": skip,
                  "apply_final_norm": final_norm, "use_attention_mask": use_mask, "prompt_template": template,
                  "text_encoder_config": model_config(enc.model)}
    ids, mask = llama_inputs(cfg["vocab_size"], lengths, max_length, seed + 1)
    with torch.no_grad():
        out = enc.encode({"input_ids": ids, "attention_mask": mask}, data_type="image")
    print(f"{name}: hidden_state {list(out.hidden_state.shape)} std {out.hidden_state.std().item():.3f}")
    tensors = dict(model.state_dict())
    tensors.update({"input.input_ids": ids, "input.attention_mask": mask, "output": out.hidden_state})
    if out.attention_mask is not None:
        tensors["output.attention_mask"] = out.attention_mask
    save(name, tensors, "hunyuan.text.llama", config)
    return model


PROMPTS = ["A red panda climbing a bamboo tree in the snow",
           "Two cats in comfy boxing gear fight on a spotlighted stage, cinematic lighting, shallow depth of "
           "field, slow motion, 4k, highly detailed fur and sweat drops",  # truncated at text_len 40
           "caf\u00e9 \u955c\u5934 emoji \U0001F43C <|eot_id|> it's"]


def run_llama_prompts(te, seed):
    """TextEncoder.forward(prompts): the official text2tokens (template, truncation, padding) with
    the fixture tokenizer, then encode."""
    constants = load("hyvideo.constants")
    template = constants.PROMPT_TEMPLATE["dit-llm-encode"]
    text_len = 40
    max_length = text_len + template["crop_start"]
    tok_dir = os.path.join(ROOT, "tests", "text", "data", "llama3_bpe")
    official_load_tokenizer = te.load_tokenizer
    te.load_tokenizer = reference_module.real_load_tokenizer
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(tok_dir)
        cfg = dict(LLAMA, vocab_size=len(tokenizer))
        with tempfile.TemporaryDirectory() as tmp:
            torch.manual_seed(0)
            model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**cfg))
            randomize_(model, seed)
            model.save_pretrained(tmp)
            enc = te.TextEncoder(text_encoder_type="llm", max_length=max_length, text_encoder_precision="fp32",
                                 text_encoder_path=tmp, tokenizer_path=tok_dir, prompt_template=template,
                                 hidden_state_skip_layer=2, apply_final_norm=False, reproduce=True)
    finally:
        te.load_tokenizer = official_load_tokenizer
    batch = enc.text2tokens(PROMPTS)
    with torch.no_grad():
        out = enc(PROMPTS)  # forward: text2tokens + encode
    config = {"text_encoder_type": "llm", "max_length": max_length, "hidden_state_skip_layer": 2,
              "apply_final_norm": False, "use_attention_mask": True, "prompt_template": template,
              "text_encoder_config": model_config(enc.model)}
    print(f"prompts: ids {list(batch['input_ids'].shape)}, hidden_state {list(out.hidden_state.shape)}")
    tensors = dict(model.state_dict())
    tensors.update({"input.input_ids": batch["input_ids"], "input.attention_mask": batch["attention_mask"],
                    "output": out.hidden_state, "output.attention_mask": out.attention_mask})
    save("hunyuan_text_llama_prompts.safetensors", tensors, "hunyuan.text.llama", config,
         prompts=json.dumps(PROMPTS), tokenizer="tests/text/data/llama3_bpe", text_len=str(text_len))


def clip_inputs(cfg, lengths, seed, pad):
    g = torch.Generator().manual_seed(seed)
    L, vocab, eos = cfg["max_position_embeddings"], cfg["vocab_size"], cfg["eos_token_id"]
    end = vocab - 1 if eos == 2 else eos  # the end token: <|endoftext|> (the largest id) or eos_token_id
    ids = torch.full((len(lengths), L), pad if pad is not None else end, dtype=torch.int64)
    mask = torch.zeros(len(lengths), L, dtype=torch.int64)
    for b, n in enumerate(lengths):
        ids[b, 0] = cfg["bos_token_id"]
        body = torch.randint(3, vocab - 2, (n - 2,), generator=g)
        body[body == end] = end + 1  # the end token only at the end
        ids[b, 1:n - 1] = body
        ids[b, n - 1] = end
        mask[b, :n] = 1
    return ids, mask


def run_clip(te, cfg, lengths, seed, pad, prefixed, name):
    torch.manual_seed(0)
    model = transformers.CLIPTextModel(transformers.CLIPTextConfig(**cfg))
    randomize_(model, seed)
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        official = te.load_text_encoder

        def load_clip(text_encoder_type, text_encoder_precision=None, text_encoder_path=None, logger=None,
                      device=None):
            # load_text_encoder("clipL") without its transformers-4 alias line (see the docstring).
            assert text_encoder_type == "clipL"
            m = transformers.CLIPTextModel.from_pretrained(text_encoder_path)
            return m.to(dtype=te.PRECISION_TO_TYPE[text_encoder_precision]).requires_grad_(False), text_encoder_path

        te.load_text_encoder = load_clip
        try:
            enc = te.TextEncoder(text_encoder_type="clipL", max_length=cfg["max_position_embeddings"],
                                 text_encoder_precision="fp32", text_encoder_path=tmp, reproduce=True)
        finally:
            te.load_text_encoder = official
        config = {"text_encoder_type": "clipL", "max_length": cfg["max_position_embeddings"],
                  "use_attention_mask": True, "text_encoder_config": model_config(enc.model)}
    ids, mask = clip_inputs(cfg, lengths, seed + 1, pad)
    if cfg["eos_token_id"] != 2:  # the file tells the two pooling rules apart
        assert (ids.argmax(-1) != (ids == cfg["eos_token_id"]).int().argmax(-1)).all(), ids
    last = {}
    handle = enc.model.final_layer_norm.register_forward_hook(lambda m, i, o: last.setdefault("x", o.detach()))
    with torch.no_grad():
        out = enc.encode({"input_ids": ids, "attention_mask": mask})
    handle.remove()
    print(f"{name}: pooled {list(out.hidden_state.shape)} std {out.hidden_state.std().item():.3f}")
    sd = model.state_dict()
    tensors = {("text_model." + k if prefixed else k): v for k, v in sd.items()}
    tensors.update({"input.input_ids": ids, "input.attention_mask": mask, "output": out.hidden_state,
                    "inter.last_hidden_state": last["x"]})
    save(name, tensors, "hunyuan.text.clip", config)


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.set_num_threads(2)
    te = reference_module()
    m = run_llama(te, LLAMA, "dit-llm-encode", 2, False, True, [41, 38], 8, 11, True,
                  "hunyuan_text_llama.safetensors")
    run_llama(te, LLAMA3, "dit-llm-encode-video", 1, True, True, [101, 99], 6, 21, False,
              "hunyuan_text_llama_llama3.safetensors")
    run_llama(te, LLAMA, "dit-llm-encode", 0, False, False, [41, 38], 8, 11, True,
              "hunyuan_text_llama_nomask.safetensors", model=m)
    run_llama_prompts(te, 51)
    run_clip(te, CLIP, [9, 16, 3], 31, None, True, "hunyuan_text_clip.safetensors")
    run_clip(te, CLIP_EOS, [10, 5], 41, 0, False, "hunyuan_text_clip_eos.safetensors")


if __name__ == "__main__":
    main()
