// torch-exact CPU noise (DESIGN.md principle 4): TorchGenerator reproduces
// `torch.manual_seed(s); torch.randn(shape, dtype=...)` on the CPU bit for bit,
// including the generator state carried over consecutive calls. Algorithm and
// version notes: docs/sampling.md.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/rng_mt19937.h"
#include "core/tensor.h"

namespace vidax {

// torch versions whose CPU randn differs in ways we reproduce.
enum class TorchVersion {
  // Both verified bit for bit against the real torch (tests/golden/rng_torch_cpu*.safetensors).
  V1_13,  // small tensors: r = sqrt(-2 log(1 - u)); bf16/f16 (numel >= 16): 11/8-bit uniforms drawn
          // like the float path, transform run in c10::Half / c10::BFloat16 (verified on 1.13.1)
  V2_15,  // small tensors: r = sqrt(-2 log1p(-u)); bf16/f16 = float kernel per 16-block, rounded
          // once (verified on 2.15.0). f32/f64 with numel >= 16 are the same in both.
};
// Parses "1.13", "1.13.1", "2.15", "2.15.0+cpu", ... Throws on versions whose
// behaviour is not known to equal one of the above.
TorchVersion parse_torch_version(std::string_view s);
const char* torch_version_name(TorchVersion v);

// Which build of torch's normal kernel to imitate for float32 tensors of >= 16 elements.
enum class TorchCpuKernel {
  Avx2,     // x86-64 wheels on AVX2 and AVX-512 CPUs (the default)
  Default,  // ATEN_CPU_CAPABILITY=default, or non-x86 builds: libm logf/cosf/sinf
};

struct TorchGeneratorOptions {
  TorchVersion version = TorchVersion::V2_15;
  TorchCpuKernel kernel = TorchCpuKernel::Avx2;
};

class TorchGenerator {
 public:
  // torch's default seed of a fresh torch.Generator().
  static constexpr uint64_t kDefaultSeed = 67280421310721ull;

  explicit TorchGenerator(uint64_t seed = kDefaultSeed, TorchGeneratorOptions opt = {});

  // torch.manual_seed(seed); a negative Python seed is its two's complement
  // (static_cast<uint64_t>(int64_t)). Only the low 32 bits reach the CPU MT19937.
  void manual_seed(uint64_t seed);
  uint64_t initial_seed() const { return seed_; }
  const TorchGeneratorOptions& options() const { return opt_; }

  // torch.randn(shape, dtype=dtype) for a contiguous CPU tensor: F32, F64, F16, BF16.
  Tensor randn(const Shape& shape, DType dtype = DType::F32);

  // The raw draws (CPUGeneratorImpl::random / random64).
  uint32_t random();
  uint64_t random64();  // (first draw << 32) | second draw

 private:
  double normal_double();  // at::normal_distribution<double>(0, 1), with the cached spare
  void randn_small(Tensor& out);
  void randn_f32(float* out, int64_t n);
  void randn_f64(double* out, int64_t n);
  void randn_reduced(uint16_t* out, int64_t n, DType dtype);
  void randn_reduced_v1_13(uint16_t* out, int64_t n, DType dtype);

  TorchGeneratorOptions opt_;
  uint64_t seed_ = kDefaultSeed;
  TorchMt19937 engine_;
  std::optional<double> next_double_normal_;  // the spare of the small-tensor Box-Muller
};

}  // namespace vidax
