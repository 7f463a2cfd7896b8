#include "io/quant_policy.h"

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

QuantDecision quant_decision(const std::string& name, const Shape& shape, DType dtype, QuantType type) {
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
  const QuantTraits& q = quant_traits(type);
  if (shape.back() % q.block != 0) {
    d.reason = "rows of " + std::to_string(shape.back()) + " values are not a multiple of " + q.name + "'s " +
               std::to_string(q.block) + "-value block";
    return d;
  }
  d.quantize = true;
  return d;
}

}  // namespace vidax::io
