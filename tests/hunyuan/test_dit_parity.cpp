// The HunyuanVideo DiT against the official HYVideoDiffusionTransformer and diffusers'
// HunyuanVideoTransformer3DModel (tests/golden/hunyuan/*.safetensors, tools/golden/hunyuan_dit.py):
// output and every inter.* tensor at fp32 relative L2 <= 1e-5, bf16 at its stated bound, and
// controls that must fail (a perturbed parameter, an unmasked padding token, other RoPE tables)
// or must not change the output (the padded text rows' values).
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "hunyuan/dit_test_support.h"
#include "io/checkpoint.h"
#include "models/hunyuan/checkpoint_keys.h"
#include "models/hunyuan/dit.h"
#include "models/hunyuan/dit_parity.h"

using namespace vidax;
using namespace vidax::test::hunyuan_dit;
namespace fs = std::filesystem;

namespace {

fs::path golden_dir() { return fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "hunyuan"; }

// The folder also holds the text encoders' goldens (hunyuan.text.*): the DiT's are its hunyuan.dit files.
std::vector<std::string> dit_files() { return golden_files(golden_dir(), "hunyuan.dit"); }

class HunyuanDiTGolden : public testing::TestWithParam<Case> {};

using DiTLoaded = Loaded<hunyuan::DiTConfig, hunyuan::DiTInputs>;

DiTLoaded load(const std::string& name) {
  const std::string path = (golden_dir() / name).string();
  DiTLoaded l{io::Checkpoint::open(path), {}, {}, {}};
  const auto config = nlohmann::json::parse(l.file.metadata().at("config"));
  l.cfg = hunyuan::DiTConfig::from_json(config);
  l.params = hunyuan::golden_params(l.file, config, path, hunyuan::dit_component());
  l.in = hunyuan::golden_inputs(l.file, l.cfg, path);
  return l;
}

Tensor run(const DiTLoaded& l, std::map<std::string, Tensor> params, const hunyuan::DiTInputs& in) {
  return hunyuan::HunyuanDiT::from_weights(l.cfg, std::move(params), DType::F32).forward(in);
}

}  // namespace

TEST_P(HunyuanDiTGolden, MatchesTheReference) {
  const Case& c = GetParam();
  const io::Checkpoint file = io::Checkpoint::open(c.file);
  ASSERT_EQ(file.metadata().at("kind"), "hunyuan.dit");
  const auto config = nlohmann::json::parse(file.metadata().at("config"));
  EXPECT_GE(expect_matches(file, hunyuan::run_dit_golden(file, config, c.precision, c.file), c.precision), 5);
}

INSTANTIATE_TEST_SUITE_P(Files, HunyuanDiTGolden, testing::ValuesIn(all_cases(dit_files())), case_name);

TEST(HunyuanDiTGolden, AllGoldenFilesArePresent) {
  std::set<std::string> names;
  for (const auto& f : dit_files()) names.insert(fs::path(f).filename().string());
  for (const char* f : {"hunyuan_dit_tiny.safetensors", "hunyuan_dit_noguid.safetensors",
                        "hunyuan_dit_linear_gelu.safetensors", "hunyuan_dit_hd128.safetensors",
                        "hunyuan_dit_holes.safetensors", "hunyuan_dit_relu.safetensors",
                        "hunyuan_dit_silu.safetensors", "hunyuan_dit_diffusers.safetensors"})
    EXPECT_TRUE(names.count(f)) << f;
}

// The controls: each must move the output far past the fp32 bound (so the golden test can fail).
TEST(HunyuanDiTControls, APerturbedParameterFails) {
  const DiTLoaded l = load("hunyuan_dit_tiny.safetensors");
  ASSERT_LE(output_error(l, run(l, l.params, l.in)), 1e-5);
  for (const char* name : {"single_blocks.1.linear2.weight", "double_blocks.0.txt_attn_qkv.weight",
                           "txt_in.individual_token_refiner.blocks.1.self_attn_qkv.bias"}) {
    auto p = l.params;
    std::vector<float> v = p.at(name).to_f32_vector();
    v[v.size() * 5 / 6] += 1.0f;  // in the v third of a fused qkv (a k bias would shift every score of a row alike)
    p[name] = Tensor::from_f32(v, p.at(name).shape());
    EXPECT_GT(output_error(l, run(l, p, l.in)), 1e-4) << name;
  }
}

TEST(HunyuanDiTControls, AnUnmaskedPaddingTokenFails) {
  const DiTLoaded l = load("hunyuan_dit_tiny.safetensors");
  hunyuan::DiTInputs in = l.in;
  std::vector<int64_t> m = ints(in.text_mask);
  ASSERT_EQ(m[5], 0) << "sample 0 has 5 valid tokens of 8";
  m[5] = 1;
  in.text_mask = Tensor::from_i64(m, in.text_mask.shape());
  EXPECT_GT(output_error(l, run(l, l.params, in)), 1e-4);
}

TEST(HunyuanDiTControls, OtherRopeTablesFail) {
  const DiTLoaded l = load("hunyuan_dit_tiny.safetensors");
  hunyuan::DiTInputs in = l.in;
  std::swap(in.freqs_cos, in.freqs_sin);
  EXPECT_GT(output_error(l, run(l, l.params, in)), 1e-4);
}

// What the mask hides cannot matter: new values in the padded text rows leave the output as it is.
TEST(HunyuanDiTControls, PaddedTextRowsDoNotReachTheOutput) {
  for (const char* f : {"hunyuan_dit_tiny.safetensors", "hunyuan_dit_noguid.safetensors"}) {
    const DiTLoaded l = load(f);
    hunyuan::DiTInputs in = l.in;
    std::vector<float> ts = in.text_states.to_f32_vector();
    const std::vector<double> mask = in.text_mask.to_f64_vector();
    const int64_t D = in.text_states.size(2);
    for (size_t r = 0; r < mask.size(); ++r)
      if (mask[r] == 0)
        for (int64_t j = 0; j < D; ++j) ts[r * D + static_cast<size_t>(j)] = 7.0f - 0.3f * static_cast<float>(j % 11);
    in.text_states = Tensor::from_f32(ts, in.text_states.shape());
    const Tensor base = run(l, l.params, l.in), moved = run(l, l.params, in);
    EXPECT_EQ(base.to_f32_vector(), moved.to_f32_vector()) << f;
  }
}

TEST(HunyuanDiT, RefusesInputsThatDoNotFit) {
  const DiTLoaded l = load("hunyuan_dit_tiny.safetensors");
  const auto model = hunyuan::HunyuanDiT::from_weights(l.cfg, l.params, DType::F32);
  auto fails_with = [&](const hunyuan::DiTInputs& in, const std::string& what) {
    expect_error([&] { model.forward(in); }, what);
  };
  hunyuan::DiTInputs in = l.in;
  in.guidance.clear();
  fails_with(in, "guidance");
  in = l.in;
  in.freqs_cos = Tensor::zeros({3, 16}, DType::F32);
  fails_with(in, "freqs_cos / freqs_sin must be [12, 16]");
  in = l.in;
  in.text_mask = Tensor::zeros(l.in.text_mask.shape(), DType::I64);
  fails_with(in, "text_mask row 0 has no token");
  in = l.in;
  in.x = Tensor::zeros({2, 4, 3, 4, 5}, DType::F32);
  fails_with(in, "width 5 is not a multiple of the patch size 2");
}
