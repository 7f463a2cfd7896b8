"""Records a run of the OFFICIAL Wan 2.1 text-to-video pipeline (WanT2V.generate, wan/text2video.py)
in vidax's record format (src/pipeline/record.h, docs/generate.md "Record and replay"), so that
`vidax generate --replay DIR --weights WEIGHTS` replays it: the recorded noise injected, each
step's latent compared.

The reference runs as tools/golden/wan_pipeline.py runs it (parts assembled without WanT2V's
CUDA-bound __init__, flash_attention replaced by an fp32 softmax attention with the same key
masking), on weights read from a vidax checkpoint folder with a vidax_model.json (the tiny
golden weights tests/golden/pipeline/wan_pipeline_tiny, or `vidax make-demo` output), on the
CPU or on CUDA:

  * --device cpu: seed_g is torch.Generator(device='cpu'), which vidax reproduces bit for bit
    (the replay reports "the seed's own CPU draw matches it");
  * --device cuda: seed_g is a CUDA generator, as the official script's; its noise is another
    stream, which the replay injects. --precision bf16 runs the DiT under the official
    amp.autocast(bf16) (on the CPU autocast is inactive, as in the official code).

What is recorded: the noise generate() draws from seed_g (torch.randn wrapped while it runs:
each draw with seed_g), every sample_scheduler.step()'s prev_sample (the latent after the step)
and the timestep it was given, and the final latent handed to WanVAE.decode. The decode itself
is skipped (a replay compares latents; decoding a real video is the most expensive part).
unipc and dpm++ (the official solvers) draw no noise per step.

Usage:
  WAN21_REPO=/work/ref/wan21 WAN21_COMMIT=9737cba python tools/golden/record_reference.py \
      --weights tests/golden/pipeline/wan_pipeline_tiny --out tests/golden/pipeline/wan_record_tiny \
      [--device cpu|cuda] [--precision fp32|bf16] [--prompt ...] [--frames 5 --height 32 --width 48
      --steps 3 --seed 42 --guidance 5 --shift 5 --sampler unipc]
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import types

import torch
from easydict import EasyDict
from safetensors.torch import load_file, save_file
from wan_reference import WAN21_REPO, load, package

torch.cuda.current_device = lambda: "cpu"  # t5.py's import-time default argument (no math)
model_mod = load("wan.modules.model")
vae_mod = load("wan.modules.vae")
t5_mod = load("wan.modules.t5")
tok_mod = load("wan.modules.tokenizers")
unipc_mod = load("wan.utils.fm_solvers_unipc")
dpm_mod = load("wan.utils.fm_solvers")
fsdp = types.ModuleType("wan.distributed.fsdp")
fsdp.shard_model = None  # imported by text2video.py, used only with FSDP
package("wan.distributed")
sys.modules["wan.distributed.fsdp"] = fsdp
t2v_mod = load("wan.text2video")

FORMAT, FORMAT_VERSION = "vidax.record", 1


def fp32_attention(q, k, v, q_lens=None, k_lens=None, window_size=(-1, -1), **kw):
    """flash_attention's contract ([B, L, N, D] in and out, keys >= k_lens[b] masked), in fp32."""
    lk = k.shape[1]
    mask = None
    if k_lens is not None:
        mask = (torch.arange(lk, device=k.device)[None, :] < k_lens.to(k.device)[:, None])[:, None, None, :]
    out = torch.nn.functional.scaled_dot_product_attention(
        q.float().transpose(1, 2), k.float().transpose(1, 2), v.float().transpose(1, 2), attn_mask=mask)
    return out.transpose(1, 2).contiguous().type_as(q)


model_mod.flash_attention = fp32_attention


def git_commit(repo):
    """$WAN21_COMMIT (an extracted tree has no .git), else the checkout's HEAD."""
    if os.environ.get("WAN21_COMMIT"):
        return os.environ["WAN21_COMMIT"]
    head = os.path.join(repo, ".git", "HEAD")
    return None if not os.path.exists(head) else open(head).read().strip()


def build_pipe(weights, device, precision):
    """WanT2V over the checkpoint folder's parts, without __init__ (which hard-codes cuda:N and a
    .pth per part)."""
    with open(os.path.join(weights, "vidax_model.json")) as f:
        cfg = json.load(f)
    dit_cfg = dict(cfg["dit"], patch_size=tuple(cfg["dit"]["patch_size"]),
                   window_size=tuple(cfg["dit"]["window_size"]))
    dit = model_mod.WanModel(**dit_cfg).eval().requires_grad_(False)
    dit.load_state_dict(load_file(os.path.join(weights, "diffusion_pytorch_model.safetensors")), strict=True)
    vae = vae_mod.WanVAE_(**cfg["vae"]).eval().requires_grad_(False)
    vae.load_state_dict(load_file(os.path.join(weights, "Wan2.1_VAE.safetensors")), strict=True)
    t5 = t5_mod.T5Encoder(**cfg["t5"], dropout=0.0).eval().requires_grad_(False)
    t5.load_state_dict(load_file(os.path.join(weights, "models_t5_umt5-xxl-enc-bf16.safetensors")), strict=True)

    # transformers' AutoTokenizer reads a folder with a config; vidax reads spiece.model alone.
    tok_dir = tempfile.mkdtemp(prefix="record_tok_")
    shutil.copy(os.path.join(weights, "google", "umt5-xxl", "spiece.model"), os.path.join(tok_dir, "spiece.model"))
    with open(os.path.join(tok_dir, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "T5Tokenizer"}, f)
    tokenizer = tok_mod.HuggingfaceTokenizer(name=tok_dir, seq_len=dit_cfg["text_len"], clean="whitespace")
    shutil.rmtree(tok_dir)

    dev = torch.device(device)
    text_encoder = t5_mod.T5EncoderModel.__new__(t5_mod.T5EncoderModel)
    text_encoder.text_len = dit_cfg["text_len"]
    text_encoder.dtype = torch.float32
    text_encoder.device = torch.device("cpu")
    text_encoder.model = t5.float()  # fp32 compute from the bf16-stored weights (t5_cpu, as below)
    text_encoder.tokenizer = tokenizer

    wan_vae = vae_mod.WanVAE.__new__(vae_mod.WanVAE)
    wan_vae.model = vae
    wan_vae.dtype = torch.float
    wan_vae.device = dev
    param_dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    pipe = t2v_mod.WanT2V.__new__(t2v_mod.WanT2V)
    pipe.device = dev
    pipe.config = EasyDict(num_train_timesteps=1000, param_dtype=param_dtype)
    pipe.rank = 0
    pipe.t5_cpu = True
    pipe.num_train_timesteps = 1000
    pipe.param_dtype = param_dtype
    pipe.text_encoder = text_encoder
    pipe.vae_stride = (4, 8, 8)
    pipe.patch_size = tuple(dit_cfg["patch_size"])
    pipe.vae = wan_vae
    pipe.model = dit.to(dev)
    pipe.sp_size = 1
    pipe.sample_neg_prompt = load("wan.configs.shared_config").wan_shared_cfg.sample_neg_prompt
    return pipe, cfg.get("model", "wan2.1-tiny-demo")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--weights", required=True, help="vidax checkpoint folder with vidax_model.json")
    ap.add_argument("--out", required=True, help="the record folder to create (must not exist, or be empty)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("--prompt", default="a red panda climbing a bamboo tree in the snow")
    ap.add_argument("--negative-prompt", default="")
    ap.add_argument("--frames", type=int, default=5)
    ap.add_argument("--height", type=int, default=32)
    ap.add_argument("--width", type=int, default=48)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--guidance", type=float, default=5.0)
    ap.add_argument("--shift", type=float, default=5.0)
    ap.add_argument("--sampler", default="unipc", choices=["unipc", "dpm++"])
    a = ap.parse_args()

    out = a.out.rstrip("/")
    if os.path.lexists(out) and (not os.path.isdir(out) or os.listdir(out)):
        sys.exit(f"--out {out}: exists and is not an empty folder; a record is never overwritten")
    pipe, model_name = build_pipe(a.weights, a.device, a.precision)

    # What generate() draws from seed_g, and what each scheduler step returns.
    draws, steps, final = [], [], {}
    real_randn = torch.randn

    def randn(*args, **kw):
        t = real_randn(*args, **kw)
        if kw.get("generator") is not None:
            draws.append(t.detach().float().cpu().clone())
        return t

    def wrap_step(cls):
        real = cls.step

        def step(self, model_output, timestep, sample, *args, **kw):
            n_before = len(draws)
            r = real(self, model_output, timestep, sample, *args, **kw)
            prev = r[0] if isinstance(r, tuple) else r.prev_sample
            steps.append({"timestep": float(timestep.item() if torch.is_tensor(timestep) else timestep),
                          "latent": prev.squeeze(0).detach().float().cpu().clone(),
                          "noise": draws[n_before:]})
            return r
        cls.step = step

    wrap_step(unipc_mod.FlowUniPCMultistepScheduler)
    wrap_step(dpm_mod.FlowDPMSolverMultistepScheduler)

    def decode(zs):
        final["latents"] = zs[0].detach().float().cpu().clone()
        return [torch.zeros(1)]  # skipped: the record holds latents

    pipe.vae.decode = decode
    torch.randn = randn
    try:
        pipe.generate(a.prompt, size=(a.width, a.height), frame_num=a.frames, shift=a.shift,
                      sample_solver=a.sampler, sampling_steps=a.steps, guide_scale=a.guidance,
                      n_prompt=a.negative_prompt, seed=a.seed, offload_model=False)
    finally:
        torch.randn = real_randn
    assert len(draws) >= 1 and len(steps) == a.steps, (len(draws), len(steps))
    noise = draws[0]
    step_draws = sum(len(s["noise"]) for s in steps)
    assert len(draws) == 1 + step_draws, "noise drawn outside the scheduler steps"
    assert all(len(s["noise"]) <= 1 for s in steps), "a record holds one draw per step"

    tmp = os.path.join(os.path.dirname(os.path.abspath(out)), "." + os.path.basename(out) + f".partial-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    meta = {"format": FORMAT}
    save_file({"noise": noise.contiguous()}, os.path.join(tmp, "noise.safetensors"), meta)
    index_steps = []
    for i, s in enumerate(steps, 1):
        name = f"step_{i:04d}.safetensors"
        tensors = {"latent": s["latent"].contiguous()}
        entry = {"step": i, "timestep": s["timestep"], "latent": {"file": name, "tensor": "latent"}, "noise": None}
        if s["noise"]:
            tensors["noise"] = s["noise"][0].contiguous()
            entry["noise"] = {"file": name, "tensor": "noise"}
        save_file(tensors, os.path.join(tmp, name), meta)
        index_steps.append(entry)
    save_file({"latents": final["latents"].contiguous()}, os.path.join(tmp, "final.safetensors"), meta)
    index = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "producer": {"name": "reference", "code": "Wan-Video/Wan2.1 WanT2V.generate (wan/text2video.py)",
                     "repo": WAN21_REPO, "commit": git_commit(WAN21_REPO), "script": "tools/golden/record_reference.py",
                     "torch_version": torch.__version__, "device": str(pipe.device),
                     "generator": f"torch.Generator(device='{pipe.device.type}')"},
        "model": model_name,
        "family": "wan",
        "precision": a.precision,
        "request": {"prompt": a.prompt, "negative_prompt": a.negative_prompt, "frames": a.frames,
                    "height": a.height, "width": a.width, "steps": a.steps, "seed": a.seed,
                    "guidance": a.guidance, "shift": a.shift, "sampler": a.sampler,
                    "cfg_from_step": 0, "cfg_to_step": -1},
        "negative_prompt_used": a.negative_prompt or pipe.sample_neg_prompt,
        "noise_from": "seed",
        "timesteps": [s["timestep"] for s in steps],
        "latent_shape": list(noise.shape),
        "noise": {"file": "noise.safetensors", "tensor": "noise"},
        "steps": index_steps,
        "final": {"file": "final.safetensors", "tensor": "latents"},
    }
    with open(os.path.join(tmp, "record.json"), "w") as f:
        json.dump(index, f, indent=1, ensure_ascii=False)
        f.write("\n")
    for name in os.listdir(tmp):
        os.chmod(os.path.join(tmp, name), 0o644)
    os.chmod(tmp, 0o755)
    if os.path.isdir(out):
        os.rmdir(out)  # empty (checked above)
    os.rename(tmp, out)
    print("recorded", len(steps), "steps of", model_name, "on", pipe.device, "into", out)


if __name__ == "__main__":
    main()
