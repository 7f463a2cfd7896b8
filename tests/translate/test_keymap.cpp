// The translator's mechanics on small in-memory sources: pattern matching,
// strict coverage (unused keys, missing parameters, shape mismatches, all
// named), and every transform with real values.
#include <gtest/gtest.h>

#include "translate/translate.h"

using namespace vidax;
using namespace vidax::translate;

TEST(KeyMapPattern, CapturesSegments) {
  std::map<std::string, std::string> caps;
  EXPECT_TRUE(match_pattern("blocks.{i}.self_attn.q.{p}", "blocks.12.self_attn.q.weight", &caps));
  EXPECT_EQ(caps["i"], "12");
  EXPECT_EQ(caps["p"], "weight");
  EXPECT_FALSE(match_pattern("blocks.{i}.self_attn.q.{p}", "blocks.12.self_attn.q.weight.x", nullptr));
  EXPECT_FALSE(match_pattern("blocks.{i}.q", "blocks.1.2.q", nullptr));  // {i} is one segment
  EXPECT_TRUE(match_pattern("a.{rest*}.w", "a.b.c.d.w", &caps));
  EXPECT_EQ(caps["rest"], "b.c.d");
  EXPECT_FALSE(match_pattern("a.{rest*}", "a", nullptr));  // one or more
  EXPECT_TRUE(match_pattern("{x}.{x}", "k.k", nullptr));   // a capture used twice must agree
  EXPECT_FALSE(match_pattern("{x}.{x}", "k.j", nullptr));
  EXPECT_EQ(substitute("blocks.{i}.attn1.to_q.{p}", {{"i", "3"}, {"p", "bias"}}), "blocks.3.attn1.to_q.bias");
  EXPECT_THROW(substitute("x.{missing}", {}), Error);
}

TEST(KeyMapPattern, FirstMatchingRuleWins) {
  KeyMap m{"test", {key_rule("head.modulation", "scale_shift_table"), key_rule("{a}.modulation", "{a}.table"),
                    key_rule("{n*}", "{n}")}};
  EXPECT_EQ(resolve(m, "head.modulation")->keys, std::vector<std::string>{"scale_shift_table"});
  EXPECT_EQ(resolve(m, "x.modulation")->keys, std::vector<std::string>{"x.table"});
  EXPECT_EQ(resolve(m, "x.y.z")->keys, std::vector<std::string>{"x.y.z"});
  KeyMap none{"none", {key_rule("a.b", "c")}};
  EXPECT_FALSE(resolve(none, "a.c").has_value());
}

namespace {
ParamSpec two_params() {
  ParamSpec s;
  s.add("a.weight", {4, 3});
  s.add("a.bias", {4});
  return s;
}
KeyMap renamed() { return KeyMap{"renamed", {key_rule("a.{p}", "layer.{p}")}}; }
}  // namespace

TEST(Plan, CompleteWhenEveryKeyAndParameterMatch) {
  MemorySource src;
  src.add("layer.weight", DType::BF16, {4, 3});
  src.add("layer.bias", DType::BF16, {4});
  Plan p = plan(src, two_params(), renamed());
  EXPECT_TRUE(p.complete()) << p.problems();
  EXPECT_EQ(p.bound.size(), 2u);
  EXPECT_EQ(p.consumed_keys, 2u);
}

TEST(Plan, NamesUnusedMissingAndMismatchedInFull) {
  MemorySource src;
  src.add("layer.weight", DType::F32, {4, 5});  // wrong shape
  src.add("layer.extra", DType::F32, {1});      // not a parameter
  src.add("other.thing", DType::F32, {2});      // not a parameter
  Plan p = plan(src, two_params(), renamed());
  EXPECT_FALSE(p.complete());
  EXPECT_EQ(p.unused_keys, (std::vector<std::string>{"layer.extra", "other.thing"}));
  ASSERT_EQ(p.missing.size(), 1u);
  EXPECT_EQ(p.missing[0].param.name, "a.bias");
  EXPECT_EQ(p.missing[0].looked_for, std::vector<std::string>{"layer.bias"});
  ASSERT_EQ(p.mismatches.size(), 1u);
  EXPECT_EQ(p.mismatches[0].key, "layer.weight");
  std::string text = p.problems();
  for (const char* s : {"unused: layer.extra", "unused: other.thing", "missing: a.bias [4]", "'layer.bias'",
                        "mismatch: a.weight expects [4, 3], key 'layer.weight' has [4, 5]"})
    EXPECT_NE(text.find(s), std::string::npos) << s << "\n" << text;
  // Strict by default; the flags relax only what they name; shape errors always fail.
  EXPECT_THROW(check(p, {}, "ckpt"), Error);
  TranslateOptions lax;
  lax.allow_unused = lax.allow_missing = true;
  EXPECT_THROW(check(p, lax, "ckpt"), Error);
}

TEST(Plan, AllowFlagsRelaxOnlyWhatTheyName) {
  MemorySource src;
  src.add("layer.weight", Tensor::from_f32(std::vector<float>(12, 1.f), {4, 3}));
  src.add("layer.extra", Tensor::from_f32({1.f}, {1}));
  Plan p = plan(src, two_params(), renamed());  // a.bias missing, layer.extra unused
  TranslateOptions only_unused;
  only_unused.allow_unused = true;
  try {
    check(p, only_unused, "ckpt");
    FAIL() << "missing a.bias must still fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing: a.bias"), std::string::npos);
    EXPECT_EQ(std::string(e.what()).find("unused:"), std::string::npos);
  }
  TranslateOptions both;
  both.allow_unused = both.allow_missing = true;
  auto out = materialize(src, p, both);
  EXPECT_EQ(out.size(), 1u);
  EXPECT_TRUE(out.count("a.weight"));
}

TEST(Materialize, IdentityIsZeroCopyAndCastConverts) {
  MemorySource src;
  Tensor w = Tensor::from_f32({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {4, 3});
  src.add("layer.weight", w);
  src.add("layer.bias", Tensor::from_f32({1.00390625f, 2, 3, 4}, {4}));
  Plan p = plan(src, two_params(), renamed());
  auto out = materialize(src, p, {});
  EXPECT_EQ(out["a.weight"].data_ptr(), w.data_ptr());  // a view of the stored tensor, no copy
  TranslateOptions cast;
  cast.cast = DType::BF16;
  auto bf = materialize(src, p, cast);
  EXPECT_EQ(bf["a.bias"].dtype(), DType::BF16);
  EXPECT_EQ(bf["a.bias"].to_f32_vector(), (std::vector<float>{1, 2, 3, 4}));  // RNE like torch
}

TEST(Materialize, TransposeReshapeConcatSplit) {
  MemorySource src;
  src.add("t", Tensor::from_f32({0, 1, 2, 3, 4, 5}, {2, 3}));
  src.add("r", Tensor::from_f32({0, 1, 2, 3, 4, 5}, {6}));
  src.add("q", Tensor::from_f32({1, 2}, {1, 2}));
  src.add("k", Tensor::from_f32({3, 4}, {1, 2}));
  src.add("v", Tensor::from_f32({5, 6, 7, 8}, {2, 2}));
  src.add("qkv", Tensor::from_f32({10, 11, 20, 21, 30, 31}, {3, 2}));
  ParamSpec s;
  s.add("eng.t", {3, 2});
  s.add("eng.r", {2, 3});
  s.add("eng.fused", {4, 2});
  s.add("eng.q", {1, 2});
  s.add("eng.k", {1, 2});
  s.add("eng.v", {1, 2});
  KeyMap m{"test", {}};
  Rule t = key_rule("eng.t", "t");
  t.transform = Transform::Transpose;
  Rule r = key_rule("eng.r", "r");
  r.transform = Transform::Reshape;
  Rule f = alias_rule("eng.fused", {"q", "k", "v"});
  f.transform = Transform::Concat;
  m.rules = {t, r, f};
  int part = 0;
  for (const char* n : {"eng.q", "eng.k", "eng.v"}) {
    Rule sp = key_rule(n, "qkv");
    sp.transform = Transform::Split;
    sp.parts = 3;
    sp.part = part++;
    m.rules.push_back(sp);
  }
  // The plan carries its rules: it stays valid after the map is gone.
  Plan p = plan(src, s, KeyMap(m));
  for (auto& rule : m.rules) rule.dim = rule.dim2 = rule.part = 7;
  ASSERT_TRUE(p.complete()) << p.problems();
  auto out = materialize(src, p, {});
  EXPECT_EQ(out["eng.t"].to_f32_vector(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_TRUE(out["eng.t"].is_contiguous());
  EXPECT_EQ(out["eng.r"].shape(), (Shape{2, 3}));
  EXPECT_EQ(out["eng.fused"].to_f32_vector(), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(out["eng.q"].to_f32_vector(), (std::vector<float>{10, 11}));
  EXPECT_EQ(out["eng.v"].to_f32_vector(), (std::vector<float>{30, 31}));
  // A split along dim 0 is a view of the stored tensor.
  EXPECT_EQ(out["eng.k"].buffer().get(), src.get("qkv").buffer().get());
}

TEST(Plan, ConcatAndSplitCheckShapes) {
  MemorySource src;
  src.add("q", DType::F32, {2, 2});
  src.add("k", DType::F32, {2, 3});  // wrong inner dim
  src.add("qkv", DType::F32, {7, 2});  // not divisible by 3
  ParamSpec s;
  s.add("fused", {4, 2});
  s.add("q_part", {2, 2});
  Rule f = alias_rule("fused", {"q", "k"});
  f.transform = Transform::Concat;
  Rule sp = key_rule("q_part", "qkv");
  sp.transform = Transform::Split;
  sp.parts = 3;
  Plan p = plan(src, s, KeyMap{"t", {f, sp}});
  ASSERT_EQ(p.mismatches.size(), 2u) << p.problems();
  EXPECT_EQ(p.mismatches[0].key, "k");
  EXPECT_EQ(p.mismatches[1].key, "qkv");
  // A missing part is named.
  MemorySource one;
  one.add("q", DType::F32, {2, 2});
  Plan p2 = plan(one, s, KeyMap{"t", {f, sp}});
  ASSERT_EQ(p2.missing.size(), 2u);
  EXPECT_EQ(p2.missing[0].looked_for, std::vector<std::string>{"k"});
}

// diffusers' AdaLayerNormContinuous stores [scale; shift] where HunyuanVideo's FinalLayer stores
// [shift; scale]: the halves along dim 0 are swapped; an odd size is a mismatch.
TEST(Plan, SwapHalvesSwapsTheTwoHalves) {
  MemorySource src;
  src.add("norm_out.linear.weight", Tensor::from_f32({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}));
  src.add("odd", DType::F32, {3, 2});
  ParamSpec s;
  s.add("final.weight", {4, 2});
  Rule r = key_rule("final.weight", "norm_out.linear.weight");
  r.transform = Transform::SwapHalves;
  Plan p = plan(src, s, KeyMap{"t", {r}, {"odd"}});
  ASSERT_TRUE(p.complete()) << p.problems();
  EXPECT_EQ(materialize(src, p, {}).at("final.weight").to_f32_vector(), (std::vector<float>{5, 6, 7, 8, 1, 2, 3, 4}));
  ParamSpec odd;
  odd.add("final.weight", {3, 2});
  Rule ro = key_rule("final.weight", "odd");
  ro.transform = Transform::SwapHalves;
  EXPECT_EQ(plan(src, odd, KeyMap{"t", {ro}, {}}).mismatches.size(), 1u);
}

TEST(Plan, AliasesConsumeTiedDuplicates) {
  ParamSpec s;
  s.add("token_embedding.weight", {10, 4});
  KeyMap m{"t", {alias_rule("token_embedding.weight", {"shared.weight", "encoder.embed_tokens.weight"})}};
  MemorySource both;
  both.add("shared.weight", DType::BF16, {10, 4});
  both.add("encoder.embed_tokens.weight", DType::BF16, {10, 4});
  EXPECT_TRUE(plan(both, s, m).complete());
  MemorySource second_only;
  second_only.add("encoder.embed_tokens.weight", DType::BF16, {10, 4});
  Plan p = plan(second_only, s, m);
  EXPECT_TRUE(p.complete());
  EXPECT_EQ(p.bound[0].keys, std::vector<std::string>{"encoder.embed_tokens.weight"});
  MemorySource differ;
  differ.add("shared.weight", DType::BF16, {10, 4});
  differ.add("encoder.embed_tokens.weight", DType::BF16, {11, 4});
  EXPECT_EQ(plan(differ, s, m).mismatches.size(), 1u);
}
