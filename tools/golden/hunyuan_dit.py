"""Golden files for kind `hunyuan.dit` (docs/parity.md): one forward of the HunyuanVideo 1.0 DiT, run
by the official HYVideoDiffusionTransformer (hyvideo/modules/models.py, Tencent/HunyuanVideo fa14b00)
and by diffusers' HunyuanVideoTransformer3DModel, in float32 on the CPU.

Files written to tests/golden/hunyuan/:
  hunyuan_dit_tiny.safetensors
      official model, guidance_embed=True, hidden 32, 2 heads (head dim 16, rope_dim_list [4, 6, 6]),
      2 double + 2 single blocks, batch 2, a text mask with right padding (5 and 8 of 8 tokens valid)
  hunyuan_dit_noguid.safetensors
      official model, guidance_embed=False, qkv_bias=False, hidden 48, 3 heads, mlp_width_ratio 2.5,
      out_channels 8, batch 1, 3 of 6 tokens valid
  hunyuan_dit_linear_gelu.safetensors
      official model, text_projection "linear", use_attention_mask=False, mlp_act_type "gelu" (erf),
      qk_norm_type "layer", patch [2, 2, 2]
  hunyuan_dit_diffusers.safetensors
      diffusers HunyuanVideoTransformer3DModel (diffusers config and names), its state dict converted
      from an official model's by the renames of diffusers' convert_hunyuan_video_transformer_to_diffusers
      (single_file_utils.py, which hard-codes hidden_size 3072, so the split sizes are taken from the
      config here); diffusers' output is checked against the official model's before the file is written

Inputs follow the official forward: input.x [B,C,F,H,W], input.t [B], input.text_states [B,L,D],
input.text_mask [B,L] (I64, right padding as the reference's tokenizer gives), input.text_states_2
[B,D2], input.freqs_cos / input.freqs_sin [N, head_dim] from the official get_nd_rotary_pos_embed
(theta 256, use_real=True, as hyvideo/inference.py get_rotary_pos_embed), input.guidance [B] (the
value the model embeds: scale * 1000) -> output [B,C_out,F,H,W].

What differs from a GPU run of the official code, and why:
  * flash_attn_varlen_func (CUDA-only) is replaced by fp32_varlen_attention below: the same
    sequences (get_cu_seqlens: per sample [image + the first sum(mask) text tokens] and [the rest of
    the text tokens], each attending only within itself), scaled-dot-product softmax in fp32.
    get_cu_seqlens is the official function with its cu_seqlens on the CPU instead of "cuda".
  * no autocast, fp32 weights: these files are the fp32 reference (the engine's bf16 mode is checked
    against them at the bf16 tolerance).
  * weights are random (uniform, scaled like the models' init), biases, the modulations and the
    final layer non-zero (the reference zero-inits the modulations and the final layer), so every
    parameter matters.

The padded text rows of the joint attention attend to padding only (their own varlen sequence); they
never reach an image row or the output, and the engine does not reproduce them: the inter.* tensors
are image-stream tensors (and txt_in, which the token refiner's explicit mask defines for every row):
  img_in [B,N,D] (patch embedding tokens), txt_in [B,L,D] (token refiner / text projection output),
  time_in, vector_in [B,D], double_blocks.<i> [B,N,D] (image stream),
  single_blocks.<i> [B,N,D] (the image tokens of the block's output), final_layer [B,N,prod(patch)*C].
diffusers: x_embedder, context_embedder, time_text_embed.{timestep,text}_embedder,
  transformer_blocks.<i>, single_transformer_blocks.<i>, proj_out (same layouts).
guidance_in is not recorded: torch's fp32 exp (MKL) is within 1 ulp of the correctly rounded
one the engine computes, not equal to it, on 2 of the 128 sinusoid frequencies, and at the guidance
values the pipeline embeds (6016) that 1 ulp moves the angles by ~2e-4 rad: the guidance embedding
then differs by ~1e-5 relative L2, the size of the reference's own fp32 rounding of those angles
(measured 9.7e-6 and 1.4e-5 on these files). Its effect is in every later tensor, compared at 1e-5.

Usage: HUNYUAN_REPO=/work/ref/hunyuan python tools/golden/hunyuan_dit.py [OUT_DIR]
"""
import json
import os
import sys
import types

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from hunyuan_reference import load

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "golden", "hunyuan")


def get_cu_seqlens(text_mask, img_len):
    """hyvideo/modules/attenion.py get_cu_seqlens, with the result on the CPU."""
    batch_size = text_mask.shape[0]
    text_len = text_mask.sum(dim=1)
    max_len = text_mask.shape[1] + img_len
    cu_seqlens = torch.zeros([2 * batch_size + 1], dtype=torch.int32)
    for i in range(batch_size):
        s = text_len[i] + img_len
        cu_seqlens[2 * i + 1] = i * max_len + s
        cu_seqlens[2 * i + 2] = (i + 1) * max_len
    return cu_seqlens


def fp32_varlen_attention(q, k, v, mode="flash", drop_rate=0, attn_mask=None, causal=False, cu_seqlens_q=None,
                          cu_seqlens_kv=None, max_seqlen_q=None, max_seqlen_kv=None, batch_size=1):
    """attention(mode="flash")'s contract: q, k, v [B, S, H, D]; the B*S tokens form the sequences
    cu_seqlens gives (flash_attn_varlen_func), each attending within itself; -> [B, S, H*D]."""
    assert mode == "flash" and not causal and drop_rate == 0 and attn_mask is None
    assert torch.equal(cu_seqlens_q, cu_seqlens_kv)
    b, s, h, d = q.shape
    qf, kf, vf = (t.reshape(b * s, h, d).float() for t in (q, k, v))
    out = torch.zeros_like(qf)
    cu = cu_seqlens_q.tolist()
    for lo, hi in zip(cu[:-1], cu[1:]):
        if hi > lo:
            seg = F.scaled_dot_product_attention(qf[lo:hi].transpose(0, 1), kf[lo:hi].transpose(0, 1),
                                                 vf[lo:hi].transpose(0, 1))
            out[lo:hi] = seg.transpose(0, 1)
    return out.view(b, s, h * d).type(q.dtype)


def import_models():
    models = load("hyvideo.modules.models")
    models.attention = fp32_varlen_attention  # the blocks call it by this global name
    models.get_cu_seqlens = get_cu_seqlens
    return models


def randomize(model, gen):
    """Every parameter uniform in +-bound: 1/sqrt(fan_in) for weights, 0.05 for biases, norm gains
    1 +- 0.2."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            gain = name.endswith("weight") and p.dim() == 1
            if gain:
                bound = 0.2
            elif name.endswith("bias"):
                bound = 0.05
            else:
                bound = 1.0 / (p[0].numel() ** 0.5)
            v = (torch.rand(list(p.shape), generator=gen, dtype=torch.float64) * 2 - 1).float() * bound
            p.copy_(v + 1.0 if gain else v)


def add_hooks(model, names, store, image_tokens):
    """inter.<name> = the module's output; the first of a tuple (a double block's image stream); the
    first image_tokens rows of a single block's [image, text] output."""
    for name in names:
        mod = model.get_submodule(name)

        def hook(m, inp, out, name=name):
            out = out[0] if isinstance(out, (tuple, list)) else out
            if name.startswith("single_blocks."):
                out = out[:, :image_tokens]
            store[name] = out.detach().float().contiguous().clone()
        mod.register_forward_hook(hook)


def make_inputs(gen, cfg, text_dims, x_shape, valid, t_values, guidance_values, posemb):
    batch = len(valid)
    L = text_dims["text_len"]
    x = torch.randn([batch] + x_shape, generator=gen)
    text_states = torch.randn(batch, L, text_dims["text_states_dim"], generator=gen)
    mask = torch.zeros(batch, L, dtype=torch.int64)
    for i, n in enumerate(valid):
        mask[i, :n] = 1
    text_states_2 = torch.randn(batch, text_dims["text_states_dim_2"], generator=gen)
    pt, ph, pw = cfg["patch_size"]
    rope_sizes = [x_shape[1] // pt, x_shape[2] // ph, x_shape[3] // pw]
    freqs_cos, freqs_sin = posemb.get_nd_rotary_pos_embed(cfg["rope_dim_list"], rope_sizes, theta=256,
                                                          use_real=True, theta_rescale_factor=1)
    return {
        "x": x,
        "t": torch.tensor(t_values, dtype=torch.float32),
        "text_states": text_states,
        "text_mask": mask,
        "text_states_2": text_states_2,
        "freqs_cos": freqs_cos.float().contiguous(),
        "freqs_sin": freqs_sin.float().contiguous(),
        "guidance": torch.tensor(guidance_values, dtype=torch.float32),
    }


def build_official(models, cfg, text_dims, seed):
    torch.manual_seed(seed)
    args = types.SimpleNamespace(text_states_dim=text_dims["text_states_dim"],
                                 text_states_dim_2=text_dims["text_states_dim_2"])
    model = models.HYVideoDiffusionTransformer(args, **cfg).eval()
    gen = torch.Generator().manual_seed(seed)
    randomize(model, gen)
    return model, gen


def run_official(model, inp, hooks_store=None):
    with torch.no_grad():
        return model(inp["x"], inp["t"], text_states=inp["text_states"], text_mask=inp["text_mask"],
                     text_states_2=inp["text_states_2"], freqs_cos=inp["freqs_cos"], freqs_sin=inp["freqs_sin"],
                     guidance=inp["guidance"], return_dict=False)


def official_config(cfg, text_dims):
    return dict(cfg, text_states_dim=text_dims["text_states_dim"], text_states_dim_2=text_dims["text_states_dim_2"])


def save(path, kind_config, params, inp, output, inter):
    tensors = {n: p.detach().float().contiguous() for n, p in params.items()}
    for n, v in inp.items():
        tensors["input." + n] = v.contiguous()
    tensors["output"] = output.detach().float().contiguous()
    for n, v in inter.items():
        tensors["inter." + n] = v
    meta = {"kind": "hunyuan.dit", "config": json.dumps(kind_config), "torch_version": torch.__version__,
            "reference": "Tencent/HunyuanVideo fa14b00 hyvideo/modules/models.py HYVideoDiffusionTransformer"}
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path}: {len(params)} params, output {list(output.shape)}, "
          f"{len(inter)} inter, |out| {output.norm():.4f}")


def official_golden(models, posemb, name, cfg, text_dims, x_shape, valid, t_values, guidance_values, seed):
    model, gen = build_official(models, cfg, text_dims, seed)
    inp = make_inputs(gen, cfg, text_dims, x_shape, valid, t_values, guidance_values, posemb)
    pt, ph, pw = cfg["patch_size"]
    n_img = (x_shape[1] // pt) * (x_shape[2] // ph) * (x_shape[3] // pw)
    names = ["img_in", "txt_in", "time_in", "vector_in", "final_layer"]  # not guidance_in: see the docstring
    names += [f"double_blocks.{i}" for i in range(cfg["mm_double_blocks_depth"])]
    names += [f"single_blocks.{i}" for i in range(cfg["mm_single_blocks_depth"])]
    store = {}
    add_hooks(model, names, store, n_img)
    out = run_official(model, inp)
    if not cfg.get("guidance_embed"):
        del inp["guidance"]  # the model without guidance_in takes none
    save(os.path.join(OUT, name), official_config(cfg, text_dims), dict(model.named_parameters()), inp, out, store)
    return model, inp, out


# ---- official -> diffusers state dict (diffusers' convert_hunyuan_video_transformer_to_diffusers) ----
RENAMES = [
    ("img_in", "x_embedder"),
    ("time_in.mlp.0", "time_text_embed.timestep_embedder.linear_1"),
    ("time_in.mlp.2", "time_text_embed.timestep_embedder.linear_2"),
    ("guidance_in.mlp.0", "time_text_embed.guidance_embedder.linear_1"),
    ("guidance_in.mlp.2", "time_text_embed.guidance_embedder.linear_2"),
    ("vector_in.in_layer", "time_text_embed.text_embedder.linear_1"),
    ("vector_in.out_layer", "time_text_embed.text_embedder.linear_2"),
    ("double_blocks", "transformer_blocks"),
    ("img_attn_q_norm", "attn.norm_q"),
    ("img_attn_k_norm", "attn.norm_k"),
    ("img_attn_proj", "attn.to_out.0"),
    ("txt_attn_q_norm", "attn.norm_added_q"),
    ("txt_attn_k_norm", "attn.norm_added_k"),
    ("txt_attn_proj", "attn.to_add_out"),
    ("img_mod.linear", "norm1.linear"),
    ("img_norm1", "norm1.norm"),
    ("img_norm2", "norm2"),
    ("img_mlp", "ff"),
    ("txt_mod.linear", "norm1_context.linear"),
    ("txt_norm1", "norm1.norm"),
    ("txt_norm2", "norm2_context"),
    ("txt_mlp", "ff_context"),
    ("self_attn_proj", "attn.to_out.0"),
    ("modulation.linear", "norm.linear"),
    ("pre_norm", "norm.norm"),
    ("final_layer.norm_final", "norm_out.norm"),
    ("final_layer.linear", "proj_out"),
    ("fc1", "net.0.proj"),
    ("fc2", "net.2"),
    ("input_embedder", "proj_in"),
]


def to_diffusers(sd, hidden):
    out = {}
    for key, w in sd.items():
        if key.startswith("final_layer.adaLN_modulation.1"):
            shift, scale = w.chunk(2, dim=0)
            out[key.replace("final_layer.adaLN_modulation.1", "norm_out.linear")] = torch.cat([scale, shift], 0)
            continue
        if key.startswith("txt_in."):
            k = key.replace("individual_token_refiner.blocks", "token_refiner.refiner_blocks")
            k = k.replace("adaLN_modulation.1", "norm_out.linear").replace("txt_in", "context_embedder")
            k = k.replace("t_embedder.mlp.0", "time_text_embed.timestep_embedder.linear_1")
            k = k.replace("t_embedder.mlp.2", "time_text_embed.timestep_embedder.linear_2")
            k = k.replace("c_embedder", "time_text_embed.text_embedder").replace("mlp", "ff")
            if "self_attn_qkv" in k:
                for part, t in zip(("to_q", "to_k", "to_v"), w.chunk(3, dim=0)):
                    out[k.replace("self_attn_qkv", "attn." + part)] = t
                continue
            for a, b in RENAMES:
                k = k.replace(a, b)
            out[k] = w
            continue
        if "img_attn_qkv" in key or "txt_attn_qkv" in key:
            names = ("attn.to_q", "attn.to_k", "attn.to_v") if "img_attn_qkv" in key else \
                ("attn.add_q_proj", "attn.add_k_proj", "attn.add_v_proj")
            src = "img_attn_qkv" if "img_attn_qkv" in key else "txt_attn_qkv"
            for part, t in zip(names, w.chunk(3, dim=0)):
                k = key.replace(src, part)
                for a, b in RENAMES:
                    k = k.replace(a, b)
                out[k] = t
            continue
        if key.startswith("single_blocks."):
            base = key.replace("single_blocks", "single_transformer_blocks")
            if ".linear1." in key:
                suffix = key.rsplit(".", 1)[1]
                stem = base.split(".linear1.")[0]
                q, k_, v, mlp = torch.split(w, [hidden, hidden, hidden, w.size(0) - 3 * hidden], dim=0)
                for part, t in zip(("attn.to_q", "attn.to_k", "attn.to_v", "proj_mlp"), (q, k_, v, mlp)):
                    out[f"{stem}.{part}.{suffix}"] = t
                continue
            k = base.replace("linear2", "proj_out").replace("q_norm", "attn.norm_q").replace("k_norm", "attn.norm_k")
            k = k.replace("modulation.linear", "norm.linear")
            out[k] = w
            continue
        k = key
        for a, b in RENAMES:
            k = k.replace(a, b)
        out[k] = w
    return out


def diffusers_golden(models, posemb, name, cfg, text_dims, x_shape, valid, t_values, guidance_values, seed):
    from diffusers import HunyuanVideoTransformer3DModel
    model, gen = build_official(models, cfg, text_dims, seed)
    inp = make_inputs(gen, cfg, text_dims, x_shape, valid, t_values, guidance_values, posemb)
    official_out = run_official(model, inp)
    heads = cfg["heads_num"]
    dcfg = {
        "in_channels": cfg["in_channels"], "out_channels": cfg["out_channels"], "num_attention_heads": heads,
        "attention_head_dim": cfg["hidden_size"] // heads, "num_layers": cfg["mm_double_blocks_depth"],
        "num_single_layers": cfg["mm_single_blocks_depth"], "num_refiner_layers": 2,
        "mlp_ratio": cfg["mlp_width_ratio"], "patch_size": cfg["patch_size"][1], "patch_size_t": cfg["patch_size"][0],
        "qk_norm": "rms_norm", "guidance_embeds": cfg["guidance_embed"], "text_embed_dim": text_dims["text_states_dim"],
        "pooled_projection_dim": text_dims["text_states_dim_2"], "rope_theta": 256.0,
        "rope_axes_dim": list(cfg["rope_dim_list"]), "image_condition_type": None,
    }
    dmodel = HunyuanVideoTransformer3DModel(**dcfg).eval()
    sd = to_diffusers({k: v.detach().clone() for k, v in model.state_dict().items()}, cfg["hidden_size"])
    dmodel.load_state_dict(sd, strict=True)
    n_img = (x_shape[1] // cfg["patch_size"][0]) * (x_shape[2] // cfg["patch_size"][1]) * \
        (x_shape[3] // cfg["patch_size"][2])
    names = ["x_embedder", "context_embedder", "time_text_embed.timestep_embedder",
             "time_text_embed.text_embedder", "proj_out"]
    names += [f"transformer_blocks.{i}" for i in range(cfg["mm_double_blocks_depth"])]
    names += [f"single_transformer_blocks.{i}" for i in range(cfg["mm_single_blocks_depth"])]
    store = {}
    add_hooks(dmodel, names, store, n_img)
    with torch.no_grad():
        out = dmodel(hidden_states=inp["x"], timestep=inp["t"], encoder_hidden_states=inp["text_states"],
                     encoder_attention_mask=inp["text_mask"], pooled_projections=inp["text_states_2"],
                     guidance=inp["guidance"], return_dict=False)[0]
    # x_embedder returns tokens [B, N, D] as img_in does.
    rel = ((out - official_out).norm() / official_out.norm()).item()
    print(f"diffusers vs official output: rel L2 {rel:.3e}")
    assert rel < 1e-5, "the diffusers model built from the converted state dict does not match the official one"
    dcfg_json = dict(dcfg, _class_name="HunyuanVideoTransformer3DModel")
    save(os.path.join(OUT, name), dcfg_json, dict(dmodel.named_parameters()), inp, out, store)


def main():
    os.makedirs(OUT, exist_ok=True)
    models = import_models()
    posemb = load("hyvideo.modules.posemb_layers")
    tiny = dict(patch_size=[1, 2, 2], in_channels=4, out_channels=4, hidden_size=32, heads_num=2, mlp_width_ratio=4.0,
                mlp_act_type="gelu_tanh", mm_double_blocks_depth=2, mm_single_blocks_depth=2, rope_dim_list=[4, 6, 6],
                qkv_bias=True, qk_norm=True, qk_norm_type="rms", guidance_embed=True, text_projection="single_refiner",
                use_attention_mask=True)
    dims = dict(text_states_dim=16, text_states_dim_2=12, text_len=8)
    official_golden(models, posemb, "hunyuan_dit_tiny.safetensors", tiny, dims, [4, 3, 4, 4], [5, 8], [937.5, 250.0],
                    [6016.0, 3500.0], seed=1)
    noguid = dict(tiny, guidance_embed=False, qkv_bias=False, mlp_width_ratio=2.5, out_channels=8, hidden_size=48,
                  heads_num=3, mm_double_blocks_depth=1, mm_single_blocks_depth=1)
    official_golden(models, posemb, "hunyuan_dit_noguid.safetensors", noguid, dict(dims, text_len=6), [4, 2, 4, 6], [3],
                    [500.0], [0.0], seed=2)
    linear = dict(tiny, patch_size=[2, 2, 2], text_projection="linear", use_attention_mask=False, mlp_act_type="gelu",
                  qk_norm_type="layer", mm_double_blocks_depth=1, mm_single_blocks_depth=1, guidance_embed=False)
    official_golden(models, posemb, "hunyuan_dit_linear_gelu.safetensors", linear, dims, [4, 4, 4, 4], [6, 2],
                    [10.0, 999.0], [0.0, 0.0], seed=3)
    diffusers_golden(models, posemb, "hunyuan_dit_diffusers.safetensors", tiny, dims, [4, 3, 4, 4], [5, 8], [937.5, 250.0],
                     [6016.0, 3500.0], seed=4)


if __name__ == "__main__":
    main()
