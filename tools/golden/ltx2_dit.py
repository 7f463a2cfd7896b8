"""Golden files for the LTX-2 audio-video DiT (kind ltx2.dit, docs/models/ltx2.md).

Builds the OFFICIAL ltx_core LTXModel (Lightricks/LTX-2 400fd31, imported from $LTX2_CORE, default
/work/ref/ltx2/packages/ltx-core/src) through its own configurators (LTXModelConfigurator for the
audio-video model, LTXVideoOnlyModelConfigurator / LTXAudioOnlyModelConfigurator for the single-stream
ones) from a tiny `transformer` config (2 blocks unless stated; video 2 heads x 16, audio 2 heads x 8),
fills every parameter with seeded random values (the module leaves the scale-shift tables
uninitialised), and runs one forward in float32 on the CPU (perturbations=None unless stated). Attention is the module's AUTOMATIC pick, which on a CPU is torch SDPA
(no fused kernel is needed); nothing else has a device-specific path.

Each file holds the state dict under the official names (no `model.diffusion_model.` prefix), the
forward's inputs named after the Modality fields (`input.video.latent`, `.sigma`, `.timesteps`,
`.positions`, `.context`, optional `.context_mask`, `.attention_mask`, `.keyframes_mask`, `.enabled`; the
same under `input.audio.`), optional `input.perturbations` (the forward's BatchedPerturbationConfig as its block_masks
[4, num_layers, B], float, 1 = keep), the outputs
`output.video` / `output.audio`, and `inter.<module path>` taps: patchify_proj / audio_patchify_proj,
adaln_single / audio_adaln_single (the modulation [B*T, k*D]), transformer_blocks.<i>.video / .audio (each
block's streams). __metadata__.config is the transformer config (the checkpoint metadata's
`transformer` dict) plus "model_type" (LTXModelType's value, which picks the configurator).

  ltx2_dit_av.safetensors     LTX-2.0 style: audio + video, B = 2, per-token video timesteps (a clean
                              first frame in sample 0), integer text masks on both streams (a gap in
                              sample 1), split RoPE with identity padding (32 / 2 = 16 > 3 * 5)
  ltx2_dit_av23.safetensors   LTX-2.3 / 2.5 style: gated attention, cross-attention AdaLN with the prompt
                              AdaLN on sigma, bias-free video FFN, B = 1, no masks
  ltx2_dit_video.safetensors  video only, the 19B caption projection inside the transformer
                              (caption_proj_before_connector false), interleaved RoPE, B = 1
  ltx2_dit_av_cond.safetensors  the 2.3 config plus the keyframe marker, B = 2: keyframes_mask,
                              self-attention masks (dense [B, T, T] on video, key-only [B, 1, T] on audio,
                              values 0 / 0.25 / 1), STG perturbations (per sample, and all samples)
  ltx2_dit_audio.safetensors  audio only (LTXAudioOnlyModelConfigurator), 1 block, B = 1
  ltx2_dit_av_{video,audio}_off.safetensors  the 2.3 config, 1 block, that stream's Modality.enabled =
                              False (input.<stream>.enabled = 0): it is not updated, the other stream
                              still reads it through the cross-modal attention

Usage: /work/venv-golden/bin/python tools/golden/ltx2_dit.py [--out tests/golden/ltx2]
"""
import argparse
import json
import os
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.environ.get("LTX2_CORE", "/work/ref/ltx2/packages/ltx-core/src"))
from ltx_core.guidance.perturbations import (  # noqa: E402
    BatchedPerturbationConfig,
    Perturbation,
    PerturbationConfig,
    PerturbationType,
)
from ltx_core.components.patchifiers import AudioPatchifier, VideoLatentPatchifier, get_pixel_coords  # noqa: E402
from ltx_core.model.transformer.modality import Modality  # noqa: E402
from ltx_core.model.transformer.model_configurator import (  # noqa: E402
    LTXAudioOnlyModelConfigurator,
    LTXModelConfigurator,
    LTXVideoOnlyModelConfigurator,
)
from ltx_core.types import AudioLatentShape, SpatioTemporalScaleFactors, VideoLatentShape  # noqa: E402

# The fixed values LTXModelConfigurator checks (check_config_value), then the tiny sizes.
BASE = {
    "dropout": 0.0, "attention_bias": True, "num_vector_embeds": None, "activation_fn": "gelu-approximate",
    "num_embeds_ada_norm": 1000, "use_linear_projection": False, "only_cross_attention": False,
    "cross_attention_norm": True, "double_self_attention": False, "upcast_attention": False,
    "standardization_norm": "rms_norm", "norm_elementwise_affine": False, "qk_norm": "rms_norm",
    "positional_embedding_type": "rope", "use_audio_video_cross_attention": True, "share_ff": False,
    "av_cross_ada_norm": True, "use_middle_indices_grid": True,
    "num_attention_heads": 2, "attention_head_dim": 16, "in_channels": 16, "out_channels": 16, "num_layers": 2,
    "cross_attention_dim": 32, "norm_eps": 1e-6, "positional_embedding_theta": 10000.0,
    "positional_embedding_max_pos": [20, 2048, 2048], "timestep_scale_multiplier": 1000,
    "audio_num_attention_heads": 2, "audio_attention_head_dim": 8, "audio_in_channels": 8, "audio_out_channels": 8,
    "audio_cross_attention_dim": 16, "audio_positional_embedding_max_pos": [20], "av_ca_timestep_scale_multiplier": 1,
    "rope_type": "split", "frequencies_precision": "float64", "caption_proj_before_connector": True,
}
AV = "ltx av model"
VIDEO_ONLY = "ltx video only model"
AUDIO_ONLY = "ltx audio only model"
CONFIGURATORS = {AV: LTXModelConfigurator, VIDEO_ONLY: LTXVideoOnlyModelConfigurator,
                 AUDIO_ONLY: LTXAudioOnlyModelConfigurator}


def video_positions(batch, f, h, w, fps):
    # VideoLatentTools.create_initial_state: patch bounds -> pixel coords (causal fix) -> frame axis / fps.
    bounds = VideoLatentPatchifier(patch_size=1).get_patch_grid_bounds(
        VideoLatentShape(batch=batch, channels=8, frames=f, height=h, width=w))
    pos = get_pixel_coords(bounds, SpatioTemporalScaleFactors.default(), causal_fix=True).float()
    pos[:, 0, ...] = pos[:, 0, ...] / fps
    return pos


def audio_positions(batch, frames):
    return AudioPatchifier(patch_size=16).get_patch_grid_bounds(
        AudioLatentShape(batch=batch, channels=8, frames=frames, mel_bins=16)).float()


def init_params(model):
    # Linear weights ~ N(0, 1/fan_in); norm weights 1 + N(0, 0.1); biases, scale-shift tables N(0, 0.3).
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 2 and name.endswith(".weight"):
                p.copy_(torch.randn_like(p) / p.shape[1] ** 0.5)
            elif name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            else:
                p.copy_(0.3 * torch.randn_like(p))


def self_attention_mask(batch, tokens, broadcast_rows):
    # Values in {0, 0.25, 1} with the diagonal kept (Modality.attention_mask); broadcast_rows: the
    # key-only form [B, 1, T].
    rows = 1 if broadcast_rows else tokens
    m = torch.ones(batch, rows, tokens)
    m[:, :, 1] = 0.25
    m[:, :, tokens - 1] = 0.0
    if not broadcast_rows:
        m[:, 0, 2] = 0.0
        idx = torch.arange(tokens)
        m[:, idx, idx] = 1.0
    else:
        m[:, :, 0] = 1.0
    return m


def modality(prefix, latent, sigma, timesteps, positions, context, context_mask, tensors, attention_mask=None,
             keyframes_mask=None, enabled=True):
    tensors[f"input.{prefix}.latent"] = latent
    tensors[f"input.{prefix}.sigma"] = sigma
    tensors[f"input.{prefix}.timesteps"] = timesteps
    tensors[f"input.{prefix}.positions"] = positions
    tensors[f"input.{prefix}.context"] = context
    if context_mask is not None:
        tensors[f"input.{prefix}.context_mask"] = context_mask
    if attention_mask is not None:
        tensors[f"input.{prefix}.attention_mask"] = attention_mask
    if keyframes_mask is not None:
        tensors[f"input.{prefix}.keyframes_mask"] = keyframes_mask
    if not enabled:
        tensors[f"input.{prefix}.enabled"] = torch.tensor([0], dtype=torch.int64)
    return Modality(latent=latent, sigma=sigma, timesteps=timesteps, positions=positions, context=context,
                    context_mask=context_mask, attention_mask=attention_mask, keyframes_mask=keyframes_mask,
                    enabled=enabled)


def make(path, cfg, model_type, batch, grid, audio_frames, text_len, seed, masks=False, caption_channels=None,
         conditioning=False, perturbations=None, disabled=None):
    torch.manual_seed(seed)
    if caption_channels:
        cfg = {**cfg, "caption_channels": caption_channels}
    configurator = CONFIGURATORS[model_type]
    model = configurator.from_metadata({"config": {"transformer": cfg}})
    model = model.to_empty(device="cpu").float().eval()  # the caption projection is built on "meta"
    init_params(model)
    tensors = {}
    f, h, w = grid
    tv = f * h * w
    dv = cfg["num_attention_heads"] * cfg["attention_head_dim"]
    ctx_v = caption_channels if caption_channels else dv
    sigma = torch.rand(batch) * 0.8 + 0.1
    # Per-token timesteps (denoise mask * sigma): sample 0's first latent frame is clean (an image condition).
    vt = sigma[:, None].repeat(1, tv)
    vt[0, : h * w] = 0.0
    vmask = None
    if masks:
        vmask = torch.ones(batch, text_len, dtype=torch.int64)
        vmask[0, text_len - 2:] = 0           # padding at the end
        vmask[1, 1] = 0                       # a gap
        vmask[1, text_len - 1] = 0
    video = None
    if model_type != AUDIO_ONLY:
        keyframes = None
        if conditioning:  # the first latent frame and one token of the last are single-pixel-frame latents
            keyframes = torch.zeros(batch, tv, 1)
            keyframes[:, : h * w] = 1.0
            keyframes[batch - 1, tv - 1] = 1.0
        video = modality("video", torch.randn(batch, tv, cfg["in_channels"]), sigma, vt,
                         video_positions(batch, f, h, w, 24.0), torch.randn(batch, text_len, ctx_v), vmask, tensors,
                         self_attention_mask(batch, tv, False) if conditioning else None, keyframes,
                         enabled=disabled != "video")
    audio = None
    if model_type != VIDEO_ONLY:
        da = cfg["audio_num_attention_heads"] * cfg["audio_attention_head_dim"]
        asigma = torch.rand(batch) * 0.8 + 0.1
        amask = None
        if masks:
            amask = torch.ones(batch, text_len, dtype=torch.int64)
            amask[0, 0] = 0
            amask[1, 2:4] = 0
        audio = modality("audio", torch.randn(batch, audio_frames, cfg["audio_in_channels"]), asigma,
                         asigma[:, None].repeat(1, audio_frames), audio_positions(batch, audio_frames),
                         torch.randn(batch, text_len, da), amask, tensors,
                         self_attention_mask(batch, audio_frames, True) if conditioning else None,
                         enabled=disabled != "audio")

    taps = {}

    def hook(name):
        def fn(_module, _inputs, out):
            if name.startswith("transformer_blocks."):
                v, a = out
                if v is not None:
                    taps[f"inter.{name}.video"] = v.x.detach().clone()
                if a is not None:
                    taps[f"inter.{name}.audio"] = a.x.detach().clone()
            elif isinstance(out, tuple):
                taps[f"inter.{name}"] = out[0].detach().clone()
            else:
                taps[f"inter.{name}"] = out.detach().clone()
        return fn

    for name in ("patchify_proj", "audio_patchify_proj", "adaln_single", "audio_adaln_single"):
        if hasattr(model, name):
            getattr(model, name).register_forward_hook(hook(name))
    for i, block in enumerate(model.transformer_blocks):
        block.register_forward_hook(hook(f"transformer_blocks.{i}"))
    batched = None
    if perturbations is not None:
        batched = BatchedPerturbationConfig(perturbations, cfg["num_layers"], dtype=torch.float32)
        tensors["input.perturbations"] = batched.block_masks.float().contiguous()
    with torch.no_grad():
        vx, ax = model(video, audio, batched)
    state = {k: v.detach().contiguous().float() for k, v in model.state_dict().items()}
    tensors = {**state, **{k: v.contiguous() for k, v in tensors.items()}, **taps}
    if vx is not None:
        tensors["output.video"] = vx.contiguous()
    if ax is not None:
        tensors["output.audio"] = ax.contiguous()
    config = {**cfg, "model_type": model_type}
    meta = {"kind": "ltx2.dit", "config": json.dumps(config), "generator": "tools/golden/ltx2_dit.py",
            "reference": "Lightricks/LTX-2 400fd31 ltx_core LTXModel", "torch": torch.__version__}
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(tensors)} tensors)"
          + (f", video {tuple(vx.shape)}" if vx is not None else "") + (f", audio {tuple(ax.shape)}" if ax is not None else ""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/golden/ltx2")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    make(os.path.join(args.out, "ltx2_dit_av.safetensors"), BASE, AV, 2, (2, 2, 3), 5, 5, 0, masks=True)
    v23 = {**BASE, "apply_gated_attention": True, "cross_attention_adaln": True, "use_prompt_adaln_single": True,
           "ff_bias": False}
    make(os.path.join(args.out, "ltx2_dit_av23.safetensors"), v23, AV, 1, (2, 2, 2), 6, 4, 1)
    vid = {**BASE, "rope_type": "interleaved", "caption_proj_before_connector": False}
    make(os.path.join(args.out, "ltx2_dit_video.safetensors"), vid, VIDEO_ONLY, 1, (2, 3, 2), 0, 5, 2,
         caption_channels=24)
    # Conditioning and STG: the keyframe marker, self-attention masks (dense on video, key-only on
    # audio), per-block perturbations: sample 0 none; sample 1 video self-attention in block 1 and
    # A2V in block 0; both samples the audio self-attention and V2A in block 0 (the all-perturbed path).
    cond = {**v23, "use_keyframes_abs_pos_embedding": True}
    both = [Perturbation(PerturbationType.SKIP_AUDIO_SELF_ATTN, [0]), Perturbation(PerturbationType.SKIP_V2A_CROSS_ATTN, [0])]
    stg = [PerturbationConfig(both),
           PerturbationConfig(both + [Perturbation(PerturbationType.SKIP_VIDEO_SELF_ATTN, [1]),
                                      Perturbation(PerturbationType.SKIP_A2V_CROSS_ATTN, [0])])]
    make(os.path.join(args.out, "ltx2_dit_av_cond.safetensors"), cond, AV, 2, (2, 2, 2), 5, 4, 3, conditioning=True,
         perturbations=stg)
    # Modality.enabled = False (the official denoiser's skipped modality): the stream is not updated,
    # the other one still attends to it; 1 block each.
    one = {**v23, "num_layers": 1}
    make(os.path.join(args.out, "ltx2_dit_av_video_off.safetensors"), one, AV, 1, (2, 2, 2), 5, 4, 5, disabled="video")
    make(os.path.join(args.out, "ltx2_dit_av_audio_off.safetensors"), one, AV, 1, (2, 2, 2), 5, 4, 6, disabled="audio")
    # Audio only (LTXAudioOnlyModelConfigurator: LTXModel's defaults for what it does not pass), 1 block.
    aud = {**BASE, "num_layers": 1}
    make(os.path.join(args.out, "ltx2_dit_audio.safetensors"), aud, AUDIO_ONLY, 1, (1, 1, 1), 7, 4, 4, masks=False)


if __name__ == "__main__":
    main()
