"""Golden end-to-end runs of the OFFICIAL Wan 2.2 code on tiny random weights, on the CPU, for
tests/wan (the pipelines' parity checks), as tools/golden/wan_pipeline.py does for Wan 2.1:

  a14b  WanT2V.generate of wan/text2video.py (Wan 2.2 T2V-A14B): two experts, the high-noise one
        for t >= boundary * num_train_timesteps, each with its own guidance scale (guide_scale
        tuple (low noise, high noise)), the Wan 2.1 VAE. Kind wan.pipeline.t2v_a14b.
  ti2v  WanTI2V.generate of wan/textimage2video.py with img=None (its t2v branch: per-token
        timesteps, all at t), the 48-channel Wan 2.2 VAE. Kind wan.pipeline.ti2v.
  ti2v_image  the same generate() with an image (its i2v branch: best_output_size, PIL LANCZOS
        resize and centre crop, the image's Wan 2.2 VAE latent as the first latent frame, the first
        frame's tokens at t = 0, latent = (1 - mask2) z + mask2 latent before the loop and after each
        step). It reuses the weights the ti2v task wrote (tests/golden/pipeline/wan22_ti2v_tiny/,
        loaded from its files, not regenerated) and writes only wan22_ti2v_image_tiny.safetensors:
        input.image ([H, W, 3] U8, the picture), output.latents, output.video, inter.noise,
        inter.timesteps, inter.z (the image's normalised latent [48, 1, h, w]). Kind wan.pipeline.ti2v.
  i2v_a14b  WanI2V.generate of wan/image2video.py (Wan 2.2 I2V-A14B): two tiny i2v experts (in_dim
        36; Wan 2.2's WanModel has no img_emb, no CLIP), the boundary 0.900, a guidance scale each, y =
        the 4-channel mask + the Wan 2.1 VAE encoding of [bicubic-resized image, zeros] on channels.
        The text encoder, tokenizer and VAE are the a14b task's (copied from its folder, not
        regenerated); writes tests/golden/pipeline/wan22_i2v_a14b_tiny/ and
        wan22_i2v_a14b_tiny.safetensors (input.image [H, W, 3] U8, output.latents, output.video,
        inter.noise, inter.timesteps, inter.expert, inter.z). Kind wan.pipeline.i2v.

Each calls the reference's own generate() - prompt and default negative prompt through
T5EncoderModel, noise from a seeded CPU torch.Generator, the UniPC loop with CFG, the VAE wrapper's
decode - with the parts built here. Deviations, all for running on a CPU at fp32, none in the math:
  * the pipeline object and T5EncoderModel are assembled without __init__ (which hard-codes
    cuda:N and loads the published checkpoints), with device = cpu, so seed_g is a CPU generator;
    the VAE wrappers run their own __init__ (their latent means and stds) with the tiny VAE given
    in place of the checkpoint (_video_vae returns it);
  * flash_attention (CUDA-only, bf16) is replaced by an fp32 softmax attention with the same
    key-length masking (wan_tiny_parts.py);
  * torch.amp.autocast('cuda') is inactive on the CPU, so the DiTs run fp32, and the text encoder
    runs fp32 from its bf16-stored weights (vidax --precision fp32 does the same);
  * textimage2video.py imports torchvision and wan/utils/utils.py imageio (for its image branch
    and for saving videos); where they are not installed, empty stand-ins are imported (the t2v
    branch calls neither).

Writes, for vidax's loader (original layout):
  a14b: tests/golden/pipeline/wan22_a14b_tiny/{high_noise_model/, low_noise_model/ (config.json,
        diffusion_pytorch_model.safetensors), Wan2.1_VAE.safetensors, models_t5_umt5-xxl-enc-bf16.safetensors,
        google/umt5-xxl/spiece.model, vidax_model.json} and tests/golden/pipeline/wan22_a14b_tiny.safetensors
  ti2v: tests/golden/pipeline/wan22_ti2v_tiny/{config.json, diffusion_pytorch_model.safetensors,
        Wan2.2_VAE.safetensors, ...} and tests/golden/pipeline/wan22_ti2v_tiny.safetensors
  config = the request (+ guidance_scales for a14b); output.latents (the final x0 given to the VAE),
  output.video; inter.noise, inter.timesteps, and for a14b inter.expert (F64, 1 = the high-noise
  expert ran the step, 0 = the low-noise one, as the reference chose it).

Usage: WAN22_REPO=/work/ref/wan22 SPIECE=<tiny spiece.model> python tools/golden/wan22_pipeline.py a14b|ti2v|ti2v_image|i2v_a14b
"""
import importlib.util
import json
import os
import shutil
import sys
import types

import torch
from easydict import EasyDict
from safetensors.torch import save_file

import wan_reference
from wan_tiny_parts import fp32_attention, randomize

wan_reference.use_wan22()
load, package = wan_reference.load, wan_reference.package

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SPIECE = os.environ.get("SPIECE", os.path.join(ROOT, "tests", "text", "data", "tiny_spiece.model"))
PIPE_DIR = os.path.join(ROOT, "tests", "golden", "pipeline")

# The tiny architectures of vidax's demo presets (src/models/wan/presets.cpp): wan2.2-t2v-a14b-tiny-demo
# (two experts of the wan2.1-tiny-demo DiT) and wan2.2-ti2v-tiny-demo (ti2v, 48 channels).
DIT = dict(model_type="t2v", patch_size=(1, 2, 2), text_len=512, in_dim=16, dim=64, ffn_dim=128, freq_dim=64,
           text_dim=32, out_dim=16, num_heads=2, num_layers=2, window_size=(-1, -1), qk_norm=True,
           cross_attn_norm=True, eps=1e-6)
DIT_TI2V = dict(DIT, model_type="ti2v", in_dim=48, out_dim=48)
VAE21 = dict(dim=4, z_dim=16, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
             temperal_downsample=[False, True, True])
VAE22 = dict(dim=4, dec_dim=6, z_dim=48, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
             temperal_downsample=[False, True, True])
T5 = dict(dim=32, dim_attn=32, dim_ffn=64, num_heads=2, num_layers=2, num_buckets=32, shared_pos=False)
PROMPT = "a red panda climbing a bamboo tree in the snow"
# a14b: the A14B defaults (shift 12, guide_scale (3.0, 4.0)); 6 steps at shift 12 give timesteps
# 999 ... 706, four at or above the boundary 875 (high noise) and two below (low noise).
REQUEST = {
    "a14b": dict(prompt=PROMPT, negative_prompt="", frames=5, height=32, width=48, steps=6, seed=42,
                 guidance=4.0, guidance_scales=[3.0, 4.0], shift=12.0, sampler="unipc"),
    "ti2v": dict(prompt=PROMPT, negative_prompt="", frames=5, height=64, width=96, steps=3, seed=42, guidance=5.0,
                 shift=5.0, sampler="unipc"),
    # 140x110 picture at the area of 96x64: best_output_size gives 96x64; LANCZOS down to 96x75
    # (antialiased, scale 0.686), then a centre crop of rows 5..69.
    "ti2v_image": dict(prompt=PROMPT, negative_prompt="", frames=5, height=64, width=96, steps=3, seed=11,
                       guidance=5.0, shift=5.0, sampler="unipc"),
}
IMAGE_SIZE = (110, 140)  # (H, W) of the ti2v_image picture
# i2v_a14b: the I2V-A14B defaults (shift 5, boundary 0.9, guide_scale (3.5, 3.5)) but two distinct
# scales (so each expert's is checked); 6 steps at shift 5: 999 ... , some at or above 900.
REQUEST["i2v_a14b"] = dict(prompt=PROMPT, negative_prompt="", frames=5, height=32, width=48, steps=6, seed=5,
                           guidance=3.5, guidance_scales=[3.0, 4.5], shift=5.0, sampler="unipc")
I2V_IMAGE_SIZE = (40, 56)


def stub_missing(name, children=()):
    """An empty module `name` when the package is not installed (imported, never called here)."""
    if importlib.util.find_spec(name) is None and name not in sys.modules:
        sys.modules[name] = types.ModuleType(name)
        for c in children:
            sub = types.ModuleType(name + "." + c)
            sys.modules[name + "." + c] = sub
            setattr(sys.modules[name], c.split(".")[0], sub)


# Import only the module files needed (wan/__init__ pulls optional packages).
torch.cuda.current_device = lambda: "cpu"
model_mod = load("wan.modules.model")
model_mod.flash_attention = fp32_attention
vae21_mod = load("wan.modules.vae2_1")
vae22_mod = load("wan.modules.vae2_2")
t5_mod = load("wan.modules.t5")
tok_mod = load("wan.modules.tokenizers")
load("wan.utils.fm_solvers")
load("wan.utils.fm_solvers_unipc")
fsdp = types.ModuleType("wan.distributed.fsdp")
fsdp.shard_model = None  # imported by the pipelines, used only with FSDP
package("wan.distributed")
sys.modules["wan.distributed.fsdp"] = fsdp
# After diffusers (imported above), which probes for torchvision itself.
stub_missing("torchvision", ["transforms", "transforms.functional"])
stub_missing("imageio")


def tokenizer_and_encoder(out_dir, gen):
    tok_dir = os.path.join(out_dir, "google", "umt5-xxl")
    os.makedirs(tok_dir)
    shutil.copy(SPIECE, os.path.join(tok_dir, "spiece.model"))
    hf_tok_dir = os.path.join(out_dir, "_hf_tokenizer")  # only for transformers' AutoTokenizer here
    os.makedirs(hf_tok_dir)
    shutil.copy(SPIECE, os.path.join(hf_tok_dir, "spiece.model"))
    with open(os.path.join(hf_tok_dir, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "T5Tokenizer"}, f)
    tokenizer = tok_mod.HuggingfaceTokenizer(name=hf_tok_dir, seq_len=DIT["text_len"], clean="whitespace")
    shutil.rmtree(hf_tok_dir)
    t5_cfg = dict(T5, vocab=len(tokenizer.tokenizer))
    t5 = t5_mod.T5Encoder(**t5_cfg, dropout=0.0).eval().requires_grad_(False)
    return tokenizer, t5, t5_cfg


def text_encoder_of(tokenizer, t5):
    enc = t5_mod.T5EncoderModel.__new__(t5_mod.T5EncoderModel)
    enc.text_len = DIT["text_len"]
    enc.dtype = torch.float32
    enc.device = torch.device("cpu")
    enc.model = t5.float()  # fp32 compute from the bf16-stored weights
    enc.tokenizer = tokenizer
    return enc


def vae_wrapper(mod, cls, tiny, **kw):
    """The official wrapper through its own __init__ (its means and stds), the tiny VAE in place of
    the checkpoint; decode records the latents it is given."""
    saved = mod._video_vae
    mod._video_vae = lambda **_: tiny
    try:
        w = cls(vae_pth=None, dtype=torch.float, device="cpu", **kw)
    finally:
        mod._video_vae = saved
    captured = {}
    decode = w.decode

    def decode_and_capture(zs):
        captured["latents"] = zs[0].clone()
        return decode(zs)

    w.decode = decode_and_capture
    return w, captured


def save_dit(dit, folder, cfg):
    os.makedirs(folder, exist_ok=True)
    save_file({k: v.contiguous() for k, v in dit.state_dict().items()},
              os.path.join(folder, "diffusion_pytorch_model.safetensors"), {"format": "pt"})
    j = dict(cfg, patch_size=list(cfg["patch_size"]), window_size=list(cfg["window_size"]))
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(dict(j, _class_name="WanModel"), f, indent=1)
    return j


def new_dit(cfg, gen):
    dit = model_mod.WanModel(**cfg).eval().requires_grad_(False)
    randomize(dit, gen)
    return dit


def picture(shape, seed):
    """A smooth random RGB picture (PIL), so resampling sees structure, not only noise."""
    import numpy as np
    from PIL import Image
    rng = np.random.default_rng(seed)
    h, w = shape
    yy, xx = np.mgrid[0:h, 0:w]
    chans = [np.sin(xx / (3 + 2 * c) + rng.random() * 6) * np.cos(yy / (4 + c) + rng.random() * 6) for c in range(3)]
    a = (np.stack(chans, -1) * 0.45 + 0.5 + rng.random((h, w, 3)) * 0.1) * 255
    return Image.fromarray(np.clip(a, 0, 255).astype(np.uint8))


def main_ti2v_image():
    """WanTI2V.generate with an image, on the weights the ti2v task wrote."""
    from safetensors.torch import load_file
    import numpy as np
    r = REQUEST["ti2v_image"]
    wdir = os.path.join(PIPE_DIR, "wan22_ti2v_tiny")
    out_file = os.path.join(PIPE_DIR, "wan22_ti2v_image_tiny.safetensors")
    with open(os.path.join(wdir, "vidax_model.json")) as f:
        vm = json.load(f)
    cfg = load("wan.configs.wan_ti2v_5B").ti2v_5B
    dit = model_mod.WanModel(**dict(DIT_TI2V)).eval().requires_grad_(False)
    dit.load_state_dict(load_file(os.path.join(wdir, "diffusion_pytorch_model.safetensors")), strict=True)
    vae = vae22_mod.WanVAE_(**VAE22, dropout=0.0).eval().requires_grad_(False)
    vae.load_state_dict(load_file(os.path.join(wdir, "Wan2.2_VAE.safetensors")), strict=True)
    hf_tok_dir = os.path.join(PIPE_DIR, "_hf_tokenizer_ti2v_image")
    os.makedirs(hf_tok_dir, exist_ok=True)
    shutil.copy(os.path.join(wdir, "google", "umt5-xxl", "spiece.model"), os.path.join(hf_tok_dir, "spiece.model"))
    with open(os.path.join(hf_tok_dir, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "T5Tokenizer"}, f)
    tokenizer = tok_mod.HuggingfaceTokenizer(name=hf_tok_dir, seq_len=DIT["text_len"], clean="whitespace")
    shutil.rmtree(hf_tok_dir)
    t5 = t5_mod.T5Encoder(**vm["t5"], dropout=0.0).eval().requires_grad_(False).to(torch.bfloat16)
    t5.load_state_dict(load_file(os.path.join(wdir, "models_t5_umt5-xxl-enc-bf16.safetensors")), strict=True)
    wrapper, captured = vae_wrapper(vae22_mod, vae22_mod.Wan2_2_VAE, vae, z_dim=48, c_dim=VAE22["dim"])
    encode = wrapper.encode

    def encode_and_capture(videos):
        out = encode(videos)
        captured["z"] = out[0].clone()
        return out

    wrapper.encode = encode_and_capture
    mod = load("wan.textimage2video")
    pipe = mod.WanTI2V.__new__(mod.WanTI2V)
    pipe.model = dit
    pipe.vae_stride = cfg.vae_stride
    pipe.device = torch.device("cpu")
    pipe.config = cfg
    pipe.rank = 0
    pipe.t5_cpu = True
    pipe.init_on_cpu = False
    pipe.num_train_timesteps = cfg.num_train_timesteps
    pipe.param_dtype = torch.float32
    pipe.text_encoder = text_encoder_of(tokenizer, t5)
    pipe.patch_size = cfg.patch_size
    pipe.vae = wrapper
    pipe.sp_size = 1
    pipe.sample_neg_prompt = load("wan.configs.shared_config").wan_shared_cfg.sample_neg_prompt
    img = picture(IMAGE_SIZE, 5)
    kw = dict(max_area=r["height"] * r["width"], frame_num=r["frames"], shift=r["shift"], sample_solver=r["sampler"],
              sampling_steps=r["steps"], guide_scale=r["guidance"], n_prompt=r["negative_prompt"], seed=r["seed"],
              offload_model=False)
    with torch.no_grad():
        video = pipe.generate(r["prompt"], img=img, **kw)
    z = captured["latents"]
    noise = torch.randn(z.shape, dtype=torch.float32, generator=torch.Generator().manual_seed(r["seed"]))
    sched = sys.modules["wan.utils.fm_solvers_unipc"].FlowUniPCMultistepScheduler(
        num_train_timesteps=1000, shift=1, use_dynamic_shifting=False)
    sched.set_timesteps(r["steps"], device="cpu", shift=r["shift"])
    tensors = {
        "input.image": torch.from_numpy(np.asarray(img).copy()).contiguous(),
        "output.latents": z.contiguous(),
        "output.video": video.contiguous(),
        "inter.noise": noise,
        "inter.timesteps": sched.timesteps.to(torch.float64).contiguous(),
        "inter.z": captured["z"].contiguous(),
    }
    config = dict(r, model="wan2.2-ti2v-tiny-demo", weights="wan22_ti2v_tiny", precision="fp32",
                  torch_version=torch.__version__)
    save_file(tensors, out_file, {"kind": "wan.pipeline.ti2v", "config": json.dumps(config)})
    print("wrote", out_file, {k: list(v.shape) for k, v in tensors.items()}, "video range", float(video.min()),
          float(video.max()))


def main_i2v_a14b():
    """WanI2V.generate of Wan 2.2 (two i2v experts, no CLIP) on tiny weights."""
    from safetensors.torch import load_file
    import numpy as np
    import torchvision.transforms.functional as TF
    r = REQUEST["i2v_a14b"]
    src = os.path.join(PIPE_DIR, "wan22_a14b_tiny")
    name = "wan22_i2v_a14b_tiny"
    out_dir = os.path.join(PIPE_DIR, name)
    out_file = os.path.join(PIPE_DIR, name + ".safetensors")
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(os.path.join(out_dir, "google", "umt5-xxl"))
    for f in ["Wan2.1_VAE.safetensors", "models_t5_umt5-xxl-enc-bf16.safetensors", "google/umt5-xxl/spiece.model"]:
        shutil.copy(os.path.join(src, f), os.path.join(out_dir, f))
    with open(os.path.join(src, "vidax_model.json")) as f:
        vm = json.load(f)
    cfg = load("wan.configs.wan_i2v_A14B").i2v_A14B
    gen = torch.Generator().manual_seed(2468)
    dit_cfg = dict(DIT, model_type="i2v", in_dim=36)
    high, low = new_dit(dit_cfg, gen), new_dit(dit_cfg, gen)
    dit_json = save_dit(high, os.path.join(out_dir, cfg.high_noise_checkpoint), dit_cfg)
    save_dit(low, os.path.join(out_dir, cfg.low_noise_checkpoint), dit_cfg)
    with open(os.path.join(out_dir, "vidax_model.json"), "w") as f:
        json.dump({"model": "wan2.2-i2v-a14b-tiny-demo", "dit": dit_json, "vae": VAE21, "t5": vm["t5"],
                   "note": "made by tools/golden/wan22_pipeline.py i2v_a14b"}, f, indent=1)
    vae = vae21_mod.WanVAE_(**VAE21).eval().requires_grad_(False)
    vae.load_state_dict(load_file(os.path.join(out_dir, "Wan2.1_VAE.safetensors")), strict=True)
    hf_tok_dir = os.path.join(PIPE_DIR, "_hf_tokenizer_i2v_a14b")
    os.makedirs(hf_tok_dir, exist_ok=True)
    shutil.copy(os.path.join(out_dir, "google", "umt5-xxl", "spiece.model"), os.path.join(hf_tok_dir, "spiece.model"))
    with open(os.path.join(hf_tok_dir, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "T5Tokenizer"}, f)
    tokenizer = tok_mod.HuggingfaceTokenizer(name=hf_tok_dir, seq_len=DIT["text_len"], clean="whitespace")
    shutil.rmtree(hf_tok_dir)
    t5 = t5_mod.T5Encoder(**vm["t5"], dropout=0.0).eval().requires_grad_(False).to(torch.bfloat16)
    t5.load_state_dict(load_file(os.path.join(out_dir, "models_t5_umt5-xxl-enc-bf16.safetensors")), strict=True)
    wrapper, captured = vae_wrapper(vae21_mod, vae21_mod.Wan2_1_VAE, vae, z_dim=16)
    encode = wrapper.encode

    def encode_and_capture(videos):
        out = encode(videos)
        captured["z"] = out[0].clone()
        return out

    wrapper.encode = encode_and_capture
    mod = load("wan.image2video")
    pipe = mod.WanI2V.__new__(mod.WanI2V)
    pipe.boundary = cfg.boundary
    pipe.low_noise_model, pipe.high_noise_model = low, high
    pipe.vae_stride = cfg.vae_stride
    pipe.device = torch.device("cpu")
    pipe.config = cfg
    pipe.rank = 0
    pipe.t5_cpu = True
    pipe.init_on_cpu = False
    pipe.num_train_timesteps = cfg.num_train_timesteps
    pipe.param_dtype = torch.float32
    pipe.text_encoder = text_encoder_of(tokenizer, t5)
    pipe.patch_size = cfg.patch_size
    pipe.vae = wrapper
    pipe.sp_size = 1
    pipe.sample_neg_prompt = cfg.sample_neg_prompt
    chosen = []
    prepare = pipe._prepare_model_for_timestep

    def prepare_and_record(t, boundary, offload_model):
        m = prepare(t, boundary, offload_model)
        chosen.append(1.0 if m is high else 0.0)
        return m

    pipe._prepare_model_for_timestep = prepare_and_record
    img = picture(I2V_IMAGE_SIZE, 9)
    kw = dict(max_area=r["height"] * r["width"], frame_num=r["frames"], shift=r["shift"], sample_solver=r["sampler"],
              sampling_steps=r["steps"], guide_scale=tuple(r["guidance_scales"]), n_prompt=r["negative_prompt"],
              seed=r["seed"], offload_model=False)
    with torch.no_grad():
        video = pipe.generate(r["prompt"], img, **kw)
    z = captured["latents"]
    noise = torch.randn(z.shape, dtype=torch.float32, generator=torch.Generator().manual_seed(r["seed"]))
    sched = sys.modules["wan.utils.fm_solvers_unipc"].FlowUniPCMultistepScheduler(
        num_train_timesteps=1000, shift=1, use_dynamic_shifting=False)
    sched.set_timesteps(r["steps"], device="cpu", shift=r["shift"])
    tensors = {
        "input.image": torch.from_numpy(np.asarray(img).copy()).contiguous(),
        "output.latents": z.contiguous(),
        "output.video": video.contiguous(),
        "inter.noise": noise,
        "inter.timesteps": sched.timesteps.to(torch.float64).contiguous(),
        "inter.expert": torch.tensor(chosen, dtype=torch.float64),
        "inter.z": captured["z"].contiguous(),
    }
    config = dict(r, model="wan2.2-i2v-a14b-tiny-demo", weights=name, precision="fp32", torch_version=torch.__version__)
    save_file(tensors, out_file, {"kind": "wan.pipeline.i2v", "config": json.dumps(config)})
    print("wrote", out_file, {k: list(v.shape) for k, v in tensors.items()}, "timesteps", sched.timesteps.tolist(),
          "experts", chosen)


def main(task):
    if task == "ti2v_image":
        return main_ti2v_image()
    if task == "i2v_a14b":
        return main_i2v_a14b()
    assert task in REQUEST, f"task must be one of {list(REQUEST)}"
    name = {"a14b": "wan22_a14b_tiny", "ti2v": "wan22_ti2v_tiny"}[task]
    out_dir = os.path.join(PIPE_DIR, name)
    out_file = os.path.join(PIPE_DIR, name + ".safetensors")
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    gen = torch.Generator().manual_seed(1234 if task == "a14b" else 4321)
    tokenizer, t5, t5_cfg = tokenizer_and_encoder(out_dir, gen)
    meta = {"format": "pt"}
    shared_neg = load("wan.configs.shared_config").wan_shared_cfg.sample_neg_prompt
    r = REQUEST[task]

    if task == "a14b":
        cfg = load("wan.configs.wan_t2v_A14B").t2v_A14B
        high, low = new_dit(DIT, gen), new_dit(DIT, gen)
        vae = vae21_mod.WanVAE_(**VAE21).eval().requires_grad_(False)
        randomize(vae, gen)
        randomize(t5, gen)
        dit_json = save_dit(high, os.path.join(out_dir, cfg.high_noise_checkpoint), DIT)
        save_dit(low, os.path.join(out_dir, cfg.low_noise_checkpoint), DIT)
        vae_file, vae_cfg, model = "Wan2.1_VAE.safetensors", VAE21, "wan2.2-t2v-a14b-tiny-demo"
        wrapper, captured = vae_wrapper(vae21_mod, vae21_mod.Wan2_1_VAE, vae, z_dim=16)
        mod = load("wan.text2video")
        pipe = mod.WanT2V.__new__(mod.WanT2V)
        pipe.boundary = cfg.boundary
        pipe.low_noise_model, pipe.high_noise_model = low, high
        pipe.vae_stride = cfg.vae_stride
        # Which expert the reference takes at each step, recorded from its own chooser.
        chosen = []
        prepare = pipe._prepare_model_for_timestep

        def prepare_and_record(t, boundary, offload_model):
            m = prepare(t, boundary, offload_model)
            chosen.append(1.0 if m is high else 0.0)
            return m

        pipe._prepare_model_for_timestep = prepare_and_record
        guide = tuple(r["guidance_scales"])
    else:
        cfg = load("wan.configs.wan_ti2v_5B").ti2v_5B
        dit = new_dit(DIT_TI2V, gen)
        vae = vae22_mod.WanVAE_(**VAE22, dropout=0.0).eval().requires_grad_(False)
        randomize(vae, gen)
        randomize(t5, gen)
        dit_json = save_dit(dit, out_dir, DIT_TI2V)
        vae_file, vae_cfg, model = "Wan2.2_VAE.safetensors", VAE22, "wan2.2-ti2v-tiny-demo"
        wrapper, captured = vae_wrapper(vae22_mod, vae22_mod.Wan2_2_VAE, vae, z_dim=48, c_dim=VAE22["dim"])
        mod = load("wan.textimage2video")
        pipe = mod.WanTI2V.__new__(mod.WanTI2V)
        pipe.model = dit
        pipe.vae_stride = cfg.vae_stride
        guide = r["guidance"]
        chosen = None

    t5 = t5.to(torch.bfloat16)  # stored as the official .pth stores it
    save_file({k: v.contiguous() for k, v in vae.state_dict().items()}, os.path.join(out_dir, vae_file), meta)
    save_file({k: v.contiguous() for k, v in t5.state_dict().items()},
              os.path.join(out_dir, "models_t5_umt5-xxl-enc-bf16.safetensors"), meta)
    with open(os.path.join(out_dir, "vidax_model.json"), "w") as f:
        json.dump({"model": model, "dit": dit_json, "vae": vae_cfg, "t5": t5_cfg,
                   "note": "made by tools/golden/wan22_pipeline.py"}, f, indent=1)

    pipe.device = torch.device("cpu")
    pipe.config = cfg
    pipe.rank = 0
    pipe.t5_cpu = True
    pipe.init_on_cpu = False
    pipe.num_train_timesteps = cfg.num_train_timesteps
    pipe.param_dtype = torch.float32
    pipe.text_encoder = text_encoder_of(tokenizer, t5)
    pipe.patch_size = cfg.patch_size
    pipe.vae = wrapper
    pipe.sp_size = 1
    pipe.sample_neg_prompt = shared_neg

    z_dim, st, ss = wrapper.model.z_dim, cfg.vae_stride[0], cfg.vae_stride[1]
    noise = torch.randn([z_dim, (r["frames"] - 1) // st + 1, r["height"] // ss, r["width"] // ss], dtype=torch.float32,
                        generator=torch.Generator().manual_seed(r["seed"]))
    kw = dict(size=(r["width"], r["height"]), frame_num=r["frames"], shift=r["shift"], sample_solver=r["sampler"],
              sampling_steps=r["steps"], guide_scale=guide, n_prompt=r["negative_prompt"], seed=r["seed"],
              offload_model=False)
    with torch.no_grad():
        video = pipe.generate(r["prompt"], **kw)
    sched = sys.modules["wan.utils.fm_solvers_unipc"].FlowUniPCMultistepScheduler(
        num_train_timesteps=1000, shift=1, use_dynamic_shifting=False)
    sched.set_timesteps(r["steps"], device="cpu", shift=r["shift"])
    tensors = {
        "output.latents": captured["latents"].contiguous(),
        "output.video": video.contiguous(),
        "inter.noise": noise,
        "inter.timesteps": sched.timesteps.to(torch.float64).contiguous(),
    }
    if chosen is not None:
        tensors["inter.expert"] = torch.tensor(chosen, dtype=torch.float64)
    config = dict(r, model=model, weights=name, precision="fp32", torch_version=torch.__version__)
    kind = {"a14b": "wan.pipeline.t2v_a14b", "ti2v": "wan.pipeline.ti2v"}[task]
    save_file(tensors, out_file, {"kind": kind, "config": json.dumps(config)})
    print("wrote", out_file, {k: list(v.shape) for k, v in tensors.items()}, "video range", float(video.min()),
          float(video.max()), "timesteps", sched.timesteps.tolist(), "experts", chosen)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "a14b")
