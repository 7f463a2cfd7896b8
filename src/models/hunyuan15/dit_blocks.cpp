#include "models/hunyuan15/dit_blocks.h"

#include "backend/ops.h"
#include "models/hunyuan15/dit_config.h"
#include "nn/cast.h"

namespace vidax::hunyuan15 {

namespace {
constexpr double kTorchLayerNormEps = 1e-5;  // nn.LayerNorm's default
}

ByT5Mapper ByT5Mapper::load(nn::ParamSource& params, const std::string& prefix, int64_t out_dim, DType compute) {
  ByT5Mapper m;
  m.norm_w = params.take(prefix + ".layernorm.weight", {kByT5InDim});
  m.norm_b = params.take(prefix + ".layernorm.bias", {kByT5InDim});
  m.fc1 = nn::Linear::load(params, prefix + ".fc1", kByT5InDim, kByT5HiddenDim, compute);
  m.fc2 = nn::Linear::load(params, prefix + ".fc2", kByT5HiddenDim, kByT5HiddenDim, compute);
  m.fc3 = nn::Linear::load(params, prefix + ".fc3", kByT5HiddenDim, out_dim, compute);
  return m;
}

Tensor ByT5Mapper::operator()(const Tensor& x) const {
  const Tensor n = ops::layer_norm(nn::to_dtype(x, DType::F32), norm_w, norm_b, kTorchLayerNormEps, fc1.compute);
  const Tensor h = fc2(fc1.gelu(n, ops::GeluMode::Erf));
  return nn::to_dtype(fc3(ops::gelu(h, ops::GeluMode::Erf)), DType::F32);
}

VisionProjection VisionProjection::load(nn::ParamSource& params, const std::string& prefix, int64_t in_dim,
                                        int64_t out_dim, DType compute) {
  VisionProjection v;
  v.norm_in_w = params.take(prefix + ".0.weight", {in_dim});
  v.norm_in_b = params.take(prefix + ".0.bias", {in_dim});
  v.linear_1 = nn::Linear::load(params, prefix + ".1", in_dim, in_dim, compute);
  v.linear_2 = nn::Linear::load(params, prefix + ".3", in_dim, out_dim, compute);
  v.norm_out_w = params.take(prefix + ".4.weight", {out_dim});
  v.norm_out_b = params.take(prefix + ".4.bias", {out_dim});
  return v;
}

Tensor VisionProjection::operator()(const Tensor& x) const {
  const Tensor n = ops::layer_norm(nn::to_dtype(x, DType::F32), norm_in_w, norm_in_b, kTorchLayerNormEps,
                                   linear_1.compute);
  const Tensor h = nn::to_dtype(linear_2(linear_1.gelu(n, ops::GeluMode::Erf)), DType::F32);
  return ops::layer_norm(h, norm_out_w, norm_out_b, kTorchLayerNormEps);
}

TextTokens valid_first(const std::vector<TokenSource>& sources) {
  VIDAX_CHECK(!sources.empty(), "HunyuanVideo 1.5 DiT: no text-stream tokens");
  const int64_t B = sources[0].x.size(0), D = sources[0].x.size(2);
  // One table: every source's rows (sample-major), then one zero row for the padding.
  std::vector<Tensor> parts;
  std::vector<int64_t> base;  // the table row of (source s, sample 0, token 0)
  int64_t rows = 0, total = 0;
  for (const TokenSource& s : sources) {
    VIDAX_CHECK(s.x.dim() == 3 && s.x.size(0) == B && s.x.size(2) == D &&
                    static_cast<int64_t>(s.mask.size()) == B * s.x.size(1),
                "HunyuanVideo 1.5 DiT: text-stream tokens " << s.x.str() << " do not stack with [" << B << ", L, "
                                                            << D << "]");
    parts.push_back(nn::to_dtype(s.x, DType::F32).contiguous().view({B * s.x.size(1), D}));
    base.push_back(rows);
    rows += B * s.x.size(1);
    total += s.x.size(1);
  }
  parts.push_back(Tensor::zeros({1, D}, DType::F32));
  const Tensor table = ops::concat(parts, 0);
  std::vector<int64_t> ids;
  ids.reserve(static_cast<size_t>(B * total));
  TextTokens out;
  for (int64_t b = 0; b < B; ++b) {
    int64_t valid = 0;
    for (size_t s = 0; s < sources.size(); ++s) {
      const int64_t L = sources[s].x.size(1);
      for (int64_t j = 0; j < L; ++j)
        if (sources[s].mask[static_cast<size_t>(b * L + j)]) {
          ids.push_back(base[s] + b * L + j);
          ++valid;
        }
    }
    ids.resize(static_cast<size_t>((b + 1) * total), rows);  // the zero row
    out.valid.push_back(valid);
  }
  out.x = ops::embedding(Tensor::from_i64(ids, {B, total}), table);
  return out;
}

}  // namespace vidax::hunyuan15
