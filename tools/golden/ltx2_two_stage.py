"""Golden files for kinds `ltx2.pipeline.two_stage` and `ltx2.pipeline.distilled` (docs/parity.md,
docs/models/ltx2.md "Two stages" / "Distilled"): the LTX-2 two-stage text-to-video+audio runs of the
OFFICIAL TI2VidTwoStagesPipeline.__call__ (ltx_pipelines/ti2vid_two_stages.py) and
DistilledPipeline.__call__ (distilled.py) of Lightricks/LTX-2 400fd31 with images=[], on tiny random
models.

What runs is the pipelines' own code from the prompt contexts on: assert_resolution(is_two_stage=True),
one torch.Generator seeded `seed` shared by the GaussianNoiser of both stages and the video decode,
stage 1 at width // 2 x height // 2 through DiffusionStage.__call__ (TwoStages: LTX2Scheduler.execute
(steps), create_multimodal_guider_factory + FactoryGuidedDenoiser; Distilled: DISTILLED_SIGMAS and
SimpleDenoiser), then upsample_video (what VideoUpsampler.__call__ runs: the video encoder's
per_channel_statistics un_normalize, the LatentUpsampler, normalize) on video_state.latent[:1], then
stage 2 at full size with STAGE_2_DISTILLED_SIGMAS and SimpleDenoiser, ModalitySpec(noise_scale =
stage_2_sigmas[0].item(), initial_latent = the upsampled video / the stage-1 audio latent); the
decoded video from the stage-2 latent (decode_video(latent, None, generator)) and, for TwoStages, the
audio of STAGE 1 (the pipeline discards stage 2's audio), for Distilled the stage-2 audio.
The stage-2 transformer of TwoStages is the stage-1 model with the distilled LoRA fused as ltx-core's
builder fuses it (loader.fuse_loras.apply_loras of the file renamed by LTXV_LORA_COMFY_RENAMING_MAP,
W + strength * B @ A, fp32 aggregation: what LoraAction's LoraPathStrengthAndSDOps ask for).

Bypassed as in tools/golden/ltx2_pipeline_t2v.py (whose stand-in builder, recorders, tiny DiT and
decoders are imported): the Gemma prompt encoder (contexts are inputs), the checkpoint loading (a
stand-in builder hands DiffusionStage the model; for stage 2 the fused one), the video encoder of
VideoUpsampler (only its per_channel_statistics are read: the bundled checkpoint's
vae.per_channel_statistics, shared with the decoder). The upsampler is the official LatentUpsampler
from LatentUpsamplerConfigurator (in 128, mid 32, 0 blocks per stage, dims 2: the smallest spatial x2
one; its parameters rounded to fp16 values and stored as F16, exact, the forward in fp32).
The distilled LoRA is a random rank-4 file `diffusion_model.<module>.lora_A.weight / .lora_B.weight`
(no alpha) on every block's attention q/k/v/out and FFN of both streams and the cross-modal attentions.

  ltx2_two_stage.safetensors   TwoStages: CFG (video 3.0, audio 2.5), 2 stage-1 steps, 1 frame 64 x
                               128 at 8 fps (stage 1 32 x 64; 3 audio latent frames; one frame keeps
                               the decoded video small), LoRA strength 0.8, video decoded
  ltx2_distilled.safetensors   Distilled: 8 + 3 steps of SimpleDenoiser, 9 frames 64 x 64 at 24 fps,
                               latents only

Tensors: the DiT under model.diffusion_model.*, the decoder (two_stage) under vae.decoder.* +
vae.per_channel_statistics.* (distilled: vae.per_channel_statistics.* only), the upsampler under
upsampler.* (F16; config "upsampler"), the two_stage LoRA under distilled_lora.<its file's keys>
(config "distilled_lora": {"strength"}); input.v_context_p,
input.a_context_p, input.v_context_n, input.a_context_n -> output.video_latent (stage 2's)
[1, 128, F', H/32, W/32], output.audio_latent (the pipeline's audio) [1, 8, T, 16],
output.stage1.video_latent / .audio_latent, output.video [F, H, W, 3] in [0, 1] (two_stage);
inter.upsampled, inter.stage<k>.sigmas, inter.stage<k>.noise.{video,audio} (the noised initial states,
patchified), inter.stage<k>.step<i>.{video,audio,video_denoised,audio_denoised}.

Usage: /work/venv-golden/bin/python tools/golden/ltx2_two_stage.py [--out tests/golden/ltx2]
"""
import argparse
import dataclasses
import json
import os
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ltx2_pipeline_t2v import (  # noqa: E402  (sets up the reference's import paths)
    DIT, TEXT_LEN, VAE, RecordingDenoiser, RecordingEuler, RecordingNoiser, StandInBuilder, build_decoders, build_dit)

from ltx_core.components.guiders import MultiModalGuiderParams, create_multimodal_guider_factory  # noqa: E402
from ltx_core.components.schedulers import LTX2Scheduler  # noqa: E402
from ltx_core.loader.fuse_loras import apply_loras, bf16_fuse_rule  # noqa: E402
from ltx_core.loader.primitives import LoraStateDictWithStrength, StateDict  # noqa: E402
from ltx_core.loader.sd_ops import LTXV_LORA_COMFY_RENAMING_MAP  # noqa: E402
from ltx_core.model.upsampler import LatentUpsamplerConfigurator, upsample_video  # noqa: E402
from ltx_pipelines.utils.blocks import DiffusionStage  # noqa: E402
from ltx_pipelines.utils.constants import DISTILLED_SIGMAS, STAGE_2_DISTILLED_SIGMAS  # noqa: E402
from ltx_pipelines.utils.denoisers import SimpleDenoiser  # noqa: E402
from ltx_pipelines.utils.helpers import assert_resolution  # noqa: E402
from ltx_pipelines.utils.types import ModalitySpec  # noqa: E402

UPSAMPLER = {"_class_name": "LatentUpsampler", "in_channels": 128, "mid_channels": 32, "num_blocks_per_stage": 0,
             "dims": 2, "spatial_upsample": True, "temporal_upsample": False, "spatial_scale": 2.0,
             "rational_resampler": False}
LORA_TARGETS = ("attn1.to_q", "attn1.to_k", "attn1.to_v", "attn1.to_out.0", "attn2.to_q", "attn2.to_v",
                "ff.net.0.proj", "ff.net.2", "audio_attn1.to_q", "audio_attn1.to_out.0", "audio_ff.net.2",
                "audio_to_video_attn.to_v", "video_to_audio_attn.to_q")
RANK = 4


class StatsOnly:
    """What upsample_video reads of the VideoEncoder VideoUpsampler builds: per_channel_statistics."""

    def __init__(self, stats):
        self.per_channel_statistics = stats


class RecordingSimpleDenoiser(SimpleDenoiser):
    pass


def build_upsampler(seed):
    torch.manual_seed(seed)
    up = LatentUpsamplerConfigurator.from_metadata({"config": UPSAMPLER}).eval()
    with torch.no_grad():
        for name, p in up.named_parameters():
            if "norm" in name:
                p.add_(0.3 * torch.randn_like(p))
            p.copy_(p.half().float())
    return up.float()


def make_lora(dit, seed, num_layers):
    g = torch.Generator().manual_seed(seed)
    sd = dit.state_dict()
    lora = {}
    for i in range(num_layers):
        for t in LORA_TARGETS:
            m = f"transformer_blocks.{i}.{t}"
            w = sd[m + ".weight"]
            out_f, in_f = w.shape
            lora[f"diffusion_model.{m}.lora_A.weight"] = torch.randn(RANK, in_f, generator=g) / in_f ** 0.5
            lora[f"diffusion_model.{m}.lora_B.weight"] = 0.5 * torch.randn(out_f, RANK, generator=g) / RANK ** 0.5
    return lora


def fused_dit(dit, dit_config, lora, strength):
    base = {k: v.detach().clone() for k, v in dit.state_dict().items()}
    lora_sd = {LTXV_LORA_COMFY_RENAMING_MAP.apply_to_key(k): v for k, v in lora.items()}
    fused = apply_loras(StateDict(base, torch.device("cpu"), 0, {torch.float32}),
                        [LoraStateDictWithStrength(StateDict(lora_sd, torch.device("cpu"), 0, {torch.float32}), strength)],
                        fuse_rule=dataclasses.replace(bf16_fuse_rule, aggregation_dtype=torch.float32))
    model = build_dit(0, dit_config)
    model.load_state_dict(fused.sd, strict=True)
    changed = sum(int(not torch.equal(fused.sd[k], base[k])) for k in base)
    assert changed == len(lora) // 2, (changed, len(lora))
    return model


def stage_taps(out, k, sigmas, noiser, stepper):
    out[f"inter.stage{k}.sigmas"] = sigmas
    out[f"inter.stage{k}.noise.video"] = noiser.states[0]
    out[f"inter.stage{k}.noise.audio"] = noiser.states[1]
    for j, (i, denoised, latent) in enumerate(stepper.results):
        stream = "video" if j % 2 == 0 else "audio"
        out[f"inter.stage{k}.step{i}.{stream}"] = latent
        out[f"inter.stage{k}.step{i}.{stream}_denoised"] = denoised


def run(req, distilled, dit, dit_config, stage2_dit, upsampler, stats, vae, contexts):
    """TI2VidTwoStagesPipeline.__call__ / DistilledPipeline.__call__ from the contexts on (images=[])."""
    height, width, frames, fps = req["height"], req["width"], req["num_frames"], req["frame_rate"]
    assert_resolution(height=height, width=width, is_two_stage=True)
    generator = torch.Generator(device="cpu").manual_seed(req["seed"])
    v_context_p, a_context_p, v_context_n, a_context_n = contexts
    out = {}
    # Stage 1 at half resolution.
    noiser1 = RecordingNoiser(generator)
    stepper1 = RecordingEuler()
    if distilled:
        sigmas1 = DISTILLED_SIGMAS.to(dtype=torch.float32)
        denoiser1 = SimpleDenoiser(v_context_p, a_context_p)
    else:
        sigmas1 = LTX2Scheduler().execute(steps=req["num_inference_steps"]).to(dtype=torch.float32)
        denoiser1 = RecordingDenoiser(
            v_context=v_context_p, a_context=a_context_p,
            video_guider_factory=create_multimodal_guider_factory(
                params=MultiModalGuiderParams(**req["video_guider_params"]), negative_context=v_context_n),
            audio_guider_factory=create_multimodal_guider_factory(
                params=MultiModalGuiderParams(**req["audio_guider_params"]), negative_context=a_context_n))
    stage1 = DiffusionStage(StandInBuilder(dit, dit_config), torch.float32, torch.device("cpu"))
    video_state, audio_state = stage1(
        denoiser=denoiser1, sigmas=sigmas1, noiser=noiser1, width=width // 2, height=height // 2, frames=frames,
        fps=fps, video=ModalitySpec(context=v_context_p, conditionings=[]), audio=ModalitySpec(context=a_context_p),
        stepper=stepper1, max_batch_size=1)
    stage_taps(out, 1, sigmas1, noiser1, stepper1)
    out["output.stage1.video_latent"] = video_state.latent
    out["output.stage1.audio_latent"] = audio_state.latent
    # Stage 2: upsample, then refine at full resolution.
    with torch.no_grad():
        upscaled = upsample_video(latent=video_state.latent[:1], video_encoder=StatsOnly(stats), upsampler=upsampler)
    out["inter.upsampled"] = upscaled
    sigmas2 = STAGE_2_DISTILLED_SIGMAS.to(dtype=torch.float32)
    noiser2 = RecordingNoiser(generator)
    stepper2 = RecordingEuler()
    stage2 = DiffusionStage(StandInBuilder(stage2_dit, dit_config), torch.float32, torch.device("cpu"))
    video_state2, audio_state2 = stage2(
        denoiser=SimpleDenoiser(v_context=v_context_p, a_context=a_context_p), sigmas=sigmas2, noiser=noiser2,
        width=width, height=height, frames=frames, fps=fps,
        video=ModalitySpec(context=v_context_p, conditionings=[], noise_scale=sigmas2[0].item(),
                           initial_latent=upscaled),
        audio=ModalitySpec(context=a_context_p, noise_scale=sigmas2[0].item(), initial_latent=audio_state.latent),
        stepper=stepper2)
    stage_taps(out, 2, sigmas2, noiser2, stepper2)
    out["output.video_latent"] = video_state2.latent
    out["output.audio_latent"] = audio_state2.latent if distilled else audio_state.latent
    if vae is not None:
        with torch.no_grad():
            out["output.video"] = torch.cat(list(vae.decode_video(video_state2.latent, None, generator)), dim=0)
    return out


def make(out_dir, name, req, seed, distilled, num_layers, strength=None):
    dit_config = dict(DIT, num_layers=num_layers)
    dit = build_dit(seed, dit_config)
    vae, _, _ = build_decoders(seed + 1)
    upsampler = build_upsampler(seed + 3)
    g = torch.Generator().manual_seed(seed + 2)
    dv = DIT["num_attention_heads"] * DIT["attention_head_dim"]
    da = DIT["audio_num_attention_heads"] * DIT["audio_attention_head_dim"]
    contexts = (torch.randn(1, TEXT_LEN, dv, generator=g), torch.randn(1, TEXT_LEN, da, generator=g),
                torch.randn(1, TEXT_LEN, dv, generator=g), torch.randn(1, TEXT_LEN, da, generator=g))
    lora = None
    stage2_dit = dit
    if not distilled:
        lora = make_lora(dit, seed + 4, num_layers)
        stage2_dit = fused_dit(dit, dit_config, lora, strength)
    with torch.inference_mode():
        out = run(req, distilled, dit, dit_config, stage2_dit, upsampler, vae.per_channel_statistics,
                  None if distilled else vae, contexts)
    tensors = {"model.diffusion_model." + n: p.detach().float().contiguous() for n, p in dit.state_dict().items()}
    config = dict(req, transformer=dit_config)
    for n, p in vae.state_dict().items():
        if n.startswith("per_channel_statistics."):
            tensors["vae." + n] = p.detach().float().contiguous()
        elif not distilled:
            tensors["vae.decoder." + n] = p.detach().float().contiguous()
    if not distilled:
        config["vae"] = VAE
    # The upsampler and the LoRA travel inside the golden (a copy of it elsewhere still runs):
    # upsampler.* with config "upsampler" (the published file's __metadata__.config), and
    # distilled_lora.<the LoRA file's own keys> with config "distilled_lora": {"strength"}.
    tensors.update({"upsampler." + n: p.detach().half().contiguous() for n, p in upsampler.state_dict().items()})
    config["upsampler"] = UPSAMPLER
    if not distilled:
        tensors.update({"distilled_lora." + k: v.contiguous() for k, v in lora.items()})
        config["distilled_lora"] = {"strength": strength}
    names = ("v_context_p", "a_context_p", "v_context_n", "a_context_n")
    tensors.update({"input." + n: c.contiguous() for n, c in zip(names, contexts)})
    tensors.update({k: v.detach().float().contiguous() for k, v in out.items()})
    kind = "ltx2.pipeline.distilled" if distilled else "ltx2.pipeline.two_stage"
    ref = ("distilled.py DistilledPipeline.__call__" if distilled
           else "ti2vid_two_stages.py TI2VidTwoStagesPipeline.__call__")
    meta = {"kind": kind, "config": json.dumps(config), "torch": torch.__version__,
            "generator": "tools/golden/ltx2_two_stage.py", "reference": "Lightricks/LTX-2 400fd31 ltx_pipelines/" + ref}
    path = os.path.join(out_dir, name + ".safetensors")
    save_file(tensors, path, metadata=meta)
    shapes = {k: tuple(v.shape) for k, v in out.items() if k.startswith("output.")}
    print(f"wrote {path} ({os.path.getsize(path)} bytes); {shapes}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/golden/ltx2")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(2)
    two = dict(height=64, width=128, num_frames=1, frame_rate=8.0, num_inference_steps=2, seed=42,
               video_guider_params=dict(cfg_scale=3.0), audio_guider_params=dict(cfg_scale=2.5))
    make(args.out, "ltx2_two_stage", two, 0, False, num_layers=1, strength=0.8)
    dist = dict(height=64, width=64, num_frames=9, frame_rate=24.0, num_inference_steps=1, seed=5,
                video_guider_params={}, audio_guider_params={})
    make(args.out, "ltx2_distilled", dist, 5, True, num_layers=1)


if __name__ == "__main__":
    main()
