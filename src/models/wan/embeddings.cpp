#include "models/wan/embeddings.h"

#include <cmath>

namespace vidax::wan {

Tensor timestep_sinusoid(const std::vector<double>& t, int64_t freq_dim) {
  VIDAX_CHECK(freq_dim > 0 && freq_dim % 2 == 0, "timestep_sinusoid: freq_dim " << freq_dim << " must be even");
  VIDAX_CHECK(!t.empty(), "timestep_sinusoid: no timesteps");
  const int64_t half = freq_dim / 2;
  const int64_t B = static_cast<int64_t>(t.size());
  std::vector<double> v(static_cast<size_t>(B * freq_dim));
  for (int64_t b = 0; b < B; ++b) {
    VIDAX_CHECK(std::isfinite(t[static_cast<size_t>(b)]), "timestep_sinusoid: timestep " << b << " is not finite");
    for (int64_t k = 0; k < half; ++k) {
      // torch.pow(10000, -arange(half).to(f64).div(half)), then torch.outer(position, ...)
      const double w = std::pow(10000.0, -(static_cast<double>(k) / static_cast<double>(half)));
      const double arg = t[static_cast<size_t>(b)] * w;
      v[static_cast<size_t>(b * freq_dim + k)] = std::cos(arg);
      v[static_cast<size_t>(b * freq_dim + half + k)] = std::sin(arg);
    }
  }
  return Tensor::from_f64(v, {B, freq_dim}, DType::F32);
}

}  // namespace vidax::wan
