// Bit-exactness of TorchGenerator against torch 2.15's and torch 1.13.1's CPU randn
// (tests/golden/rng_torch_cpu*.safetensors, made by tools/golden/rng_torch_cpu.py
// under each torch).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "core/rng.h"
#include "rng/golden_reader.h"

namespace vidax {
namespace {

// "16x3x6x10" -> {16, 3, 6, 10}
Shape parse_shape(const std::string& s) {
  Shape shape;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, 'x')) shape.push_back(std::stoll(part));
  return shape;
}

DType parse_dtype(const std::string& s) { return dtype_parse(s); }

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> parts;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, '.')) parts.push_back(part);
  return parts;
}

// Values as the golden stores them (bf16/f16 as f32, exactly).
std::vector<uint64_t> value_bits(const Tensor& t) {
  std::vector<uint64_t> out;
  if (t.dtype() == DType::F64) {
    for (double v : t.to_f64_vector()) { uint64_t u; std::memcpy(&u, &v, 8); out.push_back(u); }
  } else {
    for (float v : t.to_f32_vector()) out.push_back(f32_bits(v));
  }
  return out;
}

int64_t count_mismatches(const Tensor& expected, const Tensor& got) {
  auto a = value_bits(expected), b = value_bits(got);
  if (a.size() != b.size()) return -1;
  int64_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i) bad += a[i] != b[i];
  return bad;
}

void check_golden(const std::string& file, TorchCpuKernel kernel) {
  auto g = testing::GoldenFile::load(std::string(VIDAX_TEST_DATA_DIR) + "/golden/" + file);
  ASSERT_EQ(g.metadata.at("kind"), "rng.torch_cpu");
  auto config = nlohmann::json::parse(g.metadata.at("config"));
  TorchGeneratorOptions opt;
  opt.version = parse_torch_version(config.at("torch_version").get<std::string>());
  opt.kernel = kernel;
  int compared = 0;
  // Single draws after a fresh seed.
  for (auto& [name, expected] : g.tensors) {
    auto p = split(name);
    if (p.size() != 5 || p[1] != "randn") continue;
    TorchGenerator gen(std::stoull(p[2]), opt);
    Tensor got = gen.randn(parse_shape(p[3]), parse_dtype(p[4]));
    ASSERT_EQ(got.shape(), expected.shape()) << name;
    EXPECT_EQ(count_mismatches(expected, got), 0) << name;
    ++compared;
  }
  // Consecutive draws on one generator.
  for (auto& [seed, seq] : config.at("sequences").items()) {
    TorchGenerator gen(std::stoull(seed), opt);
    for (size_t i = 0; i < seq.size(); ++i) {
      Shape shape = seq[i][0].get<Shape>();
      std::string dname = seq[i][1].get<std::string>();
      std::string shape_s;
      for (size_t k = 0; k < shape.size(); ++k) shape_s += (k ? "x" : "") + std::to_string(shape[k]);
      std::string name = "output.randn_seq." + seed + "." + std::to_string(i) + "." + shape_s + "." + dname;
      ASSERT_TRUE(g.tensors.count(name)) << name;
      Tensor got = gen.randn(shape, parse_dtype(dname));
      EXPECT_EQ(count_mismatches(g.tensors.at(name), got), 0) << name;
      ++compared;
    }
  }
  EXPECT_EQ(compared, static_cast<int>(g.tensors.size()));
}

TEST(TorchGenerator, MatchesTorch215Avx2Kernel) { check_golden("rng_torch_cpu.safetensors", TorchCpuKernel::Avx2); }

TEST(TorchGenerator, MatchesTorch215DefaultKernel) {
  check_golden("rng_torch_cpu_default.safetensors", TorchCpuKernel::Default);
}

// Made by the real torch 1.13.1 (CPU): its bf16/f16 path (numel >= 16) runs the
// transform in the reduced type and draws like the float path.
TEST(TorchGenerator, MatchesTorch113Avx2Kernel) {
  check_golden("rng_torch_cpu_v1_13.safetensors", TorchCpuKernel::Avx2);
}

TEST(TorchGenerator, MatchesTorch113DefaultKernel) {
  check_golden("rng_torch_cpu_v1_13_default.safetensors", TorchCpuKernel::Default);
}

TEST(TorchGenerator, RawDrawsEqualStdMt19937OnLow32Bits) {
  for (uint64_t seed : {uint64_t(0), uint64_t(42), (uint64_t(1) << 32) + 5}) {
    TorchGenerator gen(seed);
    std::mt19937 ref(static_cast<uint32_t>(seed));
    for (int i = 0; i < 2000; ++i) ASSERT_EQ(gen.random(), ref()) << "seed " << seed << " draw " << i;
  }
}

TEST(TorchGenerator, ManualSeedResetsStateAndSpare) {
  TorchGenerator gen(3);
  Tensor a = gen.randn({5});  // leaves a cached spare
  gen.manual_seed(3);
  Tensor b = gen.randn({5});
  EXPECT_EQ(count_mismatches(a, b), 0);
}

TEST(TorchGenerator, RejectsUnsupported) {
  TorchGenerator gen(0);
  EXPECT_THROW(gen.randn({4}, DType::I32), Error);
  EXPECT_THROW(parse_torch_version("2.7"), Error);
  EXPECT_THROW(parse_torch_version("banana"), Error);
  EXPECT_EQ(parse_torch_version("2.15.0+cu132"), TorchVersion::V2_15);
  EXPECT_EQ(parse_torch_version("1.13.1"), TorchVersion::V1_13);
}

// How many 32-bit draws a ragged bf16/f16 randn consumes: torch 1.13 draws like
// the float path (n, then 16 more for the tail), 2.15 one 16-block per block.
TEST(TorchGenerator, ReducedPrecisionDrawCountPerVersion) {
  const struct { TorchVersion version; DType dtype; int64_t n; int draws; } cases[] = {
      {TorchVersion::V1_13, DType::BF16, 18, 18 + 16}, {TorchVersion::V1_13, DType::F16, 32, 32},
      {TorchVersion::V2_15, DType::BF16, 18, 32},      {TorchVersion::V2_15, DType::F16, 32, 32},
  };
  for (const auto& c : cases) {
    TorchGenerator gen(42, {c.version, TorchCpuKernel::Avx2});
    gen.randn({c.n}, c.dtype);
    std::mt19937 ref(42);
    ref.discard(c.draws);
    EXPECT_EQ(gen.random(), ref()) << torch_version_name(c.version) << " " << dtype_name(c.dtype) << " n=" << c.n;
  }
}

}  // namespace
}  // namespace vidax
