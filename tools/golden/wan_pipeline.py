"""Golden end-to-end run of the OFFICIAL Wan 2.1 text-to-video code on tiny
random weights, on the CPU, for tests/pipeline (the pipeline's parity check).

It calls the reference's own WanT2V.generate() (wan/text2video.py) - prompt and
default negative prompt through T5EncoderModel, noise from a seeded CPU
torch.Generator, the UniPC loop with CFG, WanVAE.decode - with the parts built
here instead of loaded from a 1.3B checkpoint. Deviations, all for running on a
CPU at fp32, none in the math:
  * the object is assembled without __init__ (which hard-codes cuda:N), with
    device = cpu, so seed_g is a CPU generator (the official run seeds a CUDA one);
  * flash_attention (CUDA-only, bf16) is replaced by an fp32 softmax attention with
    the same key-length masking (as tools/golden/wan_dit.py does);
  * torch.cuda.amp.autocast is inactive on a CPU-only machine, so the DiT runs
    fp32, and the text encoder runs fp32 from its bf16-stored weights (vidax
    --precision fp32 does the same).

Writes, for vidax's loader (original layout):
  tests/golden/pipeline/wan_pipeline_tiny/{config.json, diffusion_pytorch_model.safetensors,
      Wan2.1_VAE.safetensors, models_t5_umt5-xxl-enc-bf16.safetensors,
      google/umt5-xxl/spiece.model, vidax_model.json}
and tests/golden/pipeline/wan_pipeline_tiny.safetensors (kind wan.pipeline.t2v):
  config = the request; output.latents [16, F', h, w] (the final x0 given to the
  VAE), output.video [3, F, H, W]; inter.noise, inter.timesteps.

Usage: WAN21_REPO=/work/ref/Wan2.1 SPIECE=<tiny spiece.model> python tools/golden/wan_pipeline.py
"""
import json
import os
import shutil
import sys
import types

import torch
from easydict import EasyDict
from safetensors.torch import save_file
from wan_reference import load, package
from wan_tiny_parts import fp32_attention, randomize, t5_encoder_model, wan21_vae

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SPIECE = os.environ.get("SPIECE", os.path.join(ROOT, "tests", "text", "data", "tiny_spiece.model"))
OUT_DIR = os.path.join(ROOT, "tests", "golden", "pipeline", "wan_pipeline_tiny")
OUT_FILE = os.path.join(ROOT, "tests", "golden", "pipeline", "wan_pipeline_tiny.safetensors")

# The same tiny architecture as vidax's wan2.1-tiny-demo preset (src/models/wan/presets.cpp).
DIT = dict(model_type="t2v", patch_size=(1, 2, 2), text_len=512, in_dim=16, dim=64, ffn_dim=128, freq_dim=64,
           text_dim=32, out_dim=16, num_heads=2, num_layers=2, window_size=(-1, -1), qk_norm=True,
           cross_attn_norm=True, eps=1e-6)
VAE = dict(dim=4, z_dim=16, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
           temperal_downsample=[False, True, True])
T5 = dict(dim=32, dim_attn=32, dim_ffn=64, num_heads=2, num_layers=2, num_buckets=32, shared_pos=False)
REQUEST = dict(prompt="a red panda climbing a bamboo tree in the snow", negative_prompt="", frames=5, height=32,
               width=48, steps=3, seed=42, guidance=5.0, shift=5.0, sampler="unipc")


# Import only the module files needed (wan/__init__ pulls optional packages).
# current_device stays "cpu" for the whole run, not only while importing.
torch.cuda.current_device = lambda: "cpu"
attention = load("wan.modules.attention")
model_mod = load("wan.modules.model")
vae_mod = load("wan.modules.vae")
t5_mod = load("wan.modules.t5")
tok_mod = load("wan.modules.tokenizers")
load("wan.utils.fm_solvers")
load("wan.utils.fm_solvers_unipc")
fsdp = types.ModuleType("wan.distributed.fsdp")
fsdp.shard_model = None  # imported by text2video.py, used only with FSDP
package("wan.distributed")
sys.modules["wan.distributed.fsdp"] = fsdp
t2v_mod = load("wan.text2video")


model_mod.flash_attention = fp32_attention


def main():
    gen = torch.Generator().manual_seed(1234)
    if os.path.isdir(OUT_DIR):
        shutil.rmtree(OUT_DIR)
    tok_dir = os.path.join(OUT_DIR, "google", "umt5-xxl")
    os.makedirs(tok_dir)
    shutil.copy(SPIECE, os.path.join(tok_dir, "spiece.model"))
    # Only for transformers' AutoTokenizer here; vidax reads spiece.model.
    hf_tok_dir = os.path.join(OUT_DIR, "_hf_tokenizer")
    os.makedirs(hf_tok_dir)
    shutil.copy(SPIECE, os.path.join(hf_tok_dir, "spiece.model"))
    with open(os.path.join(hf_tok_dir, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "T5Tokenizer"}, f)
    tokenizer = tok_mod.HuggingfaceTokenizer(name=hf_tok_dir, seq_len=DIT["text_len"], clean="whitespace")
    vocab = len(tokenizer.tokenizer)
    shutil.rmtree(hf_tok_dir)
    t5_cfg = dict(T5, vocab=vocab)

    dit = model_mod.WanModel(**DIT).eval().requires_grad_(False)
    randomize(dit, gen)
    vae = vae_mod.WanVAE_(**VAE).eval().requires_grad_(False)
    randomize(vae, gen)
    t5 = t5_mod.T5Encoder(**t5_cfg, dropout=0.0).eval().requires_grad_(False)
    randomize(t5, gen)
    t5 = t5.to(torch.bfloat16)  # stored as the official .pth stores it

    meta = {"format": "pt"}
    save_file({k: v.contiguous() for k, v in dit.state_dict().items()},
              os.path.join(OUT_DIR, "diffusion_pytorch_model.safetensors"), meta)
    save_file({k: v.contiguous() for k, v in vae.state_dict().items()},
              os.path.join(OUT_DIR, "Wan2.1_VAE.safetensors"), meta)
    save_file({k: v.contiguous() for k, v in t5.state_dict().items()},
              os.path.join(OUT_DIR, "models_t5_umt5-xxl-enc-bf16.safetensors"), meta)
    dit_json = dict(DIT, patch_size=list(DIT["patch_size"]), window_size=list(DIT["window_size"]))
    with open(os.path.join(OUT_DIR, "config.json"), "w") as f:
        json.dump(dict(dit_json, _class_name="WanModel"), f, indent=1)
    with open(os.path.join(OUT_DIR, "vidax_model.json"), "w") as f:
        json.dump({"model": "wan2.1-tiny-demo", "dit": dit_json, "vae": VAE, "t5": t5_cfg,
                   "note": "made by tools/golden/wan_pipeline.py"}, f, indent=1)

    # Assemble WanT2V / T5EncoderModel / WanVAE without their CUDA-bound __init__s.
    text_encoder = t5_encoder_model(t5_mod, t5, tokenizer, DIT["text_len"])
    wan_vae = wan21_vae(vae_mod, vae)
    captured = {}
    decode = wan_vae.decode

    def decode_and_capture(zs):
        captured["latents"] = zs[0].clone()
        return decode(zs)

    wan_vae.decode = decode_and_capture

    shared_neg = load("wan.configs.shared_config").wan_shared_cfg.sample_neg_prompt
    pipe = t2v_mod.WanT2V.__new__(t2v_mod.WanT2V)
    pipe.device = torch.device("cpu")
    pipe.config = EasyDict(num_train_timesteps=1000, param_dtype=torch.float32)
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
    pipe.sample_neg_prompt = shared_neg

    r = REQUEST
    noise = torch.randn([16, (r["frames"] - 1) // 4 + 1, r["height"] // 8, r["width"] // 8], dtype=torch.float32,
                        generator=torch.Generator().manual_seed(r["seed"]))
    video = pipe.generate(r["prompt"], size=(r["width"], r["height"]), frame_num=r["frames"], shift=r["shift"],
                          sample_solver=r["sampler"], sampling_steps=r["steps"], guide_scale=r["guidance"],
                          n_prompt=r["negative_prompt"], seed=r["seed"], offload_model=False)
    sched = sys.modules["wan.utils.fm_solvers_unipc"].FlowUniPCMultistepScheduler(
        num_train_timesteps=1000, shift=1, use_dynamic_shifting=False)
    sched.set_timesteps(r["steps"], device="cpu", shift=r["shift"])
    tensors = {
        "output.latents": captured["latents"].contiguous(),
        "output.video": video.contiguous(),
        "inter.noise": noise,
        "inter.timesteps": sched.timesteps.to(torch.float64).contiguous(),
    }
    config = dict(r, model="wan2.1-tiny-demo", weights="wan_pipeline_tiny", precision="fp32",
                  torch_version=torch.__version__)
    save_file(tensors, OUT_FILE, {"kind": "wan.pipeline.t2v", "config": json.dumps(config)})
    print("wrote", OUT_FILE, {k: list(v.shape) for k, v in tensors.items()},
          "video range", float(video.min()), float(video.max()))


if __name__ == "__main__":
    main()
