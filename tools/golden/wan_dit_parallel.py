"""Golden file for the parallel (mesh) tests of kind `wan.dit`: the official WanModel at a
shape every mesh of the acceptance tests can split, and a token count that NO sequence-parallel
degree > 1 divides (so the padded keys must be masked for the sharded run to match).

  wan_dit_heads4_odd_b2.safetensors  dim 64, 4 heads (tp*sp up to 4), ffn 96 (tp 2/4), 2 layers,
                                     qk_norm, cross_attn_norm, batch 2 (cfg=2 splits it),
                                     x [2, 4, 3, 6, 10] -> 3*3*5 = 45 tokens (odd), inter.* hooks

Same method as tools/golden/wan_dit.py (fp32 CPU attention with k_lens masking, random
non-zero biases, so a row-parallel bias added per rank shows). Usage:
  WAN21_REPO=/work/ref/Wan2.1 python tools/golden/wan_dit_parallel.py [OUT_DIR]
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wan_dit  # noqa: E402  (same folder: import_wan_model, official_golden)


def main():
    torch.set_num_threads(2)
    wan_model = wan_dit.import_wan_model()
    os.makedirs(wan_dit.OUT, exist_ok=True)
    cfg = dict(model_type="t2v", patch_size=[1, 2, 2], text_len=16, in_dim=4, dim=64, ffn_dim=96, freq_dim=32,
               text_dim=40, out_dim=4, num_heads=4, num_layers=2, window_size=[-1, -1], qk_norm=True,
               cross_attn_norm=True, eps=1e-6)
    wan_dit.official_golden(wan_model, os.path.join(wan_dit.OUT, "wan_dit_heads4_odd_b2.safetensors"), cfg,
                            x_shape=[4, 3, 6, 10], ctx_lens=[6, 6], t_values=[999.0, 500.0], seed=11)


if __name__ == "__main__":
    main()
