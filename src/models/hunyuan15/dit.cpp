#include "models/hunyuan15/dit.h"

#include <tuple>

#include "backend/ops.h"
#include "models/hunyuan/rope.h"
#include "nn/cast.h"

namespace vidax::hunyuan15 {

namespace {

constexpr const char* kWho = "HunyuanVideo 1.5 DiT";
// The guidance the official forward embeds when it is given none (torch.tensor([6016.0], bfloat16)).
constexpr double kDefaultGuidance = 6016.0;

void check_batch_values(const std::vector<double>& v, int64_t B, const char* name) {
  VIDAX_CHECK(static_cast<int64_t>(v.size()) == B,
              "HunyuanVideo 1.5 DiT: " << v.size() << " " << name << " values for a batch of " << B);
}

}  // namespace

HunyuanVideo15DiT::HunyuanVideo15DiT(const DiTConfig& cfg, nn::ParamSource& params, DType compute)
    : cfg_(cfg), blocks_cfg_(cfg.blocks_config()), compute_(compute) {
  cfg_.validate();
  VIDAX_CHECK(compute == DType::F32 || compute == DType::BF16,
              "HunyuanVideo 1.5 DiT: compute dtype " << dtype_name(compute) << " (F32 or BF16)");
  const int64_t d = cfg_.hidden_size;
  if (cfg_.glyph_byT5_v2) byt5_in_ = ByT5Mapper::load(params, "byt5_in", d, compute_);
  img_in_ = hunyuan::load_patch_embed(params, d, cfg_.embed_channels(), cfg_.patch_size, compute_);
  if (cfg_.vision_projection == "linear")
    vision_in_ = VisionProjection::load(params, "vision_in.proj", cfg_.vision_states_dim, d, compute_);
  txt_in_ = hunyuan::TextInput::load(params, blocks_cfg_, hunyuan::RefinerMask::TokenZeroIsAToken, compute_);
  time_in_ = hunyuan::SiluMlp::load(params, "time_in.mlp.0", "time_in.mlp.2", 256, d, DType::F32);
  if (cfg_.text_pool_type)
    vector_in_ = hunyuan::SiluMlp::load(params, "vector_in.in_layer", "vector_in.out_layer", cfg_.text_states_dim_2,
                                        d, DType::F32);
  if (cfg_.guidance_embed)
    guidance_in_ = hunyuan::SiluMlp::load(params, "guidance_in.mlp.0", "guidance_in.mlp.2", 256, d, DType::F32);
  if (cfg_.use_meanflow)
    time_r_in_ = hunyuan::SiluMlp::load(params, "time_r_in.mlp.0", "time_r_in.mlp.2", 256, d, DType::F32);
  for (int64_t i = 0; i < cfg_.mm_double_blocks_depth; ++i)
    double_blocks_.push_back(
        hunyuan::DoubleStreamBlock::load(params, "double_blocks." + std::to_string(i), blocks_cfg_, compute_));
  for (int64_t i = 0; i < cfg_.mm_single_blocks_depth; ++i)
    single_blocks_.push_back(
        hunyuan::SingleStreamBlock::load(params, "single_blocks." + std::to_string(i), blocks_cfg_, compute_));
  final_layer_ = hunyuan::FinalLayer::load(params, d, cfg_.patch_volume() * cfg_.out_channels, compute_);
  if (cfg_.use_cond_type_embedding)
    cond_type_embedding_ = nn::to_dtype(params.take("cond_type_embedding.weight", {3, d}), DType::F32);
}

HunyuanVideo15DiT HunyuanVideo15DiT::from_weights(const DiTConfig& cfg, std::map<std::string, Tensor> weights,
                                                  DType compute, const std::string& origin) {
  nn::ParamSource params = nn::ParamSource::from_map(std::move(weights), origin);
  HunyuanVideo15DiT model(cfg, params, compute);
  params.expect_all_taken();
  return model;
}

std::array<int64_t, 3> HunyuanVideo15DiT::patch_grid(const Shape& s) const {
  return hunyuan::patch_grid(s, cfg_.embed_channels(), cfg_.patch_size, "HunyuanVideo 1.5 DiT", "hidden_states",
                             cfg_.concat_condition ? " (the latent, the condition latent and the mask)" : "");
}

Tensor HunyuanVideo15DiT::cond_type(int64_t type) const {
  return cond_type_embedding_.slice(0, type, type + 1).unsqueeze(0);  // [1, 1, D]
}

Tensor HunyuanVideo15DiT::forward(const DiTInputs& in, Taps* taps) const {
  const auto [Fp, Hp, Wp] = patch_grid(in.hidden_states.shape());
  const int64_t B = in.hidden_states.size(0), N = Fp * Hp * Wp;
  check_batch_values(in.timestep, B, "timestep");
  VIDAX_CHECK(in.text_states.defined() && in.text_states.dim() == 3 && in.text_states.size(0) == B &&
                  in.text_states.size(2) == cfg_.text_states_dim,
              "HunyuanVideo 1.5 DiT: text_states must be [" << B << ", L, " << cfg_.text_states_dim << "], got "
                                                            << (in.text_states.defined() ? in.text_states.str() : "nothing"));
  VIDAX_CHECK(in.mask_type == "t2v" || in.mask_type == "i2v",
              "HunyuanVideo 1.5 DiT: mask_type '" << in.mask_type << "' (t2v or i2v)");
  const int64_t L = in.text_states.size(1);
  const std::vector<int64_t> mask = hunyuan::read_mask(in.encoder_attention_mask, B, L, kWho, "encoder_attention_mask");
  if (cfg_.use_attention_mask && txt_in_.refines())
    for (int64_t b = 0; b < B; ++b) {
      int64_t n = 0;
      for (int64_t j = 0; j < L; ++j) n += mask[static_cast<size_t>(b * L + j)];
      VIDAX_CHECK(n > 0, "HunyuanVideo 1.5 DiT: encoder_attention_mask row "
                             << b << " has no token (the token refiner's masked mean is 0/0)");
    }

  // vec = time_in(t) [+ vector_in(text_states_2)] [+ guidance_in(g)] [+ time_r_in(r)], fp32.
  Tensor vec = time_in_(hunyuan::timestep_embedding(in.timestep));
  if (taps) (*taps)["time_in"] = vec;
  if (in.text_states_2.defined()) {
    VIDAX_CHECK(vector_in_, "HunyuanVideo 1.5 DiT: text_states_2 given to a model without vector_in "
                            "(text_pool_type is null)");
    VIDAX_CHECK(in.text_states_2.dim() == 2 && in.text_states_2.size(0) == B &&
                    in.text_states_2.size(1) == cfg_.text_states_dim_2,
                "HunyuanVideo 1.5 DiT: text_states_2 must be [" << B << ", " << cfg_.text_states_dim_2 << "], got "
                                                                << in.text_states_2.str());
    vec = ops::add(vec, (*vector_in_)(nn::to_dtype(in.text_states_2, DType::F32)));
  }
  if (guidance_in_) {
    std::vector<double> g = in.guidance;
    if (g.empty()) g.assign(static_cast<size_t>(B), kDefaultGuidance);
    check_batch_values(g, B, "guidance");
    vec = ops::add(vec, (*guidance_in_)(hunyuan::timestep_embedding(g)));
  } else {
    VIDAX_CHECK(in.guidance.empty(), "HunyuanVideo 1.5 DiT: guidance given to a model without guidance_in "
                                     "(guidance_embed is false)");
  }
  if (!in.timestep_r.empty()) {
    VIDAX_CHECK(time_r_in_, "HunyuanVideo 1.5 DiT: timestep_r given to a model without time_r_in (use_meanflow is false)");
    check_batch_values(in.timestep_r, B, "timestep_r");
    vec = ops::add(vec, (*time_r_in_)(hunyuan::timestep_embedding(in.timestep_r)));
  }
  const Tensor vec_silu = ops::silu(vec);

  Tensor img = nn::to_dtype(img_in_(hunyuan::patchify(in.hidden_states, {Fp, Hp, Wp}, cfg_.patch_size)), DType::F32);
  if (taps) (*taps)["img_in"] = img;

  // The text stream: [vision, glyph, text] valid tokens first (reorder_txt_token), the rest masked.
  Tensor txt = txt_in_(in.text_states, in.timestep, mask);
  if (taps) (*taps)["txt_in"] = txt;
  if (cond_type_embedding_.defined()) txt = ops::add(txt, cond_type(0));
  std::vector<TokenSource> sources;
  if (byt5_in_) {
    VIDAX_CHECK(in.byt5_text_states.defined(),
                "HunyuanVideo 1.5 DiT: a glyph_byT5_v2 model needs byt5_text_states and byt5_text_mask "
                "(the forward's extra_kwargs)");
    const Tensor& bs = in.byt5_text_states;
    VIDAX_CHECK(bs.dim() == 3 && bs.size(0) == B && bs.size(2) == kByT5InDim,
                "HunyuanVideo 1.5 DiT: byt5_text_states must be [" << B << ", Lb, " << kByT5InDim << "], got "
                                                                   << bs.str());
    Tensor glyphs = (*byt5_in_)(bs);
    if (taps) (*taps)["byt5_in"] = glyphs;
    if (cond_type_embedding_.defined()) glyphs = ops::add(glyphs, cond_type(1));
    sources.push_back({glyphs, hunyuan::read_mask(in.byt5_text_mask, B, bs.size(1), kWho, "byt5_text_mask")});
  } else {
    VIDAX_CHECK(!in.byt5_text_states.defined() && !in.byt5_text_mask.defined(),
                "HunyuanVideo 1.5 DiT: byt5_text_states given to a model without byt5_in (glyph_byT5_v2 is false)");
  }
  sources.push_back({txt, mask});
  if (in.vision_states.defined()) {
    VIDAX_CHECK(vision_in_, "HunyuanVideo 1.5 DiT: vision_states given to a model without vision_in "
                            "(vision_projection is none)");
    const Tensor& vs = in.vision_states;
    VIDAX_CHECK(vs.dim() == 3 && vs.size(0) == B && vs.size(2) == cfg_.vision_states_dim,
                "HunyuanVideo 1.5 DiT: vision_states must be [" << B << ", Lv, " << cfg_.vision_states_dim
                                                                << "], got " << vs.str());
    Tensor vision = (*vision_in_)(vs);
    if (taps) (*taps)["vision_in"] = vision;
    // T2V: all-zero vision states (the whole batch) are no image: their tokens become padding.
    bool zero = in.mask_type == "t2v";
    if (zero)
      for (double v : vs.to_f64_vector())
        if (v != 0) {
          zero = false;
          break;
        }
    if (zero) vision = ops::scale(vision, 0.0);
    if (cond_type_embedding_.defined()) vision = ops::add(vision, cond_type(2));
    sources.insert(sources.begin(),
                   TokenSource{vision, std::vector<int64_t>(static_cast<size_t>(B * vs.size(1)), zero ? 0 : 1)});
  }
  const TextTokens text = valid_first(sources);
  txt = text.x;
  std::vector<int64_t> kv_lens(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) kv_lens[static_cast<size_t>(b)] = N + text.valid[static_cast<size_t>(b)];

  hunyuan::RotaryTables tables;
  if (in.freqs_cos.defined() || in.freqs_sin.defined()) {
    VIDAX_CHECK(in.freqs_cos.defined() && in.freqs_sin.defined(),
                "HunyuanVideo 1.5 DiT: freqs_cos and freqs_sin come together (or neither: computed from the grid)");
    tables = {in.freqs_cos, in.freqs_sin};
  } else {
    tables = hunyuan::rotary_pos_embed(cfg_.rope_dim_list, {Fp, Hp, Wp}, cfg_.rope_theta);
  }
  const hunyuan::RopeTables rope = hunyuan::rope_tables(tables.cos, tables.sin, N, cfg_.head_dim());

  for (size_t i = 0; i < double_blocks_.size(); ++i) {
    std::tie(img, txt) = double_blocks_[i].forward(img, txt, vec_silu, rope, kv_lens, blocks_cfg_);
    if (taps) (*taps)["double_blocks." + std::to_string(i)] = img;
  }
  if (!single_blocks_.empty()) {
    Tensor x = ops::concat({img, txt}, 1);
    for (size_t i = 0; i < single_blocks_.size(); ++i) {
      x = single_blocks_[i].forward(x, vec_silu, N, rope, kv_lens, blocks_cfg_);
      if (taps) (*taps)["single_blocks." + std::to_string(i)] = ops::copy(x.slice(1, 0, N));
    }
    img = ops::copy(x.slice(1, 0, N));
  }

  const Tensor y = final_layer_(img, vec_silu);
  if (taps) (*taps)["final_layer"] = y;
  return hunyuan::unpatchify(y, {Fp, Hp, Wp}, cfg_.patch_size, cfg_.out_channels);
}

}  // namespace vidax::hunyuan15
