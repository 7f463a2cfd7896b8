// Element types and exact conversions (round-to-nearest-even as PyTorch does).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace vidax {

// Every dtype of the safetensors format plus the engine's own needs.
enum class DType : uint8_t {
  F64, F32, F16, BF16, F8_E4M3, F8_E5M2,
  I64, I32, I16, I8, U64, U32, U16, U8, Bool,
};

size_t dtype_size(DType t);
const char* dtype_name(DType t);          // safetensors spelling: "F32", "BF16", "F8_E4M3", ...
bool dtype_from_name(std::string_view s, DType* out);  // parses the safetensors spelling
DType dtype_parse(std::string_view s);    // also accepts f32/fp32/float32/bf16/...; throws on unknown
bool dtype_is_float(DType t);

// ---- scalar conversions ---------------------------------------------------
inline uint32_t f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

// bfloat16: torch rounds to nearest even; NaN stays a (quiet) NaN.
inline uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0xffff;  // torch tensor .to(): every NaN -> 0xffff
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
inline float bf16_to_f32(uint16_t h) { return bits_f32(uint32_t(h) << 16); }

uint16_t f32_to_f16(float f);   // IEEE half, RNE, overflow -> inf
float f16_to_f32(uint16_t h);
uint8_t f32_to_f8e4m3fn(float f);  // torch 2.x: RNE; NaN -> 0x7f; overflow and inf saturate to +-448
float f8e4m3fn_to_f32(uint8_t v);
uint8_t f32_to_f8e5m2(float f);    // RNE, overflow -> inf
float f8e5m2_to_f32(uint8_t v);

// Converts n elements between any two dtypes (through double for ints/floats).
void convert(const void* src, DType st, void* dst, DType dt, size_t n);

}  // namespace vidax
