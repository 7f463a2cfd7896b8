#include "models/hunyuan/dit.h"

#include <cmath>
#include <limits>
#include <tuple>

#include "backend/ops.h"
#include "nn/cast.h"

namespace vidax::hunyuan {

namespace {

constexpr double kEps = 1e-6;

std::vector<int64_t> read_mask(const Tensor& mask, int64_t B, int64_t L) {
  VIDAX_CHECK(mask.dim() == 2 && mask.size(0) == B && mask.size(1) == L,
              "HunyuanVideo DiT: text_mask must be [" << B << ", " << L << "] (batch, text tokens), got " << mask.str());
  std::vector<int64_t> out;
  for (double v : mask.to_f64_vector()) {
    VIDAX_CHECK(v == 0 || v == 1, "HunyuanVideo DiT: text_mask values must be 0 or 1, found " << v);
    out.push_back(static_cast<int64_t>(v));
  }
  return out;
}

// IndividualTokenRefiner's mask as a score bias [B, 1, L, L]: row i sees key j when both are tokens
// (m_i and m_j), and every row sees key 0 (self_attn_mask[:, :, :, 0] = True: no row is all masked).
Tensor refiner_bias(const std::vector<int64_t>& m, int64_t B, int64_t L) {
  std::vector<float> b(static_cast<size_t>(B * L * L), -std::numeric_limits<float>::infinity());
  for (int64_t s = 0; s < B; ++s)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < L; ++j)
        if (j == 0 || (m[static_cast<size_t>(s * L + i)] && m[static_cast<size_t>(s * L + j)]))
          b[static_cast<size_t>((s * L + i) * L + j)] = 0.0f;
  return Tensor::from_f32(b, {B, 1, L, L});
}

}  // namespace

HunyuanDiT::HunyuanDiT(const DiTConfig& cfg, nn::ParamSource& params, DType compute) : cfg_(cfg), compute_(compute) {
  cfg_.validate();
  VIDAX_CHECK(compute == DType::F32 || compute == DType::BF16,
              "HunyuanVideo DiT: compute dtype " << dtype_name(compute) << " (F32 or BF16)");
  const int64_t d = cfg_.hidden_size;
  const auto [pt, ph, pw] = cfg_.patch_size;
  const Tensor conv_w = params.take("img_in.proj.weight", {d, cfg_.in_channels, pt, ph, pw});
  const Tensor conv_b = params.take("img_in.proj.bias", {d});
  // Conv3d with kernel == stride: a linear map of each patch, features in (c, kt, kh, kw) order.
  img_in_ = nn::Linear::make(conv_w.contiguous().view({d, cfg_.in_channels * cfg_.patch_volume()}), conv_b, compute_);
  if (cfg_.text_projection == "linear") {
    text_projection_ = SiluMlp::load(params, "txt_in.linear_1", "txt_in.linear_2", cfg_.text_states_dim, d, compute_);
  } else {
    input_embedder_ = nn::Linear::load(params, "txt_in.input_embedder", cfg_.text_states_dim, d, compute_);
    t_embedder_ = SiluMlp::load(params, "txt_in.t_embedder.mlp.0", "txt_in.t_embedder.mlp.2", 256, d, DType::F32);
    c_embedder_ =
        SiluMlp::load(params, "txt_in.c_embedder.linear_1", "txt_in.c_embedder.linear_2", cfg_.text_states_dim, d,
                      DType::F32);
    for (int64_t i = 0; i < cfg_.refiner_depth; ++i)
      refiner_.push_back(RefinerBlock::load(params, "txt_in.individual_token_refiner.blocks." + std::to_string(i),
                                            cfg_, compute_));
  }
  time_in_ = SiluMlp::load(params, "time_in.mlp.0", "time_in.mlp.2", 256, d, DType::F32);
  vector_in_ = SiluMlp::load(params, "vector_in.in_layer", "vector_in.out_layer", cfg_.text_states_dim_2, d, DType::F32);
  if (cfg_.guidance_embed) guidance_in_ = SiluMlp::load(params, "guidance_in.mlp.0", "guidance_in.mlp.2", 256, d, DType::F32);
  for (int64_t i = 0; i < cfg_.mm_double_blocks_depth; ++i)
    double_blocks_.push_back(DoubleStreamBlock::load(params, "double_blocks." + std::to_string(i), cfg_, compute_));
  for (int64_t i = 0; i < cfg_.mm_single_blocks_depth; ++i)
    single_blocks_.push_back(SingleStreamBlock::load(params, "single_blocks." + std::to_string(i), cfg_, compute_));
  final_modulation_ = nn::Linear::load(params, "final_layer.adaLN_modulation.1", d, 2 * d, DType::F32);
  final_linear_ = nn::Linear::load(params, "final_layer.linear", d, cfg_.patch_volume() * cfg_.out_channels, compute_);
}

HunyuanDiT HunyuanDiT::from_weights(const DiTConfig& cfg, std::map<std::string, Tensor> weights, DType compute,
                                    const std::string& origin) {
  nn::ParamSource params = nn::ParamSource::from_map(std::move(weights), origin);
  HunyuanDiT model(cfg, params, compute);
  params.expect_all_taken();
  return model;
}

std::array<int64_t, 3> HunyuanDiT::patch_grid(const Shape& s) const {
  VIDAX_CHECK(s.size() == 5, "HunyuanVideo DiT: latent must be [B, C, F, H, W], got " << shape_str(s));
  VIDAX_CHECK(s[1] == cfg_.in_channels,
              "HunyuanVideo DiT: latent has " << s[1] << " channels, the model takes in_channels = " << cfg_.in_channels);
  std::array<int64_t, 3> g{};
  const char* axis[3] = {"frames", "height", "width"};
  for (int i = 0; i < 3; ++i) {
    const int64_t n = s[static_cast<size_t>(2 + i)], p = cfg_.patch_size[static_cast<size_t>(i)];
    VIDAX_CHECK(n > 0 && n % p == 0, "HunyuanVideo DiT: latent " << axis[i] << " " << n
                                                                  << " is not a multiple of the patch size " << p);
    g[static_cast<size_t>(i)] = n / p;
  }
  return g;
}

Tensor HunyuanDiT::embed_text(const DiTInputs& in, const std::vector<int64_t>& mask, Taps* taps) const {
  const Tensor& ts = in.text_states;
  const int64_t B = ts.size(0), L = ts.size(1);
  Tensor txt;
  if (text_projection_) {
    txt = (*text_projection_)(ts);
  } else {
    // SingleTokenRefiner: c = t_embedder(t) + c_embedder(the masked mean of the raw text states).
    const Tensor x = nn::to_dtype(ts, DType::F32);
    Tensor pooled;
    if (cfg_.use_attention_mask) {
      std::vector<float> mf(mask.begin(), mask.end());
      const Tensor m = Tensor::from_f32(mf, {B, L, 1});
      pooled = ops::div(ops::sum(ops::mul(x, m), 1), ops::sum(m, 1));  // (x * mask).sum(1) / mask.sum(1)
    } else {
      pooled = ops::mean(x, 1);
    }
    const Tensor c = ops::add((*t_embedder_)(timestep_embedding(in.t)), (*c_embedder_)(pooled));
    const Tensor c_silu = ops::silu(c);
    const Tensor bias = cfg_.use_attention_mask ? refiner_bias(mask, B, L) : Tensor();
    txt = nn::to_dtype((*input_embedder_)(ts), DType::F32);  // the residual stream in fp32
    for (const RefinerBlock& b : refiner_) txt = b.forward(txt, c_silu, bias);
  }
  txt = nn::to_dtype(txt, DType::F32);
  if (taps) (*taps)["txt_in"] = txt;
  return txt;
}

Tensor HunyuanDiT::forward(const DiTInputs& in, Taps* taps) const {
  const auto [Fp, Hp, Wp] = patch_grid(in.x.shape());
  const int64_t B = in.x.size(0), C = cfg_.in_channels, N = Fp * Hp * Wp;
  const auto [pt, ph, pw] = cfg_.patch_size;
  VIDAX_CHECK(static_cast<int64_t>(in.t.size()) == B,
              "HunyuanVideo DiT: " << in.t.size() << " timesteps for a batch of " << B);
  VIDAX_CHECK(in.text_states.dim() == 3 && in.text_states.size(0) == B &&
                  in.text_states.size(2) == cfg_.text_states_dim,
              "HunyuanVideo DiT: text_states must be [" << B << ", L, " << cfg_.text_states_dim << "], got "
                                                        << in.text_states.str());
  VIDAX_CHECK(in.text_states_2.dim() == 2 && in.text_states_2.size(0) == B &&
                  in.text_states_2.size(1) == cfg_.text_states_dim_2,
              "HunyuanVideo DiT: text_states_2 must be [" << B << ", " << cfg_.text_states_dim_2 << "], got "
                                                          << in.text_states_2.str());
  const int64_t L = in.text_states.size(1);
  const std::vector<int64_t> mask = read_mask(in.text_mask, B, L);
  std::vector<int64_t> kv_lens(static_cast<size_t>(B), N);  // get_cu_seqlens: image + sum(mask) tokens
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t j = 0; j < L; ++j) kv_lens[static_cast<size_t>(b)] += mask[static_cast<size_t>(b * L + j)];
    VIDAX_CHECK(!cfg_.use_attention_mask || kv_lens[static_cast<size_t>(b)] > N,
                "HunyuanVideo DiT: text_mask row " << b << " has no token (the token refiner's masked mean is 0/0)");
  }

  // vec = time_in(t) + vector_in(text_states_2) [+ guidance_in(guidance)], fp32.
  Tensor vec = time_in_(timestep_embedding(in.t));
  if (taps) (*taps)["time_in"] = vec;
  const Tensor vector = vector_in_(nn::to_dtype(in.text_states_2, DType::F32));
  if (taps) (*taps)["vector_in"] = vector;
  vec = ops::add(vec, vector);
  if (guidance_in_) {
    VIDAX_CHECK(static_cast<int64_t>(in.guidance.size()) == B,
                "HunyuanVideo DiT: a guidance-distilled model (guidance_embed) needs one guidance value per sample, got "
                    << in.guidance.size() << " for a batch of " << B);
    const Tensor g = (*guidance_in_)(timestep_embedding(in.guidance));
    if (taps) (*taps)["guidance_in"] = g;
    vec = ops::add(vec, g);
  }
  const Tensor vec_silu = ops::silu(vec);  // every modulation's input (ModulateDiT: Linear(SiLU(vec)))

  // Patchify: [B, C, F'pt, H'ph, W'pw] -> [B, N, C*pt*ph*pw], tokens (f, h, w) row-major.
  const Tensor xc = in.x.is_contiguous() ? in.x : ops::copy(in.x);
  const Tensor patches = ops::copy(xc.view({B, C, Fp, pt, Hp, ph, Wp, pw}).permute({0, 2, 4, 6, 1, 3, 5, 7}))
                             .view({B, N, C * cfg_.patch_volume()});
  Tensor img = nn::to_dtype(img_in_(patches), DType::F32);  // the residual stream in fp32
  if (taps) (*taps)["img_in"] = img;
  Tensor txt = embed_text(in, mask, taps);

  const RopeTables rope = rope_tables(in.freqs_cos, in.freqs_sin, N, cfg_.head_dim());
  for (size_t i = 0; i < double_blocks_.size(); ++i) {
    std::tie(img, txt) = double_blocks_[i].forward(img, txt, vec_silu, rope, kv_lens, cfg_);
    if (taps) (*taps)["double_blocks." + std::to_string(i)] = img;
  }
  Tensor x = ops::concat({img, txt}, 1);  // [image, text]
  for (size_t i = 0; i < single_blocks_.size(); ++i) {
    x = single_blocks_[i].forward(x, vec_silu, N, rope, kv_lens, cfg_);
    if (taps) (*taps)["single_blocks." + std::to_string(i)] = ops::copy(x.slice(1, 0, N));
  }
  img = x.slice(1, 0, N);

  // FinalLayer: (shift, scale) = adaLN_modulation(vec).chunk(2); linear(LN(x)(1 + scale) + shift).
  const Tensor m = final_modulation_(vec_silu);
  const Tensor shift = m.slice(1, 0, cfg_.hidden_size).unsqueeze(1), scale = m.slice(1, cfg_.hidden_size, 2 * cfg_.hidden_size).unsqueeze(1);
  const Tensor y = nn::to_dtype(final_linear_(ops::layer_norm_modulate(img, shift, scale, kEps, final_linear_.compute)),
                                DType::F32);
  if (taps) (*taps)["final_layer"] = y;

  // Unpatchify: feature (c, kt, kh, kw) of token (f, h, w) -> out[c, f*pt+kt, h*ph+kh, w*pw+kw].
  const int64_t Co = cfg_.out_channels;
  return ops::copy(y.view({B, Fp, Hp, Wp, Co, pt, ph, pw}).permute({0, 4, 1, 5, 2, 6, 3, 7}))
      .view({B, Co, Fp * pt, Hp * ph, Wp * pw});
}

}  // namespace vidax::hunyuan
