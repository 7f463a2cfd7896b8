"""Golden end-to-end run of the OFFICIAL Wan 2.1 VACE code (wan/vace.py WanVace.generate) on tiny
random weights, on the CPU, for the parity kind wan.pipeline.vace (tests/wan/test_vace.cpp).

WanVace.generate is called with the parts built here: a tiny VaceWanModel (the wan2.1-vace-tiny-demo
architecture: the wan2.1-tiny-demo DiT with vace_layers [0, 1], vace_in_dim 96), and the UMT5, VAE
and tokenizer of tests/golden/pipeline/wan_pipeline_tiny/ (read from there, so this golden stores
only its DiT). Its inputs are prepared as WanVace.prepare_source prepares them (which itself needs
decord and only accepts the 480x832 / 720x1280 areas): the control video and the mask video as
VaceVideoProcessor returns a video already at its target size (uint8 levels .float().div_(127.5)
.sub_(1.)), the mask's first channel clamp((m + 1) / 2, 0, 1), and the reference image placed on
the white canvas by wan/utils/vace_processor.prepare_source (the same code as the method's).
Deviations, as tools/golden/wan_pipeline.py: objects assembled without their CUDA-bound __init__s,
flash attention replaced by an fp32 softmax attention, autocast inactive.

Writes tests/golden/pipeline/wan_vace_tiny.safetensors (kind wan.pipeline.vace) and the DiT beside it
(wan_vace_tiny/vace_diffusion_pytorch_model.safetensors, bf16 values, its config in the metadata):
  config: the request + weights ("wan_pipeline_tiny") + diffusion_model + model + control_fps + control_scale
  input.control_video, input.mask_video [3, 5, 32, 48] (levels / 127.5 - 1), input.reference_image.0
  [3, 20, 30] (to_tensor().sub_(0.5).div_(0.5) of the picture)
  output.latents [16, 1 + 2, 4, 6] (the reference frame's latent first), output.video [3, 5, 32, 48];
  inter.noise, inter.timesteps, inter.vace_context [96, 3, 4, 6].

Usage: WAN21_REPO=/work/ref/wan21 python tools/golden/wan_vace_pipeline.py
"""
import json
import os

import torch
from safetensors.torch import load_file, save_file

import wan_pipeline as t2v  # the shared tiny parts (importing loads the reference)
from wan_reference import load
from wan_tiny_parts import randomize, t5_encoder_model, wan21_vae

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
PIPE = os.path.join(ROOT, "tests", "golden", "pipeline")
T2V_DIR = os.path.join(PIPE, "wan_pipeline_tiny")
OUT = os.path.join(PIPE, "wan_vace_tiny.safetensors")
DIT_FILE = os.path.join("wan_vace_tiny", "vace_diffusion_pytorch_model.safetensors")  # a folder: pipeline/*.safetensors are goldens

DIT = dict(t2v.DIT, model_type="vace", vace_layers=[0, 1], vace_in_dim=96)
REQUEST = dict(prompt="a red panda climbing a bamboo tree in the snow", negative_prompt="", frames=5, height=32,
               width=48, steps=3, seed=42, guidance=5.0, shift=5.0, sampler="unipc")
CONTROL_SCALE = 0.8

vace_model_mod = load("wan.modules.vace_model")
vace_mod = load("wan.vace")
proc_mod = load("wan.utils.vace_processor")


def levels(frames, h, w, gen):
    """uint8 video levels [F, H, W, 3] with structure (a ramp plus noise)."""
    yy, xx = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    base = torch.stack([(xx * 5 + yy * 3 + c * 70) for c in range(3)], -1).float()
    v = torch.stack([base + f * 30 for f in range(frames)]) + torch.rand(frames, h, w, 3, generator=gen) * 40
    return (v % 256).to(torch.uint8)


def main():
    torch.set_num_threads(2)
    gen = torch.Generator().manual_seed(777)
    r = REQUEST
    # The T2V golden's parts: tokenizer, UMT5 (bf16 as stored) and VAE.
    vidax_model = json.load(open(os.path.join(T2V_DIR, "vidax_model.json")))
    tokenizer = t2v.tok_mod.HuggingfaceTokenizer(name=os.path.join(T2V_DIR, "google", "umt5-xxl"),
                                                 seq_len=DIT["text_len"], clean="whitespace") \
        if os.path.exists(os.path.join(T2V_DIR, "google", "umt5-xxl", "tokenizer_config.json")) else None
    if tokenizer is None:  # transformers needs a tokenizer_config.json beside spiece.model (as wan_pipeline.py)
        import shutil
        import tempfile
        tmp = tempfile.mkdtemp()
        shutil.copy(os.path.join(T2V_DIR, "google", "umt5-xxl", "spiece.model"), os.path.join(tmp, "spiece.model"))
        json.dump({"tokenizer_class": "T5Tokenizer"}, open(os.path.join(tmp, "tokenizer_config.json"), "w"))
        tokenizer = t2v.tok_mod.HuggingfaceTokenizer(name=tmp, seq_len=DIT["text_len"], clean="whitespace")
        shutil.rmtree(tmp)
    t5 = t2v.t5_mod.T5Encoder(**vidax_model["t5"], dropout=0.0).eval().requires_grad_(False)
    t5.load_state_dict(load_file(os.path.join(T2V_DIR, "models_t5_umt5-xxl-enc-bf16.safetensors")))
    vae = t2v.vae_mod.WanVAE_(**vidax_model["vae"]).eval().requires_grad_(False)
    vae.load_state_dict(load_file(os.path.join(T2V_DIR, "Wan2.1_VAE.safetensors")))
    dit = vace_model_mod.VaceWanModel(**DIT).eval().requires_grad_(False)
    randomize(dit, gen)  # before_proj / after_proj are zero-initialised by the class: random here so they act
    with torch.no_grad():  # stored in bf16 (half the file); the run computes with those values in fp32
        for p in dit.parameters():
            p.copy_(p.bfloat16().float())
    dit_json = dict(DIT, patch_size=list(DIT["patch_size"]), window_size=list(DIT["window_size"]))
    os.makedirs(os.path.join(PIPE, "wan_vace_tiny"), exist_ok=True)
    save_file({k: v.contiguous().to(torch.bfloat16) for k, v in dit.state_dict().items()}, os.path.join(PIPE, DIT_FILE),
              {"format": "pt", "config": json.dumps(dit_json)})

    # The inputs as prepare_source hands them to generate().
    control_u8 = levels(r["frames"], r["height"], r["width"], gen)
    mask_u8 = torch.zeros(r["frames"], r["height"], r["width"], 3, dtype=torch.uint8)
    mask_u8[:, 8:24, 16:40, :] = 255  # regenerate the middle, keep the border
    mask_u8[2:, :, :8, :] = 128       # mid-grey: binarized to "regenerate" (0.75 > 0.5), kept as 0.75 in the mask latent
    to_video = lambda u8: u8.permute(3, 0, 1, 2).float().div_(127.5).sub_(1.)  # resize_crop's [C, T, H, W]
    control = to_video(control_u8)
    mask_video = to_video(mask_u8)
    mask = torch.clamp((mask_video[:1] + 1) / 2, min=0, max=1)
    ref_u8 = levels(1, 20, 30, gen)[0]
    ref = ref_u8.permute(2, 0, 1).float().div(255).sub_(0.5).div_(0.5)  # TF.to_tensor().sub_(0.5).div_(0.5)
    _, _, refs = proc_mod.prepare_source([control], [mask], [[ref.unsqueeze(1)]], r["frames"],
                                         (r["height"], r["width"]), "cpu")

    text_encoder = t5_encoder_model(t2v.t5_mod, t5, tokenizer, DIT["text_len"])
    wan_vae = wan21_vae(t2v.vae_mod, vae)
    captured = {}
    decode = wan_vae.decode

    def decode_and_capture(zs):
        return decode(zs)

    wan_vae.decode = decode_and_capture
    pipe = vace_mod.WanVace.__new__(vace_mod.WanVace)
    pipe.device = torch.device("cpu")
    pipe.rank = 0
    pipe.t5_cpu = True
    pipe.num_train_timesteps = 1000
    pipe.param_dtype = torch.float32
    pipe.text_encoder = text_encoder
    pipe.vae_stride = (4, 8, 8)
    pipe.patch_size = (1, 2, 2)
    pipe.vae = wan_vae
    pipe.model = dit
    pipe.sp_size = 1
    pipe.sample_neg_prompt = load("wan.configs.shared_config").wan_shared_cfg.sample_neg_prompt
    latent = pipe.vace_latent

    def latent_and_capture(z, m):
        out = latent(z, m)
        captured["vace_context"] = out[0].clone()
        return out

    pipe.vace_latent = latent_and_capture
    decode_latent = pipe.decode_latent

    def decode_latent_and_capture(zs, ref_images=None, vae=None):
        captured["latents"] = zs[0].clone()
        return decode_latent(zs, ref_images, vae)

    pipe.decode_latent = decode_latent_and_capture
    with torch.no_grad():
        video = pipe.generate(r["prompt"], [control], [mask], refs, size=(r["width"], r["height"]),
                              frame_num=r["frames"], context_scale=CONTROL_SCALE, shift=r["shift"],
                              sample_solver=r["sampler"], sampling_steps=r["steps"], guide_scale=r["guidance"],
                              n_prompt=r["negative_prompt"], seed=r["seed"], offload_model=False)
    lat = captured["latents"]
    noise = torch.randn(list(lat.shape), dtype=torch.float32, generator=torch.Generator().manual_seed(r["seed"]))
    sched = t2v.sys.modules["wan.utils.fm_solvers_unipc"].FlowUniPCMultistepScheduler(
        num_train_timesteps=1000, shift=1, use_dynamic_shifting=False)
    sched.set_timesteps(r["steps"], device="cpu", shift=r["shift"])
    tensors = {
        "input.control_video": control.contiguous(),
        "input.mask_video": mask_video.contiguous(),
        "input.reference_image.0": ref.contiguous(),
        "output.latents": lat.contiguous(),
        "output.video": video.contiguous(),
        "inter.noise": noise,
        "inter.timesteps": sched.timesteps.to(torch.float64).contiguous(),
        "inter.vace_context": captured["vace_context"].contiguous(),
    }
    config = dict(r, model="wan2.1-vace-tiny-demo", weights="wan_pipeline_tiny", diffusion_model=DIT_FILE,
                  precision="fp32", control_fps=16.0, control_scale=CONTROL_SCALE, torch_version=torch.__version__)
    save_file(tensors, OUT, {"kind": "wan.pipeline.vace", "config": json.dumps(config)})
    print("wrote", OUT, {k: list(v.shape) for k, v in tensors.items()},
          "video range", float(video.min()), float(video.max()))


if __name__ == "__main__":
    main()
