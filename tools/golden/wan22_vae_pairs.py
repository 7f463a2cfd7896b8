#!/usr/bin/env python3
"""A tiny Wan 2.2 VAE (the published structure at 16 latent channels to keep the files small; is_residual) in both layouts, with real (random) values, so the
translator's diffusers map for it is checked on values and not only on names and shapes:

  wan22_pair_vae.original.pth            the official WanVAE_ (Wan2.2 wan/modules/vae2_2.py)
                                         state_dict, torch.save (as Wan2.2_VAE.pth)
  wan22_pair_vae.diffusers.safetensors   the same weights in diffusers' AutoencoderKLWan (is_residual)
                                         names, its config in the metadata ("config")
  wan2.2_vae.diffusers.txt               the names and shapes of the published TI2V-5B VAE in
                                         diffusers' layout (AutoencoderKLWan of the published config,
                                         built on the meta device: no values)

diffusers' scripts/convert_wan_to_diffusers.py is not available here, so this script renames the
keys by diffusers' module structure and then checks the renaming on the models themselves: the
diffusers model, loaded strictly from the renamed state dict, must give the official model's encode
mean and decoded video on the same input (asserted below, fp32, before the bf16 cast of the files).
Values are bfloat16 (the engine's maps are compared bit for bit).

Usage: WAN22_REPO=/path/to/Wan2.2 python tools/golden/wan22_vae_pairs.py [OUT_DIR]
"""
import json
import os
import re
import sys

import torch
from safetensors.torch import save_file

import wan_reference

wan_reference.use_wan22()

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "translate", "data")
CONFIG = dict(dim=2, dec_dim=4, z_dim=16, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
              temperal_downsample=[False, True, True], dropout=0.0)
DIFFUSERS = dict(base_dim=2, decoder_base_dim=4, z_dim=16, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
                 temperal_downsample=[False, True, True], dropout=0.0, is_residual=True, in_channels=12,
                 out_channels=12, patch_size=2, scale_factor_temporal=4, scale_factor_spatial=16)

RES = [("residual.0.gamma", "norm1.gamma"), ("residual.2.", "conv1."), ("residual.3.gamma", "norm2.gamma"),
       ("residual.6.", "conv2."), ("shortcut.", "conv_shortcut.")]


def rename(name, R):
    """official WanVAE_ (vae2_2.py) name -> diffusers AutoencoderKLWan (is_residual) name."""
    def sub_res(rest):
        for a, b in RES:
            if rest.startswith(a):
                return b + rest[len(a):]
        raise KeyError(name)
    for a, b in [("encoder.conv1.", "encoder.conv_in."), ("decoder.conv1.", "decoder.conv_in."),
                 ("conv1.", "quant_conv."), ("conv2.", "post_quant_conv.")]:
        if name.startswith(a):
            return b + name[len(a):]
    m = re.match(r"(encoder|decoder)\.middle\.(\d)\.(.*)", name)
    if m:
        part, i, rest = m.groups()
        if i == "1":
            return f"{part}.mid_block.attentions.0.{rest}"
        return f"{part}.mid_block.resnets.{0 if i == '0' else 1}.{sub_res(rest)}"
    m = re.match(r"(encoder|decoder)\.head\.(\d)\.(.*)", name)
    if m:
        part, i, rest = m.groups()
        return f"{part}.{'norm_out' if i == '0' else 'conv_out'}.{rest}"
    m = re.match(r"encoder\.downsamples\.(\d+)\.downsamples\.(\d+)\.(.*)", name)
    if m:
        lvl, j, rest = m.groups()
        if int(j) < R:
            return f"encoder.down_blocks.{lvl}.resnets.{j}.{sub_res(rest)}"
        return f"encoder.down_blocks.{lvl}.downsampler.{rest}"
    m = re.match(r"decoder\.upsamples\.(\d+)\.upsamples\.(\d+)\.(.*)", name)
    if m:
        lvl, j, rest = m.groups()
        if int(j) <= R:
            return f"decoder.up_blocks.{lvl}.resnets.{j}.{sub_res(rest)}"
        return f"decoder.up_blocks.{lvl}.upsampler.{rest}"
    raise KeyError(name)


def main():
    torch.set_num_threads(2)
    from diffusers import AutoencoderKLWan
    vae_mod = wan_reference.load("wan.modules.vae2_2")
    orig = vae_mod.WanVAE_(**CONFIG).eval()
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for p in orig.parameters():
            p.copy_((torch.randn(p.shape, generator=g) * 0.3).to(torch.bfloat16).float())
    sd = {k: v.detach().clone() for k, v in orig.state_dict().items()}
    diff_sd = {rename(k, CONFIG["num_res_blocks"]): v for k, v in sd.items()}
    assert len(diff_sd) == len(sd)
    diff = AutoencoderKLWan(**DIFFUSERS).eval()
    diff.load_state_dict(diff_sd, strict=True)

    # The renaming, checked on values: same mean, same video.
    video = torch.randn(1, 3, 5, 32, 32, generator=g).clamp(-1, 1)
    zero, one = torch.zeros(CONFIG["z_dim"]), torch.ones(CONFIG["z_dim"])
    with torch.no_grad():
        mu_o = orig.encode(video, [zero, one])
        mu_d = diff.encode(video).latent_dist.mode()
        err_e = (mu_o - mu_d).abs().max().item()
        v_o = orig.decode(mu_o, [zero, one]).clamp(-1, 1)
        v_d = diff.decode(mu_o).sample.clamp(-1, 1)
        err_d = (v_o - v_d).abs().max().item()
    print(f"official vs diffusers: encode max abs {err_e:.3g}, decode max abs {err_d:.3g}")
    assert err_e < 1e-5 and err_d < 1e-5, "the renaming does not give diffusers' model the official one's outputs"

    b = {k: v.to(torch.bfloat16).contiguous() for k, v in sd.items()}
    pth = os.path.join(OUT, "wan22_pair_vae.original.pth")
    torch.save(b, pth)
    st = os.path.join(OUT, "wan22_pair_vae.diffusers.safetensors")
    save_file({rename(k, CONFIG["num_res_blocks"]): v for k, v in b.items()}, st,
              {"config": json.dumps(DIFFUSERS), "generator": "tools/golden/wan22_vae_pairs.py"})
    for p in (pth, st):
        print(f"wrote {p} ({os.path.getsize(p)} bytes)")

    # The published structure's key list (names, shapes), as the Wan 2.1 lists in this folder.
    published = dict(DIFFUSERS, base_dim=160, decoder_base_dim=256, z_dim=48)
    with torch.device("meta"):
        big = AutoencoderKLWan(**published)
    sd = big.state_dict()
    txt = os.path.join(OUT, "wan2.2_vae.diffusers.txt")
    with open(txt, "w") as f:
        f.write("# Wan 2.2 VAE, layout diffusers (AutoencoderKLWan state_dict, is_residual)\n")
        f.write(f"# config: {json.dumps(published)}\n")
        import diffusers
        f.write(f"# torch {torch.__version__}, diffusers {diffusers.__version__}\n")
        f.write(f"# tensors: {len(sd)}\n")
        f.write(f"# parameters: {sum(v.numel() for v in sd.values())}\n")
        for k in sorted(sd):
            f.write(f"{k}\tF32\t[{','.join(str(d) for d in sd[k].shape)}]\n")
    print(f"wrote {txt}")


if __name__ == "__main__":
    main()
