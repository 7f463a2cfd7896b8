"""Writes tiny Wan 2.1 checkpoints with real (random) values in both layouts,
converted by the reference's own code, so the translator's maps are checked on
values and not only on names and shapes (a q/k or norm2/norm3 swap keeps every
shape but changes the model):

  wan_pair_dit.original.safetensors   WanModel state_dict (tiny config)
  wan_pair_dit.diffusers.safetensors  the same through diffusers'
                                      scripts/convert_wan_to_diffusers.py convert_transformer()
  wan_pair_vae.original.pth           WanVAE_ state_dict, torch.save (as Wan2.1_VAE.pth)
  wan_pair_vae.diffusers.safetensors  the same through convert_vae()
  wan_pair_t5.original.pth            T5Encoder (UMT5, tiny) state_dict, torch.save
  wan_pair_t5.diffusers.safetensors   transformers UMT5EncoderModel with the same weights;
                                      no converter exists, so this script checks the
                                      mapping by running both encoders on the same
                                      tokens and asserting equal outputs.

The convert functions run unmodified; only their downloads are redirected to
local files and their model constructors given the tiny configs.
Values are bfloat16 (the maps are compared bit for bit).

Usage: WAN21_REPO=/work/ref/Wan2.1 DIFFUSERS_REPO=/work/ref/diffusers python tools/golden/wan_translate_pairs.py
"""
import importlib.util
import json
import os
import sys
import tempfile

import torch
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from wan_keylists import DIT, import_wan_modules  # noqa: E402

DIFFUSERS_REPO = os.environ.get("DIFFUSERS_REPO", "/work/ref/diffusers")
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "translate", "data")

VAE_TINY = dict(dim=4, z_dim=4, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
                temperal_downsample=[False, True, True], dropout=0.0)
VAE_TINY_DIFFUSERS = dict(base_dim=4, z_dim=4, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
                          temperal_downsample=[False, True, True], dropout=0.0)
T5_TINY = dict(vocab=64, dim=32, dim_attn=32, dim_ffn=48, num_heads=4, num_layers=2, num_buckets=32,
               shared_pos=False, dropout=0.0)
UMT5_TINY_HF = dict(vocab_size=64, d_model=32, d_kv=8, d_ff=48, num_layers=2, num_heads=4,
                    relative_attention_num_buckets=32, relative_attention_max_distance=128, dropout_rate=0.0,
                    layer_norm_epsilon=1e-6, feed_forward_proj="gated-gelu", is_encoder_decoder=True,
                    tie_word_embeddings=False, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)


def load_convert_script():
    path = os.path.join(DIFFUSERS_REPO, "scripts", "convert_wan_to_diffusers.py")
    spec = importlib.util.spec_from_file_location("convert_wan_to_diffusers", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def randomize(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    return model


def bf16(sd):
    return {k: v.detach().to(torch.bfloat16).contiguous() for k, v in sd.items()}


def main():
    WanModel, WanVAE_, T5Encoder = import_wan_modules()
    from diffusers import AutoencoderKLWan
    conv = load_convert_script()
    tmp = tempfile.mkdtemp()

    # ---- DiT --------------------------------------------------------------
    cfg = DIT["tiny"]
    orig = bf16(randomize(WanModel(**cfg), 1).state_dict())
    os.makedirs(os.path.join(tmp, "dit"))
    save_file(orig, os.path.join(tmp, "dit", "diffusion_pytorch_model.safetensors"))
    from wan_keylists import diffusers_dit_config
    dcfg = diffusers_dit_config(cfg)
    conv.snapshot_download = lambda *a, **k: os.path.join(tmp, "dit")
    conv.get_transformer_config = lambda model_type: (
        {"model_id": "local", "diffusers_config": dcfg}, conv.TRANSFORMER_KEYS_RENAME_DICT,
        conv.TRANSFORMER_SPECIAL_KEYS_REMAP)
    diff = conv.convert_transformer("Wan-T2V-1.3B").state_dict()
    save_file(orig, os.path.join(OUT, "wan_pair_dit.original.safetensors"), {"config": json.dumps(cfg)})
    save_file(bf16(diff), os.path.join(OUT, "wan_pair_dit.diffusers.safetensors"), {"config": json.dumps(dcfg)})

    # ---- VAE --------------------------------------------------------------
    orig = bf16(randomize(WanVAE_(**VAE_TINY), 2).state_dict())
    pth = os.path.join(OUT, "wan_pair_vae.original.pth")
    torch.save(orig, pth)
    conv.hf_hub_download = lambda *a, **k: pth
    conv.AutoencoderKLWan = lambda: AutoencoderKLWan(**VAE_TINY_DIFFUSERS)
    diff = conv.convert_vae().state_dict()
    save_file(bf16(diff), os.path.join(OUT, "wan_pair_vae.diffusers.safetensors"),
              {"config": json.dumps(VAE_TINY_DIFFUSERS)})

    # ---- UMT5 encoder -----------------------------------------------------
    from transformers import UMT5Config, UMT5EncoderModel
    t5 = randomize(T5Encoder(**T5_TINY), 3).to(torch.bfloat16).float().eval()
    hf = UMT5EncoderModel(UMT5Config(**UMT5_TINY_HF)).eval()
    sd = t5.state_dict()
    mapped = {"shared.weight": sd["token_embedding.weight"],
              "encoder.embed_tokens.weight": sd["token_embedding.weight"],
              "encoder.final_layer_norm.weight": sd["norm.weight"]}
    for i in range(T5_TINY["num_layers"]):
        b, h = f"blocks.{i}.", f"encoder.block.{i}.layer."
        mapped.update({
            h + "0.layer_norm.weight": sd[b + "norm1.weight"],
            h + "0.SelfAttention.q.weight": sd[b + "attn.q.weight"],
            h + "0.SelfAttention.k.weight": sd[b + "attn.k.weight"],
            h + "0.SelfAttention.v.weight": sd[b + "attn.v.weight"],
            h + "0.SelfAttention.o.weight": sd[b + "attn.o.weight"],
            h + "0.SelfAttention.relative_attention_bias.weight": sd[b + "pos_embedding.embedding.weight"],
            h + "1.layer_norm.weight": sd[b + "norm2.weight"],
            h + "1.DenseReluDense.wi_0.weight": sd[b + "ffn.gate.0.weight"],
            h + "1.DenseReluDense.wi_1.weight": sd[b + "ffn.fc1.weight"],
            h + "1.DenseReluDense.wo.weight": sd[b + "ffn.fc2.weight"],
        })
    missing, unexpected = hf.load_state_dict(mapped, strict=False)
    assert not missing and not unexpected, (missing, unexpected)
    ids = torch.tensor([[5, 9, 17, 33, 2, 1, 0, 0], [7, 7, 60, 1, 0, 0, 0, 0]])
    mask = (ids != 0).long()
    with torch.no_grad():
        a = t5(ids, mask)
        b = hf(input_ids=ids, attention_mask=mask).last_hidden_state
    err = (a - b).abs().max().item()
    print(f"UMT5 mapping check: T5Encoder vs UMT5EncoderModel max abs diff {err:.3e}")
    assert err < 1e-4 * a.abs().max().item(), "the UMT5 key mapping does not reproduce the encoder"
    torch.save(bf16(sd), os.path.join(OUT, "wan_pair_t5.original.pth"))
    hf_sd = {k: v for k, v in hf.state_dict().items() if k != "encoder.embed_tokens.weight"}  # tied, as saved
    save_file(bf16(hf_sd), os.path.join(OUT, "wan_pair_t5.diffusers.safetensors"),
              {"config": json.dumps(dict(UMT5_TINY_HF, model_type="umt5"))})
    for f in sorted(os.listdir(OUT)):
        if f.startswith("wan_pair_"):
            print(f, os.path.getsize(os.path.join(OUT, f)))


if __name__ == "__main__":
    main()
