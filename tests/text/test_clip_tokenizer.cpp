// CLIP's BPE tokenizer (vocab.json + merges.txt) against transformers 5's CLIPTokenizer as
// HunyuanVideo's official load_tokenizer("clipL") builds it, on a tiny trained vocabulary
// (tests/text/data/clip_bpe/, tests/text/data/clip_bpe_cases.json,
// tools/golden/clip_tokenizer_fixture.py): the normalizer's output (NFC, white space, lowercase),
// the pre-tokenizer's pieces, the ids with and without the special tokens, the padded batch; bad
// folders.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/bpe_tokenizer.h"
#include "text/clip_tokenizer.h"
#include "text/text_clean.h"
#include "text/unicode_classes.h"

using namespace vidax;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(VIDAX_TEST_DATA_DIR) / "text" / "data";

nlohmann::json fixture() {
  std::ifstream f(kData / "clip_bpe_cases.json");
  return nlohmann::json::parse(f);
}

const text::ClipBpeTokenizer& tokenizer() {
  static const text::ClipBpeTokenizer t = text::ClipBpeTokenizer::from_dir((kData / "clip_bpe").string());
  return t;
}

std::string printable(const std::string& s) { return nlohmann::json(s).dump(); }

}  // namespace

TEST(ClipBpe, NormalizerAndPiecesMatchTokenizers) {
  const nlohmann::json all = fixture();
  int n = 0;
  for (const auto& c : all.at("cases")) {
    const std::string text = c.at("text");
    const std::u32string norm = text::clip_normalize(text::utf8_to_u32(text));
    EXPECT_EQ(text::u32_to_utf8(norm), c.at("normalized").get<std::string>()) << printable(text);
    std::vector<std::string> pieces;
    for (const std::u32string& p : text::clip_pretokenize(norm)) {
      std::string mapped;  // the fixture's pieces are in the byte alphabet (after ByteLevel)
      for (unsigned char b : text::u32_to_utf8(p)) mapped += text::gpt2_byte_alphabet()[b];
      pieces.push_back(mapped);
    }
    EXPECT_EQ(pieces, c.at("pieces").get<std::vector<std::string>>()) << printable(text);
    ++n;
  }
  EXPECT_EQ(n, 47);
}

TEST(ClipBpe, IdsMatchTransformers) {
  const nlohmann::json all = fixture();
  int unk = 0;
  for (const auto& c : all.at("cases")) {
    const std::string text = c.at("text");
    const std::vector<int64_t> ids = tokenizer().encode(text);
    EXPECT_EQ(ids, c.at("ids").get<std::vector<int64_t>>()) << printable(text);
    EXPECT_EQ(tokenizer().encode(text, false), c.at("ids_no_special").get<std::vector<int64_t>>()) << printable(text);
    unk += static_cast<int>(std::count(ids.begin() + 1, ids.end() - 1, tokenizer().eos_id()));
  }
  EXPECT_GT(unk, 0);  // unknown symbols (unk = <|endoftext|>) are exercised
}

// HunyuanVideo's text2tokens for CLIP: 77 tokens, truncated, padded with <|endoftext|>.
TEST(ClipBpe, BatchMatchesTheOfficialText2Tokens) {
  const nlohmann::json all = fixture();
  std::vector<std::string> texts;
  for (const auto& c : all.at("cases")) texts.push_back(c.at("text"));
  const text::TokenizedBatch b = tokenizer().encode_batch(texts, 77);
  const auto ids = all.at("batch").at("input_ids").get<std::vector<std::vector<int64_t>>>();
  const auto mask = all.at("batch").at("attention_mask").get<std::vector<std::vector<int64_t>>>();
  int truncated = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(b.prompts[i].ids, ids[i]) << printable(texts[i]);
    EXPECT_EQ(b.prompts[i].mask, mask[i]) << printable(texts[i]);
    truncated += b.prompts[i].truncated;
  }
  EXPECT_GE(truncated, 1);  // the long prompt
  EXPECT_EQ(b.ids.shape(), (Shape{static_cast<int64_t>(texts.size()), 77}));
}

TEST(ClipBpe, NfcAndLowercase) {
  using text::nfc;
  EXPECT_EQ(nfc(U"e\u0301"), U"\u00e9");
  EXPECT_EQ(nfc(U"a\u0323\u0302"), U"\u1ead");       // marks reordered, then composed
  EXPECT_EQ(nfc(U"a\u0302\u0323"), U"\u1ead");
  EXPECT_EQ(nfc(U"\u1100\u1161\u11a8"), U"\uac01");  // Hangul L V T
  EXPECT_EQ(nfc(U"\u212b"), U"\u00c5");              // a singleton decomposition
  EXPECT_EQ(nfc(U"\u0344"), U"\u0308\u0301");        // a non-starter decomposition: excluded
  EXPECT_EQ(nfc(U"\u0301a"), U"\u0301a");            // a leading mark composes with nothing
  EXPECT_EQ(text::lowercase(U"\u0130X\u03a3"), U"i\u0307x\u03c3");
}

TEST(ClipBpe, BadFoldersAreErrors) {
  const fs::path dir = fs::temp_directory_path() / ("vidax_clip_tok_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  try {
    text::ClipBpeTokenizer::from_dir(dir.string());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs vocab.json and merges.txt"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "vocab.json") << R"({"a</w>": 0, "<|endoftext|>": 1})";
  std::ofstream(dir / "merges.txt") << "#version: 0.2\na b c\n";
  try {
    text::ClipBpeTokenizer::from_dir(dir.string());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not two symbols"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "merges.txt") << "#version: 0.2\n";
  try {
    text::ClipBpeTokenizer::from_dir(dir.string());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the bos token '<|startoftext|>'"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
  EXPECT_THROW(tokenizer().encode_batch({"a"}, 2), Error);
}

// NFC and the whole normalizer on 400 random strings of the code points normalization touches,
// against tokenizers (whose Unicode data is older than Python's).
TEST(ClipBpe, NfcMatchesTokenizersOnRandomStrings) {
  const nlohmann::json all = fixture();
  int n = 0;
  for (const auto& c : all.at("nfc_cases")) {
    const std::u32string text = text::utf8_to_u32(c.at("text").get<std::string>());
    EXPECT_EQ(text::u32_to_utf8(text::nfc(text)), c.at("nfc").get<std::string>()) << printable(c.at("text"));
    EXPECT_EQ(text::u32_to_utf8(text::clip_normalize(text)), c.at("normalized").get<std::string>())
        << printable(c.at("text"));
    ++n;
  }
  EXPECT_EQ(n, 400);
}

// A merge line repeated at the end keeps its last rank, as transformers' CLIPTokenizer (tokenizers'
// merge map) does (tests/text/data/bpe_repeated_merges.json, tools/golden/bpe_repeated_merges.py).
// Bug: the first listing ranked.
TEST(ClipBpe, ARepeatedMergeTakesItsLastRank) {
  std::ifstream f(kData / "bpe_repeated_merges.json");
  const nlohmann::json want = nlohmann::json::parse(f);
  const fs::path dir = fs::temp_directory_path() / ("vidax_clip_rep_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(kData / "clip_bpe" / "vocab.json", dir / "vocab.json");
  std::ifstream m(kData / "clip_bpe" / "merges.txt");
  std::vector<std::string> lines;
  for (std::string line; std::getline(m, line);) lines.push_back(line);
  const size_t header = !lines.empty() && lines[0].rfind("#version", 0) == 0 ? 1 : 0;
  std::vector<std::string> merges;
  for (size_t i = header; i < lines.size(); ++i)
    if (!lines[i].empty()) merges.push_back(lines[i]);
  {
    std::ofstream out(dir / "merges.txt");
    for (size_t i = 0; i < header; ++i) out << lines[i] << "\n";
    for (const std::string& s : merges) out << s << "\n";
    for (const auto& i : want.at("repeated")) out << merges.at(i.get<size_t>()) << "\n";
  }
  const text::ClipBpeTokenizer t = text::ClipBpeTokenizer::from_dir(dir.string());
  fs::remove_all(dir);
  const std::vector<std::string> prompts = want.at("prompts");
  int changed = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto ids = want.at("clip_bpe")[i].get<std::vector<int64_t>>();
    EXPECT_EQ(t.encode(prompts[i]), ids) << nlohmann::json(prompts[i]).dump();
    changed += ids != tokenizer().encode(prompts[i]);
  }
  EXPECT_EQ(changed, 16);
}
