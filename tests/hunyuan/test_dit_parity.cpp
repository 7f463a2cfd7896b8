// The HunyuanVideo DiT against the official HYVideoDiffusionTransformer and diffusers'
// HunyuanVideoTransformer3DModel (tests/golden/hunyuan/*.safetensors, tools/golden/hunyuan_dit.py):
// output and every inter.* tensor at fp32 relative L2 <= 1e-5, bf16 at its stated bound, and
// controls that must fail (a perturbed parameter, an unmasked padding token, other RoPE tables)
// or must not change the output (the padded text rows' values).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "io/checkpoint.h"
#include "models/hunyuan/checkpoint_keys.h"
#include "models/hunyuan/dit.h"
#include "models/hunyuan/dit_parity.h"
#include "nn/synthetic_init.h"
#include "test_diff.h"
#include "test_names.h"
#include "translate/inspect.h"
#include "translate/source.h"

using namespace vidax;
namespace fs = std::filesystem;

namespace {

fs::path golden_dir() { return fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "hunyuan"; }

std::vector<std::string> golden_files() {
  std::vector<std::string> out;
  // The folder also holds the text encoders' goldens (hunyuan.text.*): the DiT's are its hunyuan.dit files.
  for (const auto& e : fs::directory_iterator(golden_dir()))
    if (e.path().extension() == ".safetensors" &&
        io::Checkpoint::open(e.path().string()).metadata().at("kind") == "hunyuan.dit")
      out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The bf16 run's bound against the fp32 reference: bf16 GEMM inputs (8 bits of mantissa) through
// 4-6 blocks; measured at most 4.3e-3 on these files (docs/models/hunyuanvideo.md).
constexpr double kBf16Bound = 1e-2;

struct Case {
  std::string file, precision;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.file << " (" << c.precision << ")"; }

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (const auto& f : golden_files())
    for (const char* p : {"fp32", "bf16"}) out.push_back({f, p});
  return out;
}

class HunyuanDiTGolden : public testing::TestWithParam<Case> {};

// The golden's model and inputs, for the controls.
struct Loaded {
  io::Checkpoint file;
  hunyuan::DiTConfig cfg;
  std::map<std::string, Tensor> params;  // engine names
  hunyuan::DiTInputs in;
};

Loaded load(const std::string& name) {
  const std::string path = (golden_dir() / name).string();
  Loaded l{io::Checkpoint::open(path), {}, {}, {}};
  const auto config = nlohmann::json::parse(l.file.metadata().at("config"));
  l.cfg = hunyuan::DiTConfig::from_json(config);
  translate::MemorySource src(path);
  for (const std::string& n : l.file.names())
    if (!translate::is_golden_io_key(n)) src.add(n, l.file.get(n));
  if (auto it = l.file.metadata().find("synthetic_params"); it != l.file.metadata().end())
    for (const auto& [n, t] : nn::synthetic_from_description(it->second, path)) src.add(n, t);
  l.params = translate::load(src, hunyuan::dit_component(), config);
  l.in.x = l.file.get("input.x");
  l.in.t = l.file.get("input.t").to_f64_vector();
  l.in.text_states = l.file.get("input.text_states");
  l.in.text_mask = l.file.get("input.text_mask");
  l.in.text_states_2 = l.file.get("input.text_states_2");
  l.in.freqs_cos = l.file.get("input.freqs_cos");
  l.in.freqs_sin = l.file.get("input.freqs_sin");
  if (l.file.contains("input.guidance")) l.in.guidance = l.file.get("input.guidance").to_f64_vector();
  return l;
}

Tensor run(const Loaded& l, std::map<std::string, Tensor> params, const hunyuan::DiTInputs& in) {
  return hunyuan::HunyuanDiT::from_weights(l.cfg, std::move(params), DType::F32).forward(in);
}

double output_error(const Loaded& l, const Tensor& got) { return test::rel_l2(l.file.get("output"), got); }

}  // namespace

TEST_P(HunyuanDiTGolden, MatchesTheReference) {
  const Case& c = GetParam();
  const io::Checkpoint file = io::Checkpoint::open(c.file);
  ASSERT_EQ(file.metadata().at("kind"), "hunyuan.dit");
  const auto config = nlohmann::json::parse(file.metadata().at("config"));
  const auto produced = hunyuan::run_dit_golden(file, config, c.precision, c.file);
  const double bound = c.precision == "fp32" ? 1e-5 : kBf16Bound;
  int compared = 0;
  for (const std::string& name : file.names()) {
    if (name.rfind("output", 0) != 0 && name.rfind("inter.", 0) != 0) continue;
    auto it = produced.find(name);
    ASSERT_NE(it, produced.end()) << name << " is not produced (every tap of these files is an engine tap)";
    const test::Diff d = test::diff(file.get(name), it->second);
    std::printf("  %-40s max_abs=%.3g rel_l2=%.3g\n", name.c_str(), d.max_abs, d.rel_l2);
    EXPECT_LE(d.rel_l2, bound) << name << " (" << c.precision << ") " << d.note;
    ++compared;
  }
  EXPECT_GE(compared, 5);
}

INSTANTIATE_TEST_SUITE_P(Files, HunyuanDiTGolden, testing::ValuesIn(all_cases()),
                         [](const testing::TestParamInfo<Case>& i) {
                           return test::gtest_name(fs::path(i.param.file).stem().string()) + "_" + i.param.precision;
                         });

TEST(HunyuanDiTGolden, AllGoldenFilesArePresent) {
  std::set<std::string> names;
  for (const auto& f : golden_files()) names.insert(fs::path(f).filename().string());
  for (const char* f : {"hunyuan_dit_tiny.safetensors", "hunyuan_dit_noguid.safetensors",
                        "hunyuan_dit_linear_gelu.safetensors", "hunyuan_dit_hd128.safetensors",
                        "hunyuan_dit_holes.safetensors", "hunyuan_dit_relu.safetensors",
                        "hunyuan_dit_silu.safetensors", "hunyuan_dit_diffusers.safetensors"})
    EXPECT_TRUE(names.count(f)) << f;
}

// The controls: each must move the output far past the fp32 bound (so the golden test can fail).
TEST(HunyuanDiTControls, APerturbedParameterFails) {
  const Loaded l = load("hunyuan_dit_tiny.safetensors");
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
  const Loaded l = load("hunyuan_dit_tiny.safetensors");
  hunyuan::DiTInputs in = l.in;
  std::vector<int64_t> m;
  for (double v : in.text_mask.to_f64_vector()) m.push_back(static_cast<int64_t>(v));
  ASSERT_EQ(m[5], 0) << "sample 0 has 5 valid tokens of 8";
  m[5] = 1;
  in.text_mask = Tensor::from_i64(m, in.text_mask.shape());
  EXPECT_GT(output_error(l, run(l, l.params, in)), 1e-4);
}

TEST(HunyuanDiTControls, OtherRopeTablesFail) {
  const Loaded l = load("hunyuan_dit_tiny.safetensors");
  hunyuan::DiTInputs in = l.in;
  std::swap(in.freqs_cos, in.freqs_sin);
  EXPECT_GT(output_error(l, run(l, l.params, in)), 1e-4);
}

// What the mask hides cannot matter: new values in the padded text rows leave the output as it is.
TEST(HunyuanDiTControls, PaddedTextRowsDoNotReachTheOutput) {
  for (const char* f : {"hunyuan_dit_tiny.safetensors", "hunyuan_dit_noguid.safetensors"}) {
    const Loaded l = load(f);
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
  const Loaded l = load("hunyuan_dit_tiny.safetensors");
  const auto model = hunyuan::HunyuanDiT::from_weights(l.cfg, l.params, DType::F32);
  auto fails_with = [&](hunyuan::DiTInputs in, const std::string& what) {
    try {
      model.forward(in);
      ADD_FAILURE() << "expected an error naming " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
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
