#include "models/hunyuan/embeddings.h"

#include <cmath>

namespace vidax::hunyuan {

Tensor timestep_embedding(const std::vector<double>& t, int64_t dim, double max_period) {
  VIDAX_CHECK(dim > 0 && !t.empty(), "HunyuanVideo timestep_embedding: dim " << dim << ", " << t.size() << " timesteps");
  const int64_t half = dim / 2, B = static_cast<int64_t>(t.size());
  // -math.log(max_period) * torch.arange(half, dtype=float32) / half: a Python float times an fp32
  // tensor rounds the float to fp32; the product and the division are fp32; exp rounds once.
  const float neg_log = static_cast<float>(-std::log(max_period));
  std::vector<float> freqs(static_cast<size_t>(half));
  for (int64_t k = 0; k < half; ++k) {
    const float a = (neg_log * static_cast<float>(k)) / static_cast<float>(half);
    freqs[static_cast<size_t>(k)] = static_cast<float>(std::exp(static_cast<double>(a)));
  }
  std::vector<float> v(static_cast<size_t>(B * dim), 0.0f);  // an odd dim pads one zero column
  for (int64_t b = 0; b < B; ++b) {
    VIDAX_CHECK(std::isfinite(t[static_cast<size_t>(b)]),
                "HunyuanVideo timestep_embedding: timestep " << b << " is not finite");
    const float tb = static_cast<float>(t[static_cast<size_t>(b)]);
    for (int64_t k = 0; k < half; ++k) {
      const float arg = tb * freqs[static_cast<size_t>(k)];  // t[:, None].float() * freqs[None]
      v[static_cast<size_t>(b * dim + k)] = static_cast<float>(std::cos(static_cast<double>(arg)));
      v[static_cast<size_t>(b * dim + half + k)] = static_cast<float>(std::sin(static_cast<double>(arg)));
    }
  }
  return Tensor::from_f32(v, {B, dim});
}

SiluMlp SiluMlp::load(nn::ParamSource& params, const std::string& first_name, const std::string& second_name,
                      int64_t in, int64_t out, DType compute) {
  return SiluMlp{nn::Linear::load(params, first_name, in, out, compute),
                 nn::Linear::load(params, second_name, out, out, compute)};
}

}  // namespace vidax::hunyuan
