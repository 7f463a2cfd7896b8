#include "core/dtype.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace vidax {

namespace {
struct Info { DType t; const char* name; size_t size; bool is_float; };
constexpr Info kInfo[] = {
    {DType::F64, "F64", 8, true},      {DType::F32, "F32", 4, true},
    {DType::F16, "F16", 2, true},      {DType::BF16, "BF16", 2, true},
    {DType::F8_E4M3, "F8_E4M3", 1, true}, {DType::F8_E5M2, "F8_E5M2", 1, true},
    {DType::I64, "I64", 8, false},     {DType::I32, "I32", 4, false},
    {DType::I16, "I16", 2, false},     {DType::I8, "I8", 1, false},
    {DType::U64, "U64", 8, false},     {DType::U32, "U32", 4, false},
    {DType::U16, "U16", 2, false},     {DType::U8, "U8", 1, false},
    {DType::Bool, "BOOL", 1, false},
};
const Info& info(DType t) { return kInfo[static_cast<int>(t)]; }
}  // namespace

size_t dtype_size(DType t) { return info(t).size; }
const char* dtype_name(DType t) { return info(t).name; }
bool dtype_is_float(DType t) { return info(t).is_float; }

bool dtype_from_name(std::string_view s, DType* out) {
  for (const Info& i : kInfo)
    if (s == i.name) { *out = i.t; return true; }
  return false;
}

DType dtype_parse(std::string_view s) {
  std::string l(s);
  for (auto& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l == "f32" || l == "fp32" || l == "float32" || l == "float") return DType::F32;
  if (l == "f64" || l == "fp64" || l == "float64" || l == "double") return DType::F64;
  if (l == "f16" || l == "fp16" || l == "float16" || l == "half") return DType::F16;
  if (l == "bf16" || l == "bfloat16") return DType::BF16;
  if (l == "f8_e4m3" || l == "fp8" || l == "float8_e4m3fn" || l == "f8e4m3") return DType::F8_E4M3;
  if (l == "f8_e5m2" || l == "float8_e5m2" || l == "f8e5m2") return DType::F8_E5M2;
  if (l == "i8" || l == "int8") return DType::I8;
  if (l == "u8" || l == "uint8") return DType::U8;
  if (l == "i16" || l == "int16") return DType::I16;
  if (l == "i32" || l == "int32") return DType::I32;
  if (l == "i64" || l == "int64") return DType::I64;
  if (l == "bool") return DType::Bool;
  DType t;
  if (dtype_from_name(s, &t)) return t;
  throw Error(msg() << "unknown dtype '" << s << "' (expected f32, bf16, f16, fp8, int8, ...)");
}

// c10::detail::fp16_ieee_from_fp32_value: RNE, overflow -> inf, NaN -> 0x7e00.
uint16_t f32_to_f16(float f) {
  const float scale_to_inf = bits_f32(UINT32_C(239) << 23);
  const float scale_to_zero = bits_f32(UINT32_C(17) << 23);
  float base = (std::fabs(f) * scale_to_inf) * scale_to_zero;
  const uint32_t w = f32_bits(f);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & UINT32_C(0x80000000);
  uint32_t bias = shl1_w & UINT32_C(0xFF000000);
  if (bias < UINT32_C(0x71000000)) bias = UINT32_C(0x71000000);
  base = bits_f32((bias >> 1) + UINT32_C(0x07800000)) + base;
  const uint32_t bits = f32_bits(base);
  const uint32_t exp_bits = (bits >> 13) & UINT32_C(0x00007C00);
  const uint32_t mantissa_bits = bits & UINT32_C(0x00000FFF);
  const uint32_t nonsign = exp_bits + mantissa_bits;
  return static_cast<uint16_t>((sign >> 16) | (shl1_w > UINT32_C(0xFF000000) ? UINT16_C(0x7E00) : nonsign));
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0) {
    if (man == 0) return bits_f32(sign);
    float v = std::ldexp(static_cast<float>(man), -24);  // subnormal: exact in f32
    return sign ? -v : v;
  }
  if (exp == 31) return bits_f32(sign | 0x7f800000u | (man << 13));
  return bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

// torch 2.x tensor conversion (checked against torch 2.15): RNE; NaN -> 0x7f
// (sign kept); anything beyond the largest finite value, inf included,
// saturates to +-448 (0x7e / 0xfe).
uint8_t f32_to_f8e4m3fn(float f) {
  constexpr uint32_t denorm_mask = UINT32_C(141) << 23;
  uint32_t f_bits = f32_bits(f);
  const uint32_t sign = f_bits & UINT32_C(0x80000000);
  f_bits ^= sign;
  uint8_t result;
  if (f_bits > UINT32_C(0x7f800000)) {
    result = 0x7f;
  } else if (f_bits > f32_bits(448.0f)) {
    result = 0x7e;
  } else if (f_bits < (UINT32_C(121) << 23)) {
    f_bits = f32_bits(bits_f32(f_bits) + bits_f32(denorm_mask));
    result = static_cast<uint8_t>(f_bits - denorm_mask);
  } else {
    uint8_t mant_odd = (f_bits >> 20) & 1;
    f_bits += (uint32_t(7 - 127) << 23) + 0x7FFFF;
    f_bits += mant_odd;
    result = static_cast<uint8_t>(f_bits >> 20);
  }
  return result | static_cast<uint8_t>(sign >> 24);
}

float f8e4m3fn_to_f32(uint8_t v) {
  const bool neg = v & 0x80;
  const uint32_t exp = (v >> 3) & 0xf, man = v & 0x7;
  float r;
  if (exp == 0xf && man == 0x7) return std::nanf("");
  if (exp == 0) r = std::ldexp(static_cast<float>(man), -9);
  else r = std::ldexp(1.0f + man / 8.0f, static_cast<int>(exp) - 7);
  return neg ? -r : r;
}

// c10::detail::fp8e5m2_from_fp32_value: RNE, overflow -> inf, NaN -> 0x7f.
uint8_t f32_to_f8e5m2(float f) {
  constexpr uint32_t fp32_inf = UINT32_C(255) << 23;
  constexpr uint32_t fp8_max = UINT32_C(143) << 23;
  constexpr uint32_t denorm_mask = UINT32_C(134) << 23;
  uint32_t f_bits = f32_bits(f);
  const uint32_t sign = f_bits & UINT32_C(0x80000000);
  f_bits ^= sign;
  uint8_t result;
  if (f_bits >= fp8_max) {
    result = f_bits > fp32_inf ? UINT8_C(0x7F) : UINT8_C(0x7C);
  } else if (f_bits < (UINT32_C(113) << 23)) {
    f_bits = f32_bits(bits_f32(f_bits) + bits_f32(denorm_mask));
    result = static_cast<uint8_t>(f_bits - denorm_mask);
  } else {
    uint32_t mant_odd = (f_bits >> 21) & 1;
    f_bits += (uint32_t(15 - 127) << 23) + 0xFFFFF;
    f_bits += mant_odd;
    result = static_cast<uint8_t>(f_bits >> 21);
  }
  return result | static_cast<uint8_t>(sign >> 24);
}

float f8e5m2_to_f32(uint8_t v) { return f16_to_f32(uint16_t(v) << 8); }

namespace {
template <class T>
double load_as_double(const void* p, size_t i) { return static_cast<double>(static_cast<const T*>(p)[i]); }

double load(const void* p, DType t, size_t i) {
  switch (t) {
    case DType::F64: return load_as_double<double>(p, i);
    case DType::F32: return load_as_double<float>(p, i);
    case DType::F16: return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DType::BF16: return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DType::F8_E4M3: return f8e4m3fn_to_f32(static_cast<const uint8_t*>(p)[i]);
    case DType::F8_E5M2: return f8e5m2_to_f32(static_cast<const uint8_t*>(p)[i]);
    case DType::I64: return load_as_double<int64_t>(p, i);
    case DType::I32: return load_as_double<int32_t>(p, i);
    case DType::I16: return load_as_double<int16_t>(p, i);
    case DType::I8: return load_as_double<int8_t>(p, i);
    case DType::U64: return load_as_double<uint64_t>(p, i);
    case DType::U32: return load_as_double<uint32_t>(p, i);
    case DType::U16: return load_as_double<uint16_t>(p, i);
    case DType::U8: return load_as_double<uint8_t>(p, i);
    case DType::Bool: return static_cast<const uint8_t*>(p)[i] ? 1.0 : 0.0;
  }
  return 0;
}

void store(void* p, DType t, size_t i, double v) {
  // Narrow floats go through f32 first, as torch's .to() does from f32 sources.
  switch (t) {
    case DType::F64: static_cast<double*>(p)[i] = v; break;
    case DType::F32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DType::F16: static_cast<uint16_t*>(p)[i] = f32_to_f16(static_cast<float>(v)); break;
    case DType::BF16: static_cast<uint16_t*>(p)[i] = f32_to_bf16(static_cast<float>(v)); break;
    case DType::F8_E4M3: static_cast<uint8_t*>(p)[i] = f32_to_f8e4m3fn(static_cast<float>(v)); break;
    case DType::F8_E5M2: static_cast<uint8_t*>(p)[i] = f32_to_f8e5m2(static_cast<float>(v)); break;
    case DType::I64: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v); break;
    case DType::I32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
    case DType::I16: static_cast<int16_t*>(p)[i] = static_cast<int16_t>(v); break;
    case DType::I8: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v); break;
    case DType::U64: static_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(v); break;
    case DType::U32: static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v); break;
    case DType::U16: static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(v); break;
    case DType::U8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v); break;
    case DType::Bool: static_cast<uint8_t*>(p)[i] = v != 0.0; break;
  }
}
}  // namespace

void convert(const void* src, DType st, void* dst, DType dt, size_t n) {
  if (n == 0) return;  // an empty tensor's pointers may be null (memcpy's arguments must not be)
  if (st == dt) { std::memcpy(dst, src, n * dtype_size(st)); return; }
  // Fast paths for the conversions weights take on load.
  if (dt == DType::F32) {
    float* o = static_cast<float*>(dst);
    if (st == DType::BF16) {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) o[i] = bf16_to_f32(s[i]);
      return;
    }
    if (st == DType::F16) {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) o[i] = f16_to_f32(s[i]);
      return;
    }
  }
  if (st == DType::F32 && dt == DType::BF16) {
    const float* s = static_cast<const float*>(src);
    uint16_t* o = static_cast<uint16_t*>(dst);
    for (size_t i = 0; i < n; ++i) o[i] = f32_to_bf16(s[i]);
    return;
  }
  // Integers are exact through double up to 2^53; i64/u64 beyond that go direct.
  if ((st == DType::I64 || st == DType::U64) && !dtype_is_float(dt) && dt != DType::Bool) {
    for (size_t i = 0; i < n; ++i) {
      int64_t v = static_cast<const int64_t*>(src)[i];
      switch (dt) {
        case DType::I64: case DType::U64: static_cast<int64_t*>(dst)[i] = v; break;
        default: store(dst, dt, i, static_cast<double>(v));
      }
    }
    return;
  }
  for (size_t i = 0; i < n; ++i) store(dst, dt, i, load(src, st, i));
}

}  // namespace vidax
