#!/usr/bin/env python3
"""Golden file and fixture for HunyuanVideo 1.5's ByT5 glyph encoder (kind hunyuan1.5.text.byt5,
docs/parity.md), from the official code of Tencent-Hunyuan/HunyuanVideo-1.5 ($HUNYUAN15_REPO):
hyvideo/models/text_encoders/byT5/__init__.py (load_glyph_byT5_v2: the ByT5 tokenizer and
T5ForConditionalGeneration(...).get_encoder() from a folder, add_special_token with the Glyph
assets' color and font tokens, resize_token_embeddings), byT5/format_prompt.py
(MultilingualPromptFormat.format_prompt) and hunyuan_video_pipeline.py (_extract_glyph_texts,
get_byt5_text_tokens, _process_single_byt5_prompt, called unbound on a namespace holding what
they read; loguru stubbed: logging only).

The published parts are replaced by tiny ones made here, saved to a temporary folder and loaded
by the official loader: google/byt5-small by a random T5ForConditionalGeneration (d_model 32, 2
heads of 8, d_ff 48, 2 layers, gated-gelu: byt5-small's kind) with transformers' ByT5Tokenizer
(bytes + 3, nothing downloaded); Glyph-SDXL-v2's assets by tests/hunyuan15/data/glyph_assets/
(4 colors, 4 fonts: synthetic, in the published files' format); its byt5_model.pt is not loaded
(byT5_ckpt_path None: the random weights stand for it). fp32, CPU.

Writes
  tests/golden/hunyuan15/hy15_text_byt5.safetensors: parameters under T5Stack's names (the
      encoder as byt5_model.pt holds it after the pipeline strips module.text_tower.encoder.);
      input.input_ids / input.attention_mask [1, 32] (I64): get_byt5_text_tokens of the formatted
      glyph text of the first prompt; output [1, 32, 32]: byt5_model(ids, attention_mask=mask.float())[0];
      __metadata__.config {byt5_max_length, text_encoder_config (T5Config), added_tokens}
  tests/hunyuan15/data/byt5_cases.json: for each prompt, the official _extract_glyph_texts,
      format_prompt(texts, [{"color": None, "font-family": None}] * n) (the pipeline's styles), the
      tokenizer's ids and mask at byt5_max_length; plus raw tokenizer ids of hard strings (added
      tokens inside text, </s> with spaces, UTF-8, truncation); and for each prompt
      _process_single_byt5_prompt's mask and whether its embeddings are all zero (no glyph text)

Usage: HUNYUAN15_REPO=/work/ref/hunyuan15 python tools/golden/hunyuan15_byt5.py
"""
import json
import logging
import os
import sys
import tempfile
import types

import torch
import transformers
from safetensors.torch import save_file

if "loguru" not in sys.modules:  # logging only
    stub = types.ModuleType("loguru")
    stub.logger = logging.getLogger("hunyuanvideo-1.5")
    sys.modules["loguru"] = stub
import hunyuan_reference
hunyuan_reference.HUNYUAN_REPO = os.environ.get("HUNYUAN15_REPO", "/work/ref/hunyuan15")

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "tests", "golden", "hunyuan15")
DATA = os.path.join(ROOT, "tests", "hunyuan15", "data")
ASSETS = os.path.join(DATA, "glyph_assets")
MAX_LENGTH = 32

T5 = dict(vocab_size=384, d_model=32, d_kv=8, d_ff=48, num_layers=2, num_decoder_layers=1, num_heads=2,
          relative_attention_num_buckets=32, relative_attention_max_distance=128, feed_forward_proj="gated-gelu",
          dropout_rate=0.0, layer_norm_epsilon=1e-6, tie_word_embeddings=False, decoder_start_token_id=0,
          pad_token_id=0, eos_token_id=1)

PROMPTS = [
    'A neon sign that reads "OPEN 24h" above a door',
    'Two signs: \u201c\u5496\u5561\u201d and "Caf\u00e9 \U0001F600", then "OPEN 24h" again, "Caf\u00e9 \U0001F600"',
    'A poster "line one\nline two" and "" then "tail"',
    'No quoted text at all',
    '"<color-2>" and "a </s> b" and "x<extra_id_0>y"',
    'One "only"',
    'Unclosed "quote here',
    '\u201cnested "inner" quote\u201d',
    'long "' + "x" * 40 + '"',
]
HARD = ["ab", "a </s> b", "x<pad>y", " <extra_id_3> z", "<color-1>q<en-font-2>", "\u00e9\U0001F600", "end</s>", "",
        "<en-font-1>", "tab\t</s>\tnl", "<unk>", "\u00a0<pad>\u00a0", "\x1c</s>\x1f", "<zh-font-1><ja-font-3>",
        "y" * 40]


def randomize_(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if p.dim() == 1:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif "shared" in name or "embed" in name or "relative_attention_bias" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            else:
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)


def main():
    # The pipeline first: it imports the text_encoders package for real (load() would stub it).
    pipe = hunyuan_reference.load("hyvideo.pipelines.hunyuan_video_pipeline").HunyuanVideo_1_5_Pipeline
    byt5 = sys.modules["hyvideo.models.text_encoders.byT5"]
    fmt = sys.modules["hyvideo.models.text_encoders.byT5.format_prompt"]
    color = os.path.join(ASSETS, "color_idx.json")
    font = os.path.join(ASSETS, "multilingual_10-lang_idx.json")
    with tempfile.TemporaryDirectory() as tmp:
        torch.manual_seed(0)
        model = transformers.T5ForConditionalGeneration(transformers.T5Config(**T5))
        randomize_(model, 21)
        model.save_pretrained(tmp)
        transformers.ByT5Tokenizer().save_pretrained(tmp)
        torch.manual_seed(1)  # the rows resize_token_embeddings adds are drawn from this
        kw = byt5.load_glyph_byT5_v2(dict(byT5_google_path=tmp, byT5_ckpt_path=None,
                                          multilingual_prompt_format_color_path=color,
                                          multilingual_prompt_format_font_path=font, byt5_max_length=MAX_LENGTH),
                                     device="cpu")
    tok, enc = kw["byt5_tokenizer"], kw["byt5_model"].eval()
    ns = types.SimpleNamespace(byt5_max_length=MAX_LENGTH, byt5_tokenizer=tok, byt5_model=enc,
                               prompt_format=fmt.MultilingualPromptFormat(font_path=font, color_path=color),
                               get_byt5_text_tokens=pipe.get_byt5_text_tokens)
    ns._extract_glyph_texts = lambda p: pipe._extract_glyph_texts(ns, p)
    added = [t for t in tok.added_tokens_encoder if tok.added_tokens_encoder[t] >= 384]
    added.sort(key=lambda t: tok.added_tokens_encoder[t])
    cases = []
    first = None
    for p in PROMPTS:
        texts = ns._extract_glyph_texts(p)
        styles = [{"color": None, "font-family": None} for _ in texts]
        formatted = ns.prompt_format.format_prompt(texts, styles) if texts else None
        with torch.no_grad():
            emb, mask = pipe._process_single_byt5_prompt(ns, p, "cpu")
        case = {"prompt": p, "glyph_texts": texts, "formatted": formatted, "mask": mask[0].tolist(),
                "zero": bool((emb == 0).all()), "width": emb.shape[-1]}
        if formatted is not None:
            ids, m = pipe.get_byt5_text_tokens(tok, MAX_LENGTH, formatted)
            case["input_ids"] = ids[0].tolist()
            case["attention_mask"] = m[0].tolist()
            if first is None:
                first = (ids, m, emb)
        cases.append(case)
    hard = [{"text": s, "ids": tok(s)["input_ids"],
             "padded": tok(s, padding="max_length", max_length=8, truncation=True)["input_ids"]} for s in HARD]
    with open(os.path.join(DATA, "byt5_cases.json"), "w", encoding="utf-8") as f:
        json.dump({"generator": "tools/golden/hunyuan15_byt5.py", "max_length": MAX_LENGTH, "added_tokens": added,
                   "vocab": len(tok), "cases": cases, "hard": hard}, f, ensure_ascii=True, indent=0)
    ids, m, emb = first
    tensors = {k: v.detach().contiguous().clone() for k, v in enc.state_dict().items()}
    tensors["input.input_ids"] = ids
    tensors["input.attention_mask"] = m
    tensors["output"] = emb
    cfg = enc.config.to_dict()
    for k in ("_name_or_path", "architectures"):
        cfg.pop(k, None)
    config = {"byt5_max_length": MAX_LENGTH, "text_encoder_config": cfg, "added_tokens": added}
    meta = {"kind": "hunyuan1.5.text.byt5", "config": json.dumps(config), "prompt": PROMPTS[0],
            "generator": "tools/golden/hunyuan15_byt5.py",
            "reference": "Tencent-Hunyuan/HunyuanVideo-1.5 byT5/__init__.py + hunyuan_video_pipeline.py",
            "commit": "60783e7", "torch": torch.__version__, "transformers": transformers.__version__}
    path = os.path.join(OUT, "hy15_text_byt5.safetensors")
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(tensors)} tensors); vocab {len(tok)}; added {added}")
    print("state dict keys:", list(enc.state_dict())[:4], "...")


if __name__ == "__main__":
    main()
