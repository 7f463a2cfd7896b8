// ops::attention against torch (tests/backend/data/attention_nan.safetensors, made by
// tools/golden/attention_nan.py: SDPA's math path on the reference's attention
// contract): one NaN in q, k, v or the bias, masked or not. The NaN positions must
// match exactly, the values to the path's tolerance, on every path (f32; bf16 on
// AVX-512 and, where the CPU has it, AMX).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "backend/cpu/attention_tiles.h"
#include "backend/ops.h"
#include "helpers.h"
#include "io/checkpoint.h"

using namespace vidax;
using namespace vidax::test;

namespace {

Tensor with_nan(const Tensor& t, const std::vector<int64_t>& at) {
  std::vector<double> v = t.to_f64_vector();
  v[static_cast<size_t>(lin(t.shape(), {at[0], at[1], at[2], at[3]}))] = std::nan("");
  return Tensor::from_f64(v, t.shape(), t.dtype());
}

}  // namespace

TEST(AttentionGolden, NanPositionsAndValuesMatchTorch) {
  const io::Checkpoint ck = io::Checkpoint::open(std::string(VIDAX_TEST_DATA_DIR) + "/backend/data/attention_nan.safetensors");
  ASSERT_EQ(ck.metadata().at("kind"), "backend.attention_nan");
  const nlohmann::json cases = nlohmann::json::parse(ck.metadata().at("cases"));
  ASSERT_GE(cases.size(), 13u);
  const Tensor q0 = ck.get("input.q").clone(), k0 = ck.get("input.k").clone(), v0 = ck.get("input.v").clone(),
               bias0 = ck.get("input.bias").clone();
  size_t nan_cases = 0;
  for (const auto& c : cases) {
    const std::string name = c.at("name"), operand = c.at("operand");
    const std::vector<int64_t> at = c.at("index");
    // The bias NaN's index is [-, i, h, j] into [1, H, Lq, Lk].
    Tensor q = q0, k = k0, v = v0, bias = bias0;
    if (operand == "q") q = with_nan(q, at);
    if (operand == "k") k = with_nan(k, at);
    if (operand == "v") v = with_nan(v, at);
    if (operand == "bias") bias = with_nan(bias, {0, at[2], at[1], at[3]});
    const Tensor want = ck.get("output." + name);
    const std::vector<double> ref = want.to_f64_vector();
    size_t ref_nans = 0;
    for (double x : ref) ref_nans += std::isnan(x);
    ASSERT_EQ(ref_nans, c.at("nan_count").get<size_t>()) << name;
    nan_cases += ref_nans > 0;
    ops::AttentionOptions o;
    o.causal = c.at("causal");
    o.kv_lens = c.at("kv_lens").get<std::vector<int64_t>>();
    if (c.at("bias")) o.bias = bias;
    for (DType dt : {DType::F32, DType::BF16})
      for (bool amx : {true, false}) {
        if (dt == DType::F32 && !amx) continue;
        cpu::attn::set_amx_enabled(amx);
        const Tensor out = ops::attention(q.to(dt), k.to(dt), v.to(dt), o);
        cpu::attn::set_amx_enabled(true);
        const std::vector<double> got = out.to_f64_vector();
        ASSERT_EQ(got.size(), ref.size()) << name;
        size_t wrong_nan = 0;
        for (size_t i = 0; i < got.size(); ++i) wrong_nan += std::isnan(got[i]) != std::isnan(ref[i]);
        const std::string what = name + " " + dtype_name(dt) + (amx ? "" : " no-amx");
        EXPECT_EQ(wrong_nan, 0u) << what << ": NaN where torch has none or the other way";
        const double tol = dt == DType::F32 ? 2e-5 : 1.0 / 64;
        expect_close(out, ref, tol, tol, what);
      }
  }
  EXPECT_GE(nan_cases, 8u);  // the file exercises NaN, not only masking
}
