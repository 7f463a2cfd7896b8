"""Golden files for the LTX-2 text path: Gemma-3 hidden states -> feature extractor (kind ltx2.text.gemma3).

Drives the OFFICIAL code: ltx_core.text_encoders.gemma.encoders.base_encoder.LTXGemmaTextEncoder.encode
(Lightricks/LTX-2, imported from $LTX2_CORE, default /work/ref/ltx2/packages/ltx-core/src) around a tiny
transformers Gemma3ForConditionalGeneration (seeded random weights, fp32, CPU; a one-layer SigLIP tower
that text-only prompts never run), then the official FeatureExtractorV1 (LTX-2 19B: per-prompt masked
mean / range normalisation, aggregate_embed without bias, returned for video and audio) or
FeatureExtractorV2 (LTX-2.3 22B: per-token RMS, rescale, video and audio aggregate embeds with bias).
The real Gemma tokenizer is not used: encode() is given a stand-in with the official
tokenize_with_weights interface returning fixed, LEFT-padded ids (the official LTX tokenizer pads
on the left, pad id 0), so the token ids are the input. As the pipeline does, every prompt goes
through the extractor alone (B = 1) and the rows are stacked.

Each file holds the Gemma-3 text model's parameters under Gemma3TextModel's names (embed_tokens.weight,
layers.{i}.*, norm.weight), the extractor's under its official names prefixed `feature_extractor.`
(aggregate_embed.weight, or video_/audio_aggregate_embed.{weight,bias}), input.input_ids [B, L] (I64),
input.attention_mask [B, L] (I64, left-padded), output.video and output.audio ([B, L, D_out]),
__metadata__.kind and __metadata__.config ({"text_config": the Gemma3TextConfig dict, "feature_extractor":
"v1" | "v2"}).

  ltx2_text_gemma3_v1.safetensors  3 layers (sliding, sliding, full: window 3), linear rope scaling on
                                   the full layer, left padding 3 / 0, B = 2, L = 8
  ltx2_text_gemma3_v2.safetensors  4 layers (window 4), default rope, GQA 4:1, padding 0 / 5, B = 2, L = 9
  ltx2_text_gemma3_v2_context.safetensors  the v2 model and extractor, then the connectors as
                                   EmbeddingsProcessor.process_hidden_states runs them (config.connectors
                                   {"video", "audio"}: connector init args; params video_connector.* /
                                   audio_connector.*): also output.video_context, output.audio_context,
                                   output.context_mask
  ltx2_text_gemma3_prompts.safetensors  the same path from prompt STRINGS: the official LTXGemmaTokenizer
                                   (as base_encoder.build_gemma_tokenizer builds it, LEFT padding, but
                                   max_length 21 instead of 1024) over the tiny Gemma-structured tokenizer
                                   tests/text/data/gemma3_bpe (tools/golden/gemma_tokenizer_fixture.py),
                                   vocabulary 1005; config.prompts / config.max_length / config.tokenizer
                                   record the strings, input.* the official ids and mask

The embeddings connectors (kind ltx2.text.connector): the OFFICIAL EmbeddingsProcessor.create_embeddings
(embeddings_processor.py: the stable reorder of each row to [valid, pad], the video connector, the
output times the binary mask derived from the connector's returned mask, the audio connector) on
random features with tiny Embeddings1DConnector configs (seeded random weights, the learnable
registers kept as their bf16 init, fp32 CPU). Each file holds the processor's state dict
(video_connector.*, audio_connector.*), input.video_features / input.audio_features [B, S, D],
input.attention_mask [B, S] (I64, 0/1), output.video, output.audio, output.mask, and
__metadata__.config {"video": init args, "audio": init args | null}.

  ltx2_text_connector_registers.safetensors  video 2 heads x 8, 2 layers, 4 registers, split rope;
                                             audio 2 x 4, 1 layer; left padding and a scattered mask
  ltx2_text_connector_plain.safetensors      video only: no registers (the additive pad mask), 2 x 8,
                                             interleaved rope, gated attention, ff without bias, max_pos [16]

Usage: /work/venv-golden/bin/python tools/golden/ltx2_text.py [--out tests/golden/ltx2] [--only FILE]
"""
import argparse
import json
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import Gemma3Config, Gemma3ForConditionalGeneration

sys.path.insert(0, os.environ.get("LTX2_CORE", "/work/ref/ltx2/packages/ltx-core/src"))
from ltx_core.text_encoders.gemma.encoders.base_encoder import LTXGemmaTextEncoder  # noqa: E402
from ltx_core.model.transformer.rope import LTXRopeType  # noqa: E402
from ltx_core.text_encoders.gemma.embeddings_connector import Embeddings1DConnector  # noqa: E402
from ltx_core.text_encoders.gemma.embeddings_processor import EmbeddingsProcessor, convert_to_additive_mask  # noqa: E402
from ltx_core.text_encoders.gemma.feature_extractor import FeatureExtractorV1, FeatureExtractorV2  # noqa: E402
from ltx_core.text_encoders.gemma.gemma_assets import GemmaAssets, build_gemma_hf_tokenizer  # noqa: E402
from ltx_core.text_encoders.gemma.tokenizer import LTXGemmaTokenizer, PaddingSide  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEMMA_TOKENIZER = "tests/text/data/gemma3_bpe"
ONLY = None  # --only

VISION = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
          "image_size": 28, "patch_size": 14}


class FixedTokenizer:
    """tokenize_with_weights as LTXGemmaTokenizer returns it: {"gemma": [(id, mask), ...]}."""

    def __init__(self, rows):
        self.rows = rows

    def tokenize_with_weights(self, prompt):
        ids, mask = self.rows[int(prompt)]
        return {"gemma": list(zip(ids, mask))}


def left_padded(gen, vocab, length, pad):
    ids = [0] * pad + torch.randint(1, vocab, (length - pad,), generator=gen).tolist()
    return ids, [0] * pad + [1] * (length - pad)


def fixture_tokenizer(max_length):
    """The official LTXGemmaTokenizer over the fixture files, as build_gemma_tokenizer makes it."""
    d = os.path.join(ROOT, GEMMA_TOKENIZER)
    with open(os.path.join(d, "tokenizer.json"), "rb") as f:
        tokenizer_json = f.read()
    with open(os.path.join(d, "tokenizer_config.json"), "rb") as f:
        sidecars = {"tokenizer_config.json": f.read()}
    assets = GemmaAssets(source=d, config_dict={}, tokenizer_json=tokenizer_json, sidecars=sidecars, weight_paths=())
    return LTXGemmaTokenizer(build_gemma_hf_tokenizer(assets), max_length, padding_side=PaddingSide.LEFT)


def make(path, text_config, extractor, pads, length, seed, connectors=None, prompts=None):
    if ONLY and os.path.basename(path) != ONLY:
        return
    torch.manual_seed(seed)
    cfg = Gemma3Config(text_config=text_config, vision_config=VISION, mm_tokens_per_image=4)
    model = Gemma3ForConditionalGeneration(cfg).eval()
    lm = model.model.language_model
    with torch.no_grad():
        for name, p in lm.named_parameters():
            if "norm" in name:  # Gemma RMSNorm weights start at 0 (scale 1 + w): move them
                p.copy_(0.3 * torch.randn_like(p))
            else:
                p.copy_(0.2 * torch.randn_like(p))
    tc = cfg.text_config
    d, n_states = tc.hidden_size, tc.num_hidden_layers + 1
    if extractor == "v1":
        fe = FeatureExtractorV1(aggregate_embed=torch.nn.Linear(d * n_states, d, bias=False), is_av=True)
    else:
        fe = FeatureExtractorV2(video_aggregate_embed=torch.nn.Linear(d * n_states, 24, bias=True),
                                embedding_dim=d,
                                audio_aggregate_embed=torch.nn.Linear(d * n_states, 20, bias=True))
    fe.eval()

    gen = torch.Generator().manual_seed(seed + 100)
    if prompts is None:
        rows = [left_padded(gen, tc.vocab_size, length, p) for p in pads]
        tokenizer, inputs = FixedTokenizer(rows), [str(i) for i in range(len(rows))]
    else:  # the real tokenizer: encode() tokenizes the strings itself; rows recorded for input.*
        tokenizer, inputs = fixture_tokenizer(length), prompts
        rows = []
        for p in prompts:
            pairs = tokenizer.tokenize_with_weights(p)["gemma"]
            rows.append(([int(t) for t, _ in pairs], [int(w) for _, w in pairs]))
    enc = LTXGemmaTextEncoder(model=model, tokenizer=tokenizer, dtype=torch.float32)
    videos, audios = [], []
    with torch.no_grad():
        for hidden_states, mask in enc.encode(inputs):
            assert len(hidden_states) == n_states
            v, a = fe(hidden_states, mask, "left")
            videos.append(v)
            audios.append(a)
    video, audio = torch.cat(videos), torch.cat(audios)
    assert torch.isfinite(video).all() and torch.isfinite(audio).all()
    context = None
    if connectors:
        # The whole text path as the pipeline runs it: EmbeddingsProcessor.process_hidden_states per prompt.
        proc = EmbeddingsProcessor(feature_extractor=fe, video_connector=connector(connectors["video"]),
                                   audio_connector=connector(connectors["audio"])).eval()
        parts = []
        with torch.no_grad():
            for hidden_states, mask in enc.encode(inputs):
                parts.append(proc.process_hidden_states(hidden_states, mask, "left"))
        context = [torch.cat([p[i] for p in parts]) for i in range(3)]

    tensors = {k: v.detach().contiguous().float() for k, v in lm.state_dict().items()}
    tensors.update({"feature_extractor." + k: v.detach().contiguous().float() for k, v in fe.state_dict().items()})
    tensors["input.input_ids"] = torch.tensor([r[0] for r in rows], dtype=torch.int64)
    tensors["input.attention_mask"] = torch.tensor([r[1] for r in rows], dtype=torch.int64)
    tensors["output.video"] = video.contiguous()
    tensors["output.audio"] = audio.contiguous()
    if context:
        tensors.update({"video_connector." + k: v.detach().contiguous().float()
                        for k, v in proc.video_connector.state_dict().items()})
        tensors.update({"audio_connector." + k: v.detach().contiguous().float()
                        for k, v in proc.audio_connector.state_dict().items()})
        tensors["output.video_context"] = context[0].contiguous()
        tensors["output.audio_context"] = context[1].contiguous()
        tensors["output.context_mask"] = context[2].to(torch.int64).contiguous()
    text_dict = {k: v for k, v in tc.to_dict().items() if not k.startswith("_") and k != "dtype"}
    config = {"text_config": text_dict, "feature_extractor": extractor}
    if connectors:
        config["connectors"] = connectors
    if prompts is not None:
        config.update({"prompts": prompts, "max_length": length, "tokenizer": GEMMA_TOKENIZER})
    meta = {"kind": "ltx2.text.gemma3", "config": json.dumps(config), "generator": "tools/golden/ltx2_text.py",
            "torch": torch.__version__}
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(tensors)} tensors), video {tuple(video.shape)} "
          f"audio {tuple(audio.shape)} range [{video.min():.3f}, {video.max():.3f}]")


def connector(args):
    c = Embeddings1DConnector(**{**args, "rope_type": LTXRopeType(args["rope_type"])})
    with torch.no_grad():
        for name, p in c.named_parameters():
            if name == "learnable_registers":
                continue  # its own init: rand * 2 - 1 in bf16
            if "norm" in name:
                p.copy_(1.0 + 0.3 * torch.randn_like(p))
            else:
                p.copy_(0.2 * torch.randn_like(p))
    return c.eval()


def make_connector(path, video_args, audio_args, mask_rows, seed):
    if ONLY and os.path.basename(path) != ONLY:
        return
    torch.manual_seed(seed)
    proc = EmbeddingsProcessor(video_connector=connector(video_args),
                               audio_connector=connector(audio_args) if audio_args else None).eval()
    mask = torch.tensor(mask_rows, dtype=torch.int64)
    b, s = mask.shape
    inner = lambda a: a["num_attention_heads"] * a["attention_head_dim"]  # noqa: E731
    video = torch.randn(b, s, inner(video_args))
    audio = torch.randn(b, s, inner(audio_args)) if audio_args else None
    with torch.no_grad():
        v, a, m = proc.create_embeddings(video, audio, convert_to_additive_mask(mask, video.dtype))
    tensors = {k: t.detach().contiguous().float() for k, t in proc.state_dict().items()}
    tensors["input.video_features"] = video
    tensors["input.attention_mask"] = mask
    tensors["output.video"] = v.contiguous()
    tensors["output.mask"] = m.to(torch.int64).contiguous()
    if audio_args:
        tensors["input.audio_features"] = audio
        tensors["output.audio"] = a.contiguous()
    config = {"video": video_args, "audio": audio_args}
    meta = {"kind": "ltx2.text.connector", "config": json.dumps(config), "generator": "tools/golden/ltx2_text.py",
            "torch": torch.__version__}
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(tensors)} tensors), video {tuple(v.shape)} "
          f"range [{v.min():.3f}, {v.max():.3f}], mask {m.tolist()}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/golden/ltx2")
    ap.add_argument("--only", help="write only this file (e.g. ltx2_text_gemma3_prompts.safetensors)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    global ONLY
    ONLY = args.only
    base = {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 48, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 8, "query_pre_attn_scalar": 16, "rms_norm_eps": 1e-6,
            "max_position_embeddings": 64, "pad_token_id": 0}
    make(os.path.join(args.out, "ltx2_text_gemma3_v1.safetensors"),
         {**base, "num_hidden_layers": 3, "sliding_window": 3,
          "layer_types": ["sliding_attention", "sliding_attention", "full_attention"],
          "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
                              "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}},
         "v1", [3, 0], 8, 0)
    make(os.path.join(args.out, "ltx2_text_gemma3_v2.safetensors"),
         {**base, "num_hidden_layers": 4, "num_key_value_heads": 1, "sliding_window": 4,
          "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
          "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                              "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}},
         "v2", [0, 5], 9, 1)
    v2_text = {**base, "num_hidden_layers": 4, "num_key_value_heads": 1, "sliding_window": 4,
               "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
               "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                                   "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}}
    ctx_video = {"attention_head_dim": 8, "num_attention_heads": 3, "num_layers": 1, "positional_embedding_theta": 10000.0,
                 "positional_embedding_max_pos": [1], "num_learnable_registers": 3, "rope_type": "split",
                 "double_precision_rope": True, "apply_gated_attention": False, "ff_bias": True}
    ctx_audio = {**ctx_video, "attention_head_dim": 10, "num_attention_heads": 2}
    make(os.path.join(args.out, "ltx2_text_gemma3_v2_context.safetensors"), v2_text, "v2", [0, 5], 9, 1,
         {"video": ctx_video, "audio": ctx_audio})
    # From prompt strings: stripped, special-token text, a CJK / emoji prompt (byte fallback), one
    # longer than max_length (truncated), an empty one (BOS only).
    prompts = ["  A red panda climbing a bamboo tree in the snow \n",
               "<start_of_turn>user\nA cat and a dog<end_of_turn>",
               "\u955c\u5934\u6643\u52a8 emoji \U0001F600 red panda",
               "An astronaut riding a horse across the surface of the moon, high detail, 4k, slow camera pan",
               ""]
    make(os.path.join(args.out, "ltx2_text_gemma3_prompts.safetensors"), {**v2_text, "vocab_size": 1005}, "v2",
         None, 21, 4, {"video": ctx_video, "audio": ctx_audio}, prompts=prompts)
    video = {"attention_head_dim": 8, "num_attention_heads": 2, "num_layers": 2, "positional_embedding_theta": 10000.0,
             "positional_embedding_max_pos": [1], "num_learnable_registers": 4, "rope_type": "split",
             "double_precision_rope": True, "apply_gated_attention": False, "ff_bias": True}
    audio = {**video, "attention_head_dim": 4, "num_layers": 1}
    make_connector(os.path.join(args.out, "ltx2_text_connector_registers.safetensors"), video, audio,
                   [[0, 0, 0, 1, 1, 1, 1, 1], [1, 0, 1, 1, 0, 1, 1, 1]], 2)
    plain = {**video, "num_layers": 1, "num_learnable_registers": None, "rope_type": "interleaved",
             "apply_gated_attention": True, "ff_bias": False, "positional_embedding_max_pos": [16],
             "positional_embedding_theta": 5000.0}
    make_connector(os.path.join(args.out, "ltx2_text_connector_plain.safetensors"), plain, None,
                   [[0, 0, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 0, 0]], 3)


if __name__ == "__main__":
    main()
