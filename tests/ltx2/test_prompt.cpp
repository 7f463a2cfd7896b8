// LTX-2 prompt strings -> Gemma-3 ids and mask (models/ltx2/prompt.h) against the official
// LTXGemmaTokenizer.tokenize_with_weights on the tiny Gemma-structured tokenizer
// (tests/text/data/gemma3_bpe_cases.json "ltx2", tools/golden/gemma_tokenizer_fixture.py): every
// fixture prompt at the pipeline's 1024 and short lengths, with tokenizer_config.json variants (no
// pad token: pad = eos; add_bos_token false: BOS prepended by the wrapper). Then the whole text path
// from strings (ltx2::encode_prompts: ids -> Gemma-3 -> V2 extractor -> connectors) against the
// official LTXGemmaTextEncoder.encode with that tokenizer + EmbeddingsProcessor.process_hidden_states
// (tests/golden/ltx2/ltx2_text_gemma3_prompts.safetensors, tools/golden/ltx2_text.py), fp32.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "ltx2_golden.h"
#include "models/ltx2/prompt.h"
#include "nn/params.h"
#include "test_expect.h"
#include "text/gemma_tokenizer.h"

using namespace vidax;
namespace fs = std::filesystem;

namespace {

const fs::path kTok = fs::path(VIDAX_TEST_DATA_DIR) / "text" / "data" / "gemma3_bpe";

nlohmann::json read_json(const fs::path& p) {
  std::ifstream f(p);
  return nlohmann::json::parse(f);
}

// The fixture tokenizer with tokenizer_config.json as the golden's variant `name` has it.
text::GemmaTokenizer fixture_tokenizer(const std::string& name) {
  nlohmann::json cfg = read_json(kTok / "tokenizer_config.json");
  if (name == "no_pad_token") cfg.erase("pad_token");
  else if (name == "no_add_bos") cfg["add_bos_token"] = false;
  else EXPECT_EQ(name, "base");
  std::ifstream f(kTok / "tokenizer.json");
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return text::GemmaTokenizer::from_json(text, cfg.dump(), name);
}

using test::expect_error;

}  // namespace

TEST(Ltx2Prompt, IdsAndMaskMatchTheOfficialTokenizer) {
  const nlohmann::json cases = read_json(kTok.parent_path() / "gemma3_bpe_cases.json");
  const std::vector<std::string> prompts = cases.at("prompts");
  std::map<std::string, text::GemmaTokenizer> toks;
  int n = 0, padded = 0, full = 0;
  for (const auto& row : cases.at("ltx2")) {
    const std::string cfg = row.at("config");
    if (!toks.count(cfg)) toks.emplace(cfg, fixture_tokenizer(cfg));
    const std::string& prompt = prompts.at(row.at("prompt").get<size_t>());
    const int64_t max_length = row.at("max_length");
    const int64_t n_pad = row.at("n_pad");
    std::vector<int64_t> want(static_cast<size_t>(n_pad), n_pad ? row.at("pad_id").get<int64_t>() : 0);
    for (int64_t id : row.at("ids")) want.push_back(id);
    std::vector<int64_t> want_mask(static_cast<size_t>(n_pad), 0);
    want_mask.resize(static_cast<size_t>(max_length), 1);
    const text::TokenizedPrompt got = ltx2::tokenize_prompt(toks.at(cfg), prompt, max_length);
    const std::string what = cfg + " L=" + std::to_string(max_length) + " " + nlohmann::json(prompt).dump().substr(0, 80);
    EXPECT_EQ(got.ids, want) << what;
    EXPECT_EQ(got.mask, want_mask) << what;
    EXPECT_EQ(got.length, max_length - n_pad) << what;
    padded += n_pad > 0;
    full += n_pad == 0;
    ++n;
  }
  EXPECT_EQ(n, 75);
  EXPECT_GT(padded, 0);
  EXPECT_GT(full, 2);  // truncated rows (the long prompt at 1024, short lengths)
}

TEST(Ltx2Prompt, BatchStripsAndStacks) {
  const text::GemmaTokenizer tok = fixture_tokenizer("base");
  const text::TokenizedBatch b = ltx2::tokenize_prompts(tok, {"  a cat \n", "a cat", "<bos>a cat"}, 8);
  EXPECT_EQ(b.ids.shape(), (std::vector<int64_t>{3, 8}));
  EXPECT_EQ(b.prompts[0].cleaned, "a cat");
  EXPECT_EQ(b.prompts[0].ids, b.prompts[1].ids);
  EXPECT_EQ(b.prompts[0].mask, b.prompts[1].mask);
  // A literal <bos> in the text stays after the template's (no second prepend).
  EXPECT_EQ(b.prompts[2].length, b.prompts[1].length + 1);
  EXPECT_FALSE(b.prompts[0].truncated);
  EXPECT_TRUE(ltx2::tokenize_prompt(tok, "a cat sat on the mat by the door", 4).truncated);
  expect_error([&] { ltx2::tokenize_prompts(tok, {}, 8); }, "no prompts");
  expect_error([&] { ltx2::tokenize_prompt(tok, "x", 0); }, "max_length");
  nlohmann::json cfg = read_json(kTok / "tokenizer_config.json");
  cfg.erase("bos_token");
  std::ifstream f(kTok / "tokenizer.json");
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  cfg.erase("add_bos_token");
  const text::GemmaTokenizer no_bos = text::GemmaTokenizer::from_json(text, cfg.dump(), "no bos");
  expect_error([&] { ltx2::tokenize_prompt(no_bos, "x", 8); }, "no bos_token");
}

// Prompt strings -> context, the official path on tiny weights: the ids and mask exactly, every
// output <= 1e-5; the same file through its kind (ids -> outputs) too.
TEST(Ltx2PromptGolden, StringsThroughGemma3AndTheConnectorsMatchTheReferenceFp32) {
  test::ltx2::GoldenParams g = test::ltx2::load_golden("ltx2_text_gemma3_prompts.safetensors");
  const std::vector<std::string> prompts = g.config.at("prompts");
  ASSERT_EQ(prompts.size(), 5u);
  EXPECT_EQ(g.config.at("tokenizer"), "tests/text/data/gemma3_bpe");
  const text::GemmaTokenizer tok = text::GemmaTokenizer::from_dir(kTok.string());
  const text::Gemma3Config cfg = text::Gemma3Config::from_json(g.config.at("text_config"));
  std::map<std::string, Tensor> lm, fe, conn;
  for (auto& [name, t] : g.params) {
    if (name.rfind("feature_extractor.", 0) == 0) fe[name.substr(18)] = t;
    else if (name.rfind("video_connector.", 0) == 0 || name.rfind("audio_connector.", 0) == 0) conn[name] = t;
    else lm[name] = t;
  }
  const auto lookup = [](const std::map<std::string, Tensor>& m) {
    return [&m](const std::string& n) { auto it = m.find(n); return it == m.end() ? Tensor() : it->second; };
  };
  const text::Gemma3TextEncoder gemma(cfg, lookup(lm));
  const ltx2::FeatureExtractor features(ltx2::feature_extractor_version(g.config.at("feature_extractor")), cfg,
                                        lookup(fe));
  nn::ParamSource src = nn::ParamSource::from_map(conn, "golden connectors");
  const nlohmann::json& c = g.config.at("connectors");
  const ltx2::EmbeddingsConnector video(ltx2::ConnectorConfig::from_json(c.at("video")), src, "video_connector.");
  const ltx2::EmbeddingsConnector audio(ltx2::ConnectorConfig::from_json(c.at("audio")), src, "audio_connector.");
  src.expect_all_taken();
  ltx2::PromptEncoder parts{&tok, &gemma, &features, &video, &audio, g.config.at("max_length").get<int64_t>()};
  const ltx2::EncodedPrompts out = ltx2::encode_prompts(parts, prompts);

  EXPECT_EQ(out.tokens.ids.to_f64_vector(), g.file.get("input.input_ids").to_f64_vector());
  EXPECT_EQ(out.tokens.mask.to_f64_vector(), g.file.get("input.attention_mask").to_f64_vector());
  EXPECT_TRUE(out.tokens.prompts[3].truncated);  // the long prompt
  EXPECT_EQ(out.tokens.prompts[4].length, 1);    // "" -> <bos> alone
  const std::pair<const char*, Tensor> rows[] = {{"output.video", out.features.video},
                                                 {"output.audio", out.features.audio},
                                                 {"output.video_context", out.context.video},
                                                 {"output.audio_context", out.context.audio}};
  for (const auto& [name, got] : rows) {
    const double d = test::ltx2::max_abs_diff(g.file.get(name), got);
    std::printf("  prompts %-22s max_abs=%.3g\n", name, d);
    EXPECT_LE(d, 1e-5) << name;
  }
  EXPECT_EQ(out.context.mask.to_f64_vector(), g.file.get("output.context_mask").to_f64_vector());
  EXPECT_EQ(test::ltx2::expect_golden_rows("ltx2_text_gemma3_prompts.safetensors").compared, 5);

  // A tokenizer whose ids the model cannot embed is refused.
  const text::Gemma3Config small = [&] { text::Gemma3Config s = cfg; s.vocab_size = 600; return s; }();
  std::map<std::string, Tensor> lm_small = lm;
  lm_small["embed_tokens.weight"] = lm.at("embed_tokens.weight").slice(0, 0, 600);
  const text::Gemma3TextEncoder gemma_small(small, lookup(lm_small));
  parts.gemma = &gemma_small;
  expect_error([&] { ltx2::encode_prompts(parts, prompts); }, "beyond the Gemma-3 model's vocabulary");
}
