// The byte-level BPE tokenizer (Llama-3's tokenizer.json format) against tokenizers / transformers
// on a tiny trained vocabulary (tests/text/data/llama3_bpe/, tests/text/data/llama3_bpe_cases.json,
// tools/golden/llama_tokenizer_fixture.py): the pre-tokenizer's pieces, the ids with and without
// the special tokens, and HunyuanVideo's templated, truncated, padded batches; bad files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "test_expect.h"
#include "text/bpe_tokenizer.h"
#include "text/text_clean.h"

using namespace vidax;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(VIDAX_TEST_DATA_DIR) / "text" / "data";

nlohmann::json cases() {
  std::ifstream f(kData / "llama3_bpe_cases.json");
  return nlohmann::json::parse(f);
}

const text::ByteLevelBpeTokenizer& tokenizer() {
  static const text::ByteLevelBpeTokenizer t = text::ByteLevelBpeTokenizer::from_dir((kData / "llama3_bpe").string());
  return t;
}

std::string printable(const std::string& s) { return nlohmann::json(s).dump(); }

using test::expect_error;

// A copy of the fixture's tokenizer.json with `edit` applied, in a temporary file.
std::string edited_copy(const std::function<void(nlohmann::json&)>& edit) {
  std::ifstream f(kData / "llama3_bpe" / "tokenizer.json");
  nlohmann::json j = nlohmann::json::parse(f);
  edit(j);
  const fs::path p = fs::temp_directory_path() / ("vidax_bpe_" + std::to_string(::getpid()) + ".json");
  std::ofstream(p) << j.dump();
  return p.string();
}

}  // namespace

TEST(ByteLevelBpe, PiecesMatchTheSplitPreTokenizer) {
  int n = 0;
  const nlohmann::json all = cases();
  for (const auto& c : all.at("cases")) {
    const std::string text = c.at("text");
    std::vector<std::string> got;
    for (const std::u32string& p : text::llama3_pretokenize(text::utf8_to_u32(text))) got.push_back(text::u32_to_utf8(p));
    EXPECT_EQ(got, c.at("pieces").get<std::vector<std::string>>()) << printable(text);
    ++n;
  }
  EXPECT_EQ(n, 42);
}

TEST(ByteLevelBpe, IdsMatchTransformers) {
  int n = 0;
  const nlohmann::json all = cases();
  for (const auto& c : all.at("cases")) {
    const std::string text = c.at("text");
    EXPECT_EQ(tokenizer().encode(text), c.at("ids").get<std::vector<int64_t>>()) << printable(text);
    EXPECT_EQ(tokenizer().encode(text, false), c.at("ids_no_special").get<std::vector<int64_t>>()) << printable(text);
    ++n;
  }
  EXPECT_EQ(n, 42);
}

// HunyuanVideo's text2tokens: the template around each prompt, truncation to text_len + crop_start,
// right padding with <pad> (the official load_tokenizer on the fixture's folder).
TEST(ByteLevelBpe, HunyuanTemplatedBatchesMatchTheOfficialTokenizer) {
  int truncated = 0;
  const nlohmann::json all = cases();
  for (const auto& h : all.at("hunyuan")) {
    const auto texts = h.at("texts").get<std::vector<std::string>>();
    const int64_t max_length = h.at("max_length");
    const text::TokenizedBatch b = tokenizer().encode_batch(texts, max_length);
    const auto want_ids = h.at("input_ids").get<std::vector<std::vector<int64_t>>>();
    const auto want_mask = h.at("attention_mask").get<std::vector<std::vector<int64_t>>>();
    ASSERT_EQ(b.prompts.size(), texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
      EXPECT_EQ(b.prompts[i].ids, want_ids[i]) << printable(texts[i]);
      EXPECT_EQ(b.prompts[i].mask, want_mask[i]) << printable(texts[i]);
      truncated += b.prompts[i].truncated;
    }
    EXPECT_EQ(b.ids.shape(), (Shape{static_cast<int64_t>(texts.size()), max_length}));
  }
  EXPECT_GT(truncated, 10);  // the short text_len truncates many prompts: truncation is exercised
}

TEST(ByteLevelBpe, SpecialTokensAndPadding) {
  const text::ByteLevelBpeTokenizer& t = tokenizer();
  ASSERT_TRUE(t.pad_id().has_value());
  EXPECT_EQ(*t.pad_id(), *t.token_id("<pad>"));
  EXPECT_EQ(*t.token_id("<|begin_of_text|>"), t.encode("")[0]);
  EXPECT_EQ(t.encode("").size(), 1u);  // just <|begin_of_text|>
  EXPECT_TRUE(t.encode("", false).empty());
  // An added token inside the text is one id, wherever it sits.
  const auto ids = t.encode("x<|eot_id|>y", false);
  EXPECT_NE(std::find(ids.begin(), ids.end(), *t.token_id("<|eot_id|>")), ids.end());
  EXPECT_FALSE(t.token_id("<|no such token|>").has_value());
}

TEST(ByteLevelBpe, UnsupportedFilesAreRefused) {
  std::string p = edited_copy([](nlohmann::json& j) { j["normalizer"] = {{"type", "Lowercase"}}; });  // NFC is read (Qwen2)
  expect_error([&] { text::ByteLevelBpeTokenizer::from_file(p); }, "normalizer");
  p = edited_copy([](nlohmann::json& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\s+"; });
  expect_error([&] { text::ByteLevelBpeTokenizer::from_file(p); }, "pre_tokenizer");
  p = edited_copy([](nlohmann::json& j) { j["model"]["byte_fallback"] = true; });
  expect_error([&] { text::ByteLevelBpeTokenizer::from_file(p); }, "byte_fallback");
  p = edited_copy([](nlohmann::json& j) { j["added_tokens"][1]["lstrip"] = true; });
  expect_error([&] { text::ByteLevelBpeTokenizer::from_file(p); }, "lstrip");
  p = edited_copy([](nlohmann::json& j) { j["post_processor"] = {{"type", "BertProcessing"}}; });
  expect_error([&] { text::ByteLevelBpeTokenizer::from_file(p); }, "post_processor type 'BertProcessing'");
  p = edited_copy([](nlohmann::json&) {});
  expect_error([&] { text::ByteLevelBpeTokenizer::from_file(p, "<nope>"); }, "pad token '<nope>'");
  const text::ByteLevelBpeTokenizer no_pad = text::ByteLevelBpeTokenizer::from_file(p);
  expect_error([&] { no_pad.encode_batch({"a"}, 8); }, "needs a pad token");
  expect_error([&] { tokenizer().encode_batch({"a"}, 1); }, "leaves no room");
  fs::remove(p);
  expect_error([] { text::ByteLevelBpeTokenizer::from_dir("/nonexistent/dir"); }, "has no tokenizer.json");
}

TEST(ByteLevelBpe, PiecesMatchOnRandomStrings) {
  const nlohmann::json all = cases();
  int n = 0;
  for (const auto& c : all.at("random_split")) {
    const std::string text = c.at("text");
    std::vector<std::string> got;
    for (const std::u32string& p : text::llama3_pretokenize(text::utf8_to_u32(text))) got.push_back(text::u32_to_utf8(p));
    EXPECT_EQ(got, c.at("pieces").get<std::vector<std::string>>()) << printable(text);
    ++n;
  }
  EXPECT_EQ(n, 300);
}

// A merge listed twice keeps the rank of its last listing, as tokenizers' merge map does
// (tests/text/data/bpe_repeated_merges.json, tools/golden/bpe_repeated_merges.py: 16 of the 42
// prompts change). Bug: the first listing ranked.
TEST(ByteLevelBpe, ARepeatedMergeTakesItsLastRank) {
  std::ifstream f(kData / "bpe_repeated_merges.json");
  const nlohmann::json want = nlohmann::json::parse(f);
  const std::string path = edited_copy([&](nlohmann::json& j) {
    nlohmann::json& merges = j["model"]["merges"];
    const nlohmann::json copy = merges;
    for (const auto& i : want.at("repeated")) merges.push_back(copy.at(i.get<size_t>()));
  });
  const text::ByteLevelBpeTokenizer t = text::ByteLevelBpeTokenizer::from_file(path, "<pad>");
  fs::remove(path);
  const std::vector<std::string> prompts = want.at("prompts");
  int changed = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto ids = want.at("llama3_bpe")[i].get<std::vector<int64_t>>();
    EXPECT_EQ(t.encode(prompts[i]), ids) << printable(prompts[i]);
    changed += ids != tokenizer().encode(prompts[i]);
  }
  EXPECT_EQ(changed, 16);
}
