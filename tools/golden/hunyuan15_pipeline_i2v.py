"""Golden files for kind `hunyuan1.5.pipeline.i2v` (docs/parity.md): a whole HunyuanVideo 1.5
image-to-video run by the official HunyuanVideo_1_5_Pipeline.__call__ (hyvideo/pipelines/
hunyuan_video_pipeline.py, Tencent-Hunyuan/HunyuanVideo-1.5 60783e7) with reference_image (a PIL
picture, task i2v), prompt_rewrite=False, enable_sr=False, on the tiny synthetic DiT of
tools/golden/hunyuan15_pipeline.py (ideal_task "i2v", vision_states_dim the SigLIP's width), the tiny
random VAE of tools/golden/hunyuan15_vae.py (encoder and decoder) and the tiny SigLIP of
tools/golden/hunyuan15_siglip.py loaded by the official VisionEncoder as _load_vision_encoder loads
it, fp32 on the CPU.

What __call__ runs for i2v, as published: get_closest_resolution_given_reference_image (the video's
size: the bucket of generate_crop_size_list(bucket_hw_base_size, 16) whose h/w is closest to the
picture's), get_task_mask("i2v") (1 on the first latent frame), get_image_condition_latents (the
picture LANCZOS-resized to cover the bucket, centre-cropped, to_tensor, Normalize(0.5, 0.5),
vae.encode(...).latent_dist.mode() * scaling_factor), _prepare_cond_latents (that latent on the first
frame, zeros after, and the mask channel), _prepare_vision_states (resize_and_center_crop of the
picture to the bucket, VisionEncoder.encode_images: SiglipImageProcessor + SiglipVisionModel's
last_hidden_state; repeated for the CFG batch), the loop with mask_type "i2v", the decode (as t2v).
Everything else as hunyuan15_pipeline.py (the same stand-ins for the text encoders).

What differs from the published code path, and why:
  * get_closest_resolution_given_original_size runs its body (the official generate_crop_size_list
    and get_closest_ratio) with bucket_hw_base_size BASE = 40 instead of target_size_config's 640
    ("480p"), skipping the assert that limits the base to the published sizes: the smallest published
    bucket (128 px) makes too large a golden. A 40 x 64 picture lands in the 32 x 48 bucket.
  * fp32 everywhere (published: bf16 DiT, fp16 VAE and SigLIP), autocast off, attn_mode "torch",
    enable_vae_tile_parallelism False, vae.set_tile_sample_min_size(32, 0.5) (the decode tiles; the
    reference-image encode runs untiled, as the pipeline's encode outside memory_efficient_context).

Files (tests/golden/hunyuan15/):
  hy15_pipeline_i2v.safetensors       guidance_scale 1 (one DiT pass per step)
  hy15_pipeline_i2v_cfg.safetensors   guidance_scale 6, negative prompt "blurry"
  hy15_pipeline_i2v_meanflow.safetensors   a use_meanflow DiT (the loop passes timestep_r = timesteps[i + 1],
                                      0 after the last step), guidance 1, 5 frames (a step-distilled-style run)
Tensors: as the t2v files (input.text_states, text_mask, byt5_*, negative_*), plus input.image
[H, W, 3] U8 (the picture's bytes); vae.* holds the VAE's encoder and decoder (official names),
vision_encoder.* the SigLIP's state_dict (transformers names). Outputs as t2v (output.latents,
output.video, inter.noise, inter.timesteps, inter.latents_step0 / _last), plus inter.cond_latents
[C, 1, h, w] (get_image_condition_latents' result) and inter.vision_states [1, tokens, width].
Config: as t2v, plus "bucket_hw_base_size", "height" / "width" (the bucket the run took, for reading),
"siglip" {"vision", "processor"} (the image encoder's config.json and preprocessor_config.json).

Usage: HUNYUAN15_REPO=/work/ref/hunyuan15 /work/venv-golden/bin/python tools/golden/hunyuan15_pipeline_i2v.py [OUT_DIR]
"""
import json
import os
import sys
import tempfile
import types

import numpy as np
import torch
from PIL import Image
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hunyuan_reference  # noqa: E402
from hunyuan15_dit import import_model  # noqa: E402  (sets hunyuan_reference.HUNYUAN_REPO)
from hunyuan_dit import randomize  # noqa: E402
from hunyuan15_vae import CONFIG as VAE_TINY, build as build_vae, import_vae  # noqa: E402
import hunyuan15_pipeline as t2v  # noqa: E402
import hunyuan15_siglip as siglip  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "golden", "hunyuan15")
REFERENCE = "Tencent-Hunyuan/HunyuanVideo-1.5 60783e7 hyvideo/pipelines/hunyuan_video_pipeline.py"

DIT = dict(t2v.DIT, ideal_task="i2v", vision_states_dim=siglip.VISION["hidden_size"])
VISION_TOKENS = (siglip.VISION["image_size"] // siglip.VISION["patch_size"]) ** 2
BASE = 40
IMAGE_HW = (40, 64)
REQUEST = dict(prompt="the sign starts to glow", negative_prompt="blurry", frames=9, steps=3, seed=42, shift=7.0,
               sampler="flow_match_euler")
TEXT_LEN, VALID, NEG_VALID = t2v.TEXT_LEN, t2v.VALID, t2v.NEG_VALID
BYT5_LEN, BYT5_VALID = t2v.BYT5_LEN, t2v.BYT5_VALID


def main():
    os.makedirs(OUT, exist_ok=True)
    run("hy15_pipeline_i2v.safetensors", 1.0)
    run("hy15_pipeline_i2v_cfg.safetensors", 6.0)
    run("hy15_pipeline_i2v_meanflow.safetensors", 1.0, meanflow=True)


def run(name, guidance_scale, meanflow=False):
    torch.set_num_threads(2)
    dit_mod = import_model()
    vae_mod = import_vae()
    pipe_mod = hunyuan_reference.load("hyvideo.pipelines.hunyuan_video_pipeline")
    pipe_mod.get_parallel_state = lambda: types.SimpleNamespace(sp_enabled=False, sp_rank=0)

    torch.manual_seed(0)
    dit_cfg = dict(DIT, use_meanflow=True) if meanflow else DIT
    r = dict(REQUEST, frames=5) if meanflow else REQUEST
    dit = dit_mod.HunyuanVideo_1_5_DiffusionTransformer(**dit_cfg).eval()
    desc = randomize(dit, torch.Generator().manual_seed(1), 20261211)
    vae = build_vae(vae_mod, VAE_TINY, 34)
    vae.set_tile_sample_min_size(t2v.TILE["sample_size"], t2v.TILE["overlap"])

    g = torch.Generator().manual_seed(8)
    text_states = torch.randn(1, TEXT_LEN, DIT["text_states_dim"], generator=g)
    text_mask = torch.zeros(1, TEXT_LEN, dtype=torch.int64)
    text_mask[0, :VALID] = 1
    byt5_states = torch.zeros(1, BYT5_LEN, 1472)  # no quoted text: the pipeline's zeros
    byt5_mask = torch.zeros(1, BYT5_LEN, dtype=torch.int64)
    neg_states = torch.randn(1, TEXT_LEN, DIT["text_states_dim"], generator=g)
    neg_mask = torch.zeros(1, TEXT_LEN, dtype=torch.int64)
    neg_mask[0, :NEG_VALID] = 1
    picture = np.random.default_rng(9).integers(0, 256, IMAGE_HW + (3,), dtype=np.uint8)
    cfg = guidance_scale > 1
    table = {r["prompt"]: (text_states, text_mask), r["negative_prompt"]: (neg_states, neg_mask)}

    with tempfile.TemporaryDirectory() as root:
        siglip.build_folder(root, 13)
        vision_encoder = pipe_mod.VisionEncoder(vision_encoder_type="siglip", vision_encoder_precision="fp32",
                                                vision_encoder_path=root)
        with open(os.path.join(root, "image_encoder", "config.json")) as f:
            vision_cfg = json.load(f)
        with open(os.path.join(root, "feature_extractor", "preprocessor_config.json")) as f:
            proc_cfg = json.load(f)

    scheduler = pipe_mod.FlowMatchDiscreteScheduler(shift=r["shift"], reverse=True, solver="euler")
    pipe = pipe_mod.HunyuanVideo_1_5_Pipeline(
        vae=vae, text_encoder=t2v.TextEncoderStandIn(table), transformer=dit, scheduler=scheduler, text_encoder_2=None,
        flow_shift=r["shift"], guidance_scale=guidance_scale, num_inference_steps=r["steps"],
        vision_num_semantic_tokens=VISION_TOKENS, vision_states_dim=DIT["vision_states_dim"], glyph_byT5_v2=True,
        byt5_model=t2v.Byt5ModelStandIn(byt5_states), byt5_tokenizer=t2v.Byt5TokenizerStandIn(byt5_mask),
        byt5_max_length=BYT5_LEN, prompt_format=t2v.PromptFormatStandIn(), execution_device="cpu",
        vision_encoder=vision_encoder)
    pipe.set_progress_bar_config(disable=True)
    pipe.target_dtype = torch.float32
    pipe.autocast_enabled = False
    pipe.vae_autocast_enabled = False

    def closest(origin_size, target_size):  # the method's body at BASE (see the docstring)
        crop_size_list = pipe_mod.generate_crop_size_list(BASE, 16)
        aspect_ratios = np.array([round(float(h) / float(w), 5) for h, w in crop_size_list])
        closest_size, _ = pipe_mod.get_closest_ratio(origin_size[1], origin_size[0], aspect_ratios, crop_size_list)
        return closest_size[0], closest_size[1]

    pipe.get_closest_resolution_given_original_size = closest
    height, width = closest((IMAGE_HW[1], IMAGE_HW[0]), "480p")

    captured = {}
    official_prepare = pipe.prepare_latents

    def prepare_latents(*a, **kw):
        z = official_prepare(*a, **kw)
        captured["noise"] = z.detach().clone()
        return z

    pipe.prepare_latents = prepare_latents
    official_cond = pipe.get_image_condition_latents

    def get_image_condition_latents(*a, **kw):
        c = official_cond(*a, **kw)
        captured["cond"] = c.detach().clone()
        return c

    pipe.get_image_condition_latents = get_image_condition_latents
    official_vision = pipe._prepare_vision_states

    def prepare_vision_states(*a, **kw):
        v = official_vision(*a, **kw)
        captured["vision"] = v.detach().clone()
        return v

    pipe._prepare_vision_states = prepare_vision_states
    official_step = pipe_mod.FlowMatchDiscreteScheduler.step
    steps_out = []

    def step(self, *a, **kw):
        out = official_step(self, *a, **kw)
        steps_out.append(out[0].detach().clone())
        captured["timesteps"] = self.timesteps.clone()
        return out

    pipe_mod.FlowMatchDiscreteScheduler.step = step
    byt5_neg = pipe._process_single_byt5_prompt("", "cpu")

    def call(output_type):
        steps_out.clear()
        with torch.no_grad():
            return pipe(prompt=r["prompt"], aspect_ratio="16:9", video_length=r["frames"], prompt_rewrite=False,
                        num_inference_steps=r["steps"], guidance_scale=guidance_scale, enable_sr=False,
                        negative_prompt=r["negative_prompt"] if cfg else None, seed=r["seed"], flow_shift=r["shift"],
                        reference_image=Image.fromarray(picture), output_type=output_type,
                        enable_vae_tile_parallelism=False, return_dict=False)

    latents = call("latent")
    latents_steps = list(steps_out)
    noise = captured["noise"]
    video = call("pt")
    pipe_mod.FlowMatchDiscreteScheduler.step = official_step
    assert torch.equal(steps_out[-1], latents), "the two runs differ"
    assert video.shape == (1, 3, r["frames"], height, width), video.shape

    tensors = {"vae." + n: p.detach().float() for n, p in vae.state_dict().items()}
    tensors.update({"vision_encoder." + n: p.detach().float() for n, p in vision_encoder.model.state_dict().items()})
    tensors.update({"input.text_states": text_states, "input.text_mask": text_mask,
                    "input.byt5_text_states": byt5_states, "input.byt5_text_mask": byt5_mask,
                    "input.image": torch.from_numpy(np.ascontiguousarray(picture))})
    if cfg:
        tensors.update({"input.negative_text_states": neg_states, "input.negative_text_mask": neg_mask,
                        "input.negative_byt5_text_states": byt5_neg[0].float(),
                        "input.negative_byt5_text_mask": byt5_neg[1].to(torch.int64)})
    tensors["output.latents"] = latents[0].float()
    tensors["output.video"] = video[0].float()
    tensors["inter.noise"] = noise[0].float()
    tensors["inter.timesteps"] = captured["timesteps"].to(torch.float64)
    tensors["inter.latents_step0"] = latents_steps[0][0].float()
    tensors["inter.latents_last"] = latents_steps[-1][0].float()
    tensors["inter.cond_latents"] = captured["cond"][0].float()
    tensors["inter.vision_states"] = captured["vision"][:1].float()
    tensors = {k: v.contiguous() for k, v in tensors.items()}
    config = dict(r, guidance=guidance_scale, dit=dit_cfg, vae=VAE_TINY, vae_tiling=t2v.TILE,
                  vision_num_semantic_tokens=VISION_TOKENS, bucket_hw_base_size=BASE, height=height, width=width,
                  siglip={"vision": vision_cfg, "processor": proc_cfg})
    if not cfg:
        config["negative_prompt"] = ""
    meta = {"kind": "hunyuan1.5.pipeline.i2v", "config": json.dumps(config), "torch_version": torch.__version__,
            "generator": "tools/golden/hunyuan15_pipeline_i2v.py", "reference": REFERENCE,
            "synthetic_params": json.dumps({"generator": "splitmix64_uniform_v1", "seed": 20261211,
                                            "tensors": desc})}
    path = os.path.join(OUT, name)
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path} ({os.path.getsize(path)} bytes); bucket {height}x{width}; timesteps "
          f"{captured['timesteps'].tolist()}; |cond| {captured['cond'].norm():.4f} |vision| "
          f"{captured['vision'].norm():.4f} |latents| {latents.norm():.4f} |video| {video.norm():.4f}")


if __name__ == "__main__":
    main()
