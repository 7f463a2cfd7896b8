// The byte-level BPE tokenizer on a Qwen2 tokenizer.json (HunyuanVideo 1.5's Qwen2.5-VL: NFC
// normalizer, the Split regex with single digits, added tokens after the vocabulary) against
// tokenizers / transformers on a tiny trained vocabulary (tests/text/data/qwen2_bpe/,
// tests/text/data/qwen2_bpe_cases.json, tools/golden/qwen2_tokenizer_fixture.py): the
// pre-tokenizer's pieces, the ids; the files of another model type refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "core/error.h"
#include "test_expect.h"
#include "text/bpe_tokenizer.h"
#include "text/text_clean.h"
#include "text/unicode_classes.h"

using namespace vidax;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(VIDAX_TEST_DATA_DIR) / "text" / "data";

const nlohmann::json& cases() {
  static const nlohmann::json j = [] {
    std::ifstream f(kData / "qwen2_bpe_cases.json");
    return nlohmann::json::parse(f);
  }();
  return j;
}

const text::ByteLevelBpeTokenizer& tokenizer() {
  static const text::ByteLevelBpeTokenizer t = text::ByteLevelBpeTokenizer::from_dir((kData / "qwen2_bpe").string());
  return t;
}

std::string printable(const std::string& s) { return nlohmann::json(s).dump(); }

using test::expect_error;

std::string edited_copy(const std::function<void(nlohmann::json&)>& edit) {
  std::ifstream f(kData / "qwen2_bpe" / "tokenizer.json");
  nlohmann::json j = nlohmann::json::parse(f);
  edit(j);
  const fs::path p = fs::temp_directory_path() / ("vidax_qwen2_bpe_" + std::to_string(::getpid()) + ".json");
  std::ofstream(p) << j.dump();
  return p.string();
}

std::vector<std::string> pieces(const std::string& text) {
  std::vector<std::string> got;
  for (const std::u32string& p : text::qwen2_pretokenize(text::utf8_to_u32(text))) got.push_back(text::u32_to_utf8(p));
  return got;
}

}  // namespace

TEST(Qwen2Bpe, ReadsTheQwen2PreTokenizerAndNfc) {
  EXPECT_STREQ(tokenizer().pretokenizer(), "qwen2");
  EXPECT_TRUE(tokenizer().nfc());
  EXPECT_EQ(tokenizer().vocab_size(), 922);  // 900 trained + Qwen2.5-VL's 22 added tokens
  EXPECT_EQ(*tokenizer().pad_id(), *tokenizer().token_id("<|endoftext|>"));
}

TEST(Qwen2Bpe, PiecesMatchTheSplitPreTokenizer) {
  int n = 0;
  for (const auto& c : cases().at("cases")) {
    // The fixture splits the NFC text, as the pipeline does.
    const std::string text = text::u32_to_utf8(text::nfc(text::utf8_to_u32(c.at("text").get<std::string>())));
    EXPECT_EQ(pieces(text), c.at("pieces").get<std::vector<std::string>>()) << printable(text);
    ++n;
  }
  EXPECT_EQ(n, 44);
  for (const auto& c : cases().at("random_split")) {
    const std::string text = c.at("text");
    EXPECT_EQ(pieces(text), c.at("pieces").get<std::vector<std::string>>()) << printable(text);
    ++n;
  }
  EXPECT_EQ(n, 344);
}

TEST(Qwen2Bpe, DigitsSplitOneByOneUnlikeLlama3) {
  const std::vector<std::string> want = {"1", "2", "3", "4"};
  EXPECT_EQ(pieces("1234"), want);
  std::vector<std::string> llama;
  for (const std::u32string& p : text::llama3_pretokenize(U"1234")) llama.push_back(text::u32_to_utf8(p));
  EXPECT_EQ(llama, (std::vector<std::string>{"123", "4"}));
}

TEST(Qwen2Bpe, IdsMatchTransformers) {
  int n = 0;
  for (const auto& c : cases().at("cases")) {
    const std::string text = c.at("text");
    const auto want = c.at("ids").get<std::vector<int64_t>>();
    EXPECT_EQ(tokenizer().encode(text), want) << printable(text);
    EXPECT_EQ(tokenizer().encode(text, false), want) << printable(text);  // Qwen2 adds no special tokens
    ++n;
  }
  EXPECT_EQ(n, 44);
}

// An added token with normalized false is matched in the raw text: "<|im_end|>" followed by a
// combining long solidus overlay stays the token (NFC would compose ">" + U+0338 into U+226F).
TEST(Qwen2Bpe, AddedTokensMatchBeforeNfc) {
  const int64_t im_end = *tokenizer().token_id("<|im_end|>");
  const auto ids = tokenizer().encode("a<|im_end|>\u0338", false);
  EXPECT_NE(std::find(ids.begin(), ids.end(), im_end), ids.end());
  // NFC before the BPE: a decomposed e + acute encodes as the composed character.
  EXPECT_EQ(tokenizer().encode("caf\u00e9"), tokenizer().encode("cafe\u0301"));
}

TEST(Qwen2Bpe, OtherFilesAreRefused) {
  std::string p = edited_copy([](nlohmann::json& j) { j["normalizer"] = {{"type", "NFKC"}}; });
  expect_error([&] { text::ByteLevelBpeTokenizer::from_file(p); }, "normalizer");
  // A tokenizer.json of another model type (a WordPiece / Unigram model) is refused naming it.
  p = edited_copy([](nlohmann::json& j) { j["model"]["type"] = "WordPiece"; });
  expect_error([&] { text::ByteLevelBpeTokenizer::from_file(p); }, "model type 'WordPiece'");
  // Qwen2's regex with Llama-3's digit runs is neither table entry's.
  p = edited_copy([](nlohmann::json& j) {
    std::string r = j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"];
    r.replace(r.find("\\p{N}|"), 6, "\\p{N}{1,2}|");
    j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = r;
  });
  expect_error([&] { text::ByteLevelBpeTokenizer::from_file(p); }, "Llama-3's or Qwen2's");
  fs::remove(p);
}
