// The conditioning embeddings of the HunyuanVideo DiT (hyvideo/modules/embed_layers.py,
// mlp_layers.py): the sinusoidal timestep embedding and the two-layer SiLU MLPs that embed the
// timestep, the guidance scale, the pooled CLIP vector and the pooled text states.
#pragma once
#include <string>
#include <vector>

#include "nn/linear.h"
#include "nn/params.h"

namespace vidax::hunyuan {

// timestep_embedding(t, dim, max_period=10000): [cos(t f), sin(t f)] with
// f_k = exp(-ln(max_period) * k / (dim/2)), as the reference computes it in fp32 (the log rounded to
// fp32, the product and the quotient in fp32, exp rounded once), t rounded to fp32. t [B] -> [B, dim] F32.
Tensor timestep_embedding(const std::vector<double>& t, int64_t dim = 256, double max_period = 10000.0);

// Linear(in -> out), SiLU, Linear(out -> out): TimestepEmbedder.mlp.{0,2} ("<prefix>.mlp.0"),
// MLPEmbedder.{in,out}_layer, TextProjection.linear_{1,2}; the names of its two layers are given.
struct SiluMlp {
  nn::Linear first, second;
  static SiluMlp load(nn::ParamSource& params, const std::string& first_name, const std::string& second_name,
                      int64_t in, int64_t out, DType compute);
  Tensor operator()(const Tensor& x) const { return second(ops::silu(first(x))); }
};

}  // namespace vidax::hunyuan
