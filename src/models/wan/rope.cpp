#include "models/wan/rope.h"

#include <cmath>
#include <vector>

namespace vidax::wan {

namespace {

// rope_params(max_seq_len, dim): inverse frequencies 1.0 / theta^(arange(0, dim, 2) / dim), in double.
std::vector<double> inverse_frequencies(int64_t axis_dim, double theta = 10000.0) {
  std::vector<double> inv(static_cast<size_t>(axis_dim / 2));
  for (int64_t j = 0; j < axis_dim / 2; ++j)
    inv[static_cast<size_t>(j)] = 1.0 / std::pow(theta, static_cast<double>(2 * j) / static_cast<double>(axis_dim));
  return inv;
}

}  // namespace

RopeTables rope_tables(const DiTConfig& cfg, std::array<int64_t, 3> grid, Device device) {
  const std::array<int64_t, 3> axis_dims = cfg.rope_axis_dims();
  const int64_t pairs = cfg.head_dim() / 2;
  for (int a = 0; a < 3; ++a)
    VIDAX_CHECK(grid[a] >= 1 && grid[a] <= cfg.rope_max_seq_len,
                "Wan RoPE: latent grid " << grid[0] << "x" << grid[1] << "x" << grid[2] << " axis " << a
                                         << " is outside the table's 1.." << cfg.rope_max_seq_len << " positions");
  const int64_t L = grid[0] * grid[1] * grid[2];
  const Shape shape{L, pairs};
  if (device == Device::Meta) return {Tensor::empty(shape, DType::F64, device), Tensor::empty(shape, DType::F64, device)};
  VIDAX_CHECK(device == Device::CPU, "Wan RoPE: tables are built on the host (cpu or meta), not "
                                         << device_name(device));

  std::array<std::vector<double>, 3> inv;
  for (int a = 0; a < 3; ++a) inv[a] = inverse_frequencies(axis_dims[a]);
  std::vector<double> c(static_cast<size_t>(L * pairs)), s(c.size());
  for (int64_t f = 0; f < grid[0]; ++f)
    for (int64_t h = 0; h < grid[1]; ++h)
      for (int64_t w = 0; w < grid[2]; ++w) {
        const int64_t n = (f * grid[1] + h) * grid[2] + w;
        const std::array<int64_t, 3> pos{f, h, w};
        int64_t k = 0;
        for (int a = 0; a < 3; ++a)
          for (double fr : inv[a]) {
            const double angle = static_cast<double>(pos[a]) * fr;  // torch.outer(arange, freqs) in f64
            c[static_cast<size_t>(n * pairs + k)] = std::cos(angle);
            s[static_cast<size_t>(n * pairs + k)] = std::sin(angle);
            ++k;
          }
      }
  return {Tensor::from_f64(c, shape), Tensor::from_f64(s, shape)};
}

}  // namespace vidax::wan
