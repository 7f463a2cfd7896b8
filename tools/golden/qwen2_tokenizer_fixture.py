#!/usr/bin/env python3
"""Writes a tiny Qwen2-style byte-level BPE tokenizer and what transformers makes of hard prompts
with it (text::ByteLevelBpeTokenizer's Qwen2 fixture, tests/text/test_qwen2_tokenizer.cpp):

  tests/text/data/qwen2_bpe/tokenizer.json, tokenizer_config.json
      tokenizers' BpeTrainer (vocab 900) on tests/text/data/corpus.txt and HunyuanVideo 1.5's two
      system prompts, with the pipeline transformers' Qwen2Tokenizer (models/qwen2/
      tokenization_qwen2.py) builds and Qwen2.5-VL's tokenizer.json holds: normalizer NFC;
      pre-tokenizer Split on Qwen2's regex (single digits: \\p{N}, not Llama-3's \\p{N}{1,3}),
      Isolated, then ByteLevel (add_prefix_space false, use_regex false); post-processor ByteLevel
      (nothing added); BPE without dropout / byte fallback; Qwen2.5-VL's added tokens after the
      vocabulary (<|endoftext|> .. <|file_sep|>, special as published: the <tool_call> / <|fim_*|>
      / <|repo_name|> / <|file_sep|> ones are not, all normalized false); saved by transformers
      with tokenizer_class Qwen2Tokenizer, pad_token <|endoftext|> and Qwen2.5-VL's chat template
  tests/text/data/qwen2_bpe_cases.json
      "cases": for each prompt, AutoTokenizer(folder)(prompt)["input_ids"] and the pieces of the
      Split pre-tokenizer alone (on the NFC text, as the pipeline splits it); "random_split":
      those pieces for 300 random strings of the classes the regex tells apart;
      "hunyuan15": the official TextEncoder.text2tokens (hyvideo/models/text_encoders/__init__.py of
      HunyuanVideo-1.5, its model loader stubbed: no model is needed to tokenize) on that folder for
      both prompt templates (li-dit-encode-image-json at max_length 24, li-dit-encode-video-json at
      16): the chat template rendered (apply_chat_template, add_generation_prompt), crop_start as
      it computes it, ids and mask truncated / padded to max_length + crop_start

Prompts: tools/golden/tokenizer_fixture.py's (Unicode, CJK, emoji, whitespace runs, a long prompt)
plus digit runs, contractions, line-break runs, decomposed accents (NFC composes them), the chat
markers inside a prompt and a combining mark after an added token.

Usage: HUNYUAN15_REPO=/work/ref/hunyuan15 python tools/golden/qwen2_tokenizer_fixture.py
"""
import json
import os
import tempfile

import transformers
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

import hunyuan_reference
hunyuan_reference.HUNYUAN_REPO = os.environ.get("HUNYUAN15_REPO", "/work/ref/hunyuan15")
from tokenizer_fixture import PROMPTS as T5_PROMPTS
from tokenizer_fixture import random_split_cases, write_bpe_cases

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "text", "data")
OUT_DIR = os.path.join(DATA, "qwen2_bpe")

# transformers' Qwen2Tokenizer PRETOKENIZE_REGEX (= Qwen2.5-VL's tokenizer.json Split pattern).
PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
           r"\s*[\r\n]+|\s+(?!\S)|\s+")
# Qwen2.5-VL's added tokens in id order (151643 ..), with their "special" flag.
ADDED = [("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True), ("<|object_ref_start|>", True),
         ("<|object_ref_end|>", True), ("<|box_start|>", True), ("<|box_end|>", True), ("<|quad_start|>", True),
         ("<|quad_end|>", True), ("<|vision_start|>", True), ("<|vision_end|>", True), ("<|vision_pad|>", True),
         ("<|image_pad|>", True), ("<|video_pad|>", True), ("<tool_call>", False), ("</tool_call>", False),
         ("<|fim_prefix|>", False), ("<|fim_middle|>", False), ("<|fim_suffix|>", False), ("<|fim_pad|>", False),
         ("<|repo_name|>", False), ("<|file_sep|>", False)]
# Qwen2.5-VL-7B-Instruct's chat_template (tokenizer_config.json / chat_template.json).
CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}{{ message['content'] }}"
    "<|im_end|>\n{% else %}{% for content in message['content'] %}{% if content['type'] == 'image' or 'image' in "
    "content or 'image_url' in content %}{% set image_count.value = image_count.value + 1 %}{% if add_vision_id %}"
    "Picture {{ image_count.value }}: {% endif %}<|vision_start|><|image_pad|><|vision_end|>{% elif content['type'] "
    "== 'video' or 'video' in content %}{% set video_count.value = video_count.value + 1 %}{% if add_vision_id %}"
    "Video {{ video_count.value }}: {% endif %}<|vision_start|><|video_pad|><|vision_end|>{% elif 'text' in content "
    "%}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endif %}{% endfor %}{% if add_generation_prompt %}"
    "<|im_start|>assistant\n{% endif %}")

PROMPTS = T5_PROMPTS + [
    "I'M sure it's THEY'RE we've I'd you'll 'S 'Ll '\u017fx don'T",
    "digits 1 12 123 1234 12345 007 \u0663\u0664\u0665 \u2167 3.14159 2026-12-04",
    "lines\n\n\nthen  \n  spaces \r\n\r\nand trailing   ",
    "   leading spaces then words",
    "a<|im_end|>b <|im_start|>user\n inline markers <tool_call>x</tool_call> <|fim_pad|>",
    "after a token<|im_end|>\u0338 and >\u0338 composed, e\u0301 A\u030a \u1100\u1161 decomposed",
    "tabs\t\tand\u3000ideographic\u00a0nbsp",
    "\U0001F469\u200d\U0001F467 family, flags \U0001F1EF\U0001F1F5, skin \U0001F44D\U0001F3FD",
    "\ud55c\uad6d\uc5b4 \u65e5\u672c\u8a9e\u306e\u6587 \u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u05e2\u05d1\u05e8\u05d9\u05ea",
    "\u4e00\u53ea\u5c0f\u732b\u5728\u8349\u5730\u4e0a\u5954\u8dd1\uff0c\u9633\u5149\u660e\u5a9a\u3002",
    "!!!hello??? ...world,,, x-y_z",
    "",
]


def train(corpus):
    tok = Tokenizer(models.BPE(dropout=None, unk_token=None, continuing_subword_prefix="", end_of_word_suffix="",
                               fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=900, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus, trainer)
    tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    for content, special in ADDED:  # one at a time: ids in this order after the vocabulary
        token = AddedToken(content, special=special, normalized=False, lstrip=False, rstrip=False, single_word=False)
        (tok.add_special_tokens if special else tok.add_tokens)([token])
    return tok


def text_encoder_module():
    te = hunyuan_reference.load("hyvideo.models.text_encoders")
    return te


def official_text2tokens(te, tmpl_name, prompts, max_length):
    """TextEncoder(...).text2tokens(prompts, data_type, max_length) with load_text_encoder stubbed."""
    saved = te.load_text_encoder
    te.load_text_encoder = lambda **kw: (None, kw.get("text_encoder_path"))
    try:
        tmpl = {k: (v if k != "template" else v) for k, v in te.PROMPT_TEMPLATE[tmpl_name].items()}
        tmpl["crop_start"] = -1  # as published: computed by the constructor
        enc = te.TextEncoder(text_encoder_type="llm", tokenizer_type="llm", text_encoder_path=OUT_DIR, max_length=1000,
                             prompt_template=tmpl, prompt_template_video=dict(tmpl), hidden_state_skip_layer=2)
    finally:
        te.load_text_encoder = saved
    out = enc.text2tokens(prompts, data_type="image", max_length=max_length)
    return enc.prompt_template["crop_start"], out


def main():
    te = text_encoder_module()
    names = ["li-dit-encode-image-json", "li-dit-encode-video-json"]
    with open(os.path.join(DATA, "corpus.txt"), encoding="utf-8") as f:
        corpus = [line.rstrip("\n") for line in f]
    corpus += [m["content"] for n in names for m in te.PROMPT_TEMPLATE[n]["template"]]
    tok = train(corpus)
    os.makedirs(OUT_DIR, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "tokenizer.json")
        tok.save(raw)
        fast = transformers.PreTrainedTokenizerFast(tokenizer_file=raw, pad_token="<|endoftext|>",
                                                    eos_token="<|im_end|>", unk_token=None)
        fast.chat_template = CHAT_TEMPLATE
        fast.save_pretrained(OUT_DIR)
    cfg_path = os.path.join(OUT_DIR, "tokenizer_config.json")
    with open(cfg_path, encoding="utf-8") as f:
        cfg = json.load(f)
    cfg["tokenizer_class"] = "Qwen2Tokenizer"  # AutoTokenizer then builds transformers' Qwen2Tokenizer
    cfg["chat_template"] = CHAT_TEMPLATE
    with open(cfg_path, "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=1, ensure_ascii=False)
    for name in os.listdir(OUT_DIR):  # only what is read (the C++: tokenizer.json, tokenizer_config.json)
        if name not in ("tokenizer.json", "tokenizer_config.json"):
            os.remove(os.path.join(OUT_DIR, name))
    hf = transformers.AutoTokenizer.from_pretrained(OUT_DIR, padding_side="right")
    print("transformers class:", type(hf).__name__)
    raw_tok = Tokenizer.from_file(os.path.join(OUT_DIR, "tokenizer.json"))
    split = pre_tokenizers.Split(Regex(PATTERN), behavior="isolated", invert=False)
    nfc = normalizers.NFC()
    cases = []
    for p in PROMPTS:
        ids = hf(p)["input_ids"]
        assert ids == raw_tok.encode(p).ids, p  # transformers and the tokenizer.json agree
        cases.append({"text": p, "ids": ids,
                      "pieces": [piece for piece, _ in split.pre_tokenize_str(nfc.normalize_str(p))]})
    hunyuan15 = []
    for name, max_length in zip(names, [24, 16]):
        crop_start, enc = official_text2tokens(te, name, PROMPTS, max_length)
        hunyuan15.append({"template": name, "crop_start": crop_start, "max_length": max_length,
                          "prompts": PROMPTS, "input_ids": enc["input_ids"].tolist(),
                          "attention_mask": enc["attention_mask"].tolist()})
        print(f"{name}: crop_start {crop_start} with this vocabulary")
    write_bpe_cases(os.path.join(DATA, "qwen2_bpe_cases.json"), "tools/golden/qwen2_tokenizer_fixture.py", cases,
                    random_split_cases(split, seed=7), "hunyuan15", hunyuan15, OUT_DIR)


if __name__ == "__main__":
    main()
