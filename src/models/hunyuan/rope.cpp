#include "models/hunyuan/rope.h"

#include <cmath>

#include "core/error.h"

namespace vidax::hunyuan {

RotaryTables rotary_pos_embed(const std::vector<int64_t>& dims, std::array<int64_t, 3> grid, double theta) {
  VIDAX_CHECK(dims.size() == 3, "HunyuanVideo rotary_pos_embed: rope_dim_list needs 3 widths (t, h, w), got "
                                    << dims.size());
  int64_t hd = 0;
  for (int64_t d : dims) {
    VIDAX_CHECK(d > 0 && d % 2 == 0, "HunyuanVideo rotary_pos_embed: rope widths must be even and positive, got " << d);
    hd += d;
  }
  for (int64_t g : grid) VIDAX_CHECK(g > 0, "HunyuanVideo rotary_pos_embed: grid sizes must be positive, got " << g);
  // get_1d_rotary_pos_embed per axis: freqs = 1.0 / (theta ** (arange(0, dim, 2).float() / dim)).
  std::array<std::vector<float>, 3> freqs;
  const float th = static_cast<float>(theta);
  for (size_t a = 0; a < 3; ++a)
    for (int64_t j = 0; j < dims[a] / 2; ++j) {
      const float e = static_cast<float>(2 * j) / static_cast<float>(dims[a]);
      const float p = static_cast<float>(std::pow(static_cast<double>(th), static_cast<double>(e)));
      freqs[a].push_back(1.0f / p);
    }
  const int64_t N = grid[0] * grid[1] * grid[2];
  std::vector<float> c(static_cast<size_t>(N * hd)), s(c.size());
  for (int64_t n = 0; n < N; ++n) {
    const int64_t pos[3] = {n / (grid[1] * grid[2]), (n / grid[2]) % grid[1], n % grid[2]};
    int64_t col = 0;
    for (size_t a = 0; a < 3; ++a)
      for (float f : freqs[a]) {
        const float arg = static_cast<float>(pos[a]) * f;  // torch.outer(pos, freqs), fp32
        const float cv = static_cast<float>(std::cos(static_cast<double>(arg)));
        const float sv = static_cast<float>(std::sin(static_cast<double>(arg)));
        for (int r = 0; r < 2; ++r, ++col) {  // repeat_interleave(2)
          c[static_cast<size_t>(n * hd + col)] = cv;
          s[static_cast<size_t>(n * hd + col)] = sv;
        }
      }
  }
  return {Tensor::from_f32(c, {N, hd}), Tensor::from_f32(s, {N, hd})};
}

}  // namespace vidax::hunyuan
