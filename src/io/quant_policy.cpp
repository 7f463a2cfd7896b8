#include "io/quant_policy.h"

#include <cctype>

namespace vidax::io {

namespace {

// Name fragments of tensors that stay wide, as in city96's llama.cpp patch (LLM_ARCH_WAN:
// modulation, patch_embedding, text_embedding, time_projection, time_embedding, img_emb, head;
// T5: the relative position bias), with the diffusers spellings of the same Wan tensors.
struct KeepWide { const char* fragment; const char* what; };
constexpr KeepWide kKeepWide[] = {
    {"modulation", "a modulation table"},
    {"scale_shift_table", "a modulation table"},
    {"patch_embedding", "the patch embedding"},
    {"text_embedding.", "the text embedding"},
    {"time_embedding.", "the time embedding"},
    {"time_projection.", "the time projection"},
    {"condition_embedder.", "the condition embedder"},
    {"img_emb.", "the image embedding"},
    {"head.", "the output head"},
    {"proj_out.", "the output head"},
    {"pos_embedding", "a relative position bias"},
    {"relative_attention_bias", "a relative position bias"},
};
constexpr int64_t kSmall = 1024;  // ComfyUI-GGUF's QUANTIZATION_THRESHOLD

}  // namespace

namespace {
// The rules every target shares; `block` 0: no row rule.
QuantDecision decide(const std::string& name, const Shape& shape, DType dtype, const char* type_name, int block);
}  // namespace

QuantDecision quant_decision(const std::string& name, const Shape& shape, DType dtype, QuantType type) {
  const QuantTraits& q = quant_traits(type);
  return decide(name, shape, dtype, q.name, q.block);
}

QuantDecision quant_decision(const std::string& name, const Shape& shape, DType dtype, DType scaled_type) {
  VIDAX_CHECK(scaled_type == DType::F8_E4M3 || scaled_type == DType::F8_E5M2 || scaled_type == DType::I8,
              "quant_decision: " << dtype_name(scaled_type) << " is not a scaled weight type");
  return decide(name, shape, dtype, dtype_name(scaled_type), 0);
}

bool scaled_type_from_name(const std::string& s, DType* out) {
  std::string l;
  for (char c : s) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l == "fp8" || l == "fp8_e4m3fn" || l == "f8_e4m3") *out = DType::F8_E4M3;
  else if (l == "fp8_e5m2" || l == "f8_e5m2") *out = DType::F8_E5M2;
  else if (l == "int8" || l == "i8") *out = DType::I8;
  else return false;
  return true;
}

QuantTarget QuantTarget::parse(const std::string& name) {
  QuantTarget t;
  if (name.empty()) return t;
  if (scaled_type_from_name(name, &t.scaled)) return t;
  VIDAX_CHECK(quant_from_name(name, &t.block),
              "quantization type " << name << ": not a GGUF block type (" << quant_names_list() << ") nor fp8, fp8_e5m2, int8");
  return t;
}

QuantDecision QuantTarget::decision(const std::string& name, const Shape& shape, DType dtype) const {
  VIDAX_CHECK(!none(), "QuantTarget::decision: no target");
  return is_scaled() ? quant_decision(name, shape, dtype, scaled) : quant_decision(name, shape, dtype, block);
}

Tensor QuantTarget::apply(const Tensor& t) const {
  VIDAX_CHECK(!none(), "QuantTarget::apply: no target");
  return is_scaled() ? Tensor::quantize_scaled(t, scaled) : Tensor::quantize(t, block);
}

namespace {
QuantDecision decide(const std::string& name, const Shape& shape, DType dtype, const char* type_name, int block) {
  QuantDecision d;
  if (!dtype_is_float(dtype) && dtype != DType::U8) {
    d.reason = "not floating point";
    return d;
  }
  if (shape.size() != 2) {
    d.reason = shape.size() == 1 ? "1-D (norms and biases stay wide)" : "not 2-D";
    return d;
  }
  if (shape_numel(shape) <= kSmall) {
    d.reason = "small (1024 values or fewer)";
    return d;
  }
  for (const auto& k : kKeepWide)
    if (name.find(k.fragment) != std::string::npos) {
      d.reason = std::string(k.what) + " stays wide";
      return d;
    }
  if (block > 0 && shape.back() % block != 0) {
    d.reason = "rows of " + std::to_string(shape.back()) + " values are not a multiple of " + type_name + "'s " +
               std::to_string(block) + "-value block";
    return d;
  }
  d.quantize = true;
  return d;
}
}  // namespace

}  // namespace vidax::io
