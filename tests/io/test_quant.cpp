// ggml block formats (core/quant.h) against the gguf package's port of ggml (the golden
// tests/io/data/ggml_quants.safetensors, tools/golden/ggml_quants.py): dequantization bit-exact
// for every type, the reference quantizers bit-exact where the package has them (Q4_0 ... Q8_0),
// and every quantizer's round trip within the error its bits allow.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/quant.h"
#include "io/checkpoint.h"

namespace vidax {
namespace {

const std::string kGolden = std::string(VIDAX_TEST_DATA_DIR) + "/io/data/ggml_quants.safetensors";

struct TypeCase { QuantType type; double max_rel_l2; };  // round-trip bound on the golden input
// Bounds: about 1.5x the relative L2 measured on the golden input's normal rows (0 and 5);
// the outlier row gets 4x. Row 4 (values about 5e-6) is only checked finite: ggml stores block
// scales as f16, whose subnormals lose such values (the reference quantizers do the same).
const TypeCase kTypes[] = {
    {QuantType::Q8_0, 0.008}, {QuantType::Q6_K, 0.02},  {QuantType::Q5_K, 0.04}, {QuantType::Q5_1, 0.05},
    {QuantType::Q5_0, 0.06},  {QuantType::Q4_K, 0.08},  {QuantType::Q4_1, 0.10}, {QuantType::Q4_0, 0.12},
    {QuantType::Q3_K, 0.20},  {QuantType::Q2_K, 0.40},
};

std::string case_name(const testing::TestParamInfo<TypeCase>& i) { return quant_name(i.param.type); }

class QuantGolden : public testing::TestWithParam<TypeCase> {};

TEST(Quant, TraitsMatchGgml) {
  const struct { QuantType t; uint32_t id; int block, bytes; } want[] = {
      {QuantType::Q4_0, 2, 32, 18},   {QuantType::Q4_1, 3, 32, 20},   {QuantType::Q5_0, 6, 32, 22},
      {QuantType::Q5_1, 7, 32, 24},   {QuantType::Q8_0, 8, 32, 34},   {QuantType::Q2_K, 10, 256, 84},
      {QuantType::Q3_K, 11, 256, 110}, {QuantType::Q4_K, 12, 256, 144}, {QuantType::Q5_K, 13, 256, 176},
      {QuantType::Q6_K, 14, 256, 210},
  };
  for (const auto& w : want) {
    const QuantTraits& t = quant_traits(w.t);
    EXPECT_EQ(t.ggml_id, w.id) << t.name;
    EXPECT_EQ(t.block, w.block) << t.name;
    EXPECT_EQ(t.block_bytes, w.bytes) << t.name;
    EXPECT_EQ(quant_from_ggml_id(w.id), &t);
    QuantType parsed;
    std::string lower = t.name;
    for (auto& c : lower) c = static_cast<char>(std::tolower(c));
    EXPECT_TRUE(quant_from_name(lower, &parsed) && parsed == w.t) << lower;
  }
  EXPECT_EQ(quant_from_ggml_id(9), nullptr);  // Q8_1: not a weight format
  EXPECT_EQ(quant_row_bytes(QuantType::Q4_K, 512), 288u);
  EXPECT_THROW(quant_row_bytes(QuantType::Q4_K, 384), Error);
  EXPECT_FALSE(quant_fits_row(QuantType::Q6_K, 128));
  EXPECT_TRUE(quant_fits_row(QuantType::Q8_0, 128));
}

TEST_P(QuantGolden, DequantizeIsBitExact) {
  const QuantType t = GetParam().type;
  io::Checkpoint g = io::Checkpoint::open(kGolden);
  const std::string name = quant_name(t);
  Tensor blocks = g.get(name + ".blocks"), want = g.get(name + ".dequant");
  const int64_t rows = want.size(0), n = want.size(1);
  ASSERT_EQ(static_cast<size_t>(blocks.size(1)), quant_row_bytes(t, n));
  std::vector<float> got(static_cast<size_t>(n));
  const float* w = want.data<float>();
  int64_t mismatches = 0;
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_row(t, blocks.data<uint8_t>() + r * blocks.size(1), got.data(), n);
    for (int64_t i = 0; i < n; ++i)
      if (f32_bits(got[i]) != f32_bits(w[r * n + i]) && ++mismatches < 5)
        ADD_FAILURE() << name << " row " << r << " value " << i << ": " << got[i] << " vs " << w[r * n + i];
  }
  EXPECT_EQ(mismatches, 0);
}

TEST_P(QuantGolden, QuantizeMatchesTheReference) {
  const QuantType t = GetParam().type;
  io::Checkpoint g = io::Checkpoint::open(kGolden);
  const std::string name = quant_name(t);
  Tensor x = g.get("input");
  const int64_t rows = x.size(0), n = x.size(1);
  const size_t rb = quant_row_bytes(t, n);
  std::vector<uint8_t> q(rb * rows);
  for (int64_t r = 0; r < rows; ++r) quantize_row(t, x.data<float>() + r * n, q.data() + r * rb, n);
  if (g.contains(name + ".quant")) {
    Tensor want = g.get(name + ".quant");
    ASSERT_EQ(want.nbytes(), q.size());
    for (int64_t r = 0; r < rows; ++r)
      EXPECT_EQ(std::memcmp(q.data() + r * rb, want.data<uint8_t>() + r * rb, rb), 0) << name << " row " << r;
  }
  // Round trip: exact for the zero and the constant rows (1, 3), bounded on the others.
  std::vector<float> y(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_row(t, q.data() + r * rb, y.data(), n);
    const float* xr = x.data<float>() + r * n;
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; ++i) {
      num += double(y[i] - xr[i]) * (y[i] - xr[i]);
      den += double(xr[i]) * xr[i];
    }
    const double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    if (r == 1) EXPECT_EQ(num, 0.0) << name << " zero row";
    else if (r == 3) EXPECT_LT(rel, 2e-3) << name << " constant row";  // f16 scale rounding
    else if (r == 2) EXPECT_LT(rel, 4 * GetParam().max_rel_l2) << name << " outlier row";
    else if (r == 4) EXPECT_TRUE(std::isfinite(rel)) << name;  // values ~5e-6: ggml's f16 scales underflow
    else EXPECT_LT(rel, GetParam().max_rel_l2) << name << " row " << r;
    std::printf("%s row %lld rel L2 %.5f\n", name.c_str(), static_cast<long long>(r), rel);
  }
}

INSTANTIATE_TEST_SUITE_P(Types, QuantGolden, testing::ValuesIn(kTypes), case_name);

}  // namespace
}  // namespace vidax
