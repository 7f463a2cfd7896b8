#!/usr/bin/env python3
"""Writes tests/text/data/bpe_repeated_merges.json: what tokenizers / transformers make of the committed
Llama-3 and CLIP BPE fixtures (tests/text/data/llama3_bpe/, clip_bpe/) when a merge is listed twice,
its second copy last (tests/text/test_bpe_tokenizer.cpp, test_clip_tokenizer.cpp).

tokenizers builds its merge map by collecting (pair -> rank) in file order, so a repeated pair keeps
the rank of its LAST listing; the record shows which prompts that changes. Each entry: the fixture,
the index of the merge repeated at the end, and per prompt the ids of the edited tokenizer (Llama-3:
transformers' PreTrainedTokenizerFast on the edited tokenizer.json, add_special_tokens=True; CLIP:
transformers' CLIPTokenizer on vocab.json + the edited merges.txt, with its special tokens).

Usage: /work/venv-golden/bin/python tools/golden/bpe_repeated_merges.py
"""
import json
import os
import shutil
import tempfile

import tokenizers
import transformers

from llama_tokenizer_fixture import PROMPTS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "text", "data")
REPEATED = [0, 3, 10]  # merges listed again at the end


def llama(tmp):
    with open(os.path.join(DATA, "llama3_bpe", "tokenizer.json"), encoding="utf-8") as f:
        j = json.load(f)
    merges = j["model"]["merges"]
    j["model"]["merges"] = merges + [merges[i] for i in REPEATED]
    d = os.path.join(tmp, "llama")
    os.makedirs(d)
    with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(j, f)
    shutil.copy(os.path.join(DATA, "llama3_bpe", "tokenizer_config.json"), d)
    base = transformers.AutoTokenizer.from_pretrained(os.path.join(DATA, "llama3_bpe"))
    tok = transformers.AutoTokenizer.from_pretrained(d)
    return [tok(p)["input_ids"] for p in PROMPTS], [base(p)["input_ids"] for p in PROMPTS]


def clip(tmp):
    src = os.path.join(DATA, "clip_bpe")
    with open(os.path.join(src, "merges.txt"), encoding="utf-8") as f:
        lines = f.read().split("\n")
    header = 1 if lines and lines[0].startswith("#version") else 0
    merges = [m for m in lines[header:] if m]
    d = os.path.join(tmp, "clip")
    os.makedirs(d)
    shutil.copy(os.path.join(src, "vocab.json"), d)
    with open(os.path.join(d, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines[:header] + merges + [merges[i] for i in REPEATED]) + "\n")
    base = transformers.CLIPTokenizer.from_pretrained(src)
    tok = transformers.CLIPTokenizer.from_pretrained(d)
    return [tok(p)["input_ids"] for p in PROMPTS], [base(p)["input_ids"] for p in PROMPTS]


def main():
    out = {"generator": "tools/golden/bpe_repeated_merges.py",
           "versions": {"tokenizers": tokenizers.__version__, "transformers": transformers.__version__},
           "repeated": REPEATED, "prompts": PROMPTS}
    with tempfile.TemporaryDirectory() as tmp:
        for name, fn in [("llama3_bpe", llama), ("clip_bpe", clip)]:
            ids, base = fn(tmp)
            changed = sum(a != b for a, b in zip(ids, base))
            print(f"{name}: {changed}/{len(PROMPTS)} prompts tokenize differently with the repeated merges last")
            out[name] = ids
    path = os.path.join(DATA, "bpe_repeated_merges.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=True, separators=(",", ":"))
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
