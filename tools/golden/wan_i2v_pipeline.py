"""Golden end-to-end runs of the OFFICIAL Wan 2.1 image-to-video and first-last-frame code on tiny
random weights, on the CPU, for the parity kind wan.pipeline.i2v (tests/wan).

It calls the reference's own WanI2V.generate() (wan/image2video.py) and WanFLF2V.generate()
(wan/first_last_frame2video.py) - the image's to_tensor and [-1, 1] scaling, the size from the
image's aspect ratio at max_area, the mask, CLIPModel.visual, the bicubic resize and VAE encoding of
the conditioning frames, the noise from a seeded CPU torch.Generator, the UniPC loop with CFG and
the task's default negative prompt, WanVAE.decode - with the parts built here instead of loaded
from a 14B checkpoint. Deviations, all for running on a CPU at fp32, none in the math, as
tools/golden/wan_pipeline.py: objects assembled without their CUDA-bound __init__s, flash
attention replaced by an fp32 softmax attention with the same key-length masking, autocast inactive.

The tiny architecture is vidax's wan2.1-i2v-tiny-demo / wan2.1-flf2v-tiny-demo presets
(src/models/wan/presets.cpp): the tiny T2V parts, an I2V DiT (in_dim 36), and a CLIP whose visual
tower has the real width (the DiT's img_emb hard-codes 1280) and 257 tokens (32 px, patch 2) but a
single block, which use_31_block=True skips (the CLIP blocks are covered by wan_clip_visual_tiny).
DiT and CLIP weights are rounded to bf16 and stored so (the runs use those values in fp32).

Writes tests/golden/pipeline/wan_i2v_tiny/ (original layout: config.json, the I2V DiT, the FLF2V DiT
as flf2v_diffusion_pytorch_model.safetensors with its config in the metadata, Wan2.1_VAE, UMT5,
the CLIP, the tokenizer, vidax_model.json) and two golden files of kind wan.pipeline.i2v:
  wan_i2v_tiny.safetensors    I2V, 5 frames at the area of 48x32, a 56x40 image;
  wan_flf2v_tiny.safetensors  FLF2V, 81 frames (the reference's mask is built for 81) at the area
                              of 16x32, a 40x56 first frame and a 50x30 last frame (the reference's
                              resize + centre crop of a last frame of another size).
Each: config = the request + weights (+ diffusion_model); input.image (and input.last_image)
[3, H, W] in [-1, 1] as to_tensor().sub_(0.5).div_(0.5) makes them; output.latents, output.video;
inter.noise, inter.timesteps, inter.z (the VAE encoding of the conditioning frames, y without its mask).

Usage: WAN21_REPO=/work/ref/wan21 python tools/golden/wan_i2v_pipeline.py
"""
import copy
import json
import os
import shutil
import sys
import types

import numpy as np
import torch
from easydict import EasyDict
from PIL import Image
from safetensors.torch import save_file

import wan_pipeline as t2v  # the shared tiny parts, randomize(), fp32 attention (importing loads the reference)
from wan_reference import load
from wan_tiny_parts import t5_encoder_model, wan21_vae

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
OUT_DIR = os.environ.get("OUT_DIR", os.path.join(ROOT, "tests", "golden", "pipeline", "wan_i2v_tiny"))
OUT = os.environ.get("OUT", os.path.join(ROOT, "tests", "golden", "pipeline"))

DIT = dict(t2v.DIT, model_type="i2v", in_dim=36)
FLF_DIT = dict(DIT, model_type="flf2v")
# XLMRobertaCLIP init args: the visual tower at the real width with one (skipped) block; a toy text tower.
CLIP = dict(embed_dim=16, image_size=32, patch_size=2, vision_dim=1280, vision_mlp_ratio=4, vision_heads=2,
            vision_layers=1, vision_pool="token", vision_pre_norm=True, vision_post_norm=False,
            activation="gelu", vocab_size=64, max_text_len=16, type_size=1, pad_id=1, text_dim=16,
            text_heads=2, text_layers=1, text_post_norm=True, text_dropout=0.0, attn_dropout=0.0,
            proj_dropout=0.0, embedding_dropout=0.0, norm_eps=1e-5)
I2V_REQUEST = dict(prompt="a red panda climbing a bamboo tree in the snow", negative_prompt="", frames=5,
                   height=32, width=48, steps=3, seed=42, guidance=5.0, shift=3.0, sampler="unipc")
FLF_REQUEST = dict(I2V_REQUEST, prompt="a bird lands on a branch", frames=81, height=16, width=32, steps=2,
                   seed=7, shift=16.0)

clip_mod = load("wan.modules.clip")
clip_mod.flash_attention = t2v.fp32_attention
fsdp = sys.modules["wan.distributed.fsdp"]
i2v_mod = load("wan.image2video")
flf_mod = load("wan.first_last_frame2video")
configs = load("wan.configs")


def bf16(module):
    """Rounds every parameter to bf16 (the stored values; the run computes with them in fp32)."""
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(p.bfloat16().float())


def visual_state(model):
    """What CLIPModel.visual(use_31_block=True) reads: the visual tower without its last block."""
    last = f"visual.transformer.{CLIP['vision_layers'] - 1}."
    return {k: v for k, v in model.state_dict().items()
            if k.startswith("visual.") and not k.startswith(last) and not k.startswith("visual.head")
            and not k.startswith("visual.post_norm")}


def image(shape, seed):
    """A smooth random RGB picture (PIL), so bicubic resizing sees structure, not only noise."""
    rng = np.random.default_rng(seed)
    h, w = shape
    yy, xx = np.mgrid[0:h, 0:w]
    chans = [np.sin(xx / (3 + 2 * c) + rng.random() * 6) * np.cos(yy / (4 + c) + rng.random() * 6) for c in range(3)]
    a = (np.stack(chans, -1) * 0.45 + 0.5 + rng.random((h, w, 3)) * 0.1) * 255
    return Image.fromarray(np.clip(a, 0, 255).astype(np.uint8))


def main():
    import torchvision.transforms.functional as TF
    gen = torch.Generator().manual_seed(4321)
    if os.path.isdir(OUT_DIR):
        shutil.rmtree(OUT_DIR)
    # The T2V golden's tokenizer, T5 and VAE architecture, with fresh random weights here.
    tok_dir = os.path.join(OUT_DIR, "google", "umt5-xxl")
    os.makedirs(tok_dir)
    shutil.copy(t2v.SPIECE, os.path.join(tok_dir, "spiece.model"))
    hf_tok_dir = os.path.join(OUT_DIR, "_hf_tokenizer")
    os.makedirs(hf_tok_dir)
    shutil.copy(t2v.SPIECE, os.path.join(hf_tok_dir, "spiece.model"))
    with open(os.path.join(hf_tok_dir, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "T5Tokenizer"}, f)
    tokenizer = t2v.tok_mod.HuggingfaceTokenizer(name=hf_tok_dir, seq_len=DIT["text_len"], clean="whitespace")
    shutil.rmtree(hf_tok_dir)
    t5_cfg = dict(t2v.T5, vocab=len(tokenizer.tokenizer))

    dit = t2v.model_mod.WanModel(**DIT).eval().requires_grad_(False)
    t2v.randomize(dit, gen)
    bf16(dit)
    flf_dit = t2v.model_mod.WanModel(**FLF_DIT).eval().requires_grad_(False)
    t2v.randomize(flf_dit, gen)
    bf16(flf_dit)
    vae = t2v.vae_mod.WanVAE_(**t2v.VAE).eval().requires_grad_(False)
    t2v.randomize(vae, gen)
    t5 = t2v.t5_mod.T5Encoder(**t5_cfg, dropout=0.0).eval().requires_grad_(False)
    t2v.randomize(t5, gen)
    t5 = t5.to(torch.bfloat16)
    clip = clip_mod.XLMRobertaCLIP(**CLIP).eval().requires_grad_(False)
    t2v.randomize(clip, gen)
    with torch.no_grad():  # XLMRobertaCLIP's own init scales for the class and position embeddings
        clip.visual.cls_embedding.copy_(torch.randn(clip.visual.cls_embedding.shape, generator=gen) * 0.1)
        clip.visual.pos_embedding.copy_(torch.randn(clip.visual.pos_embedding.shape, generator=gen) * 0.1)
    bf16(clip)

    meta = {"format": "pt"}
    to16 = lambda sd: {k: v.contiguous().to(torch.bfloat16) for k, v in sd.items()}
    save_file(to16(dit.state_dict()), os.path.join(OUT_DIR, "diffusion_pytorch_model.safetensors"), meta)
    flf_json = dict(FLF_DIT, patch_size=list(FLF_DIT["patch_size"]), window_size=list(FLF_DIT["window_size"]))
    save_file(to16(flf_dit.state_dict()), os.path.join(OUT_DIR, "flf2v_diffusion_pytorch_model.safetensors"),
              dict(meta, config=json.dumps(flf_json)))
    save_file({k: v.contiguous() for k, v in vae.state_dict().items()},
              os.path.join(OUT_DIR, "Wan2.1_VAE.safetensors"), meta)
    save_file({k: v.contiguous() for k, v in t5.state_dict().items()},
              os.path.join(OUT_DIR, "models_t5_umt5-xxl-enc-bf16.safetensors"), meta)
    save_file(to16(visual_state(clip)),
              os.path.join(OUT_DIR, "models_clip_open-clip-xlm-roberta-large-vit-huge-14.safetensors"), meta)
    dit_json = dict(DIT, patch_size=list(DIT["patch_size"]), window_size=list(DIT["window_size"]))
    with open(os.path.join(OUT_DIR, "config.json"), "w") as f:
        json.dump(dict(dit_json, _class_name="WanModel"), f, indent=1)
    with open(os.path.join(OUT_DIR, "vidax_model.json"), "w") as f:
        json.dump({"model": "wan2.1-i2v-tiny-demo", "dit": dit_json, "vae": t2v.VAE, "t5": t5_cfg, "clip": CLIP,
                   "note": "made by tools/golden/wan_i2v_pipeline.py"}, f, indent=1)

    # The parts, assembled without their CUDA-bound __init__s (as tools/golden/wan_pipeline.py).
    text_encoder = t5_encoder_model(t2v.t5_mod, t5, tokenizer, DIT["text_len"])
    wan_vae = wan21_vae(t2v.vae_mod, vae)
    captured = {}
    encode, decode = wan_vae.encode, wan_vae.decode

    def encode_and_capture(videos):
        out = encode(videos)
        captured["z"] = out[0].clone()
        return out

    def decode_and_capture(zs):
        captured["latents"] = zs[0].clone()
        return decode(zs)

    wan_vae.encode = encode_and_capture
    wan_vae.decode = decode_and_capture
    cm = clip_mod.CLIPModel.__new__(clip_mod.CLIPModel)
    cm.dtype = torch.float32
    cm.device = torch.device("cpu")
    cm.model = clip
    T = sys.modules["torchvision.transforms"]
    cm.transforms = T.Compose([T.Resize((CLIP["image_size"],) * 2), T.ToTensor(),
                               T.Normalize(mean=[0.48145466, 0.4578275, 0.40821073],
                                           std=[0.26862954, 0.26130258, 0.27577711])])

    def assemble(cls, model, cfg):
        pipe = cls.__new__(cls)
        pipe.device = torch.device("cpu")
        pipe.config = cfg
        pipe.rank = 0
        pipe.t5_cpu = True
        pipe.num_train_timesteps = 1000
        pipe.param_dtype = torch.float32
        pipe.text_encoder = text_encoder
        pipe.vae_stride = (4, 8, 8)
        pipe.patch_size = (1, 2, 2)
        pipe.vae = wan_vae
        pipe.clip = cm
        pipe.model = model
        pipe.sp_size = 1
        pipe.sample_neg_prompt = cfg.sample_neg_prompt
        return pipe

    def run(pipe, r, images, name, model_name, extra):
        captured.clear()
        g = torch.Generator().manual_seed(r["seed"])
        kw = dict(max_area=r["height"] * r["width"], frame_num=r["frames"], shift=r["shift"],
                  sample_solver=r["sampler"], sampling_steps=r["steps"], guide_scale=r["guidance"],
                  n_prompt=r["negative_prompt"], seed=r["seed"], offload_model=False)
        video = pipe.generate(r["prompt"], *images, **kw)
        z = captured["latents"]
        noise = torch.randn(z.shape, dtype=torch.float32, generator=g)
        sched = sys.modules["wan.utils.fm_solvers_unipc"].FlowUniPCMultistepScheduler(
            num_train_timesteps=1000, shift=1, use_dynamic_shifting=False)
        sched.set_timesteps(r["steps"], device="cpu", shift=r["shift"])
        ins = [TF.to_tensor(im).sub_(0.5).div_(0.5) for im in images]
        tensors = {"input.image": ins[0].contiguous(), "output.latents": z.contiguous(),
                   "output.video": video.contiguous(), "inter.noise": noise,
                   "inter.timesteps": sched.timesteps.to(torch.float64).contiguous(),
                   "inter.z": captured["z"].contiguous()}
        if len(ins) > 1:
            tensors["input.last_image"] = ins[1].contiguous()
        config = dict(r, model=model_name, weights="wan_i2v_tiny", precision="fp32", torch_version=torch.__version__,
                      **extra)
        path = os.path.join(OUT, name)
        save_file(tensors, path, {"kind": "wan.pipeline.i2v", "config": json.dumps(config)})
        print("wrote", path, {k: list(v.shape) for k, v in tensors.items()},
              "video range", float(video.min()), float(video.max()))

    with torch.no_grad():
        run(assemble(i2v_mod.WanI2V, dit, configs.WAN_CONFIGS["i2v-14B"]), I2V_REQUEST, [image((40, 56), 1)],
            "wan_i2v_tiny.safetensors", "wan2.1-i2v-tiny-demo", {})
        run(assemble(flf_mod.WanFLF2V, flf_dit, configs.WAN_CONFIGS["flf2v-14B"]), FLF_REQUEST,
            [image((56, 40), 2), image((30, 50), 3)], "wan_flf2v_tiny.safetensors", "wan2.1-flf2v-tiny-demo",
            {"diffusion_model": "wan_i2v_tiny/flf2v_diffusion_pytorch_model.safetensors"})


if __name__ == "__main__":
    main()
