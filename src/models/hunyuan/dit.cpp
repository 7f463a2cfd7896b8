#include "models/hunyuan/dit.h"

#include <tuple>

#include "backend/ops.h"
#include "nn/cast.h"

namespace vidax::hunyuan {

HunyuanDiT::HunyuanDiT(const DiTConfig& cfg, nn::ParamSource& params, DType compute) : cfg_(cfg), compute_(compute) {
  cfg_.validate();
  VIDAX_CHECK(compute == DType::F32 || compute == DType::BF16,
              "HunyuanVideo DiT: compute dtype " << dtype_name(compute) << " (F32 or BF16)");
  const int64_t d = cfg_.hidden_size;
  img_in_ = load_patch_embed(params, d, cfg_.in_channels, cfg_.patch_size, compute_);
  txt_in_ = TextInput::load(params, cfg_, RefinerMask::EveryRowSeesKeyZero, compute_);
  time_in_ = SiluMlp::load(params, "time_in.mlp.0", "time_in.mlp.2", 256, d, DType::F32);
  vector_in_ = SiluMlp::load(params, "vector_in.in_layer", "vector_in.out_layer", cfg_.text_states_dim_2, d, DType::F32);
  if (cfg_.guidance_embed) guidance_in_ = SiluMlp::load(params, "guidance_in.mlp.0", "guidance_in.mlp.2", 256, d, DType::F32);
  for (int64_t i = 0; i < cfg_.mm_double_blocks_depth; ++i)
    double_blocks_.push_back(DoubleStreamBlock::load(params, "double_blocks." + std::to_string(i), cfg_, compute_));
  for (int64_t i = 0; i < cfg_.mm_single_blocks_depth; ++i)
    single_blocks_.push_back(SingleStreamBlock::load(params, "single_blocks." + std::to_string(i), cfg_, compute_));
  final_layer_ = FinalLayer::load(params, d, cfg_.patch_volume() * cfg_.out_channels, compute_);
}

HunyuanDiT HunyuanDiT::from_weights(const DiTConfig& cfg, std::map<std::string, Tensor> weights, DType compute,
                                    const std::string& origin) {
  nn::ParamSource params = nn::ParamSource::from_map(std::move(weights), origin);
  HunyuanDiT model(cfg, params, compute);
  params.expect_all_taken();
  return model;
}

std::array<int64_t, 3> HunyuanDiT::patch_grid(const Shape& s) const {
  return hunyuan::patch_grid(s, cfg_.in_channels, cfg_.patch_size, "HunyuanVideo DiT", "latent");
}

Tensor HunyuanDiT::forward(const DiTInputs& in, Taps* taps) const {
  const auto [Fp, Hp, Wp] = patch_grid(in.x.shape());
  const int64_t B = in.x.size(0), N = Fp * Hp * Wp;
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
  const std::vector<int64_t> mask = read_mask(in.text_mask, B, L, "HunyuanVideo DiT", "text_mask");
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

  Tensor img = nn::to_dtype(img_in_(patchify(in.x, {Fp, Hp, Wp}, cfg_.patch_size)), DType::F32);  // fp32 stream
  if (taps) (*taps)["img_in"] = img;
  Tensor txt = txt_in_(in.text_states, in.t, mask);
  if (taps) (*taps)["txt_in"] = txt;

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

  const Tensor y = final_layer_(img, vec_silu);
  if (taps) (*taps)["final_layer"] = y;
  return unpatchify(y, {Fp, Hp, Wp}, cfg_.patch_size, cfg_.out_channels);
}

}  // namespace vidax::hunyuan
