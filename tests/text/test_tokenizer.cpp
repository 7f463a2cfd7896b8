// The C++ tokenizer + prompt cleaning against the Wan reference wrapper
// (tests/text/data/tokenizer_cases.json, made by tools/golden/tokenizer_fixture.py
// with a tiny SentencePiece model standing in for umt5-xxl's).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/t5_tokenizer.h"
#include "text/text_clean.h"

namespace vidax::text {
namespace {

const std::string kData = std::string(VIDAX_TEST_DATA_DIR) + "/text/data";

nlohmann::json load_cases() {
  std::ifstream f(kData + "/tokenizer_cases.json");
  EXPECT_TRUE(f.good());
  return nlohmann::json::parse(f);
}

TEST(PromptClean, MatchesReferenceCleaningWithoutNfc) {
  auto cases = load_cases()["cases"];
  ASSERT_GT(cases.size(), 30u);
  for (const auto& c : cases) {
    std::string prompt = c["prompt"];
    EXPECT_EQ(clean_prompt_whitespace(prompt), c["cleaned_no_nfc"].get<std::string>()) << "prompt: " << prompt;
  }
}

TEST(T5Tokenizer, MatchesReferenceIds) {
  auto tok = T5Tokenizer::load(kData + "/tiny_spiece.model");
  auto cases = load_cases()["cases"];
  int checked = 0;
  for (const auto& c : cases) {
    std::string prompt = c["prompt"];
    int64_t max_length = c["max_length"];
    TokenizedPrompt r = tok.encode(prompt, max_length);
    auto expected = c["ids"].get<std::vector<int64_t>>();
    ASSERT_EQ(r.ids.size(), static_cast<size_t>(max_length));
    EXPECT_EQ(std::vector<int64_t>(r.ids.begin(), r.ids.begin() + r.length), expected) << "prompt: " << prompt;
    EXPECT_EQ(r.length, c["length"].get<int64_t>()) << "prompt: " << prompt;
    EXPECT_EQ(r.truncated, c["truncated"].get<bool>()) << "prompt: " << prompt;
    for (int64_t i = 0; i < max_length; ++i) {
      EXPECT_EQ(r.mask[i], i < r.length ? 1 : 0);
      if (i >= r.length) {
        EXPECT_EQ(r.ids[i], tok.pad_id());
      }
    }
    EXPECT_EQ(r.ids[r.length - 1], tok.eos_id());
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(cases.size()));
}

// The diffusers tokenizer/ layout: spiece.model + tokenizer.json + tokenizer_config.json
// as transformers saves them; the added tokens then come from tokenizer.json.
TEST(T5Tokenizer, HfSavedLayoutMatchesReferenceIds) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(VIDAX_BINARY_DIR) / "test_text_hf_saved";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(kData + "/tiny_spiece.model", dir / "spiece.model");
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
    fs::copy_file(kData + "/hf_saved_tokenizer/" + f, dir / f);
  auto tok = T5Tokenizer::load(dir.string());
  EXPECT_EQ(tok.special_tokens().size(), 103u);  // <pad> </s> <unk> + 100 sentinels
  for (const auto& c : load_cases()["cases"]) {
    TokenizedPrompt r = tok.encode(c["prompt"].get<std::string>(), c["max_length"].get<int64_t>());
    EXPECT_EQ(std::vector<int64_t>(r.ids.begin(), r.ids.begin() + r.length), c["ids"].get<std::vector<int64_t>>())
        << "prompt: " << c["prompt"].get<std::string>();
  }
  fs::remove_all(dir);
}

TEST(T5Tokenizer, BatchTensors) {
  auto tok = T5Tokenizer::load(kData + "/tiny_spiece.model");
  TokenizedBatch b = tok.encode_batch({"a red panda", "snow"}, 8);
  ASSERT_EQ(b.ids.shape(), (Shape{2, 8}));
  ASSERT_EQ(b.ids.dtype(), DType::I64);
  auto mask = b.mask.to_f64_vector();
  double row0 = 0, row1 = 0;
  for (int i = 0; i < 8; ++i) row0 += mask[i], row1 += mask[8 + i];
  EXPECT_EQ(row0, b.prompts[0].length);
  EXPECT_EQ(row1, b.prompts[1].length);
  EXPECT_NE(row0, row1);
}

TEST(T5Tokenizer, LoadsFromDirectoryAndReportsMissingModel) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(VIDAX_BINARY_DIR) / "test_text_tokenizer_dir";
  fs::remove_all(dir);
  fs::create_directories(dir);
  EXPECT_THROW(T5Tokenizer::load(dir.string()), Error);
  fs::copy_file(kData + "/tiny_spiece.model", dir / "spiece.model");
  auto tok = T5Tokenizer::load(dir.string());
  EXPECT_EQ(tok.eos_id(), 1);
  EXPECT_EQ(tok.pad_id(), 0);
  EXPECT_GT(tok.vocab_size(), 400);  // pieces + 100 sentinels
  EXPECT_THROW(T5Tokenizer::load((dir / "nope.model").string()), Error);
  fs::remove_all(dir);
}

TEST(PromptClean, RejectsMalformedUtf8) {
  EXPECT_THROW(clean_prompt_whitespace("abc\xC3"), Error);
  EXPECT_THROW(clean_prompt_whitespace("\xC0\xAF"), Error);       // overlong
  EXPECT_THROW(clean_prompt_whitespace("\xED\xA0\x80"), Error);   // surrogate
  EXPECT_EQ(clean_prompt_whitespace("  ok \xE2\x80\x83 "), "ok");  // em space collapses
}

}  // namespace
}  // namespace vidax::text

namespace vidax::text {
namespace {

// A tokenizer directory as HF saves it: spiece.model + tokenizer.json (+ tokenizer_config.json).
TEST(T5Tokenizer, AddedTokensFromTokenizerFiles) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(VIDAX_BINARY_DIR) / "test_text_added_tokens";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(kData + "/tiny_spiece.model", dir / "spiece.model");
  auto defaults = T5Tokenizer::load(dir.string());
  auto plain = defaults.tokenize("<extra_id_0>");
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_EQ(plain[0], defaults.piece_count() + 99);  // T5Tokenizer default sentinel layout
  {
    std::ofstream f(dir / "tokenizer_config.json");
    f << R"({"extra_ids": 3, "tokenizer_class": "T5Tokenizer"})";
  }
  auto three = T5Tokenizer::load(dir.string());
  EXPECT_EQ(three.tokenize("<extra_id_0>"), (std::vector<int64_t>{three.piece_count() + 2}));
  EXPECT_EQ(three.tokenize("<extra_id_2>"), (std::vector<int64_t>{three.piece_count()}));
  EXPECT_GT(three.tokenize("<extra_id_3>").size(), 1u);  // not a sentinel here
  fs::remove(dir / "tokenizer_config.json");

  {
    std::ofstream f(dir / "tokenizer.json");
    f << R"({"version": "1.0", "added_tokens": [{"id": 0, "content": "<pad>"}, {"id": 1, "content": "</s>"},
            {"id": 2, "content": "<unk>"}, {"id": 450, "content": "<custom>"}],
            "model": {"type": "Unigram", "vocab": [["<pad>", 0.0], ["</s>", 0.0]]}})";
  }
  auto tok = T5Tokenizer::load(dir.string());
  EXPECT_EQ(tok.special_tokens().size(), 4u);
  auto ids = tok.tokenize("a<custom>b </s>");
  ASSERT_GE(ids.size(), 4u);
  EXPECT_NE(std::find(ids.begin(), ids.end(), 450), ids.end());
  EXPECT_EQ(ids.back(), 1);
  // <extra_id_0> is not an added token of this tokenizer: it is ordinary text now.
  EXPECT_GT(tok.tokenize("<extra_id_0>").size(), 1u);
  EXPECT_EQ(tok.vocab_size(), 451);

  {
    std::ofstream f(dir / "tokenizer_config.json");
    f << R"({"added_tokens_decoder": {"1": {"content": "</s>"}, "451": {"content": "<more>"}}})";
  }
  auto both = T5Tokenizer::load(dir.string());
  EXPECT_EQ(both.special_tokens().size(), 5u);  // union, </s> once
  EXPECT_EQ(both.tokenize("<more>"), (std::vector<int64_t>{451}));

  {
    std::ofstream f(dir / "tokenizer_config.json");
    f << R"({"added_tokens_decoder": {"7": {"content": "<custom>"}}})";
  }
  EXPECT_THROW(T5Tokenizer::load(dir.string()), Error);  // one text, two ids
  {
    std::ofstream f(dir / "tokenizer.json");
    f << R"({"added_tokens": [)";
  }
  EXPECT_THROW(T5Tokenizer::load(dir.string()), Error);  // malformed
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vidax::text
