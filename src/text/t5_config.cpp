#include "text/t5_config.h"

#include <cmath>

#include "core/error.h"
#include "text/umt5_keys.h"
#include "translate/config_fields.h"

namespace vidax::text {

// ---- config -----------------------------------------------------------------------

void T5EncoderConfig::validate() const {
  VIDAX_CHECK(vocab > 0 && dim > 0 && dim_attn > 0 && dim_ffn > 0 && num_heads > 0 && num_layers > 0,
              "t5 encoder config: sizes must be positive (vocab=" << vocab << " dim=" << dim << " dim_attn="
                                                                  << dim_attn << " dim_ffn=" << dim_ffn
                                                                  << " num_heads=" << num_heads
                                                                  << " num_layers=" << num_layers << ")");
  VIDAX_CHECK(dim_attn % num_heads == 0,
              "t5 encoder config: dim_attn " << dim_attn << " not divisible by num_heads " << num_heads);
  VIDAX_CHECK(num_buckets >= 4 && num_buckets % 2 == 0, "t5 encoder config: num_buckets must be even and >= 4, got "
                                                            << num_buckets);
  VIDAX_CHECK(max_distance > num_buckets / 4, "t5 encoder config: max_distance " << max_distance << " too small");
}

T5EncoderConfig T5EncoderConfig::umt5_xxl() {
  T5EncoderConfig c;
  c.vocab = 256384;
  c.dim = 4096;
  c.dim_attn = 4096;
  c.dim_ffn = 10240;
  c.num_heads = 64;
  c.num_layers = 24;
  c.num_buckets = 32;
  c.shared_pos = false;
  return c;
}

T5EncoderConfig T5EncoderConfig::from_json(const nlohmann::json& j) {
  // The model-defining fields, as the one config parser (text/umt5_keys.h) reads them in either
  // spelling; the encoder adds the fields only it uses (transformers' max_distance and eps).
  const translate::t5::T5Config m = translate::t5::T5Config::from_json(j);
  T5EncoderConfig c;
  c.vocab = m.vocab;
  c.dim = m.dim;
  c.dim_attn = m.dim_attn;
  c.dim_ffn = m.dim_ffn;
  c.num_heads = m.num_heads;
  c.num_layers = m.num_layers;
  c.num_buckets = m.num_buckets;
  c.shared_pos = m.shared_pos;
  try {
    if (j.contains("d_model")) {
      c.max_distance = translate::value_or<int64_t>(j, "relative_attention_max_distance", 128);
      c.eps = translate::value_or<double>(j, "layer_norm_epsilon", 1e-6);
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(msg() << "t5 encoder config: " << e.what() << " in " << j.dump());
  }
  c.validate();
  return c;
}

nlohmann::json T5EncoderConfig::to_json() const {
  return {{"vocab", vocab},         {"dim", dim},           {"dim_attn", dim_attn},       {"dim_ffn", dim_ffn},
          {"num_heads", num_heads}, {"num_layers", num_layers}, {"num_buckets", num_buckets}, {"shared_pos", shared_pos}};
}

std::vector<std::string> t5_encoder_parameter_names(const T5EncoderConfig& cfg) {
  std::vector<std::string> n{"token_embedding.weight"};
  if (cfg.shared_pos) n.push_back("pos_embedding.embedding.weight");
  for (int64_t i = 0; i < cfg.num_layers; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    for (const char* p : {"norm1.weight", "attn.q.weight", "attn.k.weight", "attn.v.weight", "attn.o.weight",
                          "norm2.weight", "ffn.gate.0.weight", "ffn.fc1.weight", "ffn.fc2.weight"})
      n.push_back(b + p);
    if (!cfg.shared_pos) n.push_back(b + "pos_embedding.embedding.weight");
  }
  n.push_back("norm.weight");
  return n;
}

// ---- relative position buckets -------------------------------------------------------

std::vector<int64_t> t5_relative_position_buckets(int64_t lq, int64_t lk, bool bidirectional, int64_t num_buckets,
                                                  int64_t max_distance) {
  int64_t nb = bidirectional ? num_buckets / 2 : num_buckets;
  const int64_t max_exact = nb / 2;
  // torch: log(rel.float() / max_exact) / math.log(max_dist / max_exact) * (nb - max_exact),
  // every step an fp32 tensor op (the Python scalars enter as fp32), then .long() truncates.
  const float log_range = static_cast<float>(std::log(static_cast<double>(max_distance) / max_exact));
  std::vector<int64_t> out(static_cast<size_t>(lq * lk));
  for (int64_t i = 0; i < lq; ++i) {
    for (int64_t j = 0; j < lk; ++j) {
      int64_t rel = j - i;  // key - query
      int64_t bucket = 0;
      if (bidirectional) {
        bucket = rel > 0 ? nb : 0;
        rel = std::abs(rel);
      } else {
        rel = rel < 0 ? -rel : 0;
      }
      if (rel < max_exact) {
        bucket += rel;
      } else {
        float ratio = static_cast<float>(rel) / static_cast<float>(max_exact);
        float scaled = std::log(ratio) / log_range * static_cast<float>(nb - max_exact);
        bucket += std::min<int64_t>(max_exact + static_cast<int64_t>(scaled), nb - 1);
      }
      out[static_cast<size_t>(i * lk + j)] = bucket;
    }
  }
  return out;
}

// ---- masks and trimming ---------------------------------------------------------------

std::vector<int64_t> mask_lengths(const Tensor& mask) {
  VIDAX_CHECK(mask.dim() == 2, "t5 encoder: mask must be [B, L], got " << shape_str(mask.shape()));
  const int64_t B = mask.size(0), L = mask.size(1);
  std::vector<double> m = mask.to_f64_vector();
  std::vector<int64_t> lens(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    int64_t n = 0;
    while (n < L && m[b * L + n] != 0) ++n;
    for (int64_t j = n; j < L; ++j)
      VIDAX_CHECK(m[b * L + j] == 0, "t5 encoder: mask row " << b << " is not right-padded (1s then 0s): position "
                                                             << j << " is set after a 0 at " << n);
    VIDAX_CHECK(n > 0, "t5 encoder: mask row " << b << " has no tokens");
    lens[b] = n;
  }
  return lens;
}

std::vector<Tensor> trim_to_prompt_lengths(const Tensor& context, const Tensor& mask) {
  VIDAX_CHECK(context.dim() == 3 && mask.dim() == 2 && context.size(0) == mask.size(0) &&
                  context.size(1) == mask.size(1),
              "trim_to_prompt_lengths: context " << shape_str(context.shape()) << " and mask "
                                                 << shape_str(mask.shape()) << " do not match");
  std::vector<Tensor> out;
  std::vector<int64_t> lens = mask_lengths(mask);
  for (int64_t b = 0; b < context.size(0); ++b) out.push_back(context.select(0, b).slice(0, 0, lens[b]));
  return out;
}

}  // namespace vidax::text
