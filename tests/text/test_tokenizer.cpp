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
