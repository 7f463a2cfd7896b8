// The T5/UMT5 encoder against golden files from the official Wan T5Encoder and
// transformers' UMT5EncoderModel / T5EncoderModel (tools/golden/t5_encoder.py).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/checkpoint.h"
#include "text/t5_encoder.h"
#include "test_diff.h"
#include "test_names.h"
#include "text/t5_parity.h"
#include "text/wan_text_encoder.h"

namespace vidax::text {
namespace {

const std::string kGolden = std::string(VIDAX_TEST_DATA_DIR) + "/golden/";
const std::string kData = std::string(VIDAX_TEST_DATA_DIR) + "/text/data";

using vidax::test::diff;

struct GoldenCase {
  const char* file;       // under tests/golden/ (fp32) or tests/text/data/ (bf16 reference)
  const char* precision;  // the reference ran in fp32, or in bf16 with bf16 parameters
  double rtol;
};
void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.file << " (" << c.precision << ")"; }
class T5Golden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(T5Golden, MatchesReference) {
  const GoldenCase c = GetParam();
  const std::string path = (std::string(c.precision) == "fp32" ? kGolden : kData + "/") + c.file;
  io::Checkpoint file = io::Checkpoint::open(path);
  ASSERT_EQ(file.metadata().at("kind"), "t5.encoder");
  auto config = nlohmann::json::parse(file.metadata().at("config"));
  auto out = run_t5_golden(file, config, c.precision, path);
  const vidax::test::Diff err = diff(file.get("output"), out.at("output"));
  std::printf("%s %s rel_l2=%.3g max_abs=%.3g\n", c.file, c.precision, err.rel_l2, err.max_abs);
  EXPECT_LE(err.rel_l2, c.rtol);
}

INSTANTIATE_TEST_SUITE_P(Files, T5Golden,
                         ::testing::Values(GoldenCase{"t5_umt5_official.safetensors", "fp32", 1e-5},
                                           GoldenCase{"t5_shared_official.safetensors", "fp32", 1e-5},
                                           GoldenCase{"t5_umt5_hf.safetensors", "fp32", 1e-5},
                                           GoldenCase{"t5_t5v11_hf.safetensors", "fp32", 1e-5},
                                           // Tighter than the 1e-2 bf16 default on purpose: the engine follows the
                                           // reference's bf16 rounding points (bit-equal on CPU); a fused GELU lands at
                                           // 8.0e-3, an exactly rounded cube at 5.7e-3, fused attention + GELU at 1.0e-2. 2e-3 leaves room for GEMM
                                           // accumulation order (~8e-4 measured between torch's own bf16 einsum paths).
                                           GoldenCase{"t5_umt5_official_bf16.safetensors", "bf16", 2e-3}),
                         // Test names from the file and precision (the default printed the struct's bytes,
                         // pointers included, so the names changed from build to build).
                         [](const ::testing::TestParamInfo<GoldenCase>& info) {
                           const std::string file = info.param.file;
                           return vidax::test::gtest_name(file.substr(0, file.find('.')) + "_" + info.param.precision);
                         });

TEST(T5Weights, StrictMapping) {
  io::Checkpoint file = io::Checkpoint::open(kGolden + "t5_umt5_hf.safetensors");
  auto cfg = T5EncoderConfig::from_json(nlohmann::json::parse(file.metadata().at("config")));
  std::map<std::string, Tensor> params;
  for (const auto& n : file.names())
    if (n.rfind("input.", 0) != 0 && n.rfind("output", 0) != 0) params.emplace(n, file.get(n));
  auto engine = t5_encoder_weights_from_golden(params, cfg);
  EXPECT_EQ(engine.size(), t5_encoder_parameter_names(cfg).size());
  EXPECT_TRUE(engine.count("blocks.2.pos_embedding.embedding.weight"));  // UMT5: a table per block

  auto extra = params;
  extra.emplace("encoder.block.0.layer.0.SelfAttention.extra.weight", params.begin()->second);
  EXPECT_THROW(t5_encoder_weights_from_golden(extra, cfg), Error);
  auto missing = params;
  missing.erase("encoder.block.1.layer.1.DenseReluDense.wo.weight");
  try {
    t5_encoder_weights_from_golden(missing, cfg);
    ADD_FAILURE() << "missing parameter not reported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blocks.1.ffn.fc2.weight"), std::string::npos) << e.what();
  }
  // A UMT5 checkpoint under a T5 (shared position table) config: the per-block tables are unused.
  auto t5cfg = cfg;
  t5cfg.shared_pos = true;
  EXPECT_THROW(t5_encoder_weights_from_golden(params, t5cfg), Error);
}

// Deterministic small weights for the end-to-end test.
Tensor pseudo_random(const Shape& shape, uint32_t seed, float scale, float offset = 0) {
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  uint32_t s = seed * 2654435761u + 1;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = offset + scale * (static_cast<float>(s >> 8) / static_cast<float>(1 << 24) - 0.5f);
  }
  return Tensor::from_f32(v, shape);
}

T5EncoderConfig tiny_config() {
  T5EncoderConfig cfg;
  cfg.vocab = 512;
  cfg.dim = 16;
  cfg.dim_attn = 16;
  cfg.dim_ffn = 24;
  cfg.num_heads = 2;
  cfg.num_layers = 2;
  cfg.shared_pos = false;
  return cfg;
}

std::map<std::string, Tensor> tiny_weights(const T5EncoderConfig& cfg) {
  std::map<std::string, Tensor> w;
  uint32_t seed = 1;
  const std::map<std::string, Shape> shapes_by_suffix = {
      {"token_embedding.weight", {512, 16}}, {"norm1.weight", {16}},        {"norm2.weight", {16}},
      {"norm.weight", {16}},                 {"attn.q.weight", {16, 16}},   {"attn.k.weight", {16, 16}},
      {"attn.v.weight", {16, 16}},           {"attn.o.weight", {16, 16}},   {"ffn.gate.0.weight", {24, 16}},
      {"ffn.fc1.weight", {24, 16}},          {"ffn.fc2.weight", {16, 24}},  {"pos_embedding.embedding.weight", {32, 2}}};
  for (const auto& name : t5_encoder_parameter_names(cfg)) {
    for (const auto& [suffix, shape] : shapes_by_suffix) {
      if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 &&
          (suffix != "norm.weight" || name == "norm.weight")) {
        bool is_norm = suffix.find("norm") == 0;
        w[name] = pseudo_random(shape, seed++, is_norm ? 0.2f : 1.0f, is_norm ? 1.0f : 0.0f);
      }
    }
  }
  return w;
}

TEST(WanTextEncoder, TrimsEachPromptToItsTokens) {
  const T5EncoderConfig cfg = tiny_config();
  const std::map<std::string, Tensor> w = tiny_weights(cfg);
  ASSERT_EQ(w.size(), t5_encoder_parameter_names(cfg).size());
  T5Encoder enc(cfg, [&](const std::string& n) { return w.at(n); });
  WanTextEncoder text(T5Tokenizer::load(kData + "/tiny_spiece.model"), enc, /*text_len=*/32);

  std::vector<std::string> prompts = {"a red panda climbing a bamboo tree", "snow",
                                      "An astronaut riding a horse across the surface of the moon, high detail, "
                                      "4k, slow camera pan from left to right at sunrise"};
  EncodedPrompts out = text.encode(prompts);
  TokenizedBatch batch = text.tokenizer().encode_batch(prompts, 32);
  Tensor full = enc.forward(batch.ids, batch.mask);
  ASSERT_EQ(out.context.size(), 3u);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(out.context[i].shape(), (Shape{batch.prompts[i].length, 16}));
    auto rows = full.select(0, static_cast<int64_t>(i)).slice(0, 0, batch.prompts[i].length);
    EXPECT_EQ(out.context[i].to_f32_vector(), rows.to_f32_vector());
  }
  EXPECT_FALSE(out.truncated[0]);
  EXPECT_TRUE(out.truncated[2]);  // longer than 32 tokens
  // A prompt's encoding does not depend on the other prompts in the batch (mask respected).
  EncodedPrompts alone = text.encode({prompts[1]});
  const vidax::test::Diff err = diff(alone.context[0].contiguous(), out.context[1].contiguous());
  EXPECT_LE(err.rel_l2, 1e-6);
}

// WanTextEncoder::open on an official-layout checkpoint file: strict about its tensor names.
TEST(WanTextEncoder, OpensOfficialCheckpointStrictly) {
  namespace fs = std::filesystem;
  const T5EncoderConfig cfg = tiny_config();
  std::map<std::string, Tensor> w = tiny_weights(cfg);
  fs::path dir = fs::path(VIDAX_BINARY_DIR) / "test_text_wan_ckpt";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string tok = kData + "/tiny_spiece.model";

  io::save_safetensors((dir / "t5.safetensors").string(), w);
  auto text = WanTextEncoder::open((dir / "t5.safetensors").string(), tok, DType::F32, 32, cfg);
  T5Encoder ref(cfg, [&](const std::string& n) { return w.at(n); });
  TokenizedBatch batch = text.tokenizer().encode_batch({"a fox in the snow"}, 32);
  auto got = text.encode({"a fox in the snow"});
  auto want = ref.forward(batch.ids, batch.mask).select(0, 0).slice(0, 0, batch.prompts[0].length);
  EXPECT_EQ(got.context[0].to_f32_vector(), want.to_f32_vector());

  // Config inferred from the tensor shapes (no config given, none in the file).
  auto inferred = WanTextEncoder::open((dir / "t5.safetensors").string(), tok, DType::F32, 32);
  EXPECT_EQ(inferred.encoder().config().num_layers, 2);
  EXPECT_FALSE(inferred.encoder().config().shared_pos);
  EXPECT_EQ(inferred.encode({"a fox in the snow"}).context[0].to_f32_vector(), want.to_f32_vector());

  // The same weights under transformers' UMT5EncoderModel names (a diffusers text_encoder/).
  std::map<std::string, Tensor> hf;
  const std::vector<std::pair<std::string, std::string>> block_names = {
      {"norm1.weight", "layer.0.layer_norm.weight"},
      {"attn.q.weight", "layer.0.SelfAttention.q.weight"},
      {"attn.k.weight", "layer.0.SelfAttention.k.weight"},
      {"attn.v.weight", "layer.0.SelfAttention.v.weight"},
      {"attn.o.weight", "layer.0.SelfAttention.o.weight"},
      {"pos_embedding.embedding.weight", "layer.0.SelfAttention.relative_attention_bias.weight"},
      {"norm2.weight", "layer.1.layer_norm.weight"},
      {"ffn.gate.0.weight", "layer.1.DenseReluDense.wi_0.weight"},
      {"ffn.fc1.weight", "layer.1.DenseReluDense.wi_1.weight"},
      {"ffn.fc2.weight", "layer.1.DenseReluDense.wo.weight"}};
  hf["shared.weight"] = w.at("token_embedding.weight");
  hf["encoder.final_layer_norm.weight"] = w.at("norm.weight");
  for (int i = 0; i < 2; ++i)
    for (const auto& [engine, theirs] : block_names)
      hf["encoder.block." + std::to_string(i) + "." + theirs] = w.at("blocks." + std::to_string(i) + "." + engine);
  fs::create_directories(dir / "text_encoder");
  io::save_safetensors((dir / "text_encoder" / "model.safetensors").string(), hf);
  auto from_hf = WanTextEncoder::open((dir / "text_encoder").string(), tok, DType::F32, 32);
  EXPECT_EQ(from_hf.encode({"a fox in the snow"}).context[0].to_f32_vector(), want.to_f32_vector());

  auto extra = w;
  extra.emplace("blocks.0.attn.extra.weight", w.at("norm.weight"));
  io::save_safetensors((dir / "extra.safetensors").string(), extra);
  try {
    WanTextEncoder::open((dir / "extra.safetensors").string(), tok, DType::F32, 32, cfg);
    ADD_FAILURE() << "unused tensor not reported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blocks.0.attn.extra.weight"), std::string::npos) << e.what();
  }
  auto missing = w;
  missing.erase("blocks.1.ffn.fc1.weight");
  io::save_safetensors((dir / "missing.safetensors").string(), missing);
  try {
    WanTextEncoder::open((dir / "missing.safetensors").string(), tok, DType::F32, 32, cfg);
    ADD_FAILURE() << "missing tensor not reported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blocks.1.ffn.fc1.weight"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vidax::text
