"""Golden files for LoRA (docs/lora.md): a tiny diffusers WanTransformer3DModel,
one LoRA per format, the model's output with the LoRA fused by the reference
code, as `wan.dit` goldens whose params are the BASE weights (diffusers names):
the engine must merge the LoRA file itself to match `output`.

Files written to tests/golden/lora/ (each golden <name>.safetensors next to its
LoRA <name>.lora.safetensors; the golden's __metadata__.lora says the file and scale):
  wan_lora_diffusers  transformer.<diffusers module>.lora_A/lora_B, alpha in
                      __metadata__.lora_adapter_metadata (WanPipeline.save_lora_weights);
                      fused by WanPipeline.load_lora_weights + fuse_lora(lora_scale).
  wan_lora_peft       base_model.model.<module>.lora_A/lora_B as PEFT's
                      get_peft_model_state_dict writes them, lora_alpha in the
                      adapter_config.json beside the file (the PEFT save_pretrained pair,
                      in tests/golden/lora/peft/); fused by LoraLayer.scale_layer + merge_and_unload.
  wan_lora_comfyui    diffusion_model.<original key>.lora_down/lora_up/alpha + diff_b on
                      biases, written by this script from the A/B tensors; fused by diffusers'
                      load_lora_weights (its own ComfyUI conversion) + fuse_lora.
  wan_lora_comfyui_diff
                      the ComfyUI file plus .diff on norm gains and modulation tables
                      (as lightx2v's LoRAs carry): diffusers drops those keys (norm diffs
                      "unsupported", other .diff "not handled yet"), so this reference is
                      the script's own merge W += scale * diff on the state dict.
  wan_lora_kohya      lora_unet_<original key with _>.lora_down/lora_up/alpha, including a
                      Conv3d LoRA on patch_embedding; reference: the script's own merge
                      W += scale * alpha / rank * up @ down (float64, then float32).
Every LoRA has alpha != rank and a scale != 1, and the script checks that it changes
the output (so a golden passes only when the LoRA was applied, and applied right).

Usage: /work/venv-golden/bin/python tools/golden/wan_lora.py [OUT_DIR]
"""
import copy
import json
import os
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wan_dit import randomize, save  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "golden", "lora")

# The tiny diffusers config of wan_dit_diffusers_tiny.safetensors.
DCFG = dict(patch_size=[1, 2, 2], num_attention_heads=2, attention_head_dim=24, in_channels=4, out_channels=4,
            text_dim=40, freq_dim=32, ffn_dim=96, num_layers=2, cross_attn_norm=True,
            qk_norm="rms_norm_across_heads", eps=1e-6, rope_max_seq_len=1024)

# diffusers module -> WanModel (original) module, for the modules the LoRAs target.
BLOCK_MODULES = {"attn1.to_q": "self_attn.q", "attn1.to_k": "self_attn.k", "attn1.to_v": "self_attn.v",
                 "attn1.to_out.0": "self_attn.o", "attn2.to_q": "cross_attn.q", "attn2.to_k": "cross_attn.k",
                 "attn2.to_v": "cross_attn.v", "attn2.to_out.0": "cross_attn.o", "ffn.net.0.proj": "ffn.0",
                 "ffn.net.2": "ffn.2"}
OTHER_MODULES = {"proj_out": "head.head", "condition_embedder.time_proj": "time_projection.1",
                 "patch_embedding": "patch_embedding"}


def original_name(diffusers_module):
    if diffusers_module.startswith("blocks."):
        _, i, rest = diffusers_module.split(".", 2)
        return f"blocks.{i}.{BLOCK_MODULES[rest]}"
    return OTHER_MODULES[diffusers_module]


def block_modules(num_layers, names=BLOCK_MODULES):
    return [f"blocks.{i}.{m}" for i in range(num_layers) for m in names]


def base_model(seed):
    from diffusers import WanTransformer3DModel
    model = WanTransformer3DModel(**DCFG).eval()
    randomize(model, torch.Generator().manual_seed(seed))
    return model


def inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn([1, 4, 3, 6, 8], generator=gen)
    ctx = torch.randn(1, 6, DCFG["text_dim"], generator=gen)
    t = torch.tensor([500.0])
    return x, ctx, t


def forward(model, x, ctx, t):
    # WanPipeline._get_t5_prompt_embeds zero-pads each prompt to max_sequence_length=512.
    ctx_padded = torch.cat([ctx, ctx.new_zeros(1, 512 - ctx.shape[1], ctx.shape[2])], dim=1)
    with torch.no_grad():
        return model(hidden_states=x, timestep=t, encoder_hidden_states=ctx_padded, return_dict=False)[0]


def lora_pair(gen, module, rank):
    """Random A [rank, in...] and B [out, rank, 1...] for one module, large enough to matter."""
    w = module.weight
    fan_in = w[0].numel()
    a = torch.randn([rank] + list(w.shape[1:]), generator=gen) * (0.6 / fan_in ** 0.5)
    b = torch.randn([w.shape[0], rank] + [1] * (w.dim() - 2), generator=gen) * (0.6 / rank ** 0.5)
    return a, b


def write_golden(path, base, x, ctx, t, out, lora_file, scale, base_out):
    rel = ((out - base_out).norm() / base_out.norm()).item()
    assert rel > 0.02, f"{path}: the LoRA changes the output by only {rel:.2e}"
    tensors = {k: v.detach().contiguous() for k, v in base.state_dict().items()}
    tensors.update({"input.x": x, "input.t": t, "input.context": ctx, "output": out})
    save(path, tensors, {"kind": "wan.dit", "config": json.dumps(dict(base.config)),
                         "lora": json.dumps({"file": lora_file, "scale": scale})})
    print(f"  the LoRA changes the output by rel_l2 {rel:.3f}")


def merged_copy(base, deltas):
    """The base model with W += delta for each (diffusers parameter name, delta), in float64."""
    model = copy.deepcopy(base)
    sd = model.state_dict()
    with torch.no_grad():
        for name, d in deltas:
            sd[name].copy_((sd[name].double() + d.double()).float())
    return model


def peft_adapter(base, rank, alpha, targets, gen, alpha_pattern=None):
    from peft import LoraConfig, get_peft_model
    cfg = LoraConfig(r=rank, lora_alpha=alpha, target_modules=targets, init_lora_weights=False,
                     alpha_pattern=alpha_pattern or {})
    model = get_peft_model(copy.deepcopy(base), cfg)
    with torch.no_grad():
        for name, m in model.named_modules():
            if hasattr(m, "lora_A") and "default" in getattr(m, "lora_A", {}):
                a, b = lora_pair(gen, m.base_layer, rank if name.split("base_model.model.")[-1] not in (
                    alpha_pattern or {}) else rank)
                m.lora_A["default"].weight.copy_(a.reshape(m.lora_A["default"].weight.shape))
                m.lora_B["default"].weight.copy_(b.reshape(m.lora_B["default"].weight.shape))
    return model, cfg


def make_diffusers(base, x, ctx, t, base_out):
    from diffusers import WanPipeline
    from peft.utils import get_peft_model_state_dict
    rank, alpha, scale = 4, 8.0, 0.7
    targets = block_modules(DCFG["num_layers"]) + ["proj_out"]
    pm, cfg = peft_adapter(base, rank, alpha, targets, torch.Generator().manual_seed(11))
    sd = get_peft_model_state_dict(pm)  # base_model.model.<module>.lora_A.weight
    layers = {k[len("base_model.model."):]: v.contiguous() for k, v in sd.items()}
    meta = cfg.to_dict()
    meta = {k: (sorted(v) if isinstance(v, set) else v) for k, v in meta.items()}
    name = "wan_lora_diffusers.lora.safetensors"
    WanPipeline.save_lora_weights(OUT, transformer_lora_layers=layers, transformer_lora_adapter_metadata=meta,
                                  weight_name=name)
    pipe = WanPipeline(tokenizer=None, text_encoder=None, vae=None, scheduler=None, transformer=copy.deepcopy(base))
    pipe.load_lora_weights(os.path.join(OUT, name))
    pipe.fuse_lora(lora_scale=scale)
    pipe.unload_lora_weights()
    out = forward(pipe.transformer, x, ctx, t)
    write_golden(os.path.join(OUT, "wan_lora_diffusers.safetensors"), base, x, ctx, t, out, name, scale, base_out)


def make_peft(base, x, ctx, t, base_out):
    from peft.tuners.lora import LoraLayer
    rank, alpha, scale = 2, 3.0, 1.5
    targets = block_modules(DCFG["num_layers"], ["attn1.to_q", "attn1.to_v", "attn2.to_k", "ffn.net.2"])
    pattern = {"blocks.1.ffn.net.2": 5.0}  # one module with its own alpha
    pm, _ = peft_adapter(base, rank, alpha, targets, torch.Generator().manual_seed(12), alpha_pattern=pattern)
    d = os.path.join(OUT, "peft")
    pm.save_pretrained(d)  # adapter_model.safetensors + adapter_config.json
    if os.path.exists(os.path.join(d, "README.md")):
        os.remove(os.path.join(d, "README.md"))  # PEFT's model card template: not test data
    for m in pm.modules():
        if isinstance(m, LoraLayer):
            m.scale_layer(scale)
    merged = pm.merge_and_unload()
    out = forward(merged, x, ctx, t)
    write_golden(os.path.join(OUT, "wan_lora_peft.safetensors"), base, x, ctx, t, out,
                 "peft/adapter_model.safetensors", scale, base_out)


def comfyui_tensors(base, gen, rank, alpha):
    """ComfyUI keys (original names) for every block module: lora_down/lora_up/alpha, diff_b on q biases."""
    out = {}
    for m in block_modules(DCFG["num_layers"]):
        a, b = lora_pair(gen, base.get_submodule(m), rank)
        o = "diffusion_model." + original_name(m)
        out[o + ".lora_down.weight"] = a
        out[o + ".lora_up.weight"] = b
        out[o + ".alpha"] = torch.tensor(alpha)
        if m.endswith("to_q"):
            out[o + ".diff_b"] = torch.randn(base.get_submodule(m).bias.shape, generator=gen) * 0.1
    return out


def make_comfyui(base, x, ctx, t, base_out):
    from diffusers import WanPipeline
    rank, alpha, scale = 4, 3.0, 0.8
    tensors = comfyui_tensors(base, torch.Generator().manual_seed(13), rank, alpha)
    name = "wan_lora_comfyui.lora.safetensors"
    save_file(tensors, os.path.join(OUT, name))
    pipe = WanPipeline(tokenizer=None, text_encoder=None, vae=None, scheduler=None, transformer=copy.deepcopy(base))
    pipe.load_lora_weights(os.path.join(OUT, name))
    pipe.fuse_lora(lora_scale=scale)
    pipe.unload_lora_weights()
    out = forward(pipe.transformer, x, ctx, t)
    # The script's own merge must agree with diffusers' (alpha / rank, diff_b on the bias).
    own = forward(merged_copy(base, own_deltas(base, tensors, "diffusion_model.", scale)), x, ctx, t)
    assert torch.allclose(own, out, rtol=1e-4, atol=1e-5), "diffusers' ComfyUI merge and ours differ"
    write_golden(os.path.join(OUT, "wan_lora_comfyui.safetensors"), base, x, ctx, t, out, name, scale, base_out)
    return tensors


# original parameter name -> diffusers parameter name, for the deltas of the own merge.
def diffusers_param(original):
    mod, _, leaf = original.rpartition(".")
    table = {v: k for k, v in BLOCK_MODULES.items()}
    if original.startswith("blocks."):
        _, i, rest = original.split(".", 2)
        if rest == "modulation":
            return f"blocks.{i}.scale_shift_table"
        if rest.startswith("norm3."):
            return f"blocks.{i}.norm2.{leaf}"
        for o, d in (("self_attn.", "attn1."), ("cross_attn.", "attn2.")):
            if rest.startswith(o + "norm_"):
                return f"blocks.{i}.{d}{rest[len(o):]}"
        rest_mod = rest.rpartition(".")[0]
        return f"blocks.{i}.{table[rest_mod]}.{leaf}"
    if original == "head.modulation":
        return "scale_shift_table"
    return {v: k for k, v in OTHER_MODULES.items()}[mod] + "." + leaf


def own_deltas(base, tensors, prefix, scale, to_module=lambda m: m):
    """(diffusers name, delta) of W += scale * (alpha / rank) * up @ down and += scale * diff / diff_b."""
    deltas = []
    sd = base.state_dict()
    for key in tensors:
        if key.endswith(".lora_down.weight"):
            m = key[len(prefix):-len(".lora_down.weight")]
            down = tensors[key].double()
            up = tensors[key.replace("lora_down", "lora_up")].double()
            alpha = tensors[key.replace("lora_down.weight", "alpha")].item()
            rank = down.shape[0]
            name = diffusers_param(to_module(m) + ".weight")
            prod = (up.reshape(up.shape[0], rank) @ down.reshape(rank, -1)).reshape(sd[name].shape)
            deltas.append((name, scale * alpha / rank * prod))
        elif key.endswith(".diff_b"):
            deltas.append((diffusers_param(to_module(key[len(prefix):-len(".diff_b")]) + ".bias"),
                           scale * tensors[key].double()))
        elif key.endswith(".diff"):
            m = to_module(key[len(prefix):-len(".diff")])
            name = m if m.endswith("modulation") else m + ".weight"
            name = diffusers_param(name)
            deltas.append((name, scale * tensors[key].double().reshape(sd[name].shape)))
    return deltas


def make_comfyui_diff(base, x, ctx, t, base_out, comfy):
    scale = 0.8
    gen = torch.Generator().manual_seed(14)
    tensors = dict(comfy)
    sd = base.state_dict()
    for i in range(DCFG["num_layers"]):
        for orig in [f"blocks.{i}.norm3", f"blocks.{i}.self_attn.norm_q"]:
            shape = sd[diffusers_param(orig + ".weight")].shape
            tensors[f"diffusion_model.{orig}.diff"] = torch.randn(shape, generator=gen) * 0.2
        tensors[f"diffusion_model.blocks.{i}.modulation.diff"] = torch.randn(
            sd[f"blocks.{i}.scale_shift_table"].shape, generator=gen) * 0.1
    tensors["diffusion_model.head.modulation.diff"] = torch.randn(sd["scale_shift_table"].shape, generator=gen) * 0.1
    name = "wan_lora_comfyui_diff.lora.safetensors"
    save_file(tensors, os.path.join(OUT, name))
    out = forward(merged_copy(base, own_deltas(base, tensors, "diffusion_model.", scale)), x, ctx, t)
    write_golden(os.path.join(OUT, "wan_lora_comfyui_diff.safetensors"), base, x, ctx, t, out, name, scale, base_out)


def make_kohya(base, x, ctx, t, base_out):
    rank, alpha, scale = 3, 5.0, 1.3
    gen = torch.Generator().manual_seed(15)
    tensors, under = {}, {}
    for m in block_modules(DCFG["num_layers"], ["attn1.to_k", "attn2.to_v", "ffn.net.0.proj"]) + [
            "patch_embedding", "proj_out"]:
        a, b = lora_pair(gen, base.get_submodule(m), rank)
        o = original_name(m)
        k = "lora_unet_" + o.replace(".", "_")
        under[k] = o
        tensors[k + ".lora_down.weight"] = a
        tensors[k + ".lora_up.weight"] = b
        tensors[k + ".alpha"] = torch.tensor(alpha)
    name = "wan_lora_kohya.lora.safetensors"
    save_file(tensors, os.path.join(OUT, name))
    deltas = own_deltas(base, tensors, "", scale, to_module=lambda m: under[m])
    out = forward(merged_copy(base, deltas), x, ctx, t)
    write_golden(os.path.join(OUT, "wan_lora_kohya.safetensors"), base, x, ctx, t, out, name, scale, base_out)


def main():
    torch.set_num_threads(2)
    os.makedirs(OUT, exist_ok=True)
    base = base_model(seed=21)
    x, ctx, t = inputs(seed=22)
    base_out = forward(base, x, ctx, t)
    make_diffusers(base, x, ctx, t, base_out)
    make_peft(base, x, ctx, t, base_out)
    comfy = make_comfyui(base, x, ctx, t, base_out)
    make_comfyui_diff(base, x, ctx, t, base_out, comfy)
    make_kohya(base, x, ctx, t, base_out)


if __name__ == "__main__":
    main()
