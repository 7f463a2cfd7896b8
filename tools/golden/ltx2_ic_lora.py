"""Golden files for kinds `ltx2.conditioning.reference_video` and `ltx2.pipeline.ic_lora` (docs/parity.md,
docs/models/ltx2.md "IC-LoRA and video-to-video"): the IC-LoRA reference-video conditioning of the OFFICIAL
ICLoraPipeline (ltx_pipelines/ic_lora.py, Lightricks/LTX-2 400fd31) on tiny random models.

Conditioning files: what runs is ltx_pipelines/iclora_utils.py append_ic_lora_reference_video_conditionings
(video_preprocess: resize_and_center_crop + normalize_images per frame; temporal_subsample; the REAL tiny
VideoEncoder, which crops a frame count that is not 1 + 8k; downsample_mask_video_to_latent for a pixel mask;
VideoConditionByReferenceLatent wrapped in ConditioningItemAttentionStrengthWrapper when an attention
strength < 1 or a mask is given) after combined_image_conditionings (images optional), then
create_noised_state on a VideoLatentTools state of `latent_channels` (4) channels. Only the file decode is
replaced: decode_video_by_frame yields the frames of input.reference_video.<i> ([F, h, w, 3], 8-bit values
as float) with the same frame cap (frame_cap = num_frames), in place of PyAV.

  ltx2_conditioning_reference_video.safetensors        an image at frame 0 (0.8), one reference of 12 frames
                                                       20 x 28 (capped at 9, resized and cropped to the
                                                       reference size 32 x 64 = (64 x 128) / downscale 2),
                                                       strength 1, a pixel attention mask [1, 1, 5, 32, 64]
                                                       times strength 0.6
  ltx2_conditioning_reference_video_temporal.safetensors  no image, two references (20 frames 12 x 20 capped
                                                       at 17 and 7 frames 20 x 14; strengths 1.0 and 0.5), temporal scale 2
                                                       (frames 0, 1, 3, ...: 9 and 4 frames, the second cropped
                                                       to 1 by the encoder), downscale 1, attention strength 0.5
                                                       (the second reference extends the first one's mask)

Pipeline files (step taps inter.step<i>.* for the first and the last step): ICLoraPipeline.__call__ ITSELF with skip_stage_2=True, called on an instance whose parts are
stand-ins for the checkpoint loading only: the prompt encoder returns the given contexts, the image conditioner
hands combined_image_conditionings / the reference append a stand-in encoder returning prepared latents
(input.image_latent.<i>, input.reference_latent.<i>: the DiT's 128 latent channels make a real encoder several
MB; the real encoder is the conditioning files' part), stage_1 is the real DiffusionStage over the tiny LTXModel
with the IC-LoRA fused as ltx-core fuses a LoRA (loader/fuse_loras.apply_loras, fp32 aggregation), the
decoders are tools/golden/ltx2_pipeline_t2v.py's. The reference factors come from the LoRA file's metadata
through the real read_lora_reference_downscale_factor / _temporal_scale_factor (ICLoraPipeline.__init__'s
loop). Stage 1 runs at height / 2 x width / 2 with SimpleDenoiser and DISTILLED_SIGMAS (8 steps).

  ltx2_pipeline_ic_lora.safetensors    (+ .lora.safetensors, metadata reference_downscale_factor 2): target
                                       128 x 128, 9 frames (stage 1 64 x 64), one reference of 9 frames 20 x 28
                                       (-> 32 x 32), strength 1, no images, attention strength 1 (no mask),
                                       decoders included
  ltx2_pipeline_ic_lora_image.safetensors  (+ its .lora.safetensors, no metadata: factors 1): an image at frame
                                       0 (1.0) and a reference of 9 frames 24 x 20 at strength 0.7, attention
                                       strength 0.6, latents only

The LoRA files are what ltx-trainer saves (peft LoraConfig on to_k / to_q / to_v / to_out.0, lora_A / lora_B
under diffusion_model., no alpha), rank 2; the pipeline config names them ("loras": [{file, strength}],
relative to the golden's folder).

Usage: /work/venv-golden/bin/python tools/golden/ltx2_ic_lora.py [--out tests/golden/ltx2]
"""
import argparse
import dataclasses
import importlib.machinery
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
from transformers import PreTrainedModel, ProcessorMixin  # noqa: E402,F401

# PyAV crashes in this venv and OpenImageIO / torchaudio / scipy are absent: none of them runs here (the
# frames come from the file's tensors, crf 0 skips the H.264 round trip).
for _missing in ("OpenImageIO", "av", "torchaudio", "scipy"):
    if _missing == "av":
        _m = types.ModuleType(_missing)
        _m.__spec__ = importlib.machinery.ModuleSpec(_missing, None)
        sys.modules[_missing] = _m
        continue
    try:
        __import__(_missing)
    except ImportError:
        _m = types.ModuleType(_missing)
        _m.__spec__ = importlib.machinery.ModuleSpec(_missing, None)
        sys.modules[_missing] = _m

import ltx2_pipeline_t2v as t2v  # noqa: E402  (the tiny DiT, decoders, stand-in builder, recorders)
from ltx2_video_vae import randomize as randomize_video_vae  # noqa: E402

import ltx_pipelines.iclora_utils as iclora_utils  # noqa: E402
import ltx_pipelines.ic_lora as ic_lora  # noqa: E402
import ltx_pipelines.utils.blocks as blocks  # noqa: E402
from ltx_core.components.noisers import GaussianNoiser  # noqa: E402
from ltx_core.components.patchifiers import VideoLatentPatchifier  # noqa: E402
from ltx_core.loader.fuse_loras import apply_loras, bf16_fuse_rule  # noqa: E402
from ltx_core.loader.primitives import LoraStateDictWithStrength, StateDict  # noqa: E402
from ltx_core.loader.sd_ops import LTXV_LORA_COMFY_RENAMING_MAP  # noqa: E402
from ltx_core.model.audio_vae.audio_vae import decode_audio  # noqa: E402
from ltx_core.model.video_vae.model_configurator import VideoEncoderConfigurator  # noqa: E402
from ltx_core.tools import VideoLatentTools  # noqa: E402
from ltx_core.types import VideoLatentShape, VideoPixelShape  # noqa: E402
from ltx_pipelines.utils.args import ImageConditioningInput  # noqa: E402
from ltx_pipelines.utils.blocks import DiffusionStage  # noqa: E402
from ltx_pipelines.utils.helpers import combined_image_conditionings, create_noised_state  # noqa: E402
from peft import LoraConfig, get_peft_model, get_peft_model_state_dict  # noqa: E402

REFERENCE = "Lightricks/LTX-2 400fd31 ltx_pipelines/ic_lora.py ICLoraPipeline.__call__ (skip_stage_2=True)"
COND_REFERENCE = ("Lightricks/LTX-2 400fd31 ltx_pipelines/iclora_utils.py append_ic_lora_reference_video_conditionings "
                  "after combined_image_conditionings, + create_noised_state")

# A real tiny encoder on the pipeline's 8x / 32x grid: patch 4, three compress_all_res (2x time and space).
ENCODER = {
    "_class_name": "CausalVideoAutoencoder", "dims": 3, "in_channels": 3, "latent_channels": 4, "patch_size": 4,
    "norm_layer": "pixel_norm", "latent_log_var": "uniform", "encoder_spatial_padding_mode": "zeros",
    "encoder_blocks": [
        ["res_x", {"num_layers": 1}],
        ["compress_all_res", {"multiplier": 2}],
        ["compress_all_res", {"multiplier": 1}],
        ["compress_all_res", {"multiplier": 1}],
    ],
}
LORA_TARGETS = ["to_k", "to_q", "to_v", "to_out.0"]

FRAMES = {}  # path -> uint8 frames [F, h, w, 3] (the "files" decode_video_by_frame reads)


def fake_decode_video_by_frame(path, device, starting_frame=0, frame_cap=None):
    """decode_video_by_frame's loop on stored frames instead of a PyAV container."""
    for index, frame in enumerate(FRAMES[path]):
        if index < starting_frame:
            continue
        yield torch.tensor(frame, dtype=torch.uint8, device=device).unsqueeze(0)
        if frame_cap is not None:
            frame_cap -= 1
            if frame_cap == 0:
                break


iclora_utils.decode_video_by_frame = fake_decode_video_by_frame


class RecordingEncoder:
    """A real VideoEncoder whose inputs and outputs are kept."""

    def __init__(self, encoder):
        self.encoder, self.inputs, self.latents = encoder, [], []

    def __call__(self, x):
        self.inputs.append(x.detach().clone())
        out = self.encoder(x)
        self.latents.append(out.detach().clone())
        return out


class StandInEncoder:
    """Keeps each input and returns the next prepared latent (images first, then references)."""

    def __init__(self, latents):
        self.latents, self.inputs = list(latents), []

    def __call__(self, x):
        self.inputs.append(x.detach().clone())
        return self.latents[len(self.inputs) - 1]


def random_video(gen, frames, h, w):
    return torch.randint(0, 256, (frames, h, w, 3), generator=gen, dtype=torch.uint8).numpy()


def write_png(tmp, name, pic):
    path = os.path.join(tmp, name)
    Image.fromarray(pic, mode="RGB").save(path)
    return path


def make_conditioning(path, seed, req, image_specs, picture_sizes, refs, mask_frames=None):
    """refs: [(frames, h, w, strength)]."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 1000)
    encoder = VideoEncoderConfigurator.from_metadata({"config": {"vae": ENCODER}}).eval()
    randomize_video_vae(encoder, gen)
    pictures = [torch.randint(0, 256, (h, w, 3), generator=gen, dtype=torch.uint8).numpy() for h, w in picture_sizes]
    videos = [random_video(gen, f, h, w) for f, h, w, _ in refs]
    mask = None
    if mask_frames is not None:
        mask = torch.rand(1, 1, mask_frames, req["height"] // 2, req["width"] // 2, generator=gen)
    pixel_shape = VideoPixelShape(batch=1, frames=req["num_frames"], height=req["height"], width=req["width"],
                                  fps=req["frame_rate"])
    tools = VideoLatentTools(VideoLatentPatchifier(patch_size=1),
                             VideoLatentShape.from_pixel_shape(pixel_shape, latent_channels=req["latent_channels"]),
                             req["frame_rate"])
    recorder = RecordingEncoder(encoder)
    with tempfile.TemporaryDirectory() as tmp, torch.inference_mode():
        images = [ImageConditioningInput(write_png(tmp, f"image{i}.png", p), s["frame_idx"], s["strength"], crf=0)
                  for i, (p, s) in enumerate(zip(pictures, image_specs))]
        conds = combined_image_conditionings(images=images, height=req["height"], width=req["width"],
                                             video_encoder=recorder, dtype=torch.float32, device=torch.device("cpu"))
        n_images = len(recorder.inputs)
        video_conditioning = []
        for i, (v, (_, _, _, strength)) in enumerate(zip(videos, refs)):
            p = os.path.join(tmp, f"reference{i}.mp4")
            FRAMES[p] = v
            video_conditioning.append((p, strength))
        iclora_utils.append_ic_lora_reference_video_conditionings(
            conds, video_conditioning, height=req["height"], width=req["width"], num_frames=req["num_frames"],
            video_encoder=recorder, dtype=torch.float32, device=torch.device("cpu"),
            reference_downscale_factor=req["reference_downscale_factor"],
            reference_temporal_scale_factor=req["reference_temporal_scale_factor"],
            conditioning_attention_strength=req["conditioning_attention_strength"],
            conditioning_attention_mask=mask)
        noiser = GaussianNoiser(torch.Generator(device="cpu").manual_seed(req["seed"]))
        state = create_noised_state(tools, conds, noiser, torch.float32, torch.device("cpu"))
    tensors = {k: v.detach().float().contiguous() for k, v in encoder.state_dict().items()}
    for i, pic in enumerate(pictures):
        tensors[f"input.image.{i}"] = torch.tensor(pic, dtype=torch.float32)
        tensors[f"output.image_latent.{i}"] = recorder.latents[i].contiguous()
    for i, v in enumerate(videos):
        tensors[f"input.reference_video.{i}"] = torch.tensor(v, dtype=torch.float32)
        tensors[f"inter.reference_video.{i}"] = recorder.inputs[n_images + i].contiguous()
        tensors[f"output.reference_latent.{i}"] = recorder.latents[n_images + i].contiguous()
    if mask is not None:
        tensors["input.attention_mask"] = mask.contiguous()
    tensors.update({"output.state.latent": state.latent.contiguous(),
                    "output.state.clean_latent": state.clean_latent.contiguous(),
                    "output.state.denoise_mask": state.denoise_mask.contiguous(),
                    "output.state.positions": state.positions.contiguous()})
    if state.attention_mask is not None:
        tensors["output.state.attention_mask"] = state.attention_mask.contiguous()
    if state.keyframes_mask is not None:
        tensors["output.state.keyframes_mask"] = state.keyframes_mask.contiguous()
    config = dict(req, vae=ENCODER, images=image_specs, video_conditioning=[{"strength": r[3]} for r in refs])
    meta = {"kind": "ltx2.conditioning.reference_video", "config": json.dumps(config), "torch": torch.__version__,
            "generator": "tools/golden/ltx2_ic_lora.py", "reference": COND_REFERENCE,
            "note": "decode_video_by_frame yields input.reference_video.<i> (PyAV replaced)"}
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path} ({os.path.getsize(path)} bytes); state {tuple(state.latent.shape)}; "
          f"refs {[tuple(x.shape) for x in recorder.latents[n_images:]]}; "
          f"mask {None if state.attention_mask is None else tuple(state.attention_mask.shape)}")


def make_lora(dit, seed, path, metadata):
    """ltx-trainer's IC-LoRA file: peft on a copy of the DiT, random A / B, _save_checkpoint's names."""
    import copy
    peft_model = get_peft_model(copy.deepcopy(dit), LoraConfig(r=2, lora_alpha=2, target_modules=LORA_TARGETS,
                                                               lora_dropout=0.0, init_lora_weights=True))
    torch.manual_seed(seed)
    with torch.no_grad():
        for n, p in peft_model.named_parameters():
            if "lora_A" in n:
                p.copy_(torch.randn_like(p) / p.shape[1] ** 0.5)
            elif "lora_B" in n:
                p.copy_(0.5 * torch.randn_like(p) / p.shape[1] ** 0.5)
    sd = get_peft_model_state_dict(peft_model)
    sd = {k.replace("base_model.model.", "", 1): v for k, v in sd.items()}
    sd = {f"diffusion_model.{k}": v.to(torch.float32).contiguous() for k, v in sd.items()}
    save_file(sd, path, metadata=metadata)
    return sd


def fuse(dit, config, lora_sd, strength):
    """ltx-core's fusion (W + strength * B @ A), fp32 aggregation, into a fresh copy of the DiT."""
    base = {k: v.detach().clone() for k, v in dit.state_dict().items()}
    renamed = {LTXV_LORA_COMFY_RENAMING_MAP.apply_to_key(k): v for k, v in lora_sd.items()}
    fused = apply_loras(StateDict(base, torch.device("cpu"), 0, {torch.float32}),
                        [LoraStateDictWithStrength(StateDict(renamed, torch.device("cpu"), 0, {torch.float32}), strength)],
                        fuse_rule=dataclasses.replace(bf16_fuse_rule, aggregation_dtype=torch.float32))
    import copy
    model = copy.deepcopy(dit)
    model.load_state_dict(fused.sd, strict=True)
    return model


class StageOneDone(Exception):
    """Stops __call__ after stage 1 (a latents-only file has no decoders)."""


class Recorders:
    noisers = []
    steppers = []


class RecordingNoiser(GaussianNoiser):
    def __init__(self, generator):
        super().__init__(generator)
        self.states = []
        Recorders.noisers.append(self)

    def __call__(self, latent_state, noise_scale=1.0):
        out = super().__call__(latent_state, noise_scale)
        self.states.append(out)
        return out


class RecordingEuler(t2v.RecordingEuler):
    def __init__(self):
        super().__init__()
        Recorders.steppers.append(self)


class PromptStandIn:
    def __init__(self, v, a):
        self.v, self.a = v, a

    def __call__(self, prompts, **_kw):
        return (types.SimpleNamespace(video_encoding=self.v, audio_encoding=self.a),)


class ImageConditionerStandIn:
    def __init__(self, encoder):
        self.encoder = encoder

    def resolve_crf(self, images):
        return list(images)

    def __call__(self, fn):
        return fn(self.encoder)


class VideoDecoderStandIn:
    """VideoDecoder.__call__: decode_video(latent, tiling, generator) with the tiny decoder."""

    diffvae_optimization = None

    def __init__(self, vae, checkpoint_path):
        self.vae, self.checkpoint_path = vae, checkpoint_path

    def __call__(self, latent, tiling_config=None, generator=None, dtype=None):
        return self.vae.decode_video(latent, tiling_config, generator)


class AudioDecoderStandIn:
    def __init__(self, decoder, vocoder):
        self.decoder, self.vocoder = decoder, vocoder

    def __call__(self, latent):
        return decode_audio(latent, self.decoder, self.vocoder)


def make_pipeline(path, req, seed, with_decoders, lora_metadata, image_specs, picture_sizes, refs):
    """refs: [(frames, h, w, strength)]; req: __call__'s scalar args + conditioning_attention_strength."""
    dit_config = dict(t2v.DIT, num_layers=1)
    dit = t2v.build_dit(seed, dit_config)
    decoders = t2v.build_decoders(seed + 1) if with_decoders else None
    g = torch.Generator().manual_seed(seed + 2)
    dv = t2v.DIT["num_attention_heads"] * t2v.DIT["attention_head_dim"]
    da = t2v.DIT["audio_num_attention_heads"] * t2v.DIT["audio_attention_head_dim"]
    v_ctx, a_ctx = torch.randn(1, t2v.TEXT_LEN, dv, generator=g), torch.randn(1, t2v.TEXT_LEN, da, generator=g)
    pictures = [torch.randint(0, 256, (h, w, 3), generator=g, dtype=torch.uint8).numpy() for h, w in picture_sizes]
    videos = [random_video(g, f, h, w) for f, h, w, _ in refs]
    lora_name = os.path.basename(path).replace(".safetensors", ".lora.safetensors")
    lora_path = os.path.join(os.path.dirname(path), lora_name)
    lora_sd = make_lora(dit, seed + 3, lora_path, lora_metadata)
    strength = req["lora_strength"]
    fused = fuse(dit, dit_config, lora_sd, strength)
    # ICLoraPipeline.__init__'s factors, read from the LoRA file by the official functions.
    down = iclora_utils.read_lora_reference_downscale_factor(lora_path)
    temporal = iclora_utils.read_lora_reference_temporal_scale_factor(lora_path)
    h1, w1 = req["height"] // 2, req["width"] // 2
    latents = [torch.randn(1, 128, 1, h1 // 32, w1 // 32, generator=g) for _ in image_specs]
    for f, _, _, _ in refs:
        n = min(f, req["num_frames"])
        if temporal > 1:
            n = len([0, *range(1, n, temporal)])
        n = n - (n - 1) % 8
        latents.append(torch.randn(1, 128, 1 + (n - 1) // 8, h1 // down // 32, w1 // down // 32, generator=g))
    encoder = StandInEncoder(latents)

    Recorders.noisers.clear()
    Recorders.steppers.clear()
    ic_lora.GaussianNoiser = RecordingNoiser
    blocks.EulerDiffusionStep = RecordingEuler
    pipe = ic_lora.ICLoraPipeline.__new__(ic_lora.ICLoraPipeline)
    pipe.device, pipe.dtype = torch.device("cpu"), torch.float32
    pipe.prompt_encoder = PromptStandIn(v_ctx, a_ctx)
    pipe.image_conditioner = ImageConditionerStandIn(encoder)
    pipe.stage_1 = DiffusionStage(t2v.StandInBuilder(fused, dit_config), torch.float32, torch.device("cpu"))
    pipe.stage_2 = None
    pipe.upsampler = None
    pipe.reference_downscale_factor, pipe.reference_temporal_scale_factor = down, temporal
    with tempfile.TemporaryDirectory() as tmp, torch.inference_mode():
        vae_file = os.path.join(tmp, "vae.safetensors")
        save_file({"x": torch.zeros(1)}, vae_file, metadata={"config": json.dumps({"vae": t2v.VAE})})
        if decoders is not None:
            pipe.video_decoder = VideoDecoderStandIn(decoders[0], vae_file)
            pipe.audio_decoder = AudioDecoderStandIn(decoders[1], decoders[2])
        else:
            pipe.video_decoder = VideoDecoderStandIn(None, vae_file)
            pipe.audio_decoder = None
        images = [ImageConditioningInput(write_png(tmp, f"image{i}.png", p), s["frame_idx"], s["strength"], crf=0)
                  for i, (p, s) in enumerate(zip(pictures, image_specs))]
        video_conditioning = []
        for i, (v, (_, _, _, s)) in enumerate(zip(videos, refs)):
            p = os.path.join(tmp, f"reference{i}.mp4")
            FRAMES[p] = v
            video_conditioning.append((p, s))
        if decoders is None:  # latents only: stop after stage 1 by recording its states
            stage = pipe.stage_1
            holder = {}

            def stage_only(**kw):
                holder["states"] = stage(**kw)
                raise StageOneDone

            pipe.stage_1 = stage_only
            try:
                pipe(prompt="", seed=req["seed"], height=req["height"], width=req["width"],
                     num_frames=req["num_frames"], frame_rate=req["frame_rate"], images=images,
                     video_conditioning=video_conditioning, tiling_config=None,
                     conditioning_attention_strength=req["conditioning_attention_strength"], skip_stage_2=True)
            except StageOneDone:
                pass
            video_state, audio_state = holder["states"]
            out = {}
        else:
            video, audio, _ = pipe(prompt="", seed=req["seed"], height=req["height"], width=req["width"],
                                   num_frames=req["num_frames"], frame_rate=req["frame_rate"], images=images,
                                   video_conditioning=video_conditioning, tiling_config=None,
                                   conditioning_attention_strength=req["conditioning_attention_strength"],
                                   skip_stage_2=True)
            out = {"output.video": torch.cat(list(video), dim=0), "output.audio": audio.waveform}
    # The latents: the stage's states (re-run the recorders' view of them).
    noiser = Recorders.noisers[0]
    stepper = Recorders.steppers[0]
    v0, a0 = noiser.states
    steps = stepper.results
    last = len(steps) // 2 - 1
    for k, (i, denoised, latent) in enumerate(steps):
        stream = "video" if k % 2 == 0 else "audio"
        if i not in (0, last):  # the first and the last step's taps (the file stays small)
            continue
        out[f"inter.step{i}.{stream}"] = latent
        out[f"inter.step{i}.{stream}_denoised"] = denoised
    n_tok = (1 + (req["num_frames"] - 1) // 8) * (h1 // 32) * (w1 // 32)
    last_v = [r for k, r in enumerate(steps) if k % 2 == 0][-1][2]
    last_a = [r for k, r in enumerate(steps) if k % 2 == 1][-1][2]
    fl = 1 + (req["num_frames"] - 1) // 8
    out["output.video_latent"] = last_v[:, :n_tok].reshape(1, fl, h1 // 32, w1 // 32, 128).permute(0, 4, 1, 2, 3)
    ta = last_a.shape[1]
    out["output.audio_latent"] = last_a.reshape(1, ta, 8, 16).permute(0, 2, 1, 3)
    if decoders is None:
        assert torch.equal(out["output.video_latent"], video_state.latent)
        assert torch.equal(out["output.audio_latent"], audio_state.latent)
    out.update({"inter.sigmas": ic_lora.DISTILLED_SIGMAS.to(torch.float32), "inter.noise.video": v0.latent,
                "inter.noise.audio": a0.latent, "inter.state.clean_latent": v0.clean_latent,
                "inter.state.denoise_mask": v0.denoise_mask, "inter.state.positions": v0.positions})
    if v0.attention_mask is not None:
        out["inter.state.attention_mask"] = v0.attention_mask
    for i in range(len(image_specs)):
        out[f"inter.image.{i}"] = encoder.inputs[i]
    # (the preprocessed reference videos are the conditioning files' taps: kept out here, the files stay small)

    tensors = {"model.diffusion_model." + n: p.detach().float().contiguous() for n, p in dit.state_dict().items()}
    config = {k: v for k, v in req.items() if k != "lora_strength"}
    config.update(transformer=dit_config, images=image_specs, video_conditioning=[{"strength": r[3]} for r in refs],
                  skip_stage_2=True, loras=[{"file": lora_name, "strength": strength}])
    t2v.add_decoders(tensors, config, decoders)
    tensors["input.v_context_p"] = v_ctx.contiguous()
    tensors["input.a_context_p"] = a_ctx.contiguous()
    for i, pic in enumerate(pictures):
        tensors[f"input.image.{i}"] = torch.tensor(pic, dtype=torch.float32)
        tensors[f"input.image_latent.{i}"] = latents[i].contiguous()
    for i, v in enumerate(videos):
        tensors[f"input.reference_video.{i}"] = torch.tensor(v, dtype=torch.float32)
        tensors[f"input.reference_latent.{i}"] = latents[len(image_specs) + i].contiguous()
    tensors.update({k: v.detach().float().contiguous() for k, v in out.items()})
    meta = {"kind": "ltx2.pipeline.ic_lora", "config": json.dumps(config), "torch": torch.__version__,
            "generator": "tools/golden/ltx2_ic_lora.py", "reference": REFERENCE,
            "note": "video encoder replaced by a stand-in returning input.image_latent.<i> / input.reference_latent.<i>; "
                    "decode_video_by_frame yields input.reference_video.<i>"}
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path} ({os.path.getsize(path)} bytes), {lora_path} ({os.path.getsize(lora_path)} bytes); "
          f"tokens {v0.latent.shape[1]}; factors {down} / {temporal}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/golden/ltx2")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(2)
    out = lambda name: os.path.join(args.out, name)  # noqa: E731
    base = dict(height=64, width=128, num_frames=9, frame_rate=24.0, seed=5, latent_channels=4)
    make_conditioning(out("ltx2_conditioning_reference_video.safetensors"), 31,
                      dict(base, reference_downscale_factor=2, reference_temporal_scale_factor=1,
                           conditioning_attention_strength=0.6),
                      [dict(frame_idx=0, strength=0.8)], [(20, 45)], [(12, 20, 28, 1.0)], mask_frames=5)
    make_conditioning(out("ltx2_conditioning_reference_video_temporal.safetensors"), 32,
                      dict(base, num_frames=17, height=32, width=64, seed=6, reference_downscale_factor=1,
                           reference_temporal_scale_factor=2, conditioning_attention_strength=0.5),
                      [], [], [(20, 12, 20, 1.0), (7, 20, 14, 0.5)])
    pbase = dict(height=128, width=128, num_frames=9, frame_rate=24.0, seed=42, lora_strength=1.0)
    make_pipeline(out("ltx2_pipeline_ic_lora.safetensors"), dict(pbase, conditioning_attention_strength=1.0), 0, True,
                  {"reference_downscale_factor": "2"}, [], [], [(9, 20, 28, 1.0)])
    make_pipeline(out("ltx2_pipeline_ic_lora_image.safetensors"),
                  dict(pbase, seed=7, lora_strength=0.8, conditioning_attention_strength=0.6), 3, False, {},
                  [dict(frame_idx=0, strength=1.0)], [(24, 40)], [(9, 24, 20, 0.7)])


if __name__ == "__main__":
    main()
