// The Gemma-3 tokenizer (tokenizer.json + tokenizer_config.json) against the tokenizer the official
// LTX-2 pipeline builds (ltx_core's build_gemma_hf_tokenizer: transformers 5.23 over tokenizers
// 0.23) on a tiny Gemma-structured BPE with byte fallback (tests/text/data/gemma3_bpe/,
// tests/text/data/gemma3_bpe_cases.json, tools/golden/gemma_tokenizer_fixture.py): the ids with and
// without <bos> token for token, two tokenizer.json variants, truncation; bad files.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/tensor.h"
#include "io/checkpoint.h"
#include "test_expect.h"
#include "text/gemma_tokenizer.h"

using namespace vidax;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(VIDAX_TEST_DATA_DIR) / "text" / "data";
const fs::path kDir = kData / "gemma3_bpe";

const nlohmann::json& cases() {
  static const nlohmann::json j = [] {
    std::ifstream f(kData / "gemma3_bpe_cases.json");
    return nlohmann::json::parse(f);
  }();
  return j;
}

const text::GemmaTokenizer& tokenizer() {
  static const text::GemmaTokenizer t = text::GemmaTokenizer::from_dir(kDir.string());
  return t;
}

std::string printable(const std::string& s) { return nlohmann::json(s).dump().substr(0, 160); }

using test::expect_error;

nlohmann::json read_json(const fs::path& p) {
  std::ifstream f(p);
  return nlohmann::json::parse(f);
}

// The fixture's tokenizer.json and tokenizer_config.json with edits, as a tokenizer.
text::GemmaTokenizer edited(const std::function<void(nlohmann::json&)>& edit_json,
                            const std::function<void(nlohmann::json&)>& edit_config = nullptr) {
  nlohmann::json j = read_json(kDir / "tokenizer.json"), cfg = read_json(kDir / "tokenizer_config.json");
  if (edit_json) edit_json(j);
  if (edit_config) edit_config(cfg);
  return text::GemmaTokenizer::from_json(j.dump(), cfg.dump(), "edited fixture");
}

std::string file_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// `text` as a 1-D byte tensor of `dtype` (U8 as ltx_core packs it, I8 as ComfyUI may).
Tensor byte_tensor(const std::string& text, DType dtype) {
  Tensor t = Tensor::empty({static_cast<int64_t>(text.size())}, dtype);
  std::copy(text.begin(), text.end(), t.data<char>());
  return t;
}

}  // namespace

TEST(GemmaTokenizer, IdsMatchTheOfficialTokenizer) {
  int n = 0;
  for (const auto& c : cases().at("cases")) {
    const std::string text = c.at("text");
    EXPECT_EQ(tokenizer().encode(text), c.at("ids").get<std::vector<int64_t>>()) << printable(text);
    EXPECT_EQ(tokenizer().encode(text, false), c.at("ids_no_special").get<std::vector<int64_t>>()) << printable(text);
    ++n;
  }
  EXPECT_EQ(n, 54);
}

TEST(GemmaTokenizer, FixtureExercisesByteFallbackAddedTokensAndMerges) {
  // Guards that the fixture covers what it is meant to: ids of byte tokens, of both kinds of added
  // tokens, of merged pieces, and a prompt longer than the pipeline's 1024.
  const auto& t = tokenizer();
  const int64_t byte_e2 = *t.token_id("<0xE2>"), newlines = *t.token_id("\n\n\n");
  int64_t red_panda = -1;
  const nlohmann::json file = read_json(kDir / "tokenizer.json");
  for (const auto& a : file.at("added_tokens"))
    if (a.at("content").get<std::string>() == "red panda") red_panda = a.at("id").get<int64_t>();
  const int64_t start_turn = *t.token_id("<start_of_turn>");
  bool saw_byte = false, saw_newlines = false, saw_red_panda = false, saw_turn = false, saw_long = false;
  for (const auto& c : cases().at("cases")) {
    const auto ids = c.at("ids").get<std::vector<int64_t>>();
    for (int64_t id : ids) {
      saw_byte |= id == byte_e2;
      saw_newlines |= id == newlines;
      saw_red_panda |= id == red_panda;
      saw_turn |= id == start_turn;
    }
    saw_long |= ids.size() > 1024;
  }
  EXPECT_TRUE(saw_byte);
  EXPECT_TRUE(saw_newlines);
  EXPECT_TRUE(saw_red_panda);
  EXPECT_TRUE(saw_turn);
  EXPECT_TRUE(saw_long);
  EXPECT_EQ(t.encode("red panda", false), std::vector<int64_t>{red_panda});
  EXPECT_LT(t.encode(" the cinematic lighting", false).size(), 12u);  // merged well below its 23 characters  // normalized added token
  EXPECT_EQ(*t.bos_id(), 2);
  EXPECT_EQ(*t.eos_id(), 1);
  EXPECT_EQ(*t.pad_id(), 0);
  EXPECT_EQ(t.vocab_size(), 1005);
  EXPECT_EQ(t.special_tokens_added(), 1);
}

TEST(GemmaTokenizer, VariantsMatchTheOfficialTokenizer) {
  const std::vector<std::string> prompts = cases().at("prompts");
  int n = 0;
  for (const auto& v : cases().at("variants")) {
    const std::string name = v.at("name");
    text::GemmaTokenizer t = edited([&](nlohmann::json& j) {
      if (name == "split_merged_with_previous")
        j["pre_tokenizer"] = {{"type", "Split"},
                              {"pattern", {{"String", " "}}},
                              {"behavior", "MergedWithPrevious"},
                              {"invert", false}};
      else if (name == "no_byte_fallback")
        j["model"]["byte_fallback"] = false;
      else if (name == "no_byte_f0")  // 4-byte characters -> <unk>, kept pending across byte tokens
        j["model"]["vocab"].erase("<0xF0>");
      else if (name == "prepend_sequence")  // U+2581 in front of each span between raw added tokens
        j["normalizer"] = {{"type", "Sequence"},
                           {"normalizers",
                            {{{"type", "Prepend"}, {"prepend", "\u2581"}},
                             {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}}}};
      else
        FAIL() << "unknown variant " << name;
    });
    for (size_t i = 0; i < prompts.size(); ++i)
      EXPECT_EQ(t.encode(prompts[i]), v.at("ids")[i].get<std::vector<int64_t>>()) << name << " " << printable(prompts[i]);
    ++n;
  }
  EXPECT_EQ(n, 4);
}

TEST(GemmaTokenizer, TruncationKeepsTheFirstTokensThenTheTemplate) {
  const auto& t = tokenizer();
  const std::string text = "A red panda climbing a bamboo tree in the snow";
  const std::vector<int64_t> all = t.encode(text);
  bool cut = false;
  EXPECT_EQ(t.encode_truncated(text, 5, &cut), std::vector<int64_t>(all.begin(), all.begin() + 5));
  EXPECT_TRUE(cut);
  EXPECT_EQ(t.encode_truncated(text, 1000, &cut), all);
  EXPECT_FALSE(cut);
  EXPECT_EQ(t.encode_truncated(text, 1), std::vector<int64_t>{2});
  expect_error([&] { t.encode_truncated(text, 0); }, "shorter than the 1 special tokens");
}

TEST(GemmaTokenizer, TheConfigDecidesTheTemplate) {
  // add_bos_token / add_eos_token in tokenizer_config.json rebuild the post-processor (transformers);
  // without either key, tokenizer.json's TemplateProcessing holds.
  const std::vector<int64_t> body = tokenizer().encode("a cat", false);
  auto with = [&](std::vector<int64_t> pre, std::vector<int64_t> post) {
    pre.insert(pre.end(), body.begin(), body.end());
    pre.insert(pre.end(), post.begin(), post.end());
    return pre;
  };
  EXPECT_EQ(edited(nullptr, [](auto& c) { c["add_bos_token"] = false; }).encode("a cat"), body);
  EXPECT_EQ(edited(nullptr, [](auto& c) { c["add_eos_token"] = true; }).encode("a cat"), with({2}, {1}));
  EXPECT_EQ(edited(nullptr, [](auto& c) { c.erase("add_bos_token"); c.erase("add_eos_token"); }).encode("a cat"),
            with({2}, {}));
  EXPECT_EQ(edited([](auto& j) { j["post_processor"] = nullptr; },
                   [](auto& c) { c.erase("add_bos_token"); c.erase("add_eos_token"); })
                .encode("a cat"),
            body);
  EXPECT_FALSE(edited(nullptr, [](auto& c) { c.erase("pad_token"); }).pad_id());
}

TEST(GemmaTokenizer, RefusesWhatItDoesNotImplement) {
  expect_error([] { edited([](auto& j) { j["normalizer"] = {{"type", "NFKC"}}; }); }, "normalizer");
  expect_error([] { edited([](auto& j) { j["pre_tokenizer"] = {{"type", "Metaspace"}}; }); }, "pre_tokenizer");
  expect_error([] { edited([](auto& j) { j["normalizer"] = nullptr; j["pre_tokenizer"] = {{"type", "Split"},
        {"pattern", {{"String", " "}}}, {"behavior", "MergedWithPrevious"}, {"invert", false}}; }); },
               "pre_tokenizer");
  expect_error([] { edited([](auto& j) { j["model"]["type"] = "Unigram"; }); }, "model type 'Unigram'");
  expect_error([] { edited([](auto& j) { j["model"]["dropout"] = 0.1; }); }, "dropout");
  expect_error([] { edited([](auto& j) { j["added_tokens"][0]["lstrip"] = true; }); }, "lstrip");
  expect_error([] { edited([](auto& j) { j["model"]["merges"].push_back({"zz", "q"}); }); }, "not in the vocabulary");
  expect_error([] { edited(nullptr, [](auto& c) { c["bos_token"] = "<nothing>"; }); }, "bos_token '<nothing>'");
  expect_error([] { edited(nullptr, [](auto& c) { c["truncation_side"] = "left"; }); }, "truncation_side");
  expect_error([] { text::GemmaTokenizer::from_json("{", "", "x"); }, "not JSON");
  const auto no_unk = edited([](auto& j) { j["model"]["byte_fallback"] = false; j["model"]["unk_token"] = nullptr; });
  expect_error([&] { no_unk.encode("\U0001F47D"); }, "no unk_token");
}

TEST(GemmaTokenizer, FindsTheFilesAsTheLtx2LoaderDoes) {
  const fs::path root = fs::temp_directory_path() / ("vidax_gemma_tok_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "tokenizer");
  fs::copy_file(kDir / "tokenizer.json", root / "tokenizer" / "tokenizer.json");
  expect_error([&] { text::GemmaTokenizer::from_dir(root.string()); }, "no tokenizer_config.json");
  fs::copy_file(kDir / "tokenizer_config.json", root / "tokenizer_config.json");
  // A tokenizer.json below the folder, the config in it.
  EXPECT_EQ(text::GemmaTokenizer::from_dir(root.string()).encode("a cat"), tokenizer().encode("a cat"));
  // Two tokenizer.json below and none in the folder: which one Python takes is directory order.
  fs::create_directories(root / "other");
  fs::copy_file(kDir / "tokenizer.json", root / "other" / "tokenizer.json");
  expect_error([&] { text::GemmaTokenizer::from_dir(root.string()); }, "give the folder of one");
  expect_error([&] { text::GemmaTokenizer::from_dir((root / "missing").string()); }, "not a directory");
  fs::remove_all(root);
}

// A packed single-file text encoder (GemmaAssets.from_single_file's layout): tokenizer.json as a
// byte tensor, tokenizer_config.json as an hf_asset__ tensor or (older / ComfyUI packs) metadata.
TEST(GemmaTokenizer, ReadsAPackedTextEncoderFile) {
  const fs::path dir = fs::temp_directory_path() / ("vidax_gemma_pack_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string tj = file_text(kDir / "tokenizer.json"), tc = file_text(kDir / "tokenizer_config.json");
  const std::string text = "<start_of_turn>user\nA red panda \u955c\u5934<end_of_turn>";
  const std::vector<int64_t> want = tokenizer().encode(text);
  const Tensor weight = Tensor::zeros({2, 2}, DType::F32);
  const fs::path a = dir / "te_assets.safetensors", b = dir / "te_comfy.safetensors", c = dir / "te_bare.safetensors";
  io::save_safetensors(a.string(), {{"tokenizer_json", byte_tensor(tj, DType::U8)},
                                    {"hf_asset__tokenizer_config.json", byte_tensor(tc, DType::U8)},
                                    {"model.norm.weight", weight}},
                       {{"gemma_config", "{}"}});
  io::save_safetensors(b.string(), {{"tokenizer_json", byte_tensor(tj, DType::I8)}, {"model.norm.weight", weight}},
                       {{"tokenizer_config.json", tc}});
  io::save_safetensors(c.string(), {{"tokenizer_json", byte_tensor(tj, DType::U8)}});
  EXPECT_EQ(text::GemmaTokenizer::load(a.string()).encode(text), want);
  EXPECT_EQ(text::GemmaTokenizer::load(b.string()).encode(text), want);  // I8 bytes, config in metadata
  EXPECT_EQ(text::GemmaTokenizer::load(kDir.string()).encode(text), want);
  expect_error([&] { text::GemmaTokenizer::load(c.string()); }, "holds no tokenizer_config.json");
  io::save_safetensors(c.string(), {{"model.norm.weight", weight}});
  expect_error([&] { text::GemmaTokenizer::load(c.string()); }, "holds no tensor 'tokenizer_json'");
  expect_error([&] { text::GemmaTokenizer::load((kDir / "tokenizer.json").string()); }, "neither a directory");
  fs::remove_all(dir);
}

TEST(GemmaTokenizer, RandomStringsMatchTheOfficialTokenizer) {
  int n = 0;
  for (const auto& c : cases().at("random")) {
    const std::string text = c.at("text");
    EXPECT_EQ(tokenizer().encode(text), c.at("ids").get<std::vector<int64_t>>()) << printable(text);
    ++n;
  }
  EXPECT_EQ(n, 300);
}
