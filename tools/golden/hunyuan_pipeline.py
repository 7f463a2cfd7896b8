"""Golden file for kind `hunyuan.pipeline.t2v` (docs/parity.md): a whole HunyuanVideo 1.0 text-to-video
run, the denoise loop and the decode, by the official HunyuanVideoPipeline.__call__
(hyvideo/diffusion/pipelines/pipeline_hunyuan_video.py, Tencent/HunyuanVideo) with the official
FlowMatchDiscreteScheduler(shift, reverse=True, solver="euler") and the rotary tables of
hyvideo/inference.py get_rotary_pos_embed (get_nd_rotary_pos_embed, theta 256), as
HunyuanVideoSampler.predict builds them, on a tiny random official DiT (HYVideoDiffusionTransformer)
and a tiny random official VAE (AutoencoderKLCausal3D, "884-16c-hy"), fp32 on the CPU.

The prompt goes in as embeddings, not text (the text encoders are checked on their own): the
pipeline is called with prompt_embeds / attention_mask (the LLM's hidden states and mask);
__call__ has no argument for the CLIP pooled vector (it always runs text_encoder_2 on the prompt,
and refuses a prompt beside prompt_embeds), so its encode_prompt call for text_encoder_2 returns
the given prompt_embeds_2 (the one change to the reference's code path; `text_encoder` and
`text_encoder_2` are stand-ins that only carry the dtype encode_prompt reads). Named after those arguments:
  input.prompt_embeds [1, L, D] F32, input.attention_mask [1, L] I64, input.prompt_embeds_2 [1, D2] F32
  -> output.latents [16, F', h, w] (the final latent, before the VAE scaling),
     output.video [3, F, H, W] (the pipeline's output: (decode(latents / scaling_factor) / 2 + 0.5).clamp(0, 1));
  inter.noise (the initial latent: randn_tensor with a CPU generator seeded `seed`), inter.timesteps.
guidance_scale = 1 (the published model is CFG-distilled: the official default --cfg-scale 1, one
pass per step), embedded_guidance_scale as config "guidance" (the pipeline passes it * 1000),
in hunyuan_t2v_tiny.safetensors; hunyuan_t2v_cfg_tiny.safetensors runs guidance_scale = config
"cfg_scale" 2.5 on top (--cfg-scale: the negative prompt's embeddings given as
negative_prompt_embeds / negative_attention_mask and, through the same encode_prompt stand-in,
the negative pooled vector; the DiT runs the [negative, prompt] batch of two, both halves with the
embedded guidance, combined noise_pred_uncond + guidance_scale * (noise_pred_text - noise_pred_uncond)),
with inputs input.negative_prompt_embeds, input.negative_attention_mask, input.negative_prompt_embeds_2,
enable_tiling=True (the official default --vae-tiling): the tiny VAE (tools/golden/hunyuan_vae.py's
CONFIG, narrower: widths [4, 4, 8, 8], 2 groups, sample_tsize 64) has spatial tiles of 32 pixels (4 latent), so the 6-latent-pixel-wide
frames decode in two overlapping spatial tiles, blended; no temporal tiling (3 latent frames). (With
sample_tsize 8 the reference's temporal tiling of 3 latent frames returns 11 frames, not 9: its
last tile is empty after the first-frame crop; a quirk of short clips, not exercised here.)

What differs from a GPU run: flash_attn_varlen_func is replaced by the fp32 varlen attention of
tools/golden/hunyuan_dit.py (same sequences); the generator is a CPU one (the official sampler
seeds torch.Generator("cuda")); no autocast.

Config: the request (prompt, negative_prompt "", frames, height, width, steps, seed, guidance =
the embedded scale, shift, sampler "flow_match_euler") plus "dit" and "vae" (the two models'
init args, official spellings) and "fps". Parameters under "transformer." (the DiT's official
names) and "vae." (the VAE decoder half's: decoder.*, post_quant_conv.*), so one file holds the run.

Usage: HUNYUAN_REPO=/work/ref/hunyuan /work/venv-golden/bin/python tools/golden/hunyuan_pipeline.py [OUT_DIR]
"""
import json
import os
import sys
import types

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hunyuan_reference import load, package  # noqa: E402
from hunyuan_dit import import_models, randomize  # noqa: E402
from hunyuan_vae import CONFIG as VAE_TINY, randomize_ as randomize_vae  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "golden", "pipeline")

DIT = dict(patch_size=[1, 2, 2], in_channels=16, out_channels=16, hidden_size=32, heads_num=2, mlp_width_ratio=2.0,
           mlp_act_type="gelu_tanh", mm_double_blocks_depth=1, mm_single_blocks_depth=1, rope_dim_list=[4, 6, 6],
           qkv_bias=True, qk_norm=True, qk_norm_type="rms", guidance_embed=True, text_projection="single_refiner",
           use_attention_mask=True)
TEXT = dict(text_states_dim=24, text_states_dim_2=12)
REQUEST = dict(prompt="embeddings", negative_prompt="", frames=9, height=16, width=48, steps=4, seed=42,
               guidance=6.0, shift=7.0, sampler="flow_match_euler", fps=24)
TEXT_LEN, VALID, NEG_VALID = 8, 5, 3
VAE_CONFIG = dict(VAE_TINY, block_out_channels=[4, 4, 8, 8], norm_num_groups=2, sample_tsize=64)


class PooledStandIn:
    """text_encoder_2 for encode_prompt: encode() returns the given pooled vector (hidden_state) and no mask."""

    def __init__(self, pooled):
        self.pooled = pooled
        self.dtype = torch.float32

    def text2tokens(self, prompt, data_type="image"):
        return prompt

    def encode(self, tokens, data_type="image", device=None, **kw):
        return types.SimpleNamespace(hidden_state=self.pooled, attention_mask=None)


def main():
    os.makedirs(OUT, exist_ok=True)
    run("hunyuan_t2v_tiny.safetensors", cfg_scale=1.0)
    run("hunyuan_t2v_cfg_tiny.safetensors", cfg_scale=2.5)


def run(name, cfg_scale):
    torch.set_num_threads(2)
    models = import_models()
    posemb = load("hyvideo.modules.posemb_layers")
    vae_mod = load("hyvideo.vae.autoencoder_kl_causal_3d")
    sched_mod = load("hyvideo.diffusion.schedulers.scheduling_flow_match_discrete")
    # The pipeline module imports these names from packages hunyuan_reference leaves empty.
    package("hyvideo.modules").HYVideoDiffusionTransformer = models.HYVideoDiffusionTransformer
    package("hyvideo.text_encoder").TextEncoder = PooledStandIn
    pipe_mod = load("hyvideo.diffusion.pipelines.pipeline_hunyuan_video")

    torch.manual_seed(0)
    dit = models.HYVideoDiffusionTransformer(types.SimpleNamespace(**TEXT), **DIT).eval()
    randomize(dit, torch.Generator().manual_seed(5))
    vae = vae_mod.AutoencoderKLCausal3D(**VAE_CONFIG).eval().requires_grad_(False)
    randomize_vae(vae, seed=31)

    g = torch.Generator().manual_seed(7)
    prompt_embeds = torch.randn(1, TEXT_LEN, TEXT["text_states_dim"], generator=g)
    attention_mask = torch.zeros(1, TEXT_LEN, dtype=torch.int64)
    attention_mask[0, :VALID] = 1
    prompt_embeds_2 = torch.randn(1, TEXT["text_states_dim_2"], generator=g)
    # The negative prompt's (drawn after the prompt's, so the CFG-free golden's inputs are unchanged).
    negative_prompt_embeds = torch.randn(1, TEXT_LEN, TEXT["text_states_dim"], generator=g)
    negative_attention_mask = torch.zeros(1, TEXT_LEN, dtype=torch.int64)
    negative_attention_mask[0, :NEG_VALID] = 1
    negative_prompt_embeds_2 = torch.randn(1, TEXT["text_states_dim_2"], generator=g)
    cfg = cfg_scale > 1

    r = REQUEST
    scheduler = sched_mod.FlowMatchDiscreteScheduler(shift=r["shift"], reverse=True, solver="euler")
    args = types.SimpleNamespace(precision="fp32", vae_precision="fp32", disable_autocast=True)
    text_encoder = PooledStandIn(None)  # prompt_embeds are given: only its dtype is read
    pipe = pipe_mod.HunyuanVideoPipeline(vae=vae, text_encoder=text_encoder, transformer=dit, scheduler=scheduler,
                                         text_encoder_2=PooledStandIn(prompt_embeds_2), args=args)
    pipe.set_progress_bar_config(disable=True)
    # __call__ refuses a prompt beside prompt_embeds, and then asks text_encoder_2 to encode the
    # missing prompt: its encode_prompt call is answered with the given pooled vector instead (the
    # one change to the reference's text path; the LLM's call runs as published, with prompt_embeds).
    official_encode_prompt = pipe.encode_prompt

    def encode_prompt(*a, text_encoder=None, **kw):
        if text_encoder is pipe.text_encoder_2:
            return prompt_embeds_2, (negative_prompt_embeds_2 if cfg else None), None, None
        return official_encode_prompt(*a, text_encoder=text_encoder, **kw)

    pipe.encode_prompt = encode_prompt

    # HunyuanVideoSampler.get_rotary_pos_embed: latent (T, H, W) for "884", over the patch.
    lat = [(r["frames"] - 1) // 4 + 1, r["height"] // 8, r["width"] // 8]
    rope_sizes = [s // p for s, p in zip(lat, DIT["patch_size"])]
    freqs_cos, freqs_sin = posemb.get_nd_rotary_pos_embed(DIT["rope_dim_list"], rope_sizes, theta=256, use_real=True,
                                                          theta_rescale_factor=1)
    # The initial latent the pipeline draws (prepare_latents: randn_tensor with the generator), recorded.
    noise = torch.randn([1, 16] + lat, generator=torch.Generator().manual_seed(r["seed"]), dtype=torch.float32)
    captured = {}
    negative = dict(negative_prompt_embeds=negative_prompt_embeds, negative_attention_mask=negative_attention_mask) \
        if cfg else {}

    def on_step(p, i, t, kw):
        captured.setdefault("timesteps", []).append(float(t))
        return {}

    with torch.no_grad():
        latents = pipe(prompt=None, height=r["height"], width=r["width"], video_length=r["frames"],
                       num_inference_steps=r["steps"], guidance_scale=cfg_scale, negative_prompt=None, **negative,
                       generator=torch.Generator().manual_seed(r["seed"]), output_type="latent",
                       prompt_embeds=prompt_embeds, attention_mask=attention_mask, freqs_cis=(freqs_cos, freqs_sin),
                       n_tokens=freqs_cos.shape[0], embedded_guidance_scale=r["guidance"], data_type="video",
                       vae_ver="884-16c-hy", enable_tiling=True, callback_on_step_end=on_step,
                       return_dict=False)
        video = pipe(prompt=None, height=r["height"], width=r["width"], video_length=r["frames"],
                     num_inference_steps=r["steps"], guidance_scale=cfg_scale, negative_prompt=None, **negative,
                     generator=torch.Generator().manual_seed(r["seed"]), output_type="pil",
                     prompt_embeds=prompt_embeds, attention_mask=attention_mask, freqs_cis=(freqs_cos, freqs_sin),
                     n_tokens=freqs_cos.shape[0], embedded_guidance_scale=r["guidance"], data_type="video",
                     vae_ver="884-16c-hy", enable_tiling=True, return_dict=False)
    # output_type "latent" returns (latents / 2 + 0.5).clamp(0, 1) of the latent (the pipeline's
    # final line runs on both branches): undo it only to check the draw, keep the real latent below.
    assert video.shape == (1, 3, r["frames"], r["height"], r["width"]), video.shape

    # The final latent itself: the loop again with the same inputs, stopping before the decode.
    final = {}

    def keep(p, i, t, kw):
        final["latents"] = kw["latents"].clone()
        return {}

    with torch.no_grad():
        pipe(prompt=None, height=r["height"], width=r["width"], video_length=r["frames"],
             num_inference_steps=r["steps"], guidance_scale=cfg_scale, negative_prompt=None, **negative,
             generator=torch.Generator().manual_seed(r["seed"]), output_type="latent", prompt_embeds=prompt_embeds,
             attention_mask=attention_mask, freqs_cis=(freqs_cos, freqs_sin), n_tokens=freqs_cos.shape[0],
             embedded_guidance_scale=r["guidance"], data_type="video", vae_ver="884-16c-hy", enable_tiling=True,
             callback_on_step_end=keep, callback_on_step_end_tensor_inputs=["latents"], return_dict=False)
    assert torch.equal((final["latents"] / 2 + 0.5).clamp(0, 1), latents)

    tensors = {"transformer." + n: p.detach().float().contiguous() for n, p in dit.named_parameters()}
    # The decoder half only (the pipeline decodes; the engine loads the decoder alone).
    tensors.update({"vae." + n: p.detach().float().contiguous() for n, p in vae.state_dict().items()
                    if n.startswith(("decoder.", "post_quant_conv."))})
    tensors["input.prompt_embeds"] = prompt_embeds.contiguous()
    tensors["input.attention_mask"] = attention_mask.contiguous()
    tensors["input.prompt_embeds_2"] = prompt_embeds_2.contiguous()
    if cfg:
        tensors["input.negative_prompt_embeds"] = negative_prompt_embeds.contiguous()
        tensors["input.negative_attention_mask"] = negative_attention_mask.contiguous()
        tensors["input.negative_prompt_embeds_2"] = negative_prompt_embeds_2.contiguous()
    tensors["output.latents"] = final["latents"][0].contiguous()
    tensors["output.video"] = video[0].float().contiguous()
    tensors["inter.noise"] = noise[0].contiguous()
    tensors["inter.timesteps"] = torch.tensor(captured["timesteps"], dtype=torch.float64)
    config = dict(REQUEST, dit=dict(DIT, **TEXT), vae={k: v for k, v in VAE_CONFIG.items()})
    if cfg:
        config.update(cfg_scale=cfg_scale, negative_prompt="negative embeddings")
    meta = {"kind": "hunyuan.pipeline.t2v", "config": json.dumps(config), "torch_version": torch.__version__,
            "generator": "tools/golden/hunyuan_pipeline.py",
            "reference": "Tencent/HunyuanVideo hyvideo/diffusion/pipelines/pipeline_hunyuan_video.py"}
    path = os.path.join(OUT, name)
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path} ({os.path.getsize(path)} bytes); timesteps {captured['timesteps']}; "
          f"|latents| {final['latents'].norm():.4f} |video| {video.norm():.4f}")


if __name__ == "__main__":
    main()
