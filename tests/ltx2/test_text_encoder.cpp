// The LTX-2 text path (Gemma-3 hidden states -> feature extractor) against the official
// LTXGemmaTextEncoder.encode + FeatureExtractorV1 / V2 on a tiny transformers Gemma-3
// (tests/golden/ltx2/ltx2_text_gemma3_*.safetensors, tools/golden/ltx2_text.py): fp32 through kind
// ltx2.text.gemma3; controls that must fail (a changed norm / q_norm weight, the sliding window,
// a pad token's id, the local rope theta); bad config, mask and parameters.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "backend/ops.h"
#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "models/ltx2/text_encoder.h"
#include "parity/parity.h"
#include "ltx2_golden.h"
#include "test_diff.h"
#include "text/gemma3_encoder.h"
#include "translate/inspect.h"
#include "translate/source.h"

using namespace vidax;
namespace fs = std::filesystem;

namespace {

using test::ltx2::expect_error;
using test::ltx2::golden;
using test::ltx2::max_abs_diff;

struct Loaded {
  io::Checkpoint file;
  nlohmann::json config;
  std::map<std::string, Tensor> lm, fe;
};

Loaded load(const char* name) {
  Loaded l{io::Checkpoint::open(golden(name)), {}, {}, {}};
  l.config = nlohmann::json::parse(l.file.metadata().at("config"));
  const std::string pre = "feature_extractor.";
  for (const std::string& n : l.file.names()) {
    if (translate::is_golden_io_key(n)) continue;
    if (n.rfind(pre, 0) == 0)
      l.fe[n.substr(pre.size())] = l.file.get(n);
    else
      l.lm[n] = l.file.get(n);
  }
  return l;
}

auto lookup(const std::map<std::string, Tensor>& m) {
  return [&m](const std::string& n) { auto it = m.find(n); return it == m.end() ? Tensor() : it->second; };
}

ltx2::TextFeatures run(const Loaded& l, const text::Gemma3Config& cfg, const std::map<std::string, Tensor>& lm,
                       const Tensor& ids) {
  const text::Gemma3TextEncoder enc(cfg, lookup(lm));
  const ltx2::FeatureExtractor fe(ltx2::feature_extractor_version(l.config.at("feature_extractor")), cfg, lookup(l.fe));
  const Tensor mask = l.file.get("input.attention_mask");
  return fe.forward(enc.hidden_states(ids, mask), mask);
}


void expect_golden(const char* name, int outputs = 2) {
  EXPECT_EQ(test::ltx2::expect_golden_rows(name).compared, outputs);
}


}  // namespace

// LTX-2 19B's extractor (masked mean / range per prompt), linear rope scaling on the full layer,
// window 3 over 8 tokens, one prompt left-padded by 3.
TEST(Ltx2TextGolden, Gemma3FeatureExtractorV1MatchesTheReferenceFp32) {
  expect_golden("ltx2_text_gemma3_v1.safetensors");
}
// LTX-2.3's extractor (per-token RMS, video and audio projections), GQA 4:1, a prompt padded by 5.
TEST(Ltx2TextGolden, Gemma3FeatureExtractorV2MatchesTheReferenceFp32) {
  expect_golden("ltx2_text_gemma3_v2.safetensors");
}

// The whole text path as the pipeline runs it (EmbeddingsProcessor.process_hidden_states): ids ->
// Gemma-3 -> V2 extractor -> video / audio connectors with registers.
TEST(Ltx2TextGolden, Gemma3ThroughTheConnectorsMatchesTheReferenceFp32) {
  expect_golden("ltx2_text_gemma3_v2_context.safetensors", 5);
}

TEST(Ltx2Text, ConfigReadsTheGoldenLayout) {
  const Loaded l = load("ltx2_text_gemma3_v1.safetensors");
  const text::Gemma3Config c = text::Gemma3Config::from_json(l.config.at("text_config"));
  EXPECT_EQ(c.sliding, (std::vector<bool>{true, true, false}));
  EXPECT_EQ(c.sliding_window, 3);
  EXPECT_EQ(c.query_pre_attn_scalar, 16);
  EXPECT_EQ(c.full_rope, (text::Gemma3Rope{"linear", 1000000.0, 8.0}));
  EXPECT_EQ(c.sliding_rope, (text::Gemma3Rope{"default", 10000.0, 1.0}));
  // The older spelling: rope_theta + rope_scaling + rope_local_base_freq, layer types from the pattern.
  nlohmann::json old = {{"model_type", "gemma3_text"}, {"num_hidden_layers", 7}, {"rope_theta", 1e6},
                        {"rope_local_base_freq", 1e4}, {"rope_scaling", {{"rope_type", "linear"}, {"factor", 8.0}}}};
  const text::Gemma3Config o = text::Gemma3Config::from_json({{"text_config", old}});
  EXPECT_EQ(o.sliding, (std::vector<bool>{true, true, true, true, true, false, true}));
  EXPECT_EQ(o.full_rope, (text::Gemma3Rope{"linear", 1000000.0, 8.0}));
  EXPECT_EQ(o.sliding_rope.theta, 1e4);
}

// Changed weights, the window, a rope theta and a pad's id: each must (or must not) move the output.
TEST(Ltx2Text, ControlsFail) {
  const Loaded l = load("ltx2_text_gemma3_v1.safetensors");
  const text::Gemma3Config cfg = text::Gemma3Config::from_json(l.config.at("text_config"));
  const Tensor ids = l.file.get("input.input_ids"), want = l.file.get("output.video");
  EXPECT_LE(max_abs_diff(run(l, cfg, l.lm, ids).video, want), 1e-5);
  for (const char* key : {"layers.0.self_attn.q_norm.weight", "layers.2.post_feedforward_layernorm.weight",
                          "norm.weight", "layers.1.pre_feedforward_layernorm.weight"}) {
    auto lm = l.lm;
    ASSERT_TRUE(lm.count(key)) << key;
    lm[key] = ops::add_scalar(lm[key], 0.1);
    EXPECT_GT(max_abs_diff(run(l, cfg, lm, ids).video, want), 1e-4) << key;
  }
  text::Gemma3Config wide = cfg;
  wide.sliding_window = 8;
  EXPECT_GT(max_abs_diff(run(l, wide, l.lm, ids).video, want), 1e-4) << "sliding window";
  text::Gemma3Config theta = cfg;
  theta.sliding_rope.theta = 20000.0;
  EXPECT_GT(max_abs_diff(run(l, theta, l.lm, ids).video, want), 1e-4) << "local rope theta";
  // Row 0's first 3 positions are pads: another id there changes nothing (keys masked, rows zeroed).
  std::vector<int64_t> v;
  for (double d : ids.to_f64_vector()) v.push_back(static_cast<int64_t>(d));
  v[0] = 5;
  v[1] = 9;
  EXPECT_LE(max_abs_diff(run(l, cfg, l.lm, Tensor::from_i64(v, ids.shape())).video, want), 1e-5);
  v[4] = (v[4] + 1) % cfg.vocab_size;  // a token of row 0 moves row 0
  EXPECT_GT(max_abs_diff(run(l, cfg, l.lm, Tensor::from_i64(v, ids.shape())).video, want), 1e-4);
}

TEST(Ltx2Text, BadInputAndConfigFail) {
  const Loaded l = load("ltx2_text_gemma3_v1.safetensors");
  const text::Gemma3Config cfg = text::Gemma3Config::from_json(l.config.at("text_config"));
  const text::Gemma3TextEncoder enc(cfg, lookup(l.lm));
  const Tensor ids = l.file.get("input.input_ids");
  expect_error([&] { enc.hidden_states(ids, Tensor::from_i64({1, 1, 0, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {2, 8})); },
               "expected 0 or 1");
  expect_error([&] { enc.hidden_states(ids, Tensor::from_i64(std::vector<int64_t>(16, 0), {2, 8})); }, "has no tokens");
  expect_error([&] { enc.hidden_states(Tensor::from_i64({0, 64}, {1, 2}), std::nullopt); }, "outside the vocabulary");
  auto j = l.config.at("text_config");
  auto bad = [&](const char* key, nlohmann::json v, const std::string& needle) {
    auto k = j;
    k[key] = v;
    expect_error([&] { text::Gemma3Config::from_json(k); }, needle);
  };
  bad("hidden_activation", "gelu", "hidden_activation");
  bad("attn_logit_softcapping", 50.0, "attn_logit_softcapping");
  bad("use_bidirectional_attention", true, "use_bidirectional_attention");
  bad("layer_types", {"full_attention"}, "one type per layer");
  bad("rope_parameters", {{"full_attention", {{"rope_type", "yarn"}, {"factor", 2.0}}}}, "yarn");
  auto lm = l.lm;
  lm.erase("layers.1.self_attn.k_norm.weight");
  expect_error([&] { text::Gemma3TextEncoder(cfg, lookup(lm)); }, "layers.1.self_attn.k_norm.weight");
  expect_error([&] { ltx2::feature_extractor_version("v3"); }, "v3");
}

// BF16 compute against the fp32 reference: relative L2 within the bf16 bound, and not the fp32
// values (the run really rounds).
TEST(Ltx2TextGolden, Gemma3Bf16WithinTheBf16Bound) {
  engine::register_builtins();
  for (const char* name : {"ltx2_text_gemma3_v1.safetensors", "ltx2_text_gemma3_v2.safetensors"}) {
    parity::Options opt;
    opt.precision = "bf16";
    const parity::Report rep = parity::run(golden(name), opt);
    EXPECT_EQ(rep.compared, 2);
    for (const auto& c : rep.rows) {
      std::printf("  %s bf16 %-12s max_abs=%.3g rel_l2=%.3g\n", name, c.name.c_str(), c.max_abs, c.rel_l2);
      EXPECT_EQ(c.status, parity::Comparison::Status::Ok) << c.name << " " << c.note;
      EXPECT_LE(c.rel_l2, 1e-2) << c.name;
      EXPECT_GT(c.max_abs, 1e-5) << c.name;
    }
  }
  const Loaded l = load("ltx2_text_gemma3_v1.safetensors");
  const text::Gemma3Config cfg = text::Gemma3Config::from_json(l.config.at("text_config"));
  expect_error([&] { text::Gemma3TextEncoder(cfg, lookup(l.lm), DType::F16); }, "F32 or BF16");
  const text::Gemma3TextEncoder enc(cfg, lookup(l.lm), DType::BF16);
  const auto hs = enc.hidden_states(l.file.get("input.input_ids"), l.file.get("input.attention_mask"));
  for (const Tensor& h : hs) EXPECT_EQ(h.dtype(), DType::BF16);
}

// The checkpoint layouts: the golden's parameters renamed as each layout stores them load back to
// Gemma3TextModel's names; the multimodal checkpoint's vision tower and LM head are ignored by name,
// anything else unknown is refused; the config round-trips and its dims are inferred from shapes.
TEST(Ltx2Text, Gemma3KeyMapsAndConfig) {
  const Loaded l = load("ltx2_text_gemma3_v1.safetensors");
  const text::Gemma3Config cfg = text::Gemma3Config::from_json(l.config.at("text_config"));
  EXPECT_EQ(text::Gemma3Config::from_json(cfg.to_json()), cfg);
  const std::map<std::string, std::string> prefixes{{"transformers", ""},
                                                    {"causal-lm", "model."},
                                                    {"multimodal", "language_model.model."},
                                                    {"multimodal-v5", "model.language_model."}};
  for (const auto& [layout, prefix] : prefixes) {
    translate::MemorySource src(layout);
    for (const auto& [k, v] : l.lm) src.add(prefix + k, v);
    if (layout == "multimodal") {
      src.add("vision_tower.vision_model.embeddings.patch_embedding.weight", Tensor::zeros({2, 2}, DType::F32));
      src.add("multi_modal_projector.mm_input_projection_weight", Tensor::zeros({2, 2}, DType::F32));
    }
    const auto got = translate::load(src, text::gemma3_component(), cfg.to_json());
    ASSERT_EQ(got.size(), l.lm.size()) << layout;
    for (const auto& [k, v] : l.lm) {
      ASSERT_TRUE(got.count(k)) << layout << " " << k;
      EXPECT_EQ(max_abs_diff(v, got.at(k)), 0.0) << layout << " " << k;
    }
    const text::Gemma3Config inferred =
        text::Gemma3Config::from_json(text::gemma3_component().infer_config(src, layout));
    EXPECT_EQ(inferred.vocab_size, cfg.vocab_size) << layout;
    EXPECT_EQ(inferred.hidden_size, cfg.hidden_size) << layout;
    EXPECT_EQ(inferred.intermediate_size, cfg.intermediate_size) << layout;
    EXPECT_EQ(inferred.num_hidden_layers, cfg.num_hidden_layers) << layout;
    EXPECT_EQ(inferred.head_dim, cfg.head_dim) << layout;
    EXPECT_EQ(inferred.num_attention_heads, cfg.num_attention_heads) << layout;
    EXPECT_EQ(inferred.num_key_value_heads, cfg.num_key_value_heads) << layout;
  }
  translate::MemorySource extra("extra");
  for (const auto& [k, v] : l.lm) extra.add("model." + k, v);
  extra.add("model.layers.7.self_attn.q_proj.weight", Tensor::zeros({32, 32}, DType::F32));
  expect_error([&] { translate::load(extra, text::gemma3_component(), cfg.to_json()); },
               "model.layers.7.self_attn.q_proj.weight");
  expect_error([&] { text::gemma3_keymap("gguf"); }, "unknown layout 'gguf'");
  EXPECT_EQ(text::gemma3_component().variant(text::gemma3_component().default_config()), "gemma-3-12b");
  EXPECT_EQ(text::gemma3_component().variant(cfg.to_json()), "custom");
}
