// HunyuanVideo 1.5's LLM text encoder (Qwen2.5-VL's language model) against the official
// TextEncoder on tiny transformers Qwen2.5-VL models (tests/golden/hunyuan15/hy15_text_qwen*.safetensors,
// tools/golden/hunyuan15_text.py): the hidden state the pipeline takes (skip layer, final norm,
// template crop, mask) at fp32 <= 1e-5; the chat-templated, truncated, padded tokens and crop_start
// against the official text2tokens (tests/text/data/qwen2_bpe_cases.json); end to end from the
// prompt strings; controls that must fail; bad input.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "backend/ops.h"
#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "models/hunyuan15/text_encoder.h"
#include "parity/parity.h"
#include "test_diff.h"
#include "test_expect.h"
#include "translate/inspect.h"
#include "translate/source.h"

using namespace vidax;
namespace fs = std::filesystem;

namespace {

std::string golden(const char* name) {
  return (fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "hunyuan15" / name).string();
}
const fs::path kTextData = fs::path(VIDAX_TEST_DATA_DIR) / "text" / "data";

const text::ByteLevelBpeTokenizer& qwen_tokenizer() {
  static const text::ByteLevelBpeTokenizer t = text::ByteLevelBpeTokenizer::from_dir((kTextData / "qwen2_bpe").string());
  return t;
}

void expect_golden(const char* name, const std::string& precision, double rel_bound, double abs_bound) {
  test::expect_parity_golden(golden(name), name, precision, rel_bound, abs_bound, 2);  // output, output.attention_mask
}

struct Qwen {
  io::Checkpoint file;
  nlohmann::json config;
  text::Qwen25VLTextConfig cfg;
  std::map<std::string, Tensor> params;
  translate::Match match;
};

Qwen load_qwen(const char* name) {
  const std::string path = golden(name);
  Qwen q{io::Checkpoint::open(path), {}, {}, {}, {}};
  q.config = nlohmann::json::parse(q.file.metadata().at("config"));
  q.cfg = text::Qwen25VLTextConfig::from_json(q.config.at("text_encoder_config"));
  translate::MemorySource src(path);
  for (const std::string& n : q.file.names())
    if (!translate::is_golden_io_key(n)) src.add(n, q.file.get(n));
  q.match = translate::match(src, text::qwen25_vl_text_component(), q.cfg.to_json());
  q.params = translate::load(src, text::qwen25_vl_text_component(), q.cfg.to_json());
  return q;
}

text::LlamaTextEncoder build(const Qwen& q, const std::map<std::string, Tensor>& params) {
  return text::LlamaTextEncoder(q.cfg.llama, [&](const std::string& n) { return params.at(n); });
}

hunyuan::LlmEncoding encode(const Qwen& q, const std::map<std::string, Tensor>& params) {
  return hunyuan::encode_llm(build(q, params), q.file.get("input.input_ids"), q.file.get("input.attention_mask"),
                             hunyuan15::encode_options(q.config));
}

using test::expect_error;

}  // namespace

TEST(Hunyuan15TextQwen, PipelineDefaultsVideoTemplateFp32) { expect_golden("hy15_text_qwen.safetensors", "fp32", 1e-5, 1e-5); }
TEST(Hunyuan15TextQwen, PublishedLayoutFinalNormImageTemplateFp32) {
  expect_golden("hy15_text_qwen_published.safetensors", "fp32", 1e-5, 1e-5);
}
// bf16 compute (not a reference mode here) against the fp32 reference.
TEST(Hunyuan15TextQwen, Bf16IsWithinItsBound) { expect_golden("hy15_text_qwen.safetensors", "bf16", 1e-2, 0.1); }

// The layouts: the text model's own names, and Qwen2.5-VL as published (model.*; lm_head and the
// vision tower consumed by name, unread).
TEST(Hunyuan15TextQwen, LayoutsAreDetected) {
  const Qwen bare = load_qwen("hy15_text_qwen.safetensors");
  EXPECT_EQ(bare.match.layout, "transformers");
  EXPECT_TRUE(bare.match.plan.ignored_keys.empty());
  const Qwen pub = load_qwen("hy15_text_qwen_published.safetensors");
  EXPECT_EQ(pub.match.layout, "qwen2.5-vl");
  ASSERT_FALSE(pub.match.plan.ignored_keys.empty());
  size_t visual = 0;
  for (const std::string& k : pub.match.plan.ignored_keys) visual += k.rfind("visual.", 0) == 0;
  EXPECT_EQ(visual + 1, pub.match.plan.ignored_keys.size());  // + lm_head.weight
  // The published config's flat spelling and rope_scaling "mrope" read as transformers reads them.
  EXPECT_EQ(pub.cfg.llama.rope_theta, 10000.0);
  EXPECT_EQ(pub.cfg.mrope_section, (std::vector<int64_t>{1, 1, 2}));
  EXPECT_TRUE(pub.cfg.llama.attention_bias);
  EXPECT_FALSE(pub.cfg.llama.o_proj_bias);
  EXPECT_EQ(text::Qwen25VLTextConfig::from_json(pub.cfg.to_json()), pub.cfg);
}

// The in-memory state dicts of transformers 5 (Qwen2_5_VLForConditionalGeneration: model.language_model.*;
// Qwen2_5_VLModel: language_model.*) are detected and give the same parameters.
TEST(Hunyuan15TextQwen, InMemoryLayoutsLoadTheSameParameters) {
  const Qwen q = load_qwen("hy15_text_qwen.safetensors");
  for (const auto& [prefix, layout] : std::vector<std::pair<std::string, std::string>>{
           {"model.language_model.", "qwen2.5-vl-v5"}, {"language_model.", "qwen2.5-vl-model"}}) {
    translate::MemorySource src("renamed");
    for (const auto& [name, t] : q.params) src.add(prefix + name, t);
    src.add(prefix == "language_model." ? "visual.merger.ln_q.weight" : "model.visual.merger.ln_q.weight",
            Tensor::zeros({4}, DType::F32));
    const translate::Match m = translate::match(src, text::qwen25_vl_text_component(), q.cfg.to_json());
    EXPECT_EQ(m.layout, layout);
    EXPECT_EQ(m.plan.ignored_keys.size(), 1u);
    const auto params = translate::load(src, text::qwen25_vl_text_component(), q.cfg.to_json());
    EXPECT_EQ(test::diff(q.file.get("output"), encode(q, params).hidden_state).max_abs,
              test::diff(q.file.get("output"), encode(q, q.params).hidden_state).max_abs);
  }
  // data_type "video" crops with prompt_template_video's crop_start when the args hold one.
  nlohmann::json cfg = q.config;
  cfg["prompt_template_video"] = {{"name", "li-dit-encode-video-json"}, {"crop_start", 100}};
  EXPECT_EQ(hunyuan15::encode_options(cfg).crop_start, 100);
  cfg["data_type"] = "image";
  EXPECT_EQ(hunyuan15::encode_options(cfg).crop_start, 136);
  cfg["data_type"] = "video";
  cfg["prompt_template"] = nullptr;  // TextEncoder.encode crops only with a prompt_template (use_template)
  EXPECT_EQ(hunyuan15::encode_options(cfg).crop_start, 0);
  cfg["data_type"] = "audio";
  expect_error([&] { hunyuan15::encode_options(cfg); }, "data_type 'audio'");
}

// Controls: each must move the output beyond the bound.
TEST(Hunyuan15TextQwen, PerturbedInputsFail) {
  const Qwen q = load_qwen("hy15_text_qwen.safetensors");
  const Tensor want = q.file.get("output");
  EXPECT_LE(test::diff(want, encode(q, q.params).hidden_state).max_abs, 1e-5);
  // A q_proj bias (Qwen2's, which Llama's layout would not have) scaled by 1.05.
  auto params = q.params;
  const Tensor& qb = params.at("layers.0.self_attn.q_proj.bias");
  params["layers.0.self_attn.q_proj.bias"] = ops::mul(qb, Tensor::full(qb.shape(), 1.05, DType::F32));
  EXPECT_GT(test::diff(want, encode(q, params).hidden_state).max_abs, 1e-4);
  // Another skip layer (hidden_states[-2] instead of [-3]).
  nlohmann::json cfg = q.config;
  cfg["hidden_state_skip_layer"] = 1;
  const auto e = hunyuan::encode_llm(build(q, q.params), q.file.get("input.input_ids"), q.file.get("input.attention_mask"),
                                     hunyuan15::encode_options(cfg));
  EXPECT_GT(test::diff(want, e.hidden_state).max_abs, 1e-3);
  // The padding not masked: the padded prompt's states change.
  const Tensor ones = Tensor::full(q.file.get("input.attention_mask").shape(), 1.0, DType::I64);
  const auto unmasked = hunyuan::encode_llm(build(q, q.params), q.file.get("input.input_ids"), ones,
                                            hunyuan15::encode_options(q.config));
  EXPECT_GT(test::diff(want, unmasked.hidden_state).max_abs, 1e-4);
}

// text2tokens against the official one (the fixture's "hunyuan15" section): the conversation,
// crop_start as the constructor computes it, truncation to text_len + crop_start, padding.
TEST(Hunyuan15TextQwen, TokenizedPromptsMatchTheOfficialText2Tokens) {
  std::ifstream f(kTextData / "qwen2_bpe_cases.json");
  const nlohmann::json fixture = nlohmann::json::parse(f);
  int truncated = 0, padded = 0;
  for (const auto& h : fixture.at("hunyuan15")) {
    const hunyuan15::ChatTemplate& tmpl = hunyuan15::prompt_template(h.at("template"));
    const int64_t crop = hunyuan15::crop_start(qwen_tokenizer(), tmpl);
    EXPECT_EQ(crop, h.at("crop_start").get<int64_t>()) << tmpl.name;
    const auto prompts = h.at("prompts").get<std::vector<std::string>>();
    const text::TokenizedBatch b = hunyuan15::text2tokens(qwen_tokenizer(), prompts, tmpl, h.at("max_length"), crop);
    const auto ids = h.at("input_ids").get<std::vector<std::vector<int64_t>>>();
    const auto mask = h.at("attention_mask").get<std::vector<std::vector<int64_t>>>();
    ASSERT_EQ(b.prompts.size(), ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      EXPECT_EQ(b.prompts[i].ids, ids[i]) << tmpl.name << " prompt " << i;
      EXPECT_EQ(b.prompts[i].mask, mask[i]) << tmpl.name << " prompt " << i;
      truncated += b.prompts[i].truncated;
      padded += mask[i].back() == 0;
    }
  }
  EXPECT_GT(truncated, 10);
  EXPECT_GT(padded, 2);
}

// End to end: the prompt strings of the golden's metadata -> text2tokens -> encode, against the
// official text2tokens + encode (the pipeline's encode_prompt calls).
TEST(Hunyuan15TextQwen, PromptsToHiddenStatesMatchTheOfficialEncoder) {
  for (const char* name : {"hy15_text_qwen.safetensors", "hy15_text_qwen_published.safetensors"}) {
    const Qwen q = load_qwen(name);
    const auto prompts = nlohmann::json::parse(q.file.metadata().at("prompts")).get<std::vector<std::string>>();
    const int64_t text_len = std::stoll(q.file.metadata().at("text_len"));
    const hunyuan15::ChatTemplate& tmpl = hunyuan15::prompt_template(q.config.at("prompt_template").at("name"));
    const int64_t crop = hunyuan15::crop_start(qwen_tokenizer(), tmpl);
    EXPECT_EQ(crop, q.config.at("prompt_template").at("crop_start").get<int64_t>()) << name;
    const text::TokenizedBatch b = hunyuan15::text2tokens(qwen_tokenizer(), prompts, tmpl, text_len, crop);
    EXPECT_EQ(b.ids.to_f64_vector(), q.file.get("input.input_ids").to_f64_vector()) << name;
    EXPECT_EQ(b.mask.to_f64_vector(), q.file.get("input.attention_mask").to_f64_vector()) << name;
    const hunyuan::LlmEncoding e =
        hunyuan::encode_llm(build(q, q.params), b.ids, b.mask, hunyuan15::encode_options(q.config));
    const test::Diff d = test::diff(q.file.get("output"), e.hidden_state);
    std::printf("  %s prompts -> hidden_state max_abs=%.3g rel_l2=%.3g\n", name, d.max_abs, d.rel_l2);
    EXPECT_LE(d.max_abs, 1e-5);
    EXPECT_EQ(e.attention_mask->to_f64_vector(), q.file.get("output.attention_mask").to_f64_vector());
  }
}

// M-RoPE on text positions is Llama's RoPE: transformers' Qwen2_5_VLRotaryEmbedding of the 7B
// (head_dim 128, mrope_section [16, 24, 24], theta 1e6; tests/hunyuan15/data/qwen_mrope_text.safetensors,
// tools/golden/hunyuan15_text.py) at positions up to the pipeline's 1107 equals cos / sin of
// position * inv_freq(), both halves (rotate-half), as LlamaTextEncoder computes them.
TEST(Hunyuan15TextQwen, MropeOnTextPositionsIsLlamaRope) {
  const io::Checkpoint f = io::Checkpoint::open(
      (fs::path(VIDAX_TEST_DATA_DIR) / "hunyuan15" / "data" / "qwen_mrope_text.safetensors").string());
  const std::vector<float> inv = text::Qwen25VLTextConfig::qwen25_vl_7b().llama.inv_freq();
  ASSERT_EQ(inv.size(), 64u);
  const std::vector<double> pos = f.get("positions").to_f64_vector(), cos = f.get("cos").to_f64_vector(),
                            sin = f.get("sin").to_f64_vector();
  ASSERT_EQ(cos.size(), pos.size() * 128);
  double worst = 0;
  for (size_t p = 0; p < pos.size(); ++p)
    for (size_t i = 0; i < 128; ++i) {
      const float angle = static_cast<float>(pos[p]) * inv[i % 64];
      worst = std::max({worst, std::abs(std::cos(angle) - cos[p * 128 + i]), std::abs(std::sin(angle) - sin[p * 128 + i])});
    }
  std::printf("  M-RoPE text tables vs Llama RoPE: max abs %.3g\n", worst);
  EXPECT_LE(worst, 1e-6);
}

// Qwen2.5-VL-7B-Instruct's language model without its head: 7,070,619,136 parameters.
TEST(Hunyuan15TextQwen, PublishedParameterCount) {
  const text::Qwen25VLTextConfig c = text::Qwen25VLTextConfig::qwen25_vl_7b();
  EXPECT_EQ(text::qwen25_vl_text_params(c).parameter_count(), 7070619136);
  EXPECT_EQ(text::qwen25_vl_text_component().variant(c.to_json()), "qwen2.5-vl-7b");
  EXPECT_EQ(text::Qwen25VLTextConfig::from_json(c.to_json()), c);
}

TEST(Hunyuan15TextQwen, BadInputIsRefused) {
  const Qwen q = load_qwen("hy15_text_qwen.safetensors");
  const text::LlamaTextEncoder llm = build(q, q.params);
  // A token id outside the vocabulary.
  const Tensor bad_ids = Tensor::from_i64({1, 5, 928}, {1, 3});
  expect_error([&] { llm.hidden_state(bad_ids, std::nullopt, 1); }, "token id 928 outside the vocabulary [0, 928)");
  // A tokenizer.json of another model type: Llama-3's pre-tokenizer.
  const auto llama = text::ByteLevelBpeTokenizer::from_dir((kTextData / "llama3_bpe").string());
  expect_error([&] { hunyuan15::crop_start(llama, hunyuan15::prompt_template(hunyuan15::kVideoTemplate)); },
               "must be Qwen2.5-VL's (Qwen2's pre-tokenizer); this one has llama3's");
  expect_error([] { hunyuan15::prompt_template("dit-llm-encode"); }, "unknown prompt template 'dit-llm-encode'");
  // Configs the encoder does not compute.
  nlohmann::json cfg = q.config.at("text_encoder_config");
  cfg["text_config"]["use_sliding_window"] = true;
  expect_error([&] { text::Qwen25VLTextConfig::from_json(cfg); }, "use_sliding_window");
  cfg = q.config.at("text_encoder_config");
  cfg["text_config"]["rope_parameters"]["mrope_section"] = {1, 1, 1};
  expect_error([&] { text::Qwen25VLTextConfig::from_json(cfg); }, "sums to 3, not head_dim / 2 = 4");
  cfg["text_config"]["rope_parameters"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  expect_error([&] { text::Qwen25VLTextConfig::from_json(cfg); }, "rope_type 'yarn'");
  cfg = q.config.at("text_encoder_config");
  cfg["text_config"]["model_type"] = "llama";
  expect_error([&] { text::Qwen25VLTextConfig::from_json(cfg); }, "model_type 'llama'");
}
