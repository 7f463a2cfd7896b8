"""Helpers the end-to-end golden scripts share (tools/golden/wan_pipeline.py for Wan 2.1,
wan22_pipeline.py for Wan 2.2): the fp32 CPU attention that replaces the official flash_attention,
and the random initialisation of the tiny parts. Neither imports the reference code."""
import torch


def fp32_attention(q, k, v, q_lens=None, k_lens=None, window_size=(-1, -1), **kw):
    """flash_attention's contract ([B, L, N, D] in and out, keys >= k_lens[b] masked), in fp32."""
    b, lq, n, d = q.shape
    lk = k.shape[1]
    mask = None
    if k_lens is not None:
        mask = torch.arange(lk)[None, :] < k_lens[:, None]  # [B, Lk]
        mask = mask[:, None, None, :]
    out = torch.nn.functional.scaled_dot_product_attention(
        q.float().transpose(1, 2), k.float().transpose(1, 2), v.float().transpose(1, 2), attn_mask=mask)
    return out.transpose(1, 2).contiguous().type_as(q)


def randomize(module, gen):
    """Random weights that keep activations O(1): norms 1 (LayerNorm bias 0), biases N(0, 0.02),
    modulation N(0, 1/dim), embeddings N(0, 1) (position tables 0.1), other weights N(0, 1/fan_in)."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if "norm" in name or name.endswith(".gamma"):
                p.fill_(0.0 if name.endswith(".bias") else 1.0)
            elif name.endswith(".bias"):
                p.copy_(torch.randn(p.shape, generator=gen) * 0.02)
            elif name.endswith("modulation"):
                p.copy_(torch.randn(p.shape, generator=gen) / p.shape[-1] ** 0.5)
            elif name in ("token_embedding.weight",):
                p.copy_(torch.randn(p.shape, generator=gen))
            elif "pos_embedding" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
            else:
                fan_in = p[0].numel() if p.dim() > 1 else 1
                p.copy_(torch.randn(p.shape, generator=gen) / fan_in ** 0.5)


def t5_encoder_model(t5_mod, t5, tokenizer, text_len):
    """The official T5EncoderModel without its CUDA-bound __init__: the tiny encoder computing in fp32
    from its bf16-stored weights (vidax --precision fp32 does the same), on the CPU."""
    enc = t5_mod.T5EncoderModel.__new__(t5_mod.T5EncoderModel)
    enc.text_len = text_len
    enc.dtype = torch.float32
    enc.device = torch.device("cpu")
    enc.model = t5.float()
    enc.tokenizer = tokenizer
    return enc


# WanVAE.__init__'s latent statistics (wan/modules/vae.py; its __init__ would also build a 96-dim
# VAE and load a .pth).
WAN21_LATENT_MEAN = [-0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517, 1.5508,
                     0.4134, -0.0715, 0.5517, -0.3632, -0.1922, -0.9497, 0.2503, -0.2921]
WAN21_LATENT_STD = [2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743,
                    3.2687, 2.1526, 2.8652, 1.5579, 1.6382, 1.1253, 2.8251, 1.9160]


def wan21_vae(vae_mod, model):
    """The official WanVAE wrapper around the tiny WanVAE_ `model`, fp32 on the CPU."""
    w = vae_mod.WanVAE.__new__(vae_mod.WanVAE)
    w.dtype = torch.float
    w.device = torch.device("cpu")
    w.mean = torch.tensor(WAN21_LATENT_MEAN, dtype=torch.float)
    w.std = torch.tensor(WAN21_LATENT_STD, dtype=torch.float)
    w.scale = [w.mean, 1.0 / w.std]
    w.model = model
    return w
