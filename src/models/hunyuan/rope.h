// HunyuanVideo's 3-D rotary tables (hyvideo/modules/posemb_layers.py get_nd_rotary_pos_embed with
// use_real=True, as hyvideo/inference.py get_rotary_pos_embed calls it; diffusers
// HunyuanVideoRotaryPosEmbed computes the same): the patch grid's positions (t, h, w), row-major
// like the tokens; per axis a of width d_a (rope_dim_list), the angles pos_a * f_{a,j} with
// f_{a,j} = 1 / theta^(2j / d_a), j < d_a / 2, their cos and sin each repeated for its pair
// (repeat_interleave(2)), the axes concatenated [t | h | w] -> [N, sum(d_a)] = [N, head_dim].
#pragma once
#include <array>
#include <vector>

#include "core/tensor.h"

namespace vidax::hunyuan {

struct RotaryTables {
  Tensor cos, sin;  // [N, head_dim] F32
};

// grid: the patch grid (latent frames / pt, height / ph, width / pw). Computed as the reference
// does in fp32 (the exponent's quotient, the power, the reciprocal and the product rounded to fp32).
RotaryTables rotary_pos_embed(const std::vector<int64_t>& rope_dim_list, std::array<int64_t, 3> grid,
                              double theta = 256.0);

}  // namespace vidax::hunyuan
