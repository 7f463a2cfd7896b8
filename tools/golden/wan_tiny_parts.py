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
