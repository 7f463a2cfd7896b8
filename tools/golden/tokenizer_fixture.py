#!/usr/bin/env python3
"""Writes tests/text/data/tokenizer_cases.json: what the Wan reference tokenizer
produces for a list of tricky prompts, using the tiny SentencePiece model
tests/text/data/tiny_spiece.model (spm_train on tests/text/data/corpus.txt,
flags in cmake/TinySentencePiece.cmake) in place of google/umt5-xxl's
spiece.model, and tests/text/data/hf_saved_tokenizer/ (that tokenizer as
transformers saves it: tokenizer.json, tokenizer_config.json).

The reference is Wan's own wrapper, wan/modules/tokenizers.py
HuggingfaceTokenizer(name=<dir with spiece.model>, seq_len=L, clean='whitespace'),
called as T5EncoderModel.__call__ calls it (return_mask=True,
add_special_tokens=True). Official code is imported from $WAN21_REPO
(default /work/ref/Wan2.1), never copied.
"""
import json
import os
import shutil
import tempfile

import ftfy
import transformers
from wan_reference import load

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "text", "data")


LONG = " ".join(
    f"Scene {i}: a {c} kite drifts above the old harbour while gulls circle and waves break softly."
    for i, c in enumerate(["red", "blue", "green", "golden", "silver", "purple"] * 8)
)

PROMPTS = [
    "A red panda climbing a bamboo tree in the snow",
    "",
    "   ",
    "  leading and trailing spaces  ",
    "tabs\tand\nnewlines\r\nand\rcarriage returns",
    "multiple     spaces\u00a0\u00a0nbsp\u2003em-space\u3000ideographic space",
    "line separator\u2028paragraph\u2029next line\u0085end",
    "file\x1cgroup\x1frecord separators",
    "Tom &amp; Jerry &lt;3 &quot;cheese&quot; &#39;quoted&#39; &#x263A; &#9731;",
    "double escaped &amp;amp; and &amp;lt;b&amp;gt; and triple &amp;amp;amp;",
    "legacy entities without semicolon: &amp &lt &copy2024 &notit; &eacute",
    "numeric edge cases: &#0; &#13; &#128; &#150; &#x110000; &#xD800; &#99999999999999999999; &#1; &#65",
    "all caps ftfy entities: P&EACUTE;REZ BUNDESSTRA&SZLIG;E &NTILDE; &nTILDE;",
    "a line with a tag <b>bold</b> &amp; entity\nnext line &amp; more",
    "first line &amp; fine\nsecond <i> &amp;\nthird &amp; after",
    "\u201ccurly double\u201d and \u2018curly single\u2019 quotes, \u201elow\u201f and \u02bcmodifier",
    "ligatures: \ufb01sh \ufb02ower o\ufb03ce wa\ufb04e \ufb06 \u0132 \u01c4 \u0149",
    "fullwidth \uff2c\uff2f\uff35\uff24\u3000\uff2e\uff2f\uff29\uff33\uff25\uff33 \uff01\uff1f and halfwidth \uff73\uff80\uff70\uff9d",
    "C1 controls: \x93quoted\x94 \x85 \x80 euro",
    "terminal \x1b[36;44mcolors\x1b[0m and \x1b[1mbold\x1b[22m",
    "control chars: a\x00b\x07c\x7fd\u200be\ufeff f\ufffcg\u206ah",
    "\ufeffBOM at start",
    "unicode: caf\u00e9 na\u00efve \u00c5ngstr\u00f6m \u00fcber \u00df \u0107",
    "combining: cafe\u0301 A\u030a",
    "\u955c\u5934\u6643\u52a8\uff0c\u8272\u8c03\u8273\u4e3d\uff0c\u8fc7\u66dd\uff0c\u9759\u6001",
    "\u041a\u043e\u0448\u043a\u0430 \u0441\u043f\u0438\u0442 \u043d\u0430 \u043f\u043e\u0434\u043e\u043a\u043e\u043d\u043d\u0438\u043a\u0435",
    "emoji \U0001F600 and \U0001F43C panda, unknown chars \u2603 \u16A0",
    "special tokens in text: hello </s> world <pad> x<unk>y <extra_id_0> <extra_id_99> <extra_id_100>",
    "numbers 1234567890 and 3.14159, 1/2, 85mm f/1.8, \u00bd \u2474 \u2460",
    "punctuation!!! ??? ... --- ___ *** (((nested))) [brackets] {braces}",
    "Mixed\tWhitespace \u000b vertical tab \u000c form feed",
    LONG,
]

# (prompt index, max_length): a few prompts also at a short length to test truncation.
SHORT_CASES = [(0, 4), (0, 9), (0, 10), (7, 1), (26, 6)]



# The byte-level BPE fixtures' shared parts (llama_tokenizer_fixture.py, qwen2_tokenizer_fixture.py).
# The characters their "random_split" strings mix: white space, contraction letters, digits,
# punctuation, marks and other scripts (the classes the Split regexes tell apart).
SPLIT_POOL = list(" \t\n\r\u00a0\u3000\u2028'\u017f") + list("sStTrReEvVmMlLdD") + list("0123\u0663\u2167\u00bd") + \
    list("!?.,-_'\"(") + ["\u0301", "\u1c89", "\ua7cb", "\U0001F600", "\u4e00", "\u0905", "\u093f", "\u0130"]


def random_split_cases(split, seed, count=300):
    """The Split pre-tokenizer's pieces of `count` random strings (1 to 12 SPLIT_POOL characters)."""
    import random
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        text = "".join(rng.choice(SPLIT_POOL) for _ in range(rng.randint(1, 12)))
        cases.append({"text": text, "pieces": [piece for piece, _ in split.pre_tokenize_str(text)]})
    return cases


def write_bpe_cases(path, generator, cases, random_split, family, family_cases, out_dir):
    """Writes a fixture's cases JSON: generator, versions, cases, random_split, then `family`'s."""
    import tokenizers
    out = {"generator": generator,
           "versions": {"tokenizers": tokenizers.__version__, "transformers": transformers.__version__},
           "cases": cases, "random_split": random_split, family: family_cases}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=True, indent=0)
    print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(cases)} prompts); {out_dir}: {os.listdir(out_dir)}")


def main():
    wan = load("wan.modules.tokenizers")
    model = os.path.join(DATA, "tiny_spiece.model")
    with tempfile.TemporaryDirectory() as d:
        shutil.copy(model, os.path.join(d, "spiece.model"))
        with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
            json.dump({"tokenizer_class": "T5Tokenizer"}, f)
        cases = []
        jobs = [(i, 512) for i in range(len(PROMPTS))] + SHORT_CASES
        tokenizers = {}
        for idx, max_length in jobs:
            if max_length not in tokenizers:
                tokenizers[max_length] = wan.HuggingfaceTokenizer(name=d, seq_len=max_length, clean="whitespace")
            tok = tokenizers[max_length]
            prompt = PROMPTS[idx]
            ids, mask = tok([prompt], return_mask=True, add_special_tokens=True)
            ids, mask = ids[0].tolist(), mask[0].tolist()
            length = int(sum(mask))
            assert ids[length:] == [0] * (max_length - length)
            cleaned = tok._clean(prompt)
            # The same cleaning without ftfy's final NFC step: vidax reproduces this
            # string exactly (NFC is left to the tokenizer's NFKC normalizer).
            cleaned_no_nfc = wan.whitespace_clean(
                wan.html.unescape(wan.html.unescape(ftfy.fix_text(prompt, normalization=None))).strip())
            untruncated = len(tok.tokenizer(cleaned, add_special_tokens=True)["input_ids"])
            cases.append({
                "prompt": prompt,
                "max_length": max_length,
                "cleaned": cleaned,
                "cleaned_no_nfc": cleaned_no_nfc,
                "ids": ids[:length],
                "length": length,
                "truncated": untruncated > max_length,
            })
    out = {
        "generator": "tools/golden/tokenizer_fixture.py",
        "reference": "wan/modules/tokenizers.py HuggingfaceTokenizer(clean='whitespace')",
        "versions": {"transformers": transformers.__version__, "ftfy": ftfy.__version__},
        "model": "tiny_spiece.model",
        "cases": cases,
    }
    # The same tokenizer as transformers saves it (the diffusers tokenizer/ layout
    # minus spiece.model): tokenizer.json + tokenizer_config.json.
    saved = os.path.join(DATA, "hf_saved_tokenizer")
    shutil.rmtree(saved, ignore_errors=True)
    tokenizers[512].tokenizer.save_pretrained(saved)
    path = os.path.join(DATA, "tokenizer_cases.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=True, indent=1)
    print(f"wrote {path}: {len(cases)} cases")


if __name__ == "__main__":
    main()
