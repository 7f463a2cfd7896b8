#include "text/encoder_weights.h"

#include "core/error.h"

namespace vidax::text {

Tensor checked_param(const std::function<Tensor(const std::string&)>& weights, const std::string& name,
                     const Shape& shape, const std::string& who) {
  Tensor t = weights(name);
  VIDAX_CHECK(t.defined(), who << ": missing parameter " << name);
  if (t.is_weight_only_quantized()) t = t.to(DType::F32);  // widened at load (docs/quantization.md)
  VIDAX_CHECK(t.shape() == shape, who << ": parameter " << name << " has shape " << shape_str(t.shape())
                                      << ", expected " << shape_str(shape));
  return t;
}

std::vector<int64_t> right_padded_lengths(const Tensor& mask, const std::string& who) {
  VIDAX_CHECK(mask.dim() == 2, who << ": attention_mask must be [B, L], got " << shape_str(mask.shape()));
  const int64_t B = mask.size(0), L = mask.size(1);
  const std::vector<double> m = mask.to_f64_vector();
  std::vector<int64_t> lens(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    int64_t n = 0;
    while (n < L && m[b * L + n] == 1) ++n;
    for (int64_t j = n; j < L; ++j)
      VIDAX_CHECK(m[b * L + j] == 0, who << ": attention_mask row " << b << " is not right-padded 1s then 0s (value "
                                         << m[b * L + j] << " at position " << j << ", after " << n << " tokens)");
    VIDAX_CHECK(n > 0, who << ": attention_mask row " << b << " has no tokens");
    lens[b] = n;
  }
  return lens;
}

}  // namespace vidax::text
