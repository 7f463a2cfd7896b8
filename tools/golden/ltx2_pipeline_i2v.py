"""Golden files for kinds `ltx2.pipeline.i2v` and `ltx2.conditioning.image` (docs/parity.md,
docs/models/ltx2.md "Image conditioning"): the LTX-2 image conditioning of the OFFICIAL
TI2VidOneStagePipeline.__call__ (ltx_pipelines/ti2vid_one_stage.py, Lightricks/LTX-2 400fd31) on tiny
random models.

What runs is the pipeline's own code: combined_image_conditionings (ltx_pipelines/utils/helpers.py) on
PNG files written here, which runs load_image_and_preprocess (decode_image, the CRF step with crf 0 =
no re-compression, resize_and_center_crop, normalize_images) and the video encoder, then makes a
VideoConditionByLatentIndex (frame_idx 0: the first latent frame's tokens replaced) or a
VideoConditionByKeyframeIndex (other frame indices: tokens appended to the sequence, their positions
offset by frame_idx) per image; DiffusionStage.__call__ applies them (create_noised_state: the initial
state, the conditionings in order, GaussianNoiser mixing the noise in by the denoise mask), denoises
(per-token timesteps = denoise_mask * sigma, post_process_latent keeping the clean latent where the
mask is < 1) and strips the appended tokens (clear_conditioning) before the unpatchify.
Everything else is tools/golden/ltx2_pipeline_t2v.py's (the tiny DiT and decoders, the stand-in
transformer builder, the recorders): imported from there, not copied.

  ltx2_pipeline_i2v.safetensors            (a) one image at frame 0, strength 1; CFG, 1 block, 2 steps,
                                           9 frames 32 x 64, decoders included
  ltx2_pipeline_i2v_strength.safetensors   (b) frame 0 with strength 0.6 (denoise mask 0.4 on the first
                                           latent frame); t2v_guided's CFG + STG + modality + rescale +
                                           audio skip_step 1, 2 blocks, 3 steps, latents only
  ltx2_pipeline_i2v_keyframes.safetensors  (c) frame 0 (strength 1) plus keyframes at frame 8 (1.0) and
                                           frame 13 (0.5; the reference takes any index), 17 frames,
                                           CFG, 1 block, 2 steps, latents only
  ltx2_pipeline_i2v_marker.safetensors     (d) a DiT with use_keyframes_abs_pos_embedding (the keyframes
                                           marker: the first latent frame's tokens marked, appended ones
                                           not), frame 0 (1.0) plus a keyframe at frame 8 (0.8), 9 frames,
                                           CFG, 1 block, 2 steps, latents only
  ltx2_conditioning_image.safetensors      the conditioning alone with a REAL (tiny, 4 latent channels)
                                           VideoEncoder: images of other sizes than the video (resize +
                                           centre crop), frame 0 strength 0.8 and frame 16 strength 1,
                                           into a VideoLatentTools state of 4 channels (17 frames 64 x 96)

In the pipeline files the video encoder is a stand-in (StandInEncoder): the DiT's 128 latent channels
make the smallest real encoder several MB, so the stand-in records the preprocessed image it is given
(inter.image.<i>) and returns a prepared random latent (input.image_latent.<i>); the real encoder's
part is ltx2_conditioning_image.safetensors (same preprocessing and conditioning code, a real encoder).

Pipeline files: parameters as ltx2_pipeline_t2v's; input.v_context_p / a_context_p / v_context_n /
a_context_n, input.image.<i> ([h, w, 3] float, the decoded 8-bit RGB values: what
load_image_and_preprocess turns into a tensor after the CRF step) and input.image_latent.<i>
([1, 128, 1, H/32, W/32], the encoder's output); config: t2v's plus "images": [{frame_idx, strength}].
Outputs: output.video_latent / output.audio_latent (stripped, unpatchified), output.video /
output.audio with the decoders; inter.image.<i> ([1, 3, 1, H, W] in [-1, 1]), inter.state.clean_latent,
inter.state.denoise_mask ([1, T, 1]), inter.state.positions ([1, 3, T, 2]; T counts the appended
tokens), inter.noise.video (the noised initial state) / inter.noise.audio, inter.sigmas,
inter.step<i>.* as the t2v kind (video taps over all T tokens; *_denoised after post_process_latent).

Conditioning file: the encoder's parameters (official names, no prefix); input.image.<i>; config
"vae" (the encoder's), height, width, num_frames, frame_rate, seed, latent_channels, images;
output.image_latent.<i> (the encoder's output), output.state.latent (noised with
torch.Generator(seed)), output.state.clean_latent, output.state.denoise_mask, output.state.positions.

Usage: /work/venv-golden/bin/python tools/golden/ltx2_pipeline_i2v.py [--out tests/golden/ltx2]
"""
import argparse
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
# transformers (the Gemma encoder's module, imported by ltx_pipelines.utils.blocks) is loaded before
# the stubs below: it probes for scipy and must not see the stand-in.
from transformers import PreTrainedModel, ProcessorMixin  # noqa: E402,F401

# Media / audio modules the imported reference code loads at module level; none of them runs here
# (crf 0 skips the H.264 round trip; the audio encoder's processor and the beta scheduler are not used).
for _missing in ("OpenImageIO", "av", "torchaudio", "scipy"):
    try:
        __import__(_missing)
    except ImportError:
        _m = types.ModuleType(_missing)
        _m.__spec__ = importlib.machinery.ModuleSpec(_missing, None)
        sys.modules[_missing] = _m

import ltx2_pipeline_t2v as t2v  # noqa: E402  (the tiny models and recorders)
from ltx2_video_vae import randomize as randomize_video_vae  # noqa: E402

from ltx_core.components.guiders import MultiModalGuiderParams, create_multimodal_guider_factory  # noqa: E402
from ltx_core.components.noisers import GaussianNoiser  # noqa: E402
from ltx_core.components.patchifiers import VideoLatentPatchifier  # noqa: E402
from ltx_core.components.schedulers import LTX2Scheduler  # noqa: E402
from ltx_core.model.video_vae.model_configurator import VideoEncoderConfigurator  # noqa: E402
from ltx_core.tools import VideoLatentTools  # noqa: E402
from ltx_core.types import VideoLatentShape, VideoPixelShape  # noqa: E402
from ltx_pipelines.utils.args import ImageConditioningInput  # noqa: E402
from ltx_pipelines.utils.blocks import DiffusionStage  # noqa: E402
from ltx_pipelines.utils.helpers import (  # noqa: E402
    assert_resolution,
    combined_image_conditionings,
    create_noised_state,
)
from ltx_pipelines.utils.types import ModalitySpec  # noqa: E402

REFERENCE = "Lightricks/LTX-2 400fd31 ltx_pipelines/ti2vid_one_stage.py TI2VidOneStagePipeline.__call__"

# The conditioning file's real encoder: 4 latent channels, patch 4 then three 2x spatial steps (32x,
# the pipeline's VIDEO_SCALE_FACTORS grid), widths 4 -> 32.
ENCODER = {
    "_class_name": "CausalVideoAutoencoder", "dims": 3, "in_channels": 3, "latent_channels": 4, "patch_size": 4,
    "norm_layer": "pixel_norm", "latent_log_var": "uniform", "encoder_spatial_padding_mode": "zeros",
    "encoder_blocks": [
        ["res_x", {"num_layers": 1}],
        ["compress_space_res", {"multiplier": 2}],
        ["compress_all_res", {"multiplier": 2}],
        ["compress_all_res", {"multiplier": 2}],
    ],
}


class RecordingNoiser(GaussianNoiser):
    """GaussianNoiser keeping each state it returns (video first, then audio)."""

    def __init__(self, generator):
        super().__init__(generator)
        self.states = []

    def __call__(self, latent_state, noise_scale=1.0):
        out = super().__call__(latent_state, noise_scale)
        self.states.append(out)
        return out


class StandInEncoder:
    """The video encoder combined_image_conditionings calls (video_encoder(image)): keeps the
    preprocessed image and returns the next prepared latent. Replaces only the encoder's weights."""

    def __init__(self, latents):
        self.latents, self.images = list(latents), []

    def __call__(self, image):
        self.images.append(image.detach().clone())
        return self.latents[len(self.images) - 1]


class RecordingEncoder:
    """A real VideoEncoder whose inputs and outputs are kept."""

    def __init__(self, encoder):
        self.encoder, self.images, self.latents = encoder, [], []

    def __call__(self, image):
        self.images.append(image.detach().clone())
        out = self.encoder(image)
        self.latents.append(out.detach().clone())
        return out


def write_pngs(tmp, pictures):
    paths = []
    for i, pic in enumerate(pictures):
        path = os.path.join(tmp, f"image{i}.png")
        Image.fromarray(pic, mode="RGB").save(path)
        paths.append(path)
    return paths


def random_pictures(gen, sizes):
    return [torch.randint(0, 256, (h, w, 3), generator=gen, dtype=torch.uint8).numpy() for h, w in sizes]


def run_i2v(req, dit, dit_config, decoders, contexts, images, encoder):
    """TI2VidOneStagePipeline.__call__ from the prompt contexts on with `images` (fp32, untiled)."""
    assert_resolution(height=req["height"], width=req["width"], is_two_stage=False)
    generator = torch.Generator(device="cpu").manual_seed(req["seed"])
    noiser = RecordingNoiser(generator)
    v_context_p, a_context_p, v_context_n, a_context_n = contexts
    conditionings = combined_image_conditionings(
        images=images, height=req["height"], width=req["width"], video_encoder=encoder, dtype=torch.float32,
        device=torch.device("cpu"))
    sigmas = LTX2Scheduler().execute(steps=req["num_inference_steps"]).to(dtype=torch.float32)
    video_guider_factory = create_multimodal_guider_factory(
        params=MultiModalGuiderParams(**req["video_guider_params"]), negative_context=v_context_n)
    audio_guider_factory = create_multimodal_guider_factory(
        params=MultiModalGuiderParams(**req["audio_guider_params"]), negative_context=a_context_n)
    stage = DiffusionStage(t2v.StandInBuilder(dit, dit_config), torch.float32, torch.device("cpu"))
    stepper = t2v.RecordingEuler()
    denoiser = t2v.RecordingDenoiser(v_context=v_context_p, a_context=a_context_p,
                                     video_guider_factory=video_guider_factory,
                                     audio_guider_factory=audio_guider_factory)
    video_state, audio_state = stage(
        denoiser=denoiser, sigmas=sigmas, noiser=noiser, width=req["width"], height=req["height"],
        frames=req["num_frames"], fps=req["frame_rate"],
        video=ModalitySpec(context=v_context_p, conditionings=conditionings),
        audio=ModalitySpec(context=a_context_p), stepper=stepper, max_batch_size=1)
    v0, a0 = noiser.states
    out = {"output.video_latent": video_state.latent, "output.audio_latent": audio_state.latent,
           "inter.sigmas": sigmas, "inter.noise.video": v0.latent, "inter.noise.audio": a0.latent,
           "inter.state.clean_latent": v0.clean_latent, "inter.state.denoise_mask": v0.denoise_mask,
           "inter.state.positions": v0.positions}
    for i, image in enumerate(encoder.images):
        out[f"inter.image.{i}"] = image
    return t2v.record_steps_and_decode(out, stepper, denoiser, decoders, video_state, audio_state, generator)


def make_pipeline(path, req, seed, with_decoders, num_layers, image_specs, picture_sizes, dit_extra=None):
    dit_config = dict(t2v.DIT, num_layers=num_layers, **(dit_extra or {}))
    dit = t2v.build_dit(seed, dit_config)
    decoders = t2v.build_decoders(seed + 1) if with_decoders else None
    g = torch.Generator().manual_seed(seed + 2)
    dv = t2v.DIT["num_attention_heads"] * t2v.DIT["attention_head_dim"]
    da = t2v.DIT["audio_num_attention_heads"] * t2v.DIT["audio_attention_head_dim"]
    contexts = (torch.randn(1, t2v.TEXT_LEN, dv, generator=g), torch.randn(1, t2v.TEXT_LEN, da, generator=g),
                torch.randn(1, t2v.TEXT_LEN, dv, generator=g), torch.randn(1, t2v.TEXT_LEN, da, generator=g))
    pictures = random_pictures(g, picture_sizes)
    h, w = req["height"] // 32, req["width"] // 32
    latents = [torch.randn(1, 128, 1, h, w, generator=g) for _ in image_specs]
    with tempfile.TemporaryDirectory() as tmp, torch.inference_mode():
        images = [ImageConditioningInput(p, s["frame_idx"], s["strength"], crf=0)
                  for p, s in zip(write_pngs(tmp, pictures), image_specs)]
        out = run_i2v(req, dit, dit_config, decoders, contexts, images, StandInEncoder(latents))
    tensors = {"model.diffusion_model." + n: p.detach().float().contiguous() for n, p in dit.state_dict().items()}
    config = dict(req, transformer=dit_config, images=image_specs)
    t2v.add_decoders(tensors, config, decoders)
    names = ("v_context_p", "a_context_p", "v_context_n", "a_context_n")
    tensors.update({"input." + n: c.contiguous() for n, c in zip(names, contexts)})
    for i, (pic, lat) in enumerate(zip(pictures, latents)):
        tensors[f"input.image.{i}"] = torch.tensor(pic, dtype=torch.float32)
        tensors[f"input.image_latent.{i}"] = lat.contiguous()
    tensors.update({k: v.detach().float().contiguous() for k, v in out.items()})
    meta = {"kind": "ltx2.pipeline.i2v", "config": json.dumps(config), "torch": torch.__version__,
            "generator": "tools/golden/ltx2_pipeline_i2v.py", "reference": REFERENCE,
            "note": "video encoder replaced by a stand-in returning input.image_latent.<i>"}
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path} ({os.path.getsize(path)} bytes); tokens {out['inter.noise.video'].shape[1]}; "
          f"mask {out['inter.state.denoise_mask'].flatten().tolist()}")


def make_conditioning(path, seed):
    req = dict(height=64, width=96, num_frames=17, frame_rate=25.0, seed=seed, latent_channels=4)
    specs = [dict(frame_idx=0, strength=0.8), dict(frame_idx=16, strength=1.0)]
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 1000)
    encoder = VideoEncoderConfigurator.from_metadata({"config": {"vae": ENCODER}}).eval()
    randomize_video_vae(encoder, gen)
    pictures = random_pictures(gen, [(50, 61), (96, 80)])  # wider crop, then taller crop and a downscale
    pixel_shape = VideoPixelShape(batch=1, frames=req["num_frames"], height=req["height"], width=req["width"],
                                  fps=req["frame_rate"])
    tools = VideoLatentTools(VideoLatentPatchifier(patch_size=1),
                             VideoLatentShape.from_pixel_shape(pixel_shape, latent_channels=req["latent_channels"]),
                             req["frame_rate"])
    recorder = RecordingEncoder(encoder)
    with tempfile.TemporaryDirectory() as tmp, torch.inference_mode():
        images = [ImageConditioningInput(p, s["frame_idx"], s["strength"], crf=0)
                  for p, s in zip(write_pngs(tmp, pictures), specs)]
        conds = combined_image_conditionings(images=images, height=req["height"], width=req["width"],
                                             video_encoder=recorder, dtype=torch.float32,
                                             device=torch.device("cpu"))
        noiser = GaussianNoiser(torch.Generator(device="cpu").manual_seed(seed))
        state = create_noised_state(tools, conds, noiser, torch.float32, torch.device("cpu"))
    tensors = {k: v.detach().float().contiguous() for k, v in encoder.state_dict().items()}
    for i, pic in enumerate(pictures):
        tensors[f"input.image.{i}"] = torch.tensor(pic, dtype=torch.float32)
        tensors[f"inter.image.{i}"] = recorder.images[i].contiguous()
        tensors[f"output.image_latent.{i}"] = recorder.latents[i].contiguous()
    tensors.update({"output.state.latent": state.latent.contiguous(),
                    "output.state.clean_latent": state.clean_latent.contiguous(),
                    "output.state.denoise_mask": state.denoise_mask.contiguous(),
                    "output.state.positions": state.positions.contiguous()})
    config = dict(req, vae=ENCODER, images=specs)
    meta = {"kind": "ltx2.conditioning.image", "config": json.dumps(config), "torch": torch.__version__,
            "generator": "tools/golden/ltx2_pipeline_i2v.py",
            "reference": "Lightricks/LTX-2 400fd31 ltx_pipelines/utils/helpers.py combined_image_conditionings "
                         "+ create_noised_state"}
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path} ({os.path.getsize(path)} bytes); state {tuple(state.latent.shape)}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/golden/ltx2")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(2)
    out = lambda name: os.path.join(args.out, name)  # noqa: E731
    base = dict(height=32, width=64, num_frames=9, frame_rate=24.0, num_inference_steps=2, seed=42)
    cfg_only = dict(base, video_guider_params=dict(cfg_scale=3.0), audio_guider_params=dict(cfg_scale=2.5))
    make_pipeline(out("ltx2_pipeline_i2v.safetensors"), cfg_only, 0, True, 1,
                  [dict(frame_idx=0, strength=1.0)], [(40, 56)])
    guided = dict(base, num_inference_steps=3, seed=7,
                  video_guider_params=dict(cfg_scale=3.0, stg_scale=1.0, stg_blocks=[1], rescale_scale=0.7,
                                           modality_scale=3.0, skip_step=0),
                  audio_guider_params=dict(cfg_scale=7.0, stg_scale=1.0, stg_blocks=[0], rescale_scale=0.7,
                                           modality_scale=3.0, skip_step=1))
    make_pipeline(out("ltx2_pipeline_i2v_strength.safetensors"), guided, 3, False, 2,
                  [dict(frame_idx=0, strength=0.6)], [(32, 64)])
    keyframes = dict(cfg_only, num_frames=17, seed=11)
    make_pipeline(out("ltx2_pipeline_i2v_keyframes.safetensors"), keyframes, 5, False, 1,
                  [dict(frame_idx=0, strength=1.0), dict(frame_idx=8, strength=1.0), dict(frame_idx=13, strength=0.5)],
                  [(36, 60), (32, 64), (20, 70)])
    make_pipeline(out("ltx2_pipeline_i2v_marker.safetensors"), dict(cfg_only, seed=13), 9, False, 1,
                  [dict(frame_idx=0, strength=1.0), dict(frame_idx=8, strength=0.8)], [(32, 64), (48, 64)],
                  dit_extra=dict(use_keyframes_abs_pos_embedding=True))
    make_conditioning(out("ltx2_conditioning_image.safetensors"), 21)


if __name__ == "__main__":
    main()
