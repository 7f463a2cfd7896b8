"""Golden files for kind `ltx2.pipeline.t2v` (docs/parity.md, docs/models/ltx2.md "Pipelines"): the
LTX-2 one-stage text-to-video+audio run of the OFFICIAL TI2VidOneStagePipeline.__call__
(ltx_pipelines/ti2vid_one_stage.py, Lightricks/LTX-2 400fd31) with images=[], on tiny random models.

What runs is the pipeline's own code from the prompt contexts on: assert_resolution, the
torch.Generator seeded `seed` shared by the GaussianNoiser and the video decode, LTX2Scheduler.execute
(steps), create_multimodal_guider_factory for the video and audio MultiModalGuiderParams with the
negative contexts, FactoryGuidedDenoiser, DiffusionStage.__call__ (VideoLatentTools / AudioLatentTools
states: the video noise drawn first, then the audio's; euler_denoising_loop with EulerDiffusionStep;
the batched cond / uncond / STG / isolated-modality passes through X0Model; BatchSplitAdapter with
max_batch_size 1), then ConvVideoDecoder.decode_video(latent, tiling None, generator) and
audio_vae.decode_audio(latent, decoder, vocoder) (what AudioDecoder.__call__ runs). Bypassed: the
Gemma prompt encoder (its contexts are the inputs: the connectors' output, whose mask is all ones,
and the pipeline passes context_mask=None), the image conditioner (no images), the duration
predictor (num_frames given) and the checkpoint loading: the DiT is the official LTXModel built by
LTXModelConfigurator from a tiny config with seeded random weights (tools/golden/ltx2_dit.py's
init), handed to the real DiffusionStage by a stand-in builder; the decoders are built by their
configurators (VideoDecoderConfigurator, AudioDecoderConfigurator, VocoderConfigurator). Everything
runs in float32 on the CPU (the pipeline's dtype is bf16 on a GPU); the video decode is untiled
(tiling_config None; the tiled decode has its own goldens).

Fixed by the pipeline: the video latent has 128 channels and the audio latent 8 x 16 mel bins
(VideoLatentShape / AudioLatentShape defaults), so the tiny DiT's in/out channels are 128 on both
streams. The audio VAE's per-channel statistics broadcast over the patchified latent: the published
ch = 128 (one per value) would make the decoder's 3x3 convs 128 wide and the file several MB, so
the tiny decoder has ch = 1 (one statistic for every value, torch broadcasting) and widths 2 / 4.

  ltx2_pipeline_t2v.safetensors         CFG only (video 3.0, audio 2.5: cond + uncond passes),
                                        1 DiT block, 2 steps, 9 frames 32 x 64 at 24 fps, decoders included
                                        (a timestep-conditioned VAE with noise injection: its draws
                                        continue the generator after the latent noise)
  ltx2_pipeline_t2v_guided.safetensors  CFG + STG (blocks [1] video, [0] audio) + isolated-modality
                                        guidance + rescale on, the audio guider's skip_step 1 (its
                                        second step reuses the first's denoised audio, the video's
                                        pass runs with audio Modality.enabled False), 3 steps,
                                        latents only (no decoders in the config)

Each file: parameters under the bundled checkpoint's prefixes (model.diffusion_model.*, vae.decoder.*,
vae.per_channel_statistics.*, audio_vae.decoder.*, audio_vae.per_channel_statistics.*, vocoder.*);
input.v_context_p, input.a_context_p, input.v_context_n, input.a_context_n (__call__'s names) ->
output.video_latent [1, 128, F', H/32, W/32] and output.audio_latent [1, 8, T, 16] (the stage's
unpatchified states), output.video [F, H, W, 3] in [0, 1] (decode_video's chunks joined) and
output.audio [2, samples] (Audio.waveform); inter.sigmas, inter.noise.video / inter.noise.audio (the
initial patchified states), inter.step<i>.video / .audio (the patchified latents after step i) and
inter.step<i>.video_denoised / .audio_denoised (the guided x0 of step i), inter.step<i>.video_cond /
.audio_cond (the conditioned pass's x0 alone, DenoisedLatentResult.cond).

Usage: /work/venv-golden/bin/python tools/golden/ltx2_pipeline_t2v.py [--out tests/golden/ltx2]
"""
import argparse
import copy
import json
import os
import sys
import types

import torch
from safetensors.torch import save_file

REF = "/work/ref/ltx2/packages"
sys.path.insert(0, os.environ.get("LTX2_PIPELINES", REF + "/ltx-pipelines/src"))
sys.path.insert(0, os.environ.get("LTX2_CORE", REF + "/ltx-core/src"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# ltx_pipelines.utils imports its media I/O (OpenImageIO, ...) at module level; none of it runs here.
for _missing in ("OpenImageIO",):
    try:
        __import__(_missing)
    except ImportError:
        sys.modules[_missing] = types.ModuleType(_missing)
from ltx2_dit import BASE as DIT_BASE, init_params  # noqa: E402
from ltx2_video_vae import randomize as randomize_video_vae  # noqa: E402

from ltx_core.components.diffusion_steps import EulerDiffusionStep  # noqa: E402
from ltx_core.components.guiders import MultiModalGuiderParams, create_multimodal_guider_factory  # noqa: E402
from ltx_core.components.noisers import GaussianNoiser  # noqa: E402
from ltx_core.components.schedulers import LTX2Scheduler  # noqa: E402
from ltx_core.model.audio_vae.audio_vae import decode_audio  # noqa: E402
from ltx_core.model.audio_vae.model_configurator import AudioDecoderConfigurator, VocoderConfigurator  # noqa: E402
from ltx_core.model.transformer.model_configurator import LTXModelConfigurator  # noqa: E402
from ltx_core.model.video_vae.model_configurator import VideoDecoderConfigurator  # noqa: E402
from ltx_pipelines.utils.blocks import DiffusionStage  # noqa: E402
from ltx_pipelines.utils.denoisers import FactoryGuidedDenoiser  # noqa: E402
from ltx_pipelines.utils.helpers import assert_resolution  # noqa: E402
from ltx_pipelines.utils.types import ModalitySpec  # noqa: E402

# The tiny DiT: tools/golden/ltx2_dit.py's LTX-2.0 style config with the pipeline's fixed latent widths.
DIT = {**DIT_BASE, "in_channels": 128, "out_channels": 128, "audio_in_channels": 128, "audio_out_channels": 128}
TEXT_LEN = 6

# Timestep-conditioned (the configurator's default) with noise injection: the decode draws from the
# pipeline's generator after the latent noise. 3 x compress_all (multiplier 1) + patch 4: 8x time, 32x space.
VAE = {
    "_class_name": "CausalVideoAutoencoder", "dims": 3, "latent_channels": 128, "out_channels": 3, "patch_size": 4,
    "norm_layer": "pixel_norm", "causal_decoder": False, "timestep_conditioning": True,
    "spatial_padding_mode": "zeros", "decoder_base_channels": 4,
    "decoder_blocks": [
        ["res_x", {"num_layers": 1, "inject_noise": True}],
        ["compress_all", {"residual": False, "multiplier": 1}],
        ["compress_all", {"residual": False, "multiplier": 1}],
        ["compress_all", {"residual": False, "multiplier": 1}],
    ],
}
AUDIO_VAE = {"model": {"params": {"ddconfig": {
    "ch": 1, "z_channels": 8, "out_ch": 2, "ch_mult": [2, 4], "num_res_blocks": 1, "attn_resolutions": [],
    "resolution": 64, "norm_type": "pixel", "causality_axis": "height", "mid_block_add_attention": True,
    "mel_bins": 64}, "sampling_rate": 16000}}, "preprocessing": {"stft": {"hop_length": 160, "causal": True}}}
VOCODER = {"resblock_kernel_sizes": [3], "upsample_rates": [2, 3], "upsample_kernel_sizes": [4, 7],
           "resblock_dilation_sizes": [[1, 3, 5]], "upsample_initial_channel": 8, "resblock": "1",
           "output_sampling_rate": 24000, "stereo": True}


class StandInBuilder:
    """The transformer builder DiffusionStage builds from: hands out a fresh copy of the random model
    (the stage disposes the model it built on exit). Replaces only the checkpoint loading."""

    model_sd_ops = None
    module_ops = ()
    loras = ()
    keeps_gpu_resident_weights = False
    checkpoint = "(tiny random LTXModel, tools/golden/ltx2_pipeline_t2v.py)"

    def __init__(self, model, config):
        self.model, self.config = model, config

    def with_module_ops(self, _ops):
        return self

    def with_sd_ops(self, _ops):
        return self

    def with_loras(self, _loras):
        return self

    def model_config(self):
        return {"transformer": self.config}

    def build(self, device=None, **_kw):
        return copy.deepcopy(self.model).to(device)


class RecordingEuler(EulerDiffusionStep):
    """EulerDiffusionStep (the stage's default stepper) that keeps each result, in call order."""

    def __init__(self):
        self.results = []

    def step(self, sample, denoised_sample, sigmas, step_index, **kw):
        out = super().step(sample, denoised_sample, sigmas, step_index, **kw)
        self.results.append((step_index, denoised_sample.detach().clone(), out.detach().clone()))
        return out


class RecordingNoiser(GaussianNoiser):
    def __init__(self, generator):
        super().__init__(generator)
        self.states = []

    def __call__(self, latent_state, noise_scale=1.0):
        out = super().__call__(latent_state, noise_scale)
        self.states.append(out.latent.detach().clone())
        return out


class RecordingDenoiser(FactoryGuidedDenoiser):
    """FactoryGuidedDenoiser that keeps each step's conditioned pass (DenoisedLatentResult.cond)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.conds = {}

    def __call__(self, transformer, video_state, audio_state, sigmas, step_index):
        v, a = super().__call__(transformer, video_state, audio_state, sigmas, step_index)
        if isinstance(v.cond, torch.Tensor):  # a step both guiders skip runs no pass
            self.conds[f"inter.step{step_index}.video_cond"] = v.cond.detach().clone()
            self.conds[f"inter.step{step_index}.audio_cond"] = a.cond.detach().clone()
        return v, a


def build_dit(seed, config):
    torch.manual_seed(seed)
    model = LTXModelConfigurator.from_metadata({"config": {"transformer": config}})
    model = model.to_empty(device="cpu").float().eval()
    init_params(model)
    return model


def build_decoders(seed):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 1000)
    vae = VideoDecoderConfigurator.from_metadata({"config": {"vae": VAE}}).eval()
    randomize_video_vae(vae, gen)
    audio = AudioDecoderConfigurator.from_metadata({"config": {"audio_vae": AUDIO_VAE}}).eval()
    vocoder = VocoderConfigurator.from_metadata({"config": {"vocoder": VOCODER}}).eval()
    with torch.no_grad():
        stats = audio.per_channel_statistics
        stats.get_buffer("mean-of-means").copy_(0.5 * torch.randn(audio.ch))
        stats.get_buffer("std-of-means").copy_(0.5 + torch.rand(audio.ch))
    return vae.float(), audio.float(), vocoder.float()


def record_steps_and_decode(out, stepper, denoiser, decoders, video_state, audio_state, generator):
    """Adds to `out` each step's states (inter.step{i}.video / .audio and their _denoised), the
    denoiser's conditioned passes and, with decoders, output.video (decode_video(latent, None,
    generator)) and output.audio (decode_audio's waveform). Shared with ltx2_pipeline_i2v.py."""
    # euler_denoising_loop steps the video state, then the audio state, at every step.
    for k, (i, denoised, latent) in enumerate(stepper.results):
        stream = "video" if k % 2 == 0 else "audio"
        out[f"inter.step{i}.{stream}"] = latent
        out[f"inter.step{i}.{stream}_denoised"] = denoised
    out.update(denoiser.conds)
    if decoders is not None:
        vae, audio_decoder, vocoder = decoders
        with torch.no_grad():
            chunks = list(vae.decode_video(video_state.latent, None, generator))
            audio = decode_audio(audio_state.latent, audio_decoder, vocoder)
        out["output.video"] = torch.cat(chunks, dim=0)
        out["output.audio"] = audio.waveform
    return out


def add_decoders(tensors, config, decoders):
    """With decoders: their weights under vae.decoder.* / audio_vae.decoder.* (per_channel_statistics.*
    at the top) and vocoder.*, their configs in config. Shared with ltx2_pipeline_i2v.py."""
    if decoders is None:
        return
    vae, audio_decoder, vocoder = decoders
    for n, p in vae.state_dict().items():
        key = n if n.startswith("per_channel_statistics.") else "decoder." + n
        tensors["vae." + key] = p.detach().float().contiguous()
    for n, p in audio_decoder.state_dict().items():
        key = n if n.startswith("per_channel_statistics.") else "decoder." + n
        tensors["audio_vae." + key] = p.detach().float().contiguous()
    tensors.update({"vocoder." + n: p.detach().float().contiguous() for n, p in vocoder.state_dict().items()})
    config.update(vae=VAE, audio_vae=AUDIO_VAE, vocoder=VOCODER)


def run(req, dit, dit_config, decoders, contexts):
    """TI2VidOneStagePipeline.__call__ from the prompt contexts on (images=[], fp32, untiled decode)."""
    assert_resolution(height=req["height"], width=req["width"], is_two_stage=False)
    generator = torch.Generator(device="cpu").manual_seed(req["seed"])
    noiser = RecordingNoiser(generator)
    sigmas = LTX2Scheduler().execute(steps=req["num_inference_steps"]).to(dtype=torch.float32)
    v_context_p, a_context_p, v_context_n, a_context_n = contexts
    video_guider_factory = create_multimodal_guider_factory(
        params=MultiModalGuiderParams(**req["video_guider_params"]), negative_context=v_context_n)
    audio_guider_factory = create_multimodal_guider_factory(
        params=MultiModalGuiderParams(**req["audio_guider_params"]), negative_context=a_context_n)
    stage = DiffusionStage(StandInBuilder(dit, dit_config), torch.float32, torch.device("cpu"))
    stepper = RecordingEuler()
    denoiser = RecordingDenoiser(v_context=v_context_p, a_context=a_context_p,
                                 video_guider_factory=video_guider_factory, audio_guider_factory=audio_guider_factory)
    video_state, audio_state = stage(
        denoiser=denoiser,
        sigmas=sigmas, noiser=noiser, width=req["width"], height=req["height"], frames=req["num_frames"],
        fps=req["frame_rate"], video=ModalitySpec(context=v_context_p, conditionings=[]),
        audio=ModalitySpec(context=a_context_p), stepper=stepper, max_batch_size=1)
    out = {"output.video_latent": video_state.latent, "output.audio_latent": audio_state.latent,
           "inter.sigmas": sigmas, "inter.noise.video": noiser.states[0], "inter.noise.audio": noiser.states[1]}
    return record_steps_and_decode(out, stepper, denoiser, decoders, video_state, audio_state, generator)


def make(path, req, seed, with_decoders, num_layers):
    dit_config = dict(DIT, num_layers=num_layers)
    dit = build_dit(seed, dit_config)
    decoders = build_decoders(seed + 1) if with_decoders else None
    g = torch.Generator().manual_seed(seed + 2)
    dv = DIT["num_attention_heads"] * DIT["attention_head_dim"]
    da = DIT["audio_num_attention_heads"] * DIT["audio_attention_head_dim"]
    contexts = (torch.randn(1, TEXT_LEN, dv, generator=g), torch.randn(1, TEXT_LEN, da, generator=g),
                torch.randn(1, TEXT_LEN, dv, generator=g), torch.randn(1, TEXT_LEN, da, generator=g))
    with torch.inference_mode():
        out = run(req, dit, dit_config, decoders, contexts)
    tensors = {"model.diffusion_model." + n: p.detach().float().contiguous() for n, p in dit.state_dict().items()}
    config = dict(req, transformer=dit_config)
    add_decoders(tensors, config, decoders)
    names = ("v_context_p", "a_context_p", "v_context_n", "a_context_n")
    tensors.update({"input." + n: c.contiguous() for n, c in zip(names, contexts)})
    tensors.update({k: v.detach().float().contiguous() for k, v in out.items()})
    meta = {"kind": "ltx2.pipeline.t2v", "config": json.dumps(config), "torch": torch.__version__,
            "generator": "tools/golden/ltx2_pipeline_t2v.py",
            "reference": "Lightricks/LTX-2 400fd31 ltx_pipelines/ti2vid_one_stage.py TI2VidOneStagePipeline.__call__"}
    save_file(tensors, path, metadata=meta)
    shapes = {k: tuple(v.shape) for k, v in out.items() if k.startswith("output.")}
    print(f"wrote {path} ({os.path.getsize(path)} bytes); sigmas {out['inter.sigmas'].tolist()}; {shapes}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/golden/ltx2")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(2)
    base = dict(height=32, width=64, num_frames=9, frame_rate=24.0, num_inference_steps=2, seed=42)
    cfg_only = dict(base, video_guider_params=dict(cfg_scale=3.0), audio_guider_params=dict(cfg_scale=2.5))
    make(os.path.join(args.out, "ltx2_pipeline_t2v.safetensors"), cfg_only, 0, True, num_layers=1)
    guided = dict(base, num_inference_steps=3, seed=7,
                  video_guider_params=dict(cfg_scale=3.0, stg_scale=1.0, stg_blocks=[1], rescale_scale=0.7,
                                           modality_scale=3.0, skip_step=0),
                  audio_guider_params=dict(cfg_scale=7.0, stg_scale=1.0, stg_blocks=[0], rescale_scale=0.7,
                                           modality_scale=3.0, skip_step=1))
    make(os.path.join(args.out, "ltx2_pipeline_t2v_guided.safetensors"), guided, 3, False, num_layers=2)


if __name__ == "__main__":
    main()
