#!/usr/bin/env python3
"""Writes a tiny CLIP BPE tokenizer and what transformers makes of hard prompts with it
(text::ClipBpeTokenizer's fixture, tests/text/test_clip_tokenizer.cpp):

  tests/text/data/clip_bpe/vocab.json, merges.txt
      tokenizers' BpeTrainer (vocab 700, end_of_word_suffix "</w>") on tests/text/data/corpus.txt
      with transformers 5's CLIPTokenizer normalizer (NFC, \\s+ -> " ", lowercase) and
      pre-tokenizer (Split on CLIP's pattern, Removed, inverted; ByteLevel), special tokens
      <|startoftext|> and <|endoftext|>; the folder CLIP-L/14's text_encoder_2 has (vocab.json +
      merges.txt)
  tests/text/data/clip_bpe_cases.json
      "cases": for each prompt, the official load_tokenizer("clipL", ...) of
      hyvideo/text_encoder/__init__.py (CLIPTokenizer.from_pretrained(path, max_length=77)):
      tokenizer(prompt)["input_ids"], add_special_tokens=False, the normalizer's output and the
      pre-tokenizer's pieces; "nfc_cases": 400 random short strings of the code points
      normalization touches (marks, canonical decompositions, Hangul jamo and syllables) with
      tokenizers' NFC and the tokenizer's normalizer output; "batch": that tokenizer called as TextEncoder.text2tokens calls it for
      CLIP (no template, truncation=True, max_length=77, padding="max_length") on every prompt

Prompts: tools/golden/llama_tokenizer_fixture.py's plus case, NFC (combining marks, Hangul jamo,
singletons), full lowercase mappings and inline special tokens.

Usage: python tools/golden/clip_tokenizer_fixture.py
"""
import json
import os
import random
import unicodedata

import tokenizers
import transformers
from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, trainers

from hunyuan_reference import load
from llama_tokenizer_fixture import PROMPTS as LLAMA_PROMPTS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "text", "data")
OUT_DIR = os.path.join(DATA, "clip_bpe")
PATTERN = r"""<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+"""

PROMPTS = LLAMA_PROMPTS + [
    "A RED Panda IN The SNOW, CINEMATIC",
    "nfc: cafe\u0301 e\u0301\u0301 a\u0323\u0302 \u1100\u1161\u11a8 \u212b \u2126 \u0344 o\u0308\u0304",
    "lower: \u0130stanbul \u03a3\u0391\u03a3 \u1e9e \u0178 \u2160\u2161 \uff21\uff22",
    "<|startoftext|>inline<|endoftext|> and <|STARTOFTEXT|>",
    "it's they're I'M don't 'll",
]


def main():
    te = load("hyvideo.text_encoder")
    with open(os.path.join(DATA, "corpus.txt"), encoding="utf-8") as f:
        corpus = [line.rstrip("\n") for line in f]
    tok = Tokenizer(models.BPE(unk_token="<|endoftext|>", end_of_word_suffix="</w>", continuing_subword_prefix=""))
    tok.normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Replace(Regex(r"\s+"), " "),
                                           normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PATTERN), behavior="removed", invert=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False)])
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=["<|startoftext|>", "<|endoftext|>"],
                                  end_of_word_suffix="</w>", show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus, trainer)
    os.makedirs(OUT_DIR, exist_ok=True)
    tok.model.save(OUT_DIR)  # vocab.json, merges.txt
    official, _ = te.load_tokenizer("clipL", tokenizer_path=OUT_DIR)
    backend = official.backend_tokenizer
    cases = []
    for p in PROMPTS:
        normalized = backend.normalizer.normalize_str(p)
        cases.append({"text": p, "ids": official(p)["input_ids"],
                      "ids_no_special": official(p, add_special_tokens=False)["input_ids"],
                      "normalized": normalized,
                      "pieces": [x for x, _ in backend.pre_tokenizer.pre_tokenize_str(normalized)]})
    enc = official(PROMPTS, truncation=True, max_length=77, padding="max_length", return_length=False,
                   return_overflowing_tokens=False, return_attention_mask=True, return_tensors="pt")
    # NFC and lowercase on random short strings of the code points normalization touches.
    pool = [cp for cp in range(0x30000) if unicodedata.combining(chr(cp)) or unicodedata.decomposition(chr(cp))
            and not unicodedata.decomposition(chr(cp)).startswith("<")]
    pool += list(range(0x1100, 0x1113)) + list(range(0x1161, 0x1176)) + list(range(0x11A8, 0x11C3))
    pool += [0xAC00, 0xAC1C, 0xD7A3] + [ord(c) for c in "aeiouAEIOU\u03a3\u0130KkSs"]
    pool = [cp for cp in pool if not 0xD800 <= cp <= 0xDFFF]
    rng = random.Random(7)
    nfc_cases = []
    for _ in range(400):
        text = "".join(chr(rng.choice(pool)) for _ in range(rng.randint(1, 6)))
        nfc_cases.append({"text": text, "nfc": normalizers.NFC().normalize_str(text),
                          "normalized": backend.normalizer.normalize_str(text)})
    out = {"generator": "tools/golden/clip_tokenizer_fixture.py",
           "versions": {"tokenizers": tokenizers.__version__, "transformers": transformers.__version__},
           "cases": cases, "nfc_cases": nfc_cases,
           "batch": {"max_length": 77, "input_ids": enc["input_ids"].tolist(),
                     "attention_mask": enc["attention_mask"].tolist()}}
    path = os.path.join(DATA, "clip_bpe_cases.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=True, indent=0)
    print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(cases)} prompts); {OUT_DIR}: {os.listdir(OUT_DIR)}")


if __name__ == "__main__":
    main()
