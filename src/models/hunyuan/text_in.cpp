#include "models/hunyuan/text_in.h"

#include <limits>

#include "backend/ops.h"
#include "core/error.h"
#include "nn/cast.h"

namespace vidax::hunyuan {

std::vector<int64_t> read_mask(const Tensor& mask, int64_t B, int64_t L, const std::string& who,
                               const std::string& name) {
  VIDAX_CHECK(mask.defined() && mask.dim() == 2 && mask.size(0) == B && mask.size(1) == L,
              who << ": " << name << " must be [" << B << ", " << L << "] (batch, tokens), got "
                  << (mask.defined() ? mask.str() : std::string("nothing")));
  std::vector<int64_t> out;
  for (double v : mask.to_f64_vector()) {
    VIDAX_CHECK(v == 0 || v == 1, who << ": " << name << " values must be 0 or 1, found " << v);
    out.push_back(static_cast<int64_t>(v));
  }
  return out;
}

Tensor refiner_bias(const std::vector<int64_t>& m, int64_t B, int64_t L, RefinerMask rule) {
  std::vector<float> b(static_cast<size_t>(B * L * L), -std::numeric_limits<float>::infinity());
  auto token = [&](int64_t s, int64_t i) { return m[static_cast<size_t>(s * L + i)] != 0; };
  for (int64_t s = 0; s < B; ++s)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < L; ++j) {
        const bool sees = rule == RefinerMask::EveryRowSeesKeyZero
                              ? j == 0 || (token(s, i) && token(s, j))
                              : (i == 0 || token(s, i)) && (j == 0 || token(s, j));
        if (sees) b[static_cast<size_t>((s * L + i) * L + j)] = 0.0f;
      }
  return Tensor::from_f32(b, {B, 1, L, L});
}

TextInput TextInput::load(nn::ParamSource& params, const DiTConfig& cfg, RefinerMask rule, DType compute) {
  TextInput t;
  t.use_attention_mask_ = cfg.use_attention_mask;
  t.rule_ = rule;
  const int64_t d = cfg.hidden_size;
  if (cfg.text_projection == "linear") {
    t.projection_ = SiluMlp::load(params, "txt_in.linear_1", "txt_in.linear_2", cfg.text_states_dim, d, compute);
    return t;
  }
  t.input_embedder_ = nn::Linear::load(params, "txt_in.input_embedder", cfg.text_states_dim, d, compute);
  t.t_embedder_ = SiluMlp::load(params, "txt_in.t_embedder.mlp.0", "txt_in.t_embedder.mlp.2", 256, d, DType::F32);
  t.c_embedder_ = SiluMlp::load(params, "txt_in.c_embedder.linear_1", "txt_in.c_embedder.linear_2",
                                cfg.text_states_dim, d, DType::F32);
  for (int64_t i = 0; i < cfg.refiner_depth; ++i)
    t.refiner_.push_back(
        RefinerBlock::load(params, "txt_in.individual_token_refiner.blocks." + std::to_string(i), cfg, compute));
  return t;
}

Tensor TextInput::operator()(const Tensor& ts, const std::vector<double>& t, const std::vector<int64_t>& mask) const {
  if (projection_) return nn::to_dtype((*projection_)(ts), DType::F32);
  const int64_t B = ts.size(0), L = ts.size(1);
  // SingleTokenRefiner: c = t_embedder(t) + c_embedder(the masked mean of the raw text states).
  const Tensor x = nn::to_dtype(ts, DType::F32);
  Tensor pooled;
  if (use_attention_mask_) {
    std::vector<float> mf(mask.begin(), mask.end());
    const Tensor m = Tensor::from_f32(mf, {B, L, 1});
    pooled = ops::div(ops::sum(ops::mul(x, m), 1), ops::sum(m, 1));  // (x * mask).sum(1) / mask.sum(1)
  } else {
    pooled = ops::mean(x, 1);
  }
  const Tensor c = ops::add((*t_embedder_)(timestep_embedding(t)), (*c_embedder_)(pooled));
  const Tensor c_silu = ops::silu(c);
  const Tensor bias = use_attention_mask_ ? refiner_bias(mask, B, L, rule_) : Tensor();
  Tensor txt = nn::to_dtype((*input_embedder_)(ts), DType::F32);  // the residual stream in fp32
  for (const RefinerBlock& b : refiner_) txt = b.forward(txt, c_silu, bias);
  return nn::to_dtype(txt, DType::F32);
}

}  // namespace vidax::hunyuan
