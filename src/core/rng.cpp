#include "core/rng.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/error.h"
#include "core/rng_normal_kernels.h"

namespace vidax {
namespace {

constexpr double kPi = 3.14159265358979323846;  // c10::pi<double>

// transformation::uniform_real: (v & (2^digits - 1)) * 2^-digits.
float uniform_float(uint32_t v) { return static_cast<float>(v & ((1u << 24) - 1)) * (1.0f / (1u << 24)); }
double uniform_double(uint64_t v) {
  return static_cast<double>(v & ((uint64_t(1) << 53) - 1)) * (1.0 / (uint64_t(1) << 53));
}

}  // namespace

TorchVersion parse_torch_version(std::string_view s) {
  // major.minor[.patch][+local]
  int major = -1, minor = -1;
  std::string str(s);
  if (std::sscanf(str.c_str(), "%d.%d", &major, &minor) != 2)
    throw Error(msg() << "torch_version '" << str << "': expected <major>.<minor>, e.g. \"2.15\"");
  if (major == 1 && minor == 13) return TorchVersion::V1_13;
  if (major == 2 && minor >= 15) return TorchVersion::V2_15;
  throw Error(msg() << "torch_version '" << str
                    << "': CPU randn is reproduced for torch 1.13 and 2.15+ only (the bf16/f16 and "
                       "small-tensor paths changed in between; see docs/sampling.md)");
}

const char* torch_version_name(TorchVersion v) {
  switch (v) {
    case TorchVersion::V1_13: return "1.13";
    case TorchVersion::V2_15: return "2.15";
  }
  return "?";
}

TorchGenerator::TorchGenerator(uint64_t seed, TorchGeneratorOptions opt) : opt_(opt) { manual_seed(seed); }

void TorchGenerator::manual_seed(uint64_t seed) {
  // CPUGeneratorImpl::set_current_seed: fresh engine, cached normals dropped.
  seed_ = seed;
  engine_.seed_with(seed);
  next_double_normal_.reset();
}

uint32_t TorchGenerator::random() { return engine_(); }

uint64_t TorchGenerator::random64() {
  const uint32_t hi = engine_();
  const uint32_t lo = engine_();
  return (uint64_t(hi) << 32) | lo;
}

// at::normal_distribution<double>: two 53-bit uniforms, u1 -> angle, u2 -> radius;
// returns the cosine half and caches the sine half for the next small draw.
double TorchGenerator::normal_double() {
  if (next_double_normal_) {
    const double r = *next_double_normal_;
    next_double_normal_.reset();
    return r * 1.0 + 0.0;
  }
  const double u1 = uniform_double(random64());
  const double u2 = uniform_double(random64());
  const double log_term = opt_.version == TorchVersion::V1_13 ? std::log(1.0 - u2) : std::log1p(-u2);
  const double r = std::sqrt(-2.0 * log_term);
  const double theta = 2.0 * kPi * u1;
  next_double_normal_ = r * std::sin(theta);
  return r * std::cos(theta) * 1.0 + 0.0;
}

// numel < 16: one double normal per element, cast to the dtype (for f16/bf16:
// double -> float -> half, as c10's constructors do).
void TorchGenerator::randn_small(Tensor& out) {
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) {
    const double v = normal_double();
    switch (out.dtype()) {
      case DType::F64: out.data<double>()[i] = v; break;
      case DType::F32: out.data<float>()[i] = static_cast<float>(v); break;
      case DType::BF16: out.data<uint16_t>()[i] = f32_to_bf16(static_cast<float>(v)); break;
      case DType::F16: out.data<uint16_t>()[i] = f32_to_f16(static_cast<float>(v)); break;
      default: throw Error(msg() << "randn: unsupported dtype " << dtype_name(out.dtype()));
    }
  }
}

// normal_fill<float>: n uniforms in index order, Box-Muller per full block of
// 16; when n % 16 != 0 the last 16 elements are redrawn (16 more uniforms)
// and transformed again, overlapping the last full block.
void TorchGenerator::randn_f32(float* d, int64_t n) {
  auto fill16 = opt_.kernel == TorchCpuKernel::Avx2 ? rng_kernels::fill16_f32_avx2 : rng_kernels::fill16_f32_scalar;
  for (int64_t i = 0; i < n; ++i) d[i] = uniform_float(random());
  for (int64_t i = 0; i + 16 <= n; i += 16) fill16(d + i);
  if (n % 16 != 0) {
    float* tail = d + n - 16;
    for (int i = 0; i < 16; ++i) tail[i] = uniform_float(random());
    fill16(tail);
  }
}

// normal_fill<Half/BFloat16> (torch 2.15): the float kernel on a 16-element
// stack buffer per block, each value rounded once to the dtype. Unlike the
// float path it draws only 16 per full block, so for n % 16 != 0 the tail
// block starts at draw 16*floor(n/16), not at draw n.
void TorchGenerator::randn_reduced(uint16_t* o, int64_t n, DType dtype) {
  auto fill16 = opt_.kernel == TorchCpuKernel::Avx2 ? rng_kernels::fill16_f32_avx2 : rng_kernels::fill16_f32_scalar;
  auto round = [dtype](float v) { return dtype == DType::BF16 ? f32_to_bf16(v) : f32_to_f16(v); };
  float buf[16];
  auto block = [&](int64_t offset) {
    for (int j = 0; j < 16; ++j) buf[j] = uniform_float(random());
    fill16(buf);
    for (int j = 0; j < 16; ++j) o[offset + j] = round(buf[j]);
  };
  for (int64_t i = 0; i + 16 <= n; i += 16) block(i);
  if (n % 16 != 0) block(n - 16);
}

// normal_fill<Half/BFloat16> (torch 1.13): the float path's draw order (n
// uniforms of numeric_limits<T>::digits bits = 11 / 8, then 16 more for a
// ragged tail), with the transform run in the reduced type itself.
void TorchGenerator::randn_reduced_v1_13(uint16_t* o, int64_t n, DType dtype) {
  const bool bf16 = dtype == DType::BF16;
  const int digits = bf16 ? 8 : 11;
  const uint32_t mask = (1u << digits) - 1;
  const float scale = 1.0f / static_cast<float>(1u << digits);
  // (v & mask) * 2^-digits has at most `digits` significant bits: exact in the dtype.
  auto uniform = [&] {
    const float u = static_cast<float>(random() & mask) * scale;
    return bf16 ? f32_to_bf16(u) : f32_to_f16(u);
  };
  auto fill16 = bf16 ? rng_kernels::fill16_bf16_v1_13 : rng_kernels::fill16_f16_v1_13;
  for (int64_t i = 0; i < n; ++i) o[i] = uniform();
  for (int64_t i = 0; i + 16 <= n; i += 16) fill16(o + i);
  if (n % 16 != 0) {
    uint16_t* tail = o + n - 16;
    for (int i = 0; i < 16; ++i) tail[i] = uniform();
    fill16(tail);
  }
}

void TorchGenerator::randn_f64(double* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = uniform_double(random64());
  for (int64_t i = 0; i + 16 <= n; i += 16) rng_kernels::fill16_f64(d + i);
  if (n % 16 != 0) {
    double* tail = d + n - 16;
    for (int i = 0; i < 16; ++i) tail[i] = uniform_double(random64());
    rng_kernels::fill16_f64(tail);
  }
}

Tensor TorchGenerator::randn(const Shape& shape, DType dtype) {
  VIDAX_CHECK(dtype == DType::F32 || dtype == DType::F64 || dtype == DType::F16 || dtype == DType::BF16,
              "TorchGenerator::randn: dtype " << dtype_name(dtype) << " is not a float type torch.randn supports "
                                              "(F32, F64, F16, BF16)");
  for (int64_t s : shape) VIDAX_CHECK(s >= 0, "TorchGenerator::randn: negative size in shape " << shape_str(shape));
  Tensor out = Tensor::empty(shape, dtype);
  const int64_t n = out.numel();
  if (n == 0) return out;
  if (n < 16) {
    randn_small(out);
    return out;
  }
  switch (dtype) {
    case DType::F32: randn_f32(out.data<float>(), n); break;
    case DType::F64: randn_f64(out.data<double>(), n); break;
    case DType::F16:
    case DType::BF16:
      if (opt_.version == TorchVersion::V1_13)
        randn_reduced_v1_13(out.data<uint16_t>(), n, dtype);
      else
        randn_reduced(out.data<uint16_t>(), n, dtype);
      break;
    default: break;
  }
  return out;
}

}  // namespace vidax
