// HunyuanVideo 1.0's text encoders against the official TextEncoder.encode on tiny transformers
// models (tests/golden/hunyuan/hunyuan_text_*.safetensors, tools/golden/hunyuan_text.py): the LLM
// (LlamaModel: GQA, RoPE default and llama3, the skip layer, the final norm, the template crop, the
// mask) and CLIP's pooled output (both pooling rules); the key layouts; controls that must fail;
// bad input.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "backend/ops.h"
#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "models/hunyuan/text_encoder.h"
#include "parity/parity.h"
#include "test_diff.h"
#include "test_expect.h"
#include "translate/inspect.h"
#include "translate/source.h"

using namespace vidax;
namespace fs = std::filesystem;

namespace {

std::string golden(const char* name) {
  return (fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "hunyuan" / name).string();
}

// Every output* and inter.* tensor of the golden against what the kind produces (vidax parity's run).
void expect_golden(const char* name, const std::string& precision, double rel_bound, double abs_bound,
                   int min_compared) {
  test::expect_parity_golden(golden(name), name, precision, rel_bound, abs_bound, min_compared);
}

struct Llm {
  io::Checkpoint file;
  nlohmann::json config;
  text::LlamaConfig cfg;
  std::map<std::string, Tensor> params;
  translate::Match match;
};

translate::MemorySource params_of(const io::Checkpoint& f, const std::string& path) {
  translate::MemorySource src(path);
  for (const std::string& n : f.names())
    if (!translate::is_golden_io_key(n)) src.add(n, f.get(n));
  return src;
}

Llm load_llm(const char* name) {
  const std::string path = golden(name);
  Llm l{io::Checkpoint::open(path), {}, {}, {}, {}};
  l.config = nlohmann::json::parse(l.file.metadata().at("config"));
  l.cfg = text::LlamaConfig::from_json(l.config.at("text_encoder_config"));
  const translate::MemorySource src = params_of(l.file, path);
  l.match = translate::match(src, text::llama_component(), l.cfg.to_json());
  l.params = translate::load(src, text::llama_component(), l.cfg.to_json());
  return l;
}

text::LlamaTextEncoder build(const Llm& l, const text::LlamaConfig& cfg) {
  return text::LlamaTextEncoder(cfg, [&](const std::string& n) { return l.params.at(n); });
}

using test::expect_error;

}  // namespace

// ---- the LLM ---------------------------------------------------------------------------------

// Measured (fp32, this machine): max_abs <= 2e-6 on each file; bound 1e-5 (the brief's target).
TEST(HunyuanTextLlama, MatchesTheReferenceFp32) {
  expect_golden("hunyuan_text_llama.safetensors", "fp32", 1e-5, 1e-5, 2);
}
TEST(HunyuanTextLlama, Llama3RopeBiasesFinalNormVideoTemplateFp32) {
  expect_golden("hunyuan_text_llama_llama3.safetensors", "fp32", 1e-5, 1e-5, 2);
}
TEST(HunyuanTextLlama, LastHiddenStateWithoutMaskFp32) {
  expect_golden("hunyuan_text_llama_nomask.safetensors", "fp32", 1e-5, 1e-5, 1);
}
// bf16 compute (not a reference mode here) against the fp32 reference.
TEST(HunyuanTextLlama, Bf16IsWithinItsBound) {
  expect_golden("hunyuan_text_llama.safetensors", "bf16", 1e-2, 0.1, 2);
}

// The published layouts: LlamaForCausalLM's model.* (+ lm_head, ignored by name) and LlamaModel's.
TEST(HunyuanTextLlama, LayoutsAreDetected) {
  const Llm causal = load_llm("hunyuan_text_llama.safetensors");
  EXPECT_EQ(causal.match.layout, "causal-lm");
  EXPECT_EQ(causal.match.plan.ignored_keys, std::vector<std::string>{"lm_head.weight"});
  const Llm bare = load_llm("hunyuan_text_llama_llama3.safetensors");
  EXPECT_EQ(bare.match.layout, "transformers");
  EXPECT_TRUE(bare.match.plan.ignored_keys.empty());
  // The config read back from the shapes: all but the head split, which the shapes cannot tell.
  engine::register_builtins();
  const translate::MemorySource src = params_of(bare.file, "llama3");
  const text::LlamaConfig inferred =
      text::LlamaConfig::from_json(text::llama_component().infer_config(src, "transformers"));
  EXPECT_EQ(inferred.hidden_size, 32);
  EXPECT_EQ(inferred.num_hidden_layers, 4);
  EXPECT_EQ(inferred.intermediate_size, 48);
  EXPECT_TRUE(inferred.attention_bias && inferred.mlp_bias);
}

// Each of the glue's choices moves the output: the golden passes only with the reference's.
TEST(HunyuanTextLlama, SkipLayerFinalNormCropAndMaskMatter) {
  const Llm l = load_llm("hunyuan_text_llama.safetensors");
  const text::LlamaTextEncoder llm = build(l, l.cfg);
  const Tensor ids = l.file.get("input.input_ids"), mask = l.file.get("input.attention_mask");
  const Tensor want = l.file.get("output");
  hunyuan::LlmEncodeOptions opt = hunyuan::LlmEncodeOptions::from_json(l.config);
  EXPECT_EQ(opt.crop_start, 36);
  EXPECT_EQ(*opt.hidden_state_skip_layer, 2);
  EXPECT_LE(test::rel_l2(want, hunyuan::encode_llm(llm, ids, mask, opt).hidden_state), 1e-5);
  for (int64_t skip : {1, 3}) {
    hunyuan::LlmEncodeOptions o = opt;
    o.hidden_state_skip_layer = skip;
    EXPECT_GT(test::rel_l2(want, hunyuan::encode_llm(llm, ids, mask, o).hidden_state), 1e-2) << skip;
  }
  hunyuan::LlmEncodeOptions normed = opt;
  normed.apply_final_norm = true;
  EXPECT_GT(test::rel_l2(want, hunyuan::encode_llm(llm, ids, mask, normed).hidden_state), 1e-2);
  // Without the padding mask the padded rows (and only they: right padding, causal) change.
  hunyuan::LlmEncodeOptions unmasked = opt;
  unmasked.use_attention_mask = false;
  const hunyuan::LlmEncoding u = hunyuan::encode_llm(llm, ids, mask, unmasked);
  EXPECT_FALSE(u.attention_mask.has_value());
  EXPECT_GT(test::rel_l2(want, u.hidden_state), 1e-3);
  // Row 0 has 41 tokens of 44: cropped positions 0..4 are tokens, 5..7 padding.
  EXPECT_LE(test::rel_l2(want.select(0, 0).slice(0, 0, 5), u.hidden_state.select(0, 0).slice(0, 0, 5)), 1e-5);
  EXPECT_GT(test::rel_l2(want.select(0, 0).slice(0, 5, 8), u.hidden_state.select(0, 0).slice(0, 5, 8)), 1e-3);
  // The cropped mask is the input's last 8 columns.
  const hunyuan::LlmEncoding e = hunyuan::encode_llm(llm, ids, mask, opt);
  ASSERT_TRUE(e.attention_mask.has_value());
  EXPECT_EQ(e.attention_mask->to_f64_vector(), mask.slice(1, 36, 44).contiguous().to_f64_vector());
  EXPECT_EQ(e.hidden_state.shape(), (Shape{2, 8, 32}));
}

// GQA's head grouping and the llama3 frequency bands: the wrong ones miss the golden.
TEST(HunyuanTextLlama, RopeTypeAndHeadGroupsMatter) {
  const Llm l = load_llm("hunyuan_text_llama_llama3.safetensors");
  const Tensor ids = l.file.get("input.input_ids"), mask = l.file.get("input.attention_mask");
  const hunyuan::LlmEncodeOptions opt = hunyuan::LlmEncodeOptions::from_json(l.config);
  const Tensor want = l.file.get("output");
  EXPECT_LE(test::rel_l2(want, hunyuan::encode_llm(build(l, l.cfg), ids, mask, opt).hidden_state), 1e-5);
  text::LlamaConfig plain = l.cfg;
  plain.rope_type = "default";
  EXPECT_GT(test::rel_l2(want, hunyuan::encode_llm(build(l, plain), ids, mask, opt).hidden_state), 1e-4);
  // The bands: head_dim 8, theta 5e5 -> wavelengths 6.3, 167, 4443 (between 2048 and 8192: smoothed)
  // and 1.2e5 (beyond 8192: divided by 8); the first two unchanged.
  const std::vector<float> a = plain.inv_freq(), b = l.cfg.inv_freq();
  EXPECT_EQ(a[0], b[0]);
  EXPECT_EQ(a[1], b[1]);
  EXPECT_LT(b[2], a[2]);
  EXPECT_GT(b[2], a[2] / 8);
  EXPECT_FLOAT_EQ(b[3], a[3] / 8);
}

TEST(HunyuanTextLlama, BadInputIsAnError) {
  const Llm l = load_llm("hunyuan_text_llama.safetensors");
  const text::LlamaTextEncoder llm = build(l, l.cfg);
  const Tensor ids = l.file.get("input.input_ids"), mask = l.file.get("input.attention_mask");
  const hunyuan::LlmEncodeOptions opt = hunyuan::LlmEncodeOptions::from_json(l.config);
  std::vector<int64_t> holes(2 * 44, 1);
  holes[3] = 0;  // a 0 between tokens: not what the right-padding tokenizer makes
  expect_error([&] { hunyuan::encode_llm(llm, ids, Tensor::from_i64(holes, {2, 44}), opt); }, "not right-padded");
  expect_error([&] { hunyuan::encode_llm(llm, ids, Tensor::from_i64(std::vector<int64_t>(88, 0), {2, 44}), opt); },
               "has no tokens");
  std::vector<int64_t> big(88, 5);
  big[7] = 96;
  expect_error([&] { hunyuan::encode_llm(llm, Tensor::from_i64(big, {2, 44}), mask, opt); }, "outside the vocabulary");
  hunyuan::LlmEncodeOptions o = opt;
  o.hidden_state_skip_layer = 5;
  expect_error([&] { hunyuan::encode_llm(llm, ids, mask, o); }, "hidden_state_skip_layer 5 with 4 layers");
  o = opt;
  o.max_length = 40;
  expect_error([&] { hunyuan::encode_llm(llm, ids, mask, o); }, "more than max_length 40");
  o = opt;
  o.crop_start = 44;
  expect_error([&] { hunyuan::encode_llm(llm, ids, mask, o); }, "leaves nothing");
  expect_error([&] { hunyuan::encode_llm(llm, ids, mask.slice(1, 0, 40).contiguous(), opt); }, "must be one [B, L]");
  expect_error([&] { llm.hidden_state(ids, mask, 5); }, "outside [0, 4]");
  // Configs the encoder does not compute.
  nlohmann::json c = l.config.at("text_encoder_config");
  c["hidden_act"] = "gelu";
  expect_error([&] { text::LlamaConfig::from_json(c); }, "hidden_act 'gelu'");
  c = l.config.at("text_encoder_config");
  c["rope_parameters"]["rope_type"] = "yarn";
  expect_error([&] { text::LlamaConfig::from_json(c); }, "rope_type 'yarn'");
  c = l.config.at("text_encoder_config");
  c["num_key_value_heads"] = 3;
  expect_error([&] { text::LlamaConfig::from_json(c); }, "not a multiple of num_key_value_heads 3");
  expect_error([] { hunyuan::prompt_template("dit-llm"); }, "unknown prompt template 'dit-llm'");
}

// The older config spelling (rope_theta + rope_scaling, transformers 4) reads the same.
TEST(HunyuanTextLlama, OlderRopeSpellingReads) {
  const Llm l = load_llm("hunyuan_text_llama_llama3.safetensors");
  nlohmann::json c = l.config.at("text_encoder_config");
  const nlohmann::json rope = c["rope_parameters"];
  c.erase("rope_parameters");
  c["rope_theta"] = rope["rope_theta"];
  c["rope_scaling"] = {{"type", "llama3"},
                       {"factor", rope["factor"]},
                       {"low_freq_factor", rope["low_freq_factor"]},
                       {"high_freq_factor", rope["high_freq_factor"]},
                       {"original_max_position_embeddings", rope["original_max_position_embeddings"]}};
  EXPECT_EQ(text::LlamaConfig::from_json(c), l.cfg);
  c["rope_scaling"] = nullptr;
  EXPECT_EQ(text::LlamaConfig::from_json(c).rope_type, "default");
  EXPECT_EQ(text::LlamaConfig::from_json({{"text_config", c}}).rope_theta, 500000.0);  // a LLaVA config
}

TEST(HunyuanTextLlama, UnknownKeysAreRefused) {
  const Llm l = load_llm("hunyuan_text_llama.safetensors");
  translate::MemorySource src = params_of(l.file, "extra");
  src.add("model.layers.9.self_attn.q_proj.weight", Tensor::zeros({32, 32}, DType::F32));
  expect_error([&] { translate::load(src, text::llama_component(), l.cfg.to_json()); },
               "model.layers.9.self_attn.q_proj.weight");
}

TEST(HunyuanTextLlama, PromptTemplates) {
  const hunyuan::PromptTemplate& img = hunyuan::prompt_template("dit-llm-encode");
  const hunyuan::PromptTemplate& vid = hunyuan::prompt_template("dit-llm-encode-video");
  EXPECT_EQ(img.crop_start, 36);
  EXPECT_EQ(vid.crop_start, 95);
  // The golden files carry the official strings (from hyvideo/constants.py).
  const Llm l = load_llm("hunyuan_text_llama.safetensors");
  EXPECT_EQ(l.config["prompt_template"]["template"].get<std::string>(), img.text);
  const Llm v = load_llm("hunyuan_text_llama_llama3.safetensors");
  EXPECT_EQ(v.config["prompt_template"]["template"].get<std::string>(), vid.text);
}

// ---- CLIP ------------------------------------------------------------------------------------

namespace {

struct Clip {
  io::Checkpoint file;
  nlohmann::json config;
  text::ClipTextConfig cfg;
  std::map<std::string, Tensor> params;
  translate::Match match;
};

Clip load_clip(const char* name) {
  const std::string path = golden(name);
  Clip c{io::Checkpoint::open(path), {}, {}, {}, {}};
  c.config = nlohmann::json::parse(c.file.metadata().at("config"));
  c.cfg = text::ClipTextConfig::from_json(c.config.at("text_encoder_config"));
  const translate::MemorySource src = params_of(c.file, path);
  c.match = translate::match(src, text::clip_text_component(), c.cfg.to_json());
  c.params = translate::load(src, text::clip_text_component(), c.cfg.to_json());
  return c;
}

text::ClipTextEncoder build(const Clip& c, const text::ClipTextConfig& cfg) {
  return text::ClipTextEncoder(cfg, [&](const std::string& n) { return c.params.at(n); });
}

}  // namespace

// Measured (fp32): max_abs <= 1e-6; bound 1e-5.
TEST(HunyuanTextClip, MatchesTheReferenceFp32) {
  expect_golden("hunyuan_text_clip.safetensors", "fp32", 1e-5, 1e-5, 2);
}
TEST(HunyuanTextClip, EosTokenRuleAndGeluFp32) {
  expect_golden("hunyuan_text_clip_eos.safetensors", "fp32", 1e-5, 1e-5, 2);
}
TEST(HunyuanTextClip, Bf16IsWithinItsBound) {
  expect_golden("hunyuan_text_clip.safetensors", "bf16", 1e-2, 0.1, 2);
}

TEST(HunyuanTextClip, LayoutsAreDetected) {
  EXPECT_EQ(load_clip("hunyuan_text_clip.safetensors").match.layout, "transformers");  // text_model.*
  EXPECT_EQ(load_clip("hunyuan_text_clip_eos.safetensors").match.layout, "bare");
  // A whole CLIPModel: the vision tower, the projections and the logit scale are ignored by name.
  const Clip c = load_clip("hunyuan_text_clip.safetensors");
  translate::MemorySource src = params_of(c.file, "clip model");
  src.add("vision_model.embeddings.class_embedding", Tensor::zeros({8}, DType::F32));
  src.add("text_projection.weight", Tensor::zeros({16, 32}, DType::F32));
  src.add("logit_scale", Tensor::zeros({}, DType::F32));
  const translate::Match m = translate::match(src, text::clip_text_component(), c.cfg.to_json());
  EXPECT_EQ(m.plan.ignored_keys.size(), 3u);
  EXPECT_NO_THROW(translate::load(src, text::clip_text_component(), c.cfg.to_json()));
  src.add("text_model.encoder.layers.7.mlp.fc1.weight", Tensor::zeros({64, 32}, DType::F32));
  expect_error([&] { translate::load(src, text::clip_text_component(), c.cfg.to_json()); },
               "text_model.encoder.layers.7.mlp.fc1.weight");
}

// The two pooling rules pick different tokens on the eos golden: only the file's rule passes.
TEST(HunyuanTextClip, PoolingRuleMatters) {
  const Clip c = load_clip("hunyuan_text_clip_eos.safetensors");
  const Tensor ids = c.file.get("input.input_ids"), mask = c.file.get("input.attention_mask");
  const Tensor want = c.file.get("output");
  EXPECT_LE(test::rel_l2(want, hunyuan::encode_clip(build(c, c.cfg), ids, mask)), 1e-5);
  EXPECT_EQ(build(c, c.cfg).eos_positions(ids), (std::vector<int64_t>{9, 4}));
  text::ClipTextConfig legacy = c.cfg;
  legacy.eos_token_id = 2;
  EXPECT_NE(build(c, legacy).eos_positions(ids), build(c, c.cfg).eos_positions(ids));
  EXPECT_GT(test::rel_l2(want, hunyuan::encode_clip(build(c, legacy), ids, mask)), 1e-2);
  // quick_gelu in place of the file's gelu misses too.
  text::ClipTextConfig quick = c.cfg;
  quick.hidden_act = "quick_gelu";
  EXPECT_GT(test::rel_l2(want, hunyuan::encode_clip(build(c, quick), ids, mask)), 1e-3);
}

// The causal mask shapes the pooled token; the padding mask only the rows past it (the pooled
// token is a prompt token, so the pooled output does not depend on it).
TEST(HunyuanTextClip, MaskEffects) {
  const Clip c = load_clip("hunyuan_text_clip.safetensors");
  const text::ClipTextEncoder clip = build(c, c.cfg);
  const Tensor ids = c.file.get("input.input_ids"), mask = c.file.get("input.attention_mask");
  const text::ClipTextOutput with = clip.forward(ids, mask), without = clip.forward(ids, std::nullopt);
  EXPECT_LE(test::rel_l2(with.pooler_output, without.pooler_output), 1e-6);
  EXPECT_GT(test::rel_l2(with.last_hidden_state, without.last_hidden_state), 1e-3);
  EXPECT_EQ(clip.eos_positions(ids), (std::vector<int64_t>{8, 15, 2}));  // the first end token of each row
}

TEST(HunyuanTextClip, BadInputIsAnError) {
  const Clip c = load_clip("hunyuan_text_clip.safetensors");
  const text::ClipTextEncoder clip = build(c, c.cfg);
  expect_error([&] { clip.forward(Tensor::from_i64(std::vector<int64_t>(17, 3), {1, 17}), std::nullopt); },
               "17 tokens");
  expect_error([&] { clip.forward(Tensor::from_i64({3, 64}, {1, 2}), std::nullopt); }, "outside the vocabulary");
  expect_error([&] { clip.forward(Tensor::from_i64({3, 4}, {1, 2}), Tensor::from_i64({0, 1}, {1, 2})); },
               "not right-padded");
  nlohmann::json j = c.config.at("text_encoder_config");
  j["hidden_act"] = "relu";
  expect_error([&] { text::ClipTextConfig::from_json(j); }, "hidden_act 'relu'");
  j = c.config.at("text_encoder_config");
  j["num_attention_heads"] = 5;
  expect_error([&] { text::ClipTextConfig::from_json(j); }, "not divisible by num_attention_heads 5");
}

// ---- the LLM's prompts -----------------------------------------------------------------------

// text2tokens on the tiny Llama-3-style tokenizer of tests/text/data/llama3_bpe (made by
// tools/golden/llama_tokenizer_fixture.py with the official load_tokenizer): the templated,
// truncated, padded ids and masks, prompt for prompt.
TEST(HunyuanTextLlama, TokenizedPromptsMatchTheOfficialText2Tokens) {
  const fs::path data = fs::path(VIDAX_TEST_DATA_DIR) / "text" / "data";
  const text::ByteLevelBpeTokenizer tok = text::ByteLevelBpeTokenizer::from_dir((data / "llama3_bpe").string());
  std::ifstream f(data / "llama3_bpe_cases.json");
  const nlohmann::json fixture = nlohmann::json::parse(f);
  std::vector<std::string> prompts;
  for (const auto& c : fixture.at("cases")) prompts.push_back(c.at("text"));
  const char* names[] = {"dit-llm-encode", "dit-llm-encode-video"};
  for (size_t t = 0; t < 2; ++t) {
    const auto& h = fixture.at("hunyuan").at(t);
    const hunyuan::PromptTemplate& tmpl = hunyuan::prompt_template(names[t]);
    EXPECT_EQ(h.at("template").get<std::string>(), tmpl.text);
    const int64_t text_len = h.at("max_length").get<int64_t>() - tmpl.crop_start;
    const text::TokenizedBatch b = hunyuan::tokenize_llm(tok, prompts, tmpl, text_len);
    const auto ids = h.at("input_ids").get<std::vector<std::vector<int64_t>>>();
    const auto mask = h.at("attention_mask").get<std::vector<std::vector<int64_t>>>();
    ASSERT_EQ(b.prompts.size(), ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      EXPECT_EQ(b.prompts[i].ids, ids[i]) << names[t] << " prompt " << i;
      EXPECT_EQ(b.prompts[i].mask, mask[i]) << names[t] << " prompt " << i;
    }
  }
  hunyuan::PromptTemplate bad{"no placeholder", 0};
  expect_error([&] { hunyuan::tokenize_llm(tok, prompts, bad); }, "exactly one {}");
  bad.text = "{} and {}";
  expect_error([&] { hunyuan::tokenize_llm(tok, prompts, bad); }, "exactly one {}");
}

// The published sizes: LLaVA-Llama-3-8B's language model without its head (LlamaModel: 7.505B)
// and CLIP-L/14's text model (123.06M), from the configs' defaults.
TEST(HunyuanTextEncoders, PublishedParameterCounts) {
  const auto count = [](const translate::ParamSpec& s) { return s.parameter_count(); };
  const text::LlamaConfig llm = text::LlamaConfig::llava_llama3_8b();
  EXPECT_EQ(count(text::llama_params(llm)), 7505186816);
  EXPECT_EQ(text::LlamaConfig::from_json(llm.to_json()), llm);
  EXPECT_EQ(text::llama_component().variant(llm.to_json()), "llava-llama-3-8b");
  const text::ClipTextConfig clip = text::ClipTextConfig::clip_l14();
  EXPECT_EQ(count(text::clip_text_params(clip)), 123060480);
  EXPECT_EQ(text::ClipTextConfig::from_json(clip.to_json()), clip);
  EXPECT_EQ(text::clip_text_component().variant(clip.to_json()), "clip-vit-large-patch14");
}

// End to end: the official TextEncoder.forward(prompts) (text2tokens with the real tokenizer
// loader on tests/text/data/llama3_bpe, then encode) against tokenize_llm + encode_llm from the
// prompt strings in the file's metadata.
TEST(HunyuanTextLlama, PromptsToHiddenStatesMatchTheOfficialForward) {
  expect_golden("hunyuan_text_llama_prompts.safetensors", "fp32", 1e-5, 1e-5, 2);
  const Llm l = load_llm("hunyuan_text_llama_prompts.safetensors");
  const auto prompts = nlohmann::json::parse(l.file.metadata().at("prompts")).get<std::vector<std::string>>();
  const int64_t text_len = std::stoll(l.file.metadata().at("text_len"));
  const text::ByteLevelBpeTokenizer tok = text::ByteLevelBpeTokenizer::from_dir(
      (fs::path(VIDAX_TEST_DATA_DIR) / "text" / "data" / "llama3_bpe").string());
  const text::TokenizedBatch b = hunyuan::tokenize_llm(tok, prompts, hunyuan::prompt_template("dit-llm-encode"), text_len);
  EXPECT_EQ(b.ids.to_f64_vector(), l.file.get("input.input_ids").to_f64_vector());
  EXPECT_EQ(b.mask.to_f64_vector(), l.file.get("input.attention_mask").to_f64_vector());
  EXPECT_TRUE(b.prompts[1].truncated);
  EXPECT_FALSE(b.prompts[0].truncated);
  const hunyuan::LlmEncoding e = hunyuan::encode_llm(build(l, l.cfg), b.ids, b.mask, hunyuan::LlmEncodeOptions::from_json(l.config));
  const test::Diff d = test::diff(l.file.get("output"), e.hidden_state);
  std::printf("  prompts -> hidden_state max_abs=%.3g rel_l2=%.3g\n", d.max_abs, d.rel_l2);
  EXPECT_LE(d.max_abs, 1e-5);
  EXPECT_EQ(e.attention_mask->to_f64_vector(), l.file.get("output.attention_mask").to_f64_vector());
}
