#include <gtest/gtest.h>

#include "backend/ops.h"
#include "backend/recording.h"
#include "core/host_memory.h"
#include "helpers.h"

using namespace vidax;
using namespace vidax::test;

TEST(Recording, RecordsATinyGraphWithoutData) {
  // A DiT-like block on Meta activations with real CPU weights.
  Tensor x = Tensor::empty({2, 16, 32}, DType::BF16, Device::Meta);
  Tensor w = randn({96, 32}, 1), b = randn({96}, 2), wo = randn({32, 32}, 3);
  Tensor shift = Tensor::empty({2, 1, 32}, DType::F32, Device::Meta);
  Tensor scale = Tensor::empty({2, 1, 32}, DType::F32, Device::Meta);
  Trace trace;
  Tensor y;
  {
    RecordingScope rec(trace);
    Tensor h = ops::layer_norm_modulate(x, shift, scale, 1e-6);
    Tensor qkv = ops::linear(h, w, b).view({2, 16, 3, 2, 16});
    Tensor a = ops::attention(qkv.select(2, 0), qkv.select(2, 1), qkv.select(2, 2), ops::AttentionOptions{.scale = 0, .kv_lens = {16, 9}, .bias = std::nullopt, .causal = false});
    y = ops::gated_residual(x, scale, ops::linear(a.reshape({2, 16, 32}), wo));
  }
  EXPECT_EQ(y.device(), Device::Meta);
  EXPECT_EQ(y.shape(), (Shape{2, 16, 32}));
  EXPECT_EQ(y.dtype(), DType::BF16);
  const std::vector<const OpRecord*> ops = trace.of_kind(OpKind::Op);
  ASSERT_EQ(ops.size(), 5u) << trace.str();
  EXPECT_EQ(ops[0]->name, "layer_norm_modulate");
  EXPECT_EQ(ops[0]->attr_text("eps"), "9.9999999999999995e-07");
  EXPECT_EQ(ops[0]->attr_as<double>("eps"), 1e-6);
  EXPECT_EQ(ops[1]->name, "linear");
  EXPECT_EQ(ops[1]->inputs[1].str(), "F32[96, 32]@cpu");
  EXPECT_EQ(ops[1]->output.str(), "BF16[2, 16, 96]");
  EXPECT_EQ(ops[2]->name, "attention");
  EXPECT_EQ(ops[2]->inputs[0].str(), "BF16[2, 16, 2, 16]");
  EXPECT_EQ(ops[2]->attr_as<std::vector<int64_t>>("kv_lens"), (std::vector<int64_t>{16, 9}));
  EXPECT_EQ(ops[2]->attr_as<double>("scale"), 0.25);
  EXPECT_FALSE(ops[2]->attr_as<bool>("causal"));
  EXPECT_EQ(ops[3]->name, "linear");
  EXPECT_EQ(ops[4]->name, "gated_residual");
  // x and the gate are the step's inputs, y the second linear's output.
  EXPECT_EQ(trace.ops[static_cast<size_t>(ops[4]->input_ids[0])].kind, OpKind::Input);
  EXPECT_EQ(ops[4]->input_ids[2], ops[3]->id);
  EXPECT_EQ(ops[4]->str(), "%" + std::to_string(ops[4]->id) + " = gated_residual(x=%0, gate=%2, y=%" +
                               std::to_string(ops[3]->id) + ") : BF16[2, 16, 32]");
  // The views in between are recorded: the qkv view, three selects, the reshape of the attention output.
  std::vector<std::string> views;
  for (const OpRecord* r : trace.of_kind(OpKind::View)) views.push_back(r->name);
  EXPECT_EQ(views, (std::vector<std::string>{"view", "select", "select", "select", "reshape"})) << trace.str();
}

TEST(Recording, ShapeErrorsStillRaiseAndNoScopeRecordsNothing) {
  Tensor x = Tensor::empty({4, 8}, DType::F32, Device::Meta);
  Trace trace;
  {
    RecordingScope rec(trace);
    EXPECT_THROW(ops::linear(x, Tensor::empty({3, 7}, DType::F32, Device::Meta)), Error);
    EXPECT_THROW(ops::all_finite(x), Error);
    Trace inner;
    {
      RecordingScope nested(inner);
      ops::silu(x);
    }
    ops::conv2d(Tensor::empty({1, 3, 9, 9}, DType::F32, Device::Meta), Tensor::empty({4, 3, 3, 3}, DType::F32, Device::Meta),
                std::nullopt, {2, 2}, {1, 1});
    EXPECT_EQ(inner.of_kind(OpKind::Op).size(), 1u);
    EXPECT_EQ(inner.ops.size(), 2u);  // the input and silu
  }
  ASSERT_EQ(trace.of_kind(OpKind::Op).size(), 1u) << trace.str();
  const OpRecord& conv = *trace.of_kind(OpKind::Op)[0];
  EXPECT_EQ(conv.output.shape, (Shape{1, 4, 5, 5}));
  EXPECT_EQ(conv.attr_text("stride"), "[2, 2]");
  const size_t before = trace.ops.size();
  Tensor s = ops::sum(x, 1);  // no scope: shapes only
  EXPECT_EQ(s.shape(), (Shape{4}));
  EXPECT_EQ(trace.ops.size(), before);
}

// A norm's output dtype (the fused cast) is recorded as the op's output; no cast op appears.
TEST(Recording, NormOutputDtypeIsTheRecordedOutput) {
  Tensor x = Tensor::empty({2, 16, 32}, DType::F32, Device::Meta);
  Tensor shift = Tensor::empty({2, 1, 32}, DType::F32, Device::Meta);
  Trace trace;
  {
    RecordingScope rec(trace);
    EXPECT_EQ(ops::layer_norm_modulate(x, shift, shift, 1e-6, DType::BF16).dtype(), DType::BF16);
    EXPECT_EQ(ops::layer_norm(x, randn({32}, 1), std::nullopt, 1e-6, DType::BF16).dtype(), DType::BF16);
    EXPECT_EQ(ops::layer_norm(x, std::nullopt, std::nullopt, 1e-6).dtype(), DType::F32);
  }
  const std::vector<const OpRecord*> ops = trace.of_kind(OpKind::Op);
  ASSERT_EQ(ops.size(), 3u) << trace.str();
  EXPECT_EQ(ops[0]->str(), "%2 = layer_norm_modulate(x=%0, shift=%1, scale=%1, eps=9.9999999999999995e-07) : BF16[2, 16, 32]");
  EXPECT_EQ(ops[1]->output.str(), "BF16[2, 16, 32]");
  EXPECT_EQ(ops[2]->output.str(), "F32[2, 16, 32]");
}

// ---- the SSA program ------------------------------------------------------------------

// Every input id names an earlier record, and every record's id is its index.
void expect_well_formed(const Trace& t) {
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const OpRecord& r = t.ops[i];
    EXPECT_EQ(r.id, static_cast<int64_t>(i)) << r.str();
    ASSERT_EQ(r.input_ids.size(), r.inputs.size()) << r.str();
    ASSERT_EQ(r.input_ids.size(), r.input_names.size()) << r.str();
    for (size_t k = 0; k < r.input_ids.size(); ++k) {
      ASSERT_GE(r.input_ids[k], 0) << r.str();
      ASSERT_LT(r.input_ids[k], r.id) << r.str();
      EXPECT_EQ(t.ops[static_cast<size_t>(r.input_ids[k])].output.shape, r.inputs[k].shape) << r.str();
    }
  }
}

TEST(RecordingSsa, ValueIdsCarryTheDataflow) {
  const Tensor x = Tensor::empty({4, 8}, DType::F32, Device::Meta);
  Trace trace;
  {
    RecordingScope rec(trace);
    const Tensor a = ops::silu(x);
    const Tensor b = ops::mul(a, x);
    const Tensor c = ops::add(b, a);
    (void)ops::softmax(c, -1);
  }
  expect_well_formed(trace);
  EXPECT_EQ(trace.str(),
            "%0 = input : F32[4, 8]\n"
            "%1 = silu(x=%0) : F32[4, 8]\n"
            "%2 = mul(a=%1, b=%0) : F32[4, 8]\n"
            "%3 = add(a=%2, b=%1) : F32[4, 8]\n"
            "%4 = softmax(x=%3, dim=1) : F32[4, 8]\n");
}

TEST(RecordingSsa, ViewsAreOpsWithTypedAttributes) {
  const Tensor x = Tensor::empty({2, 6, 4}, DType::BF16, Device::Meta);
  Trace trace;
  Tensor y;
  {
    RecordingScope rec(trace);
    y = x.view({2, 3, 2, 4}).permute({0, 2, 1, 3}).transpose(-1, -2).slice(2, 1, 100).select(0, -1)
            .unsqueeze(0).squeeze(0).reshape({-1}).to(DType::F32).clone();
    (void)x.contiguous();     // already contiguous: the same value, nothing recorded
    (void)x.to(DType::BF16);  // same dtype: nothing recorded
  }
  expect_well_formed(trace);
  ASSERT_EQ(trace.ops.size(), 11u) << trace.str();
  for (size_t i = 1; i < trace.ops.size(); ++i) {
    EXPECT_EQ(trace.ops[i].kind, OpKind::View) << trace.ops[i].str();
    EXPECT_EQ(trace.ops[i].input_ids, (std::vector<int64_t>{static_cast<int64_t>(i) - 1})) << trace.ops[i].str();
  }
  EXPECT_EQ(trace.ops[1].attr_as<std::vector<int64_t>>("shape"), (std::vector<int64_t>{2, 3, 2, 4}));
  EXPECT_EQ(trace.ops[2].attr_as<std::vector<int64_t>>("dims"), (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_EQ(trace.ops[3].name, "permute");  // transpose(-1, -2), as its permutation
  EXPECT_EQ(trace.ops[3].attr_as<std::vector<int64_t>>("dims"), (std::vector<int64_t>{0, 1, 3, 2}));
  EXPECT_EQ(trace.ops[4].str(), "%4 = slice(x=%3, dim=2, start=1, end=4, step=1) : BF16[2, 2, 3, 3]");
  EXPECT_EQ(trace.ops[5].attr_as<int64_t>("index"), 1);  // -1 normalised
  EXPECT_EQ(trace.ops[6].name, "unsqueeze");
  EXPECT_EQ(trace.ops[7].name, "squeeze");
  EXPECT_EQ(trace.ops[8].name, "reshape");  // of a non-contiguous value: one record, no hidden copy
  EXPECT_EQ(trace.ops[8].output.shape, (Shape{18}));
  EXPECT_EQ(trace.ops[9].name, "cast");
  EXPECT_EQ(trace.ops[9].attr_as<DType>("dtype"), DType::F32);
  EXPECT_EQ(trace.ops[10].name, "copy");
  EXPECT_EQ(trace.meta_ids.at(y.meta_value()), 10);
}

TEST(RecordingSsa, ParamsByNameOnceAndConstantsByValue) {
  const Tensor x = Tensor::empty({3, 4}, DType::F32, Device::Meta);
  const Tensor w = randn({5, 4}, 1), b = randn({5}, 2), anon = randn({70, 5}, 3);
  set_param_name(w, "blocks.0.ffn.0.weight");
  set_param_name(b, "blocks.0.ffn.0.bias");
  EXPECT_EQ(param_name(w), "blocks.0.ffn.0.weight");
  EXPECT_EQ(param_name(w.view({20})), "");  // a view is a different tensor
  const Tensor shift = Tensor::from_f32({0.5f, -1.0f, 2.0f, 0.25f, 3.0f}, {5});
  Trace trace;
  {
    RecordingScope rec(trace);
    const Tensor y = ops::linear(x, w, b);
    (void)ops::linear(y, anon);
    (void)ops::add(ops::linear(x, w, b), shift);
  }
  expect_well_formed(trace);
  const auto params = trace.of_kind(OpKind::Param);
  ASSERT_EQ(params.size(), 3u) << trace.str();  // w and b once each, however often read
  EXPECT_EQ(params[0]->param_name, "blocks.0.ffn.0.weight");
  EXPECT_EQ(params[0]->str(), "%1 = param \"blocks.0.ffn.0.weight\" : F32[5, 4]@cpu");
  EXPECT_EQ(params[1]->param_name, "blocks.0.ffn.0.bias");
  EXPECT_EQ(params[2]->param_name, "");  // unnamed and too large for a constant
  EXPECT_EQ(params[2]->output.shape, (Shape{70, 5}));
  const auto linears = trace.of_kind(OpKind::Op);
  EXPECT_EQ(linears[0]->input_ids, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(linears[2]->input_ids, (std::vector<int64_t>{0, 1, 2}));
  const auto constants = trace.of_kind(OpKind::Constant);
  ASSERT_EQ(constants.size(), 1u);
  EXPECT_EQ(constants[0]->values, (std::vector<double>{0.5, -1.0, 2.0, 0.25, 3.0}));
  EXPECT_EQ(constants[0]->str(), "%" + std::to_string(constants[0]->id) + " = constant [0.5, -1, 2, 0.25, 3] : F32[5]@cpu");
}

TEST(RecordingSsa, ShapeOnlyWeightsAreParamsByName) {
  const Tensor w = Tensor::empty({6, 4}, DType::BF16, Device::Meta);
  set_param_name(w, "head.weight");
  Trace trace;
  {
    RecordingScope rec(trace);
    (void)ops::linear(Tensor::empty({2, 4}, DType::BF16, Device::Meta), w);
  }
  ASSERT_EQ(trace.ops.size(), 3u) << trace.str();
  EXPECT_EQ(trace.ops[0].kind, OpKind::Input);
  EXPECT_EQ(trace.ops[1].kind, OpKind::Param);
  EXPECT_EQ(trace.ops[1].str(), "%1 = param \"head.weight\" : BF16[6, 4]");
}

TEST(RecordingSsa, CollectivesAreOps) {
  const Tensor x = Tensor::empty({2, 8}, DType::F32, Device::Meta);
  Trace trace;
  {
    RecordingScope rec(trace);
    const Tensor g = record_collective("all_gather", ops::silu(x), {4, 8}, {{"group_size", int64_t{2}}, {"dim", int64_t{0}}});
    (void)ops::sum(g, 0);
  }
  expect_well_formed(trace);
  const auto coll = trace.of_kind(OpKind::Collective);
  ASSERT_EQ(coll.size(), 1u) << trace.str();
  EXPECT_EQ(coll[0]->str(), "%2 = all_gather(x=%1, group_size=2, dim=0) : F32[4, 8]");
  EXPECT_EQ(trace.of_kind(OpKind::Op)[1]->input_ids[0], coll[0]->id);
  EXPECT_THROW(record_collective("all_gather", randn({2}, 1), {4}, {}), Error);
}

// A name is keyed by buffer and offset; a freed buffer's address handed to a new tensor
// (the host cache reuses a freed block of the same size) must not inherit the name.
TEST(RecordingSsa, ANameDiesWithItsBuffer) {
  host_memory::trim();  // no other cached block to hand out instead
  const void* address = nullptr;
  {
    const Tensor w = Tensor::empty({1 << 19}, DType::F32);  // 2 MiB: a cached block
    set_param_name(w, "old.weight");
    EXPECT_EQ(param_name(w), "old.weight");
    address = w.data_ptr();
  }
  const Tensor reused = Tensor::empty({1 << 19}, DType::F32);
  ASSERT_EQ(reused.data_ptr(), address) << "the premise: the host cache hands out the freed block again";
  EXPECT_EQ(param_name(reused), "");
}
