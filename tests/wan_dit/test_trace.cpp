// Records one full denoising step of the real Wan2.1-T2V-1.3B DiT at
// 480x832, 81 frames (latent [16, 21, 60, 104], 32760 tokens) on Device::Meta:
// every weight and activation is shape-only, nothing is computed or read.
// Checks the op count derived from the architecture and that every shape is
// static (two recordings are identical, every shape is the one expected).
#include <gtest/gtest.h>

#include <map>

#include "backend/recording.h"
#include "models/wan/dit.h"
#include "wan_dit/helpers.h"

using namespace vidax;

namespace {

struct Step {
  Trace trace;
  Tensor out;
};

Step record_step(const wan::WanDiT& model, const wan::TextContext& text) {
  const Tensor x = Tensor::empty({16, 21, 60, 104}, DType::F32, Device::Meta);
  const Tensor t = Tensor::empty({1, 256}, DType::F32, Device::Meta);
  Step s;
  RecordingScope rec(s.trace);
  s.out = model.forward(x, t, text);
  return s;
}

// The ops:: calls by name (the trace's inputs, params and views are not counted).
std::map<std::string, int> count_by_name(const Trace& t) {
  std::map<std::string, int> n;
  for (const OpRecord* r : t.of_kind(OpKind::Op)) ++n[r->name];
  return n;
}

// Ops of one step, from the architecture (dit.cpp / dit_block.cpp), for
// `layers` blocks. bf16 adds the autocast casts that are not fused into a norm or a consumer.
std::map<std::string, int> expected_ops(int layers, bool bf16) {
  std::map<std::string, int> n;
  // patchify (1 copy), patch embedding linear, unpatchify (1 copy)
  n["copy"] += 2;
  n["linear"] += 1;
  // time embedding: linear, silu, linear; projection: silu, linear
  n["linear"] += 3;
  n["silu"] += 2;
  // per block: modulation add; self-attn q,k,v + 2 qk RMSNorms + 2 RoPEs + attention, then o with
  // the gated residual fused; cross-attn norm3, q, o, q RMSNorm, attention, residual add; FFN: linear
  // with the GELU fused, linear with the gated residual fused; LN+modulate before self-attn and FFN.
  n["add"] += 2 * layers;
  n["linear"] += 3 * layers + 2 * layers;
  n["linear_gelu"] += layers;
  n["linear_gated_residual"] += 2 * layers;
  n["rms_norm"] += 3 * layers;
  n["rope"] += 2 * layers;
  n["attention"] += 2 * layers;
  n["layer_norm"] += layers;
  n["layer_norm_modulate"] += 2 * layers;
  // head: modulation add, LN+modulate, linear (fp32)
  n["add"] += 1;
  n["layer_norm_modulate"] += 1;
  n["linear"] += 1;
  if (bf16) {
    // The patch embedding's input. The blocks' autocast casts are fused: the norms before the
    // self-attn, cross-attn and FFN GEMMs round to bf16 on store, and the ops after them
    // (gated residuals, residual add) read the bf16 GEMM outputs directly.
    n["cast"] += 1;
    // Block 0 sees the bf16 patch embedding: its LN rounds to bf16 (WanLayerNorm's type_as) and is
    // modulated in fp32 into bf16 (layer_norm + modulate instead of the fused op), and the residual
    // is cast to fp32 before the first gated add.
    n["layer_norm_modulate"] -= 1;
    n["layer_norm"] += 1;
    n["cast"] += 1;
    n["modulate"] += 1;
  }
  return n;
}

int total(const std::map<std::string, int>& n) {
  int s = 0;
  for (const auto& [k, v] : n) s += v;
  return s;
}

}  // namespace

TEST(WanDiTTrace, OneStepOfTheReal1_3BModelIsStaticAndHasTheExpectedOps) {
  const wan::DiTConfig cfg = wan::DiTConfig::preset("wan2.1-t2v-1.3b");
  for (wan::Precision p : {wan::Precision::BF16, wan::Precision::F32}) {
    SCOPED_TRACE(wan::precision_name(p));
    nn::ParamSource params = wan_dit_test::meta_params();
    const wan::WanDiT model(cfg, params, p);
    // patch 2, text 4, time 4, projection 2, head 3; per block: modulation, 2 x (4 linears w+b, 2 norm gains), norm3 2, ffn 4
    EXPECT_EQ(params.taken_in_order().size(), 15u + 30u * (1 + 2 * 10 + 2 + 4));

    // Per request: the prompt (unpadded, 77 rows) and the 30 blocks' cross K/V.
    Trace ctx_trace;
    wan::TextContext text;
    {
      RecordingScope rec(ctx_trace);
      text = model.encode_context(Tensor::empty({77, 4096}, DType::F32, Device::Meta));
    }
    // pad, text_embedding (linear, gelu, linear), then k, RMSNorm(k), v per block (+1 cast in bf16).
    EXPECT_EQ(ctx_trace.of_kind(OpKind::Op).size(), 4u + 90u + (p == wan::Precision::BF16 ? 1u : 0u))
        << ctx_trace.str();
    ASSERT_EQ(text.blocks.size(), 30u);
    EXPECT_EQ(text.blocks[29].k.shape(), (Shape{1, 512, 12, 128}));

    Step a = record_step(model, text);
    Step b = record_step(model, text);
    const auto expected = expected_ops(30, p == wan::Precision::BF16);
    EXPECT_EQ(count_by_name(a.trace), expected) << a.trace.str();
    EXPECT_EQ(static_cast<int>(a.trace.of_kind(OpKind::Op).size()), total(expected));
    // 20 ops per block (bf16: +2 in block 0) and 11 (bf16: +1 cast) outside.
    EXPECT_EQ(a.trace.of_kind(OpKind::Op).size(), p == wan::Precision::BF16 ? 614u : 611u);
    // The weights the step reads are params by their checkpoint names, one value each.
    std::map<std::string, int> param_uses;
    for (const OpRecord* r : a.trace.of_kind(OpKind::Param)) ++param_uses[r->param_name];
    for (const char* n : {"blocks.0.self_attn.q.weight", "blocks.29.ffn.2.bias", "blocks.7.modulation",
                          "blocks.3.cross_attn.norm_q.weight", "head.head.weight"})
      EXPECT_EQ(param_uses[n], 1) << n;
    EXPECT_EQ(a.trace.str(), b.trace.str());  // same shapes, same ops, same order

    EXPECT_EQ(a.out.shape(), (Shape{16, 21, 60, 104}));
    EXPECT_EQ(a.out.dtype(), DType::F32);
    EXPECT_EQ(a.out.device(), Device::Meta);
    const DType act = p == wan::Precision::BF16 ? DType::BF16 : DType::F32;
    int self_attn = 0, cross_attn = 0, lnm_f32 = 0, lnm_other = 0;
    for (const OpRecord& r : a.trace.ops) {
      for (int64_t d : r.output.shape) ASSERT_GT(d, 0) << r.str();
      if (r.name == "attention") {
        ASSERT_EQ(r.inputs.size(), 3u) << r.str();
        EXPECT_EQ(r.inputs[0].shape, (Shape{1, 32760, 12, 128})) << r.str();
        EXPECT_EQ(r.inputs[0].dtype, act) << r.str();
        if (r.inputs[1].shape == Shape{1, 32760, 12, 128}) ++self_attn;
        if (r.inputs[1].shape == Shape{1, 512, 12, 128}) ++cross_attn;
      }
      if (r.name == "rope") {
        EXPECT_EQ(r.inputs[1].dtype, DType::F64) << r.str();  // complex128 rotation, as rope_apply
        EXPECT_EQ(r.inputs[1].shape, (Shape{32760, 64})) << r.str();
      }
      if (r.name == "gated_residual") {
        EXPECT_EQ(r.output.dtype, DType::F32) << r.str();  // fp32 residual stream
      }
      if (r.name == "layer_norm_modulate") {
        // fp32 modulation of the fp32 stream, rounded on store to the consuming GEMM's dtype.
        EXPECT_EQ(r.inputs[0].dtype, DType::F32) << r.str();
        ++(r.output.dtype == DType::F32 ? lnm_f32 : lnm_other);
      }
    }
    EXPECT_EQ(self_attn, 30);
    EXPECT_EQ(cross_attn, 30);
    // bf16: every block's modulation feeds a bf16 GEMM; the head's feeds its fp32 GEMM.
    EXPECT_EQ(lnm_f32, p == wan::Precision::BF16 ? 1 : 61);
    EXPECT_EQ(lnm_other, p == wan::Precision::BF16 ? 59 : 0);
    // GEMM precision: in bf16 every linear reads bf16 activations and weights except the ones the
    // reference runs under autocast(fp32): time_embedding.0/.2, time_projection.1 and head.head.
    int fp32_linears = 0, linears = 0;
    for (const OpRecord& r : a.trace.ops) {
      if (r.name != "linear") continue;
      ++linears;
      EXPECT_EQ(r.inputs[0].dtype, r.output.dtype) << r.str();
      if (r.inputs[0].dtype == DType::F32) ++fp32_linears;
      else EXPECT_EQ(r.inputs[1].dtype, DType::BF16) << r.str();
    }
    EXPECT_EQ(fp32_linears, p == wan::Precision::BF16 ? 4 : linears);
  }
}

// The 14B model (40 blocks of width 5120, 40 heads) at 720x1280x81 (latent
// [16, 21, 90, 160], 75600 tokens): same op structure, 40 blocks.
TEST(WanDiTTrace, OneStepOfThe14BModel) {
  const wan::DiTConfig cfg = wan::DiTConfig::preset("wan2.1-t2v-14b");
  nn::ParamSource params = wan_dit_test::meta_params();
  const wan::WanDiT model(cfg, params, wan::Precision::BF16);
  const wan::TextContext text = model.encode_context(Tensor::empty({120, 4096}, DType::F32, Device::Meta));
  Trace trace;
  Tensor out;
  {
    RecordingScope rec(trace);
    out = model.forward(Tensor::empty({1, 16, 21, 90, 160}, DType::F32, Device::Meta),
                        Tensor::empty({1, 256}, DType::F32, Device::Meta), text);
  }
  EXPECT_EQ(count_by_name(trace), expected_ops(40, true));
  EXPECT_EQ(out.shape(), (Shape{1, 16, 21, 90, 160}));
  for (const OpRecord& r : trace.ops) {
    if (r.name != "attention") continue;
    EXPECT_EQ(r.inputs[0].shape, (Shape{1, 75600, 40, 128})) << r.str();
  }
}
