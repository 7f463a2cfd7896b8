#!/usr/bin/env python3
"""Writes a tiny Gemma-3-structured tokenizer and what the official LTX-2 path makes of hard prompts with
it (text::GemmaTokenizer's fixture, tests/text/test_gemma_tokenizer.cpp; ltx2::tokenize_prompt's,
tests/ltx2/test_prompt.cpp):

  tests/text/data/gemma3_bpe/tokenizer.json, tokenizer_config.json
      sentencepiece's BPE trainer (vocab 1000, byte_fallback, digits split, whitespace-only pieces,
      no dummy prefix, identity normalization: Gemma's trainer flags) on tests/text/data/corpus.txt,
      turned into a tokenizers BPE the way transformers' GemmaConverter does (the vocabulary in
      sentencepiece's order, merges from transformers' generate_merges by piece score), with
      Gemma-3's tokenizer.json layout: normalizer Replace(" " -> U+2581), no pre-tokenizer, BPE
      (unk <unk>, fuse_unk, byte_fallback), post-processor TemplateProcessing "<bos> $A", added tokens
      <pad> <eos> <bos> <unk> <mask> [multimodal] <unused0..3> <start_of_turn> <end_of_turn> (special,
      not normalized), <start_of_image> <end_of_image> <image_soft_token> (special, appended), and two
      non-special ones: "\\n\\n\\n" (not normalized) and "red panda" (normalized: matched as
      "red\u2581panda"); tokenizer_config.json as Gemma-3's (add_bos_token true, add_eos_token false,
      bos / eos / pad / unk tokens, boi / eoi / image tokens).
  tests/text/data/gemma3_bpe_cases.json
      "cases": per prompt, the OFFICIAL tokenizer the LTX-2 pipeline builds
      (ltx_core.text_encoders.gemma.gemma_assets.build_gemma_hf_tokenizer on those files:
      transformers' PreTrainedTokenizerFast over tokenizers' Tokenizer.from_buffer) called as
      tokenizer(prompt)["input_ids"] and with add_special_tokens=False; "random": the ids of 300 random
      strings of white space, U+2581, special-token fragments, added-token pieces, CJK, emoji, marks;
      "variants": tokenizer.json edits the C++ must follow too (pre_tokenizer Split(" ",
      MergedWithPrevious) as transformers 5's GemmaTokenizer writes it; byte_fallback off, so unknown
      characters become one fused <unk>; <0xF0> removed, so 4-byte characters become <unk> while
      other unknown ones still fall back to bytes; a Sequence of Prepend("\u2581") and the Replace, as
      older SentencePiece conversions have it), each with the ids of every prompt;
      "ltx2": the OFFICIAL LTXGemmaTokenizer(build_gemma_hf_tokenizer(assets), max_length, LEFT)
      .tokenize_with_weights(prompt) (strip, BOS, truncation, left padding, mask) at the pipeline's
      max_length 1024 and at short lengths, also with tokenizer_config.json variants (no pad_token: pad
      = eos; add_bos_token false: the wrapper prepends BOS itself).

Usage: /work/venv-golden/bin/python tools/golden/gemma_tokenizer_fixture.py
"""
import copy
import io
import json
import os
import random
import sys

import sentencepiece as spm
import tokenizers
import transformers
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, processors
from transformers.tokenization_utils_base import generate_merges

from llama_tokenizer_fixture import PROMPTS as BPE_PROMPTS

sys.path.insert(0, os.environ.get("LTX2_CORE", "/work/ref/ltx2/packages/ltx-core/src"))
from ltx_core.text_encoders.gemma.gemma_assets import GemmaAssets, build_gemma_hf_tokenizer  # noqa: E402
from ltx_core.text_encoders.gemma.tokenizer import LTXGemmaTokenizer, PaddingSide  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "text", "data")
OUT_DIR = os.path.join(DATA, "gemma3_bpe")

SPM_SPECIALS = ["<mask>", "[multimodal]", "<unused0>", "<unused1>", "<unused2>", "<unused3>", "<start_of_turn>",
                "<end_of_turn>"]
APPENDED_SPECIALS = ["<start_of_image>", "<end_of_image>", "<image_soft_token>"]

LONG = " ".join(f"Shot {i}: the {c} lantern sways over the quiet canal as boats drift past the old stone bridge."
                for i, c in enumerate(["amber", "jade", "crimson", "ivory", "cobalt", "violet"] * 9))

PROMPTS = BPE_PROMPTS + [
    "<start_of_turn>user\nA red panda<end_of_turn>\n<start_of_turn>model\n",
    "<bos>already a bos, then <eos> and <pad> and <unk> <mask> [multimodal] <unused3>",
    "broken specials: <start_of_tur <end_of_turn <bos <unused9> <unused 0>",
    "<start_of_image><image_soft_token><end_of_image> image tokens",
    "red panda, red  panda, redpanda, Red panda, a red panda\n\n\nthree newlines\n\n\n\nfour\n\n",
    "literal meta \u2581 symbol \u2581\u2581 and a space\u2581 mix",
    "   \t padded with mixed white space \u3000\u00a0\n ",
    "rare: \u0e01\u0e32\u0e23 \u10d0\u10d1 \u13a0 \U00010348 \U0001D11E \u2603\ufe0f \U0001F1FA\U0001F1F8 \u0000nul",
    "astral then bytes: \U0001F600\u2603\U0001F601\U0001F602\u0e01x\U0001F603",
    "a" * 300,
    "  double  spaces  everywhere  and   triple   ",
    LONG,
]

# (prompt index, max_length) beyond the pipeline's 1024.
SHORT = [(0, 4), (0, 9), (len(BPE_PROMPTS), 6), (len(BPE_PROMPTS) + 1, 3), (1, 2), (2, 5), (len(PROMPTS) - 1, 16)]


def train_spm(corpus):
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus), model_writer=buf, model_type="bpe", vocab_size=1000, byte_fallback=True,
        character_coverage=0.995, split_digits=True, allow_whitespace_only_pieces=True, add_dummy_prefix=False,
        remove_extra_whitespaces=False, normalization_rule_name="identity", split_by_whitespace=True,
        pad_id=0, eos_id=1, bos_id=2, unk_id=3, pad_piece="<pad>", eos_piece="<eos>", bos_piece="<bos>",
        unk_piece="<unk>", user_defined_symbols=SPM_SPECIALS, minloglevel=2)
    return spm.SentencePieceProcessor(model_proto=buf.getvalue())


def build(sp):
    pieces = [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())]
    vocab = {p: i for i, (p, _) in enumerate(pieces)}
    merges = generate_merges(vocab, pieces)  # by piece score, as GemmaConverter orders them
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=True, byte_fallback=True,
                               dropout=None))
    tok.normalizer = normalizers.Replace(" ", "\u2581")
    tok.pre_tokenizer = None
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()])
    specials = [sp.id_to_piece(i) for i in range(4)] + SPM_SPECIALS + APPENDED_SPECIALS
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    tok.add_tokens([AddedToken("\n\n\n", special=False, normalized=False),
                    AddedToken("red panda", special=False, normalized=True)])
    bos = tok.token_to_id("<bos>")
    tok.post_processor = processors.TemplateProcessing(single="<bos> $A", pair="<bos> $A <bos> $B",
                                                       special_tokens=[("<bos>", bos)])
    return tok


def tokenizer_config(tok):
    decoder = {}
    for i in range(tok.get_vocab_size(with_added_tokens=True)):
        t = tok.id_to_token(i)
        added = tok.get_added_tokens_decoder().get(i)
        if added is not None:
            decoder[str(i)] = {"content": t, "lstrip": added.lstrip, "normalized": added.normalized,
                               "rstrip": added.rstrip, "single_word": added.single_word, "special": added.special}
    return {"add_bos_token": True, "add_eos_token": False, "added_tokens_decoder": decoder,
            "boi_token": "<start_of_image>", "bos_token": "<bos>", "clean_up_tokenization_spaces": False,
            "eoi_token": "<end_of_image>", "eos_token": "<eos>", "image_token": "<image_soft_token>",
            "model_max_length": 1000000000000000019884624838656, "pad_token": "<pad>",
            "processor_class": "Gemma3Processor", "sp_model_kwargs": None, "spaces_between_special_tokens": False,
            "tokenizer_class": "GemmaTokenizer", "unk_token": "<unk>", "use_default_system_prompt": False}


def official(tokenizer_json, config):
    assets = GemmaAssets(source="fixture", config_dict={}, tokenizer_json=tokenizer_json.encode("utf-8"),
                         sidecars={"tokenizer_config.json": json.dumps(config).encode("utf-8")}, weight_paths=())
    return assets


def main():
    with open(os.path.join(DATA, "corpus.txt"), encoding="utf-8") as f:
        corpus = [line.rstrip("\n") for line in f]
    sp = train_spm(corpus)
    tok = build(sp)
    tok_json = tok.to_str(pretty=True)
    config = tokenizer_config(tok)
    os.makedirs(OUT_DIR, exist_ok=True)
    with open(os.path.join(OUT_DIR, "tokenizer.json"), "w", encoding="utf-8") as f:
        f.write(tok_json)
    with open(os.path.join(OUT_DIR, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=True, indent=2)
    assets = official(tok_json, config)
    hf = build_gemma_hf_tokenizer(assets)
    cases, differ_spm = [], 0
    for p in PROMPTS:
        ids = hf(p)["input_ids"]
        cases.append({"text": p, "ids": ids, "ids_no_special": hf(p, add_special_tokens=False)["input_ids"]})
        differ_spm += hf(p, add_special_tokens=False)["input_ids"] != sp.encode(p)
    print(f"{len(PROMPTS)} prompts, longest {max(len(c['ids']) for c in cases)} ids; sentencepiece itself "
          f"differs on {differ_spm} (added tokens, merges by score)")

    # Random strings mixing what the added-token split, the normalizer, byte fallback and the merges
    # tell apart.
    rng = random.Random(7)
    pool = [" ", "  ", "\t", "\n", "\n\n", "\n\n\n", "\u2581", "\u3000", "<", ">", "bos", "<bos>", "<eos",
            "<start_of_turn>", "_of_turn>", "red", " panda", "red panda", "re", "d pa", "nda", "the", " a", "ing",
            "\u4e00", "\u955c", "\U0001F600", "\u0301", "e", "x", "1", "23", "\u00e9", "\u0000", "[multimodal]"]
    random_cases = []
    for _ in range(300):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(1, 14)))
        random_cases.append({"text": text, "ids": hf(text)["input_ids"]})

    # tokenizer.json variants (path in the JSON, new value).
    base = json.loads(tok_json)
    variants = []
    for name, edit in [("split_merged_with_previous", lambda j: j.__setitem__(
                            "pre_tokenizer", {"type": "Split", "pattern": {"String": " "},
                                              "behavior": "MergedWithPrevious", "invert": False})),
                       ("no_byte_fallback", lambda j: j["model"].__setitem__("byte_fallback", False)),
                       ("no_byte_f0", lambda j: j["model"]["vocab"].pop("<0xF0>")),
                       ("prepend_sequence", lambda j: j.__setitem__("normalizer", {"type": "Sequence", "normalizers": [
                           {"type": "Prepend", "prepend": "\u2581"},
                           {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}))]:
        j = copy.deepcopy(base)
        edit(j)
        h = build_gemma_hf_tokenizer(official(json.dumps(j), config))
        variants.append({"name": name, "ids": [h(p)["input_ids"] for p in PROMPTS]})
        same = sum(v == c["ids"] for v, c in zip(variants[-1]["ids"], cases))
        print(f"variant {name}: {same}/{len(PROMPTS)} prompts as the base tokenizer")

    # LTXGemmaTokenizer, as the pipeline builds it (build_gemma_tokenizer: max_length 1024, LEFT).
    ltx = []
    config_variants = [("base", config), ("no_pad_token", {k: v for k, v in config.items() if k != "pad_token"}),
                       ("no_add_bos", {**config, "add_bos_token": False})]
    for cname, cfg in config_variants:
        jobs = [(i, 1024) for i in range(len(PROMPTS))] if cname == "base" else []
        jobs += SHORT
        for idx, max_length in jobs:
            t = LTXGemmaTokenizer(build_gemma_hf_tokenizer(official(tok_json, cfg)), max_length, PaddingSide.LEFT)
            out = t.tokenize_with_weights(PROMPTS[idx])["gemma"]
            ids = [int(a) for a, _ in out]
            mask = [int(b) for _, b in out]
            n_pad = mask.count(0)
            assert mask == [0] * n_pad + [1] * (max_length - n_pad)
            ltx.append({"config": cname, "prompt": idx, "max_length": max_length, "pad_id": ids[0] if n_pad else None,
                        "n_pad": n_pad, "ids": ids[n_pad:]})
    out = {"generator": "tools/golden/gemma_tokenizer_fixture.py",
           "versions": {"tokenizers": tokenizers.__version__, "transformers": transformers.__version__,
                        "sentencepiece": spm.__version__},
           "prompts": PROMPTS, "cases": cases, "random": random_cases, "variants": variants, "ltx2": ltx}
    path = os.path.join(DATA, "gemma3_bpe_cases.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=True, separators=(",", ":"))
    print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(ltx)} LTX-2 rows); {OUT_DIR}: "
          f"{sorted(os.listdir(OUT_DIR))} ({os.path.getsize(os.path.join(OUT_DIR, 'tokenizer.json'))} bytes)")


if __name__ == "__main__":
    main()
