// ggml's block-quantized weight formats (the GGUF tensor types Q4_0 ... Q6_K): one table of
// type traits, and row (de)quantization bit-exact with ggml's definitions (ggml-common.h's
// block layouts, ggml-quants.c's dequantize_row_* and the quantize_row_*_ref reference
// quantizers llama.cpp's tools use without an importance matrix). A row of n values is n/block
// blocks stored back to back; K-quants ("_K") have 256-value super-blocks, the others 32.
//
// Bit-exactness needs the arithmetic in the order ggml writes it: quant.cpp is compiled with
// -ffp-contract=off (a fused multiply-add would round differently).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace vidax {

enum class QuantType : uint8_t { None, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K };

struct QuantTraits {
  QuantType type;
  const char* name;     // GGUF/ggml spelling: "Q8_0", "Q4_K"
  uint32_t ggml_id;     // ggml_type / GGUF tensor type id
  int block;            // values per block (32, or 256 for the K-quants)
  int block_bytes;      // bytes per block
};

const QuantTraits& quant_traits(QuantType t);  // throws on None
const char* quant_name(QuantType t);           // "" for None
// The GGUF type id's quantized type; nullptr when the id is not one of the types above.
const QuantTraits* quant_from_ggml_id(uint32_t id);
// "q8_0", "Q8_0", "q4_k", ... (case-insensitive); false when not a quant type.
bool quant_from_name(std::string_view s, QuantType* out);
std::string quant_names_list();  // "q8_0, q6_k, ..." for messages

// Bytes of a row of n values; throws when n is not a multiple of the block.
size_t quant_row_bytes(QuantType t, int64_t n);
bool quant_fits_row(QuantType t, int64_t n);  // n > 0 and a multiple of the block

// n values (a multiple of the block) of a row; src need not be aligned.
void dequantize_row(QuantType t, const void* src, float* dst, int64_t n);
// The same values rounded to bf16 (RNE, as f32_to_bf16), in one pass: a GEMM's bf16 panel.
void dequantize_row_bf16(QuantType t, const void* src, uint16_t* dst, int64_t n);
// ggml's reference quantizer (quantize_row_*_ref) for every type above.
void quantize_row(QuantType t, const float* src, void* dst, int64_t n);

}  // namespace vidax
