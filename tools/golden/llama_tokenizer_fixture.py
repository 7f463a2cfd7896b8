#!/usr/bin/env python3
"""Writes a tiny Llama-3-style byte-level BPE tokenizer and what transformers makes of hard prompts
with it (text::ByteLevelBpeTokenizer's fixture, tests/text/test_bpe_tokenizer.cpp):

  tests/text/data/llama3_bpe/tokenizer.json, tokenizer_config.json
      tokenizers' BpeTrainer (vocab 700, ignore_merges as Llama-3) on tests/text/data/corpus.txt
      and HunyuanVideo's two prompt templates, with Llama-3's pre-tokenizer (Split on its regex,
      Isolated; ByteLevel without its regex), its special tokens, and its post-processor
      (ByteLevel, then TemplateProcessing "<|begin_of_text|> $A"); saved by transformers'
      PreTrainedTokenizerFast with pad_token "<pad>" (HunyuanVideo's tokenizer pads too)
  tests/text/data/llama3_bpe_cases.json
      "cases": for each prompt, tokenizer(prompt)["input_ids"] (and add_special_tokens=False), and
      the pieces of the Split pre-tokenizer alone (its pre_tokenize_str); "random_split": those
      pieces for 300 random strings mixing white space, contraction letters, digits, marks and
      punctuation;
      "hunyuan": the official load_tokenizer("llm", ..., padding_side="right") of
      hyvideo/text_encoder/__init__.py on that folder, called as TextEncoder.text2tokens calls it
      (the template's format(prompt), truncation=True, max_length=text_len + crop_start,
      padding="max_length") for the image template at text_len 24 and the video one at 16

The prompts: tools/golden/tokenizer_fixture.py's (Unicode, CJK, emoji, whitespace runs, entities,
a long prompt) plus contractions in any case, digit runs, line-break runs and the templates' own
special tokens inside a prompt.

Usage: python tools/golden/llama_tokenizer_fixture.py
"""
import json
import os
import tempfile

import transformers
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

from hunyuan_reference import load
from tokenizer_fixture import PROMPTS as T5_PROMPTS
from tokenizer_fixture import random_split_cases, write_bpe_cases

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "text", "data")
OUT_DIR = os.path.join(DATA, "llama3_bpe")

# Llama-3's tokenizer.json pre-tokenizer regex.
PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
           r"\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
            "<pad>"]

PROMPTS = T5_PROMPTS + [
    "I'M sure it's THEY'RE we've I'd you'll 'S 'Ll '\u017fx don'T",
    "digits 1 12 123 1234 12345 007 \u0663\u0664\u0665 \u2167",
    "lines\n\n\nthen  \n  spaces \r\n\r\nand trailing   ",
    "   leading spaces then words",
    "a<|eot_id|>b <|start_header_id|>user<|end_header_id|> inline specials",
    "tabs\t\tand\u3000ideographic\u00a0nbsp",
    "\U0001F469\u200d\U0001F467 family, flags \U0001F1EF\U0001F1F5, skin \U0001F44D\U0001F3FD",
    "\ud55c\uad6d\uc5b4 \u65e5\u672c\u8a9e\u306e\u6587 \u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u05e2\u05d1\u05e8\u05d9\u05ea",
    "!!!hello??? ...world,,, x-y_z",
    "",
]


def train(corpus):
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus, trainer)
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", bos)])])
    return tok


def main():
    constants = load("hyvideo.constants")
    te = load("hyvideo.text_encoder")
    templates = [constants.PROMPT_TEMPLATE["dit-llm-encode"], constants.PROMPT_TEMPLATE["dit-llm-encode-video"]]
    with open(os.path.join(DATA, "corpus.txt"), encoding="utf-8") as f:
        corpus = [line.rstrip("\n") for line in f]
    corpus += [t["template"].replace("{}", "") for t in templates]
    tok = train(corpus)
    os.makedirs(OUT_DIR, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "tokenizer.json")
        tok.save(raw)
        fast = transformers.PreTrainedTokenizerFast(tokenizer_file=raw, pad_token="<pad>")
        fast.save_pretrained(OUT_DIR)
    for name in os.listdir(OUT_DIR):  # only what the C++ reads
        if name not in ("tokenizer.json", "tokenizer_config.json"):
            os.remove(os.path.join(OUT_DIR, name))
    hf = transformers.AutoTokenizer.from_pretrained(OUT_DIR)
    split = pre_tokenizers.Split(Regex(PATTERN), behavior="isolated", invert=False)
    cases = []
    for p in PROMPTS:
        cases.append({"text": p, "ids": hf(p)["input_ids"],
                      "ids_no_special": hf(p, add_special_tokens=False)["input_ids"],
                      "pieces": [piece for piece, _ in split.pre_tokenize_str(p)]})
    official, _ = te.load_tokenizer("llm", tokenizer_path=OUT_DIR, padding_side="right")
    hunyuan = []
    for template, text_len in zip(templates, [24, 16]):
        max_length = text_len + template["crop_start"]
        texts = [template["template"].format(p) for p in PROMPTS]
        enc = official(texts, truncation=True, max_length=max_length, padding="max_length",
                       return_length=False, return_overflowing_tokens=False, return_attention_mask=True,
                       return_tensors="pt")
        hunyuan.append({"template": template["template"], "crop_start": template["crop_start"],
                        "max_length": max_length, "texts": texts, "input_ids": enc["input_ids"].tolist(),
                        "attention_mask": enc["attention_mask"].tolist()})
        # The template's own tokens: crop_start is their count with the real Llama-3 vocabulary;
        # with this tiny one it is printed for the record.
        n = len(official(template["template"].split("{}")[0])["input_ids"])
        print(f"template prefix: {n} tokens here (crop_start {template['crop_start']} with Llama-3's vocabulary)")
    # The Split regex on random strings mixing the classes it tells apart.
    write_bpe_cases(os.path.join(DATA, "llama3_bpe_cases.json"), "tools/golden/llama_tokenizer_fixture.py", cases,
                    random_split_cases(split, seed=5), "hunyuan", hunyuan, OUT_DIR)


if __name__ == "__main__":
    main()
