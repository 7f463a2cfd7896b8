// LoRA (docs/lora.md): the reader on small in-memory files (formats, alpha, strictness,
// several LoRAs, one cast), the goldens of tools/golden/wan_lora.py (one per format: the
// reference's fused output from the base weights + the LoRA file merged by the engine),
// and the CLI (`vidax parity --lora`, `vidax inspect LORA`, `vidax generate --lora`).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "cli_child.h"
#include "core/error.h"
#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "models/wan/checkpoint_keys.h"
#include "parity/parity.h"
#include "translate/lora.h"

using namespace vidax;
using namespace vidax::translate;
namespace fs = std::filesystem;

namespace {

const fs::path kGolden = fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "lora";

fs::path scratch() {
  static const fs::path p = [] {
    fs::path d = fs::temp_directory_path() / ("vidax_test_lora_" + std::to_string(::getpid()));
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
  }();
  return p;
}

// A tiny Wan DiT config: dim 8, 2 layers.
Json tiny_config() {
  wan::DitConfig c;
  c.dim = 8;
  c.ffn_dim = 16;
  c.num_heads = 1;
  c.num_layers = 2;
  c.text_dim = 8;
  c.freq_dim = 8;
  c.in_dim = 4;
  c.out_dim = 4;
  return c.to_json();
}

Tensor ramp(const Shape& s, float scale, float offset = 0) {
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = offset + scale * std::sin(0.37f * static_cast<float>(i) + 0.1f * scale);
  return Tensor::from_f32(v, s);
}

std::string write(const std::string& name, const std::map<std::string, Tensor>& t,
                  const std::map<std::string, std::string>& meta = {}) {
  const std::string p = (scratch() / name).string();
  io::save_safetensors(p, t, meta);
  return p;
}

std::map<std::string, Tensor> tiny_params(DType dtype = DType::F32) {
  std::map<std::string, Tensor> out;
  for (const auto& p : wan::dit_params(wan::DitConfig::from_json(tiny_config())).params)
    out[p.name] = ramp(p.shape, 0.5f).to(dtype);
  return out;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  const auto x = a.to_f32_vector(), y = b.to_f32_vector();
  EXPECT_EQ(x.size(), y.size());
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::fabs(static_cast<double>(x[i]) - y[i]));
  return m;
}

// W + f * up @ down in double, for checking the merge.
std::vector<double> merged(const Tensor& w, const Tensor& up, const Tensor& down, double f) {
  const auto W = w.to_f64_vector(), U = up.to_f64_vector(), D = down.to_f64_vector();
  const int64_t out = up.size(0), r = down.size(0), in = down.numel() / r;
  std::vector<double> m(W);
  for (int64_t i = 0; i < out; ++i)
    for (int64_t j = 0; j < in; ++j) {
      double s = 0;
      for (int64_t k = 0; k < r; ++k) s += U[i * r + k] * D[k * in + j];
      m[i * in + j] += f * s;
    }
  return m;
}

std::string run_cli(const std::string& args, int* code) {
  const auto r = vidax::test::cli::run_line(args);
  *code = r.code;
  return r.all();
}

}  // namespace

TEST(LoraSpec, LastColonNumberIsTheScale) {
  EXPECT_EQ(parse_lora_spec("a.safetensors").path, "a.safetensors");
  EXPECT_EQ(parse_lora_spec("a.safetensors").scale, 1.0);
  EXPECT_EQ(parse_lora_spec("dir/a.safetensors:0.8").scale, 0.8);
  EXPECT_EQ(parse_lora_spec("dir/a.safetensors:0.8").path, "dir/a.safetensors");
  EXPECT_EQ(parse_lora_spec("x:y/a.safetensors:-1.5").path, "x:y/a.safetensors");
  EXPECT_EQ(parse_lora_spec("x:y/a.safetensors:-1.5").scale, -1.5);
  EXPECT_EQ(parse_lora_spec("x:y/a.safetensors").path, "x:y/a.safetensors");  // not a number: part of the path
  EXPECT_THROW(parse_lora_spec(":0.5"), Error);
}

TEST(LoraPlan, ComfyUIAlphaAndDiffsMapToEngineNames) {
  MemorySource src("comfy");
  src.add("diffusion_model.blocks.1.self_attn.q.lora_down.weight", ramp({2, 8}, 0.1f));
  src.add("diffusion_model.blocks.1.self_attn.q.lora_up.weight", ramp({8, 2}, 0.1f));
  src.add("diffusion_model.blocks.1.self_attn.q.alpha", Tensor::from_f32({3.0f}, {}));
  src.add("diffusion_model.blocks.1.self_attn.q.diff_b", ramp({8}, 0.1f));
  src.add("diffusion_model.blocks.0.norm3.diff", ramp({8}, 0.1f));
  src.add("diffusion_model.blocks.0.modulation.diff", ramp({1, 6, 8}, 0.1f));
  const LoraPlan p = plan_lora(src, wan::dit_component(), tiny_config());
  EXPECT_EQ(p.format, "comfyui");
  EXPECT_TRUE(p.unmatched.empty());
  EXPECT_TRUE(p.problems.empty());
  ASSERT_EQ(p.targets.size(), 4u);
  std::map<std::string, const LoraTarget*> by;
  for (const auto& t : p.targets) by[t.param] = &t;
  ASSERT_TRUE(by.count("blocks.1.self_attn.q.weight"));
  EXPECT_DOUBLE_EQ(by["blocks.1.self_attn.q.weight"]->factor(), 1.5);  // alpha 3 / rank 2: not dropped
  EXPECT_TRUE(by.count("blocks.1.self_attn.q.bias"));
  EXPECT_TRUE(by.count("blocks.0.norm3.weight"));
  EXPECT_TRUE(by.count("blocks.0.modulation"));
}

TEST(LoraPlan, KohyaMatchesTheUnderscoreFormOfEngineNames) {
  MemorySource src("kohya");
  src.add("lora_unet_blocks_0_cross_attn_o.lora_down.weight", ramp({2, 8}, 0.1f));
  src.add("lora_unet_blocks_0_cross_attn_o.lora_up.weight", ramp({8, 2}, 0.1f));
  src.add("lora_unet_blocks_0_cross_attn_o.alpha", Tensor::from_f32({1.0f}, {}));
  src.add("lora_unet_time_projection_1.lora_down.weight", ramp({2, 8}, 0.1f));
  src.add("lora_unet_time_projection_1.lora_up.weight", ramp({48, 2}, 0.1f));
  const LoraPlan p = plan_lora(src, wan::dit_component(), tiny_config());
  EXPECT_EQ(p.format, "kohya");
  ASSERT_EQ(p.targets.size(), 2u);
  EXPECT_EQ(p.targets[0].param, "blocks.0.cross_attn.o.weight");
  EXPECT_DOUBLE_EQ(p.targets[0].factor(), 0.5);
  EXPECT_EQ(p.targets[1].param, "time_projection.1.weight");
  EXPECT_DOUBLE_EQ(p.targets[1].factor(), 1.0);  // no alpha key: factor 1
  EXPECT_EQ(p.targets[1].alpha_from, "none (factor 1)");
}

TEST(LoraPlan, DiffusersNamesGoThroughTheDiffusersKeyMapWithMetadataAlpha) {
  MemorySource src("diffusers");
  src.add("transformer.blocks.0.attn1.to_out.0.lora_A.weight", ramp({4, 8}, 0.1f));
  src.add("transformer.blocks.0.attn1.to_out.0.lora_B.weight", ramp({8, 4}, 0.1f));
  src.add("transformer.blocks.1.ffn.net.0.proj.lora_A.weight", ramp({4, 8}, 0.1f));
  src.add("transformer.blocks.1.ffn.net.0.proj.lora_B.weight", ramp({16, 4}, 0.1f));
  const LoraPlan no_meta = plan_lora(src, wan::dit_component(), tiny_config());
  ASSERT_EQ(no_meta.targets.size(), 2u);
  EXPECT_EQ(no_meta.targets[0].param, "blocks.0.self_attn.o.weight");
  EXPECT_EQ(no_meta.targets[1].param, "blocks.1.ffn.0.weight");
  EXPECT_DOUBLE_EQ(no_meta.targets[0].factor(), 1.0);
  // diffusers' save_lora_weights: the LoraConfig under the component's name.
  src.set_metadata({{"lora_adapter_metadata",
                     R"({"transformer.lora_alpha": 8, "transformer.r": 4,
                         "transformer.alpha_pattern": {"blocks.1.ffn.net.0.proj": 2}})"}});
  const LoraPlan meta = plan_lora(src, wan::dit_component(), tiny_config());
  EXPECT_DOUBLE_EQ(meta.targets[0].factor(), 2.0);
  EXPECT_DOUBLE_EQ(meta.targets[1].factor(), 0.5);
  EXPECT_EQ(meta.targets[0].alpha_from, "metadata");
  src.set_metadata({{"lora_adapter_metadata", R"({"transformer.lora_alpha": 8, "transformer.use_rslora": true})"}});
  EXPECT_DOUBLE_EQ(plan_lora(src, wan::dit_component(), tiny_config()).targets[0].factor(), 4.0);  // 8 / sqrt(4)
  src.set_metadata({{"lora_adapter_metadata", R"({"transformer.lora_alpha": 8, "transformer.use_dora": true})"}});
  EXPECT_THROW(plan_lora(src, wan::dit_component(), tiny_config()), Error);
}

TEST(LoraPlan, UnmatchedKeysAreErrorsNamingThem) {
  MemorySource src("bad");
  src.add("diffusion_model.blocks.0.self_attn.q.lora_down.weight", ramp({2, 8}, 0.1f));
  src.add("diffusion_model.blocks.0.self_attn.q.lora_up.weight", ramp({8, 2}, 0.1f));
  src.add("diffusion_model.blocks.7.self_attn.q.lora_down.weight", ramp({2, 8}, 0.1f));  // no block 7
  src.add("diffusion_model.blocks.7.self_attn.q.lora_up.weight", ramp({8, 2}, 0.1f));
  src.add("diffusion_model.blocks.0.self_attn.qq.alpha", Tensor::from_f32({1.0f}, {}));
  const LoraPlan p = plan_lora(src, wan::dit_component(), tiny_config());
  EXPECT_EQ(p.targets.size(), 1u);
  EXPECT_EQ(p.unmatched, (std::vector<std::string>{"diffusion_model.blocks.7.self_attn.q.lora_down.weight",
                                                   "diffusion_model.blocks.7.self_attn.q.lora_up.weight"}));
  ASSERT_EQ(p.problems.size(), 1u);  // an alpha alone
  EXPECT_NE(p.problems[0].find("self_attn.qq.alpha"), std::string::npos);
  try {
    check_lora(p, {});
    FAIL() << "unmatched keys were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blocks.7.self_attn.q.lora_down.weight"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--lora-allow-unmatched"), std::string::npos) << e.what();
  }
  // Allowing unmatched keys never allows a problem.
  EXPECT_THROW(check_lora(p, {true}), Error);
}

TEST(LoraPlan, AShapeThatDoesNotFitNamesTheTensor) {
  MemorySource src("shape");
  src.add("diffusion_model.blocks.0.ffn.2.lora_down.weight", ramp({2, 8}, 0.1f));  // ffn.2 takes 16 inputs
  src.add("diffusion_model.blocks.0.ffn.2.lora_up.weight", ramp({8, 2}, 0.1f));
  const LoraPlan p = plan_lora(src, wan::dit_component(), tiny_config());
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_NE(p.problems[0].find("blocks.0.ffn.2.lora_down.weight [2, 8]"), std::string::npos) << p.problems[0];
  EXPECT_NE(p.problems[0].find("blocks.0.ffn.2.weight [8, 16]"), std::string::npos) << p.problems[0];
  EXPECT_THROW(check_lora(p, {true}), Error);
}

TEST(LoraPlan, NotALoraAndMixedFormatsAreRefused) {
  MemorySource plain("plain");
  plain.add("blocks.0.self_attn.q.weight", ramp({8, 8}, 0.1f));
  EXPECT_FALSE(looks_like_lora(plain));
  EXPECT_THROW(plan_lora(plain, wan::dit_component(), tiny_config()), Error);
  MemorySource mixed("mixed");
  mixed.add("diffusion_model.blocks.0.self_attn.q.diff_b", ramp({8}, 0.1f));
  mixed.add("lora_unet_blocks_0_self_attn_q.alpha", Tensor::from_f32({1.0f}, {}));
  EXPECT_TRUE(looks_like_lora(mixed));
  EXPECT_THROW(plan_lora(mixed, wan::dit_component(), tiny_config()), Error);
}

TEST(LoraMerge, UpdateIsScaleTimesAlphaOverRankInFp32) {
  const Tensor down = ramp({2, 8}, 0.3f), up = ramp({8, 2}, 0.7f), db = ramp({8}, 0.2f);
  const std::string f = write("merge.safetensors", {{"diffusion_model.blocks.0.self_attn.k.lora_down.weight", down},
                                                    {"diffusion_model.blocks.0.self_attn.k.lora_up.weight", up},
                                                    {"diffusion_model.blocks.0.self_attn.k.alpha",
                                                     Tensor::from_f32({5.0f}, {})},
                                                    {"diffusion_model.blocks.0.self_attn.k.diff_b", db}});
  auto params = tiny_params();
  const auto base = params;
  apply_loras(params, {{f, 0.6}}, wan::dit_component(), tiny_config());
  const auto want = merged(base.at("blocks.0.self_attn.k.weight"), up, down, 0.6 * 5.0 / 2.0);
  const auto got = params.at("blocks.0.self_attn.k.weight").to_f64_vector();
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-6) << i;
  const auto b0 = base.at("blocks.0.self_attn.k.bias").to_f64_vector(), b1 = params.at("blocks.0.self_attn.k.bias").to_f64_vector();
  const auto d = db.to_f64_vector();
  for (size_t i = 0; i < b0.size(); ++i) ASSERT_NEAR(b1[i], b0[i] + 0.6 * d[i], 1e-6);
  // Untouched parameters are the same tensors (no copy).
  EXPECT_EQ(params.at("blocks.0.self_attn.q.weight").data_ptr(), base.at("blocks.0.self_attn.q.weight").data_ptr());
}

TEST(LoraMerge, SeveralLorasSumInFp32AndCastOnce) {
  // Two LoRAs whose updates are each below bf16's resolution at 1.0 but not together:
  // one cast of the fp32 sum keeps them, a cast after each would drop both.
  const Shape w{8, 8};
  auto params = tiny_params(DType::BF16);
  params["blocks.0.self_attn.v.weight"] = Tensor::full(w, 1.0, DType::BF16);
  auto one = [&](const std::string& name) {
    std::vector<float> dn(16, 0.0f), upv(16, 0.0f);
    dn[0] = 1.0f;   // down [2, 8]: row 0 = e0
    upv[0] = 1.0f;  // up [8, 2]: column 0 = e0 -> update on W[0][0] only
    return write(name, {{"diffusion_model.blocks.0.self_attn.v.lora_down.weight", Tensor::from_f32(dn, {2, 8})},
                        {"diffusion_model.blocks.0.self_attn.v.lora_up.weight", Tensor::from_f32(upv, {8, 2})}});
  };
  const std::string a = one("a.safetensors"), b = one("b.safetensors");
  // bf16 spacing at 1.0 is 2^-7; 0.003 each rounds away alone, 0.006 rounds to 1 + 2^-7.
  apply_loras(params, {{a, 0.003}, {b, 0.003}}, wan::dit_component(), tiny_config());
  const Tensor& v = params.at("blocks.0.self_attn.v.weight");
  EXPECT_EQ(v.dtype(), DType::BF16);  // the storage dtype
  EXPECT_FLOAT_EQ(v.to_f32_vector()[0], 1.0f + 1.0f / 128.0f);
  EXPECT_FLOAT_EQ(v.to_f32_vector()[1], 1.0f);
}

TEST(LoraMerge, AllowUnmatchedWarnsWithTheKeys) {
  const std::string f = write("partial.safetensors",
                              {{"diffusion_model.blocks.0.self_attn.k.diff_b", ramp({8}, 0.2f)},
                               {"diffusion_model.blocks.9.self_attn.k.diff_b", ramp({8}, 0.2f)}});
  auto params = tiny_params();
  EXPECT_THROW(apply_loras(params, {{f, 1.0}}, wan::dit_component(), tiny_config()), Error);
  std::string warned;
  apply_loras(params, {{f, 1.0}}, wan::dit_component(), tiny_config(), {true},
              [&](const std::string& m) { warned += m; });
  EXPECT_NE(warned.find("diffusion_model.blocks.9.self_attn.k.diff_b"), std::string::npos) << warned;
}

// ---- goldens (tools/golden/wan_lora.py) ---------------------------------------

namespace {
std::pair<std::string, double> lora_of(const std::string& golden) {
  const auto meta = io::Checkpoint::open(golden).metadata();
  const Json j = Json::parse(meta.at("lora"));
  return {(kGolden / j.at("file").get<std::string>()).string(), j.at("scale").get<double>()};
}

class LoraGolden : public testing::TestWithParam<std::string> {};
}  // namespace

TEST_P(LoraGolden, TheEngineMergeMatchesTheFusedReference) {
  engine::register_builtin_kinds();
  const std::string golden = (kGolden / (GetParam() + ".safetensors")).string();
  const auto [lora, scale] = lora_of(golden);
  parity::Options opt;
  opt.precision = "fp32";
  opt.loras = {lora + ":" + std::to_string(scale)};
  const parity::Report with = parity::run(golden, opt);
  EXPECT_TRUE(with.ok()) << GetParam() << ": rel_l2 " << (with.rows.empty() ? -1 : with.rows[0].rel_l2);
  // Kept at run time (every Linear-weight target an adapter), the same reference passes.
  opt.lora_mode = "runtime";
  const parity::Report runtime = parity::run(golden, opt);
  EXPECT_TRUE(runtime.ok()) << GetParam() << " (--lora-mode runtime): rel_l2 "
                            << (runtime.rows.empty() ? -1 : runtime.rows[0].rel_l2);
  opt.lora_mode = "auto";
  // The same LoRA dropped, or its alpha/scale ignored, must fail: the golden tells them apart.
  opt.loras.clear();
  EXPECT_FALSE(parity::run(golden, opt).ok()) << GetParam() << " passes without its LoRA";
  opt.loras = {lora};  // scale 1 instead of the golden's
  EXPECT_FALSE(parity::run(golden, opt).ok()) << GetParam() << " passes at scale 1";
  opt.loras = {lora + ":" + std::to_string(scale)};
  opt.precision = "bf16";
  EXPECT_TRUE(parity::run(golden, opt).ok()) << GetParam() << " (bf16)";
}

INSTANTIATE_TEST_SUITE_P(Formats, LoraGolden,
                         testing::Values("wan_lora_diffusers", "wan_lora_peft", "wan_lora_comfyui",
                                         "wan_lora_comfyui_diff", "wan_lora_kohya"));

TEST(LoraGoldenRefusals, OtherKindsRefuseLorasInsteadOfIgnoringThem) {
  engine::register_builtin_kinds();
  parity::Options opt;
  opt.loras = {(kGolden / "wan_lora_comfyui.lora.safetensors").string()};
  const std::string vae = (fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "wan_vae_decode.safetensors").string();
  try {
    parity::run(vae, opt);
    FAIL() << "a VAE golden took a LoRA";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not take LoRAs"), std::string::npos) << e.what();
  }
}

// ---- CLI -------------------------------------------------------------------------

TEST(LoraCli, ParityWithLora) {
  const std::string golden = (kGolden / "wan_lora_kohya.safetensors").string();
  const auto [lora, scale] = lora_of(golden);
  int code = -1;
  std::string out = run_cli("parity " + golden + " --precision fp32 --lora " + lora + ":" + std::to_string(scale), &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("PASS"), std::string::npos) << out;
  out = run_cli("parity " + golden + " --precision fp32", &code);
  EXPECT_EQ(code, 1) << out;
}

TEST(LoraCli, InspectPrintsFormatRankAlphaAndCoverage) {
  int code = -1;
  const std::string out = run_cli("inspect " + (kGolden / "wan_lora_comfyui.lora.safetensors").string(), &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("format: comfyui"), std::string::npos) << out;
  EXPECT_NE(out.find("rank: 4 x20"), std::string::npos) << out;
  EXPECT_NE(out.find("alpha: 3 (key) x20"), std::string::npos) << out;
  EXPECT_NE(out.find("coverage: 20/"), std::string::npos) << out;
  EXPECT_NE(out.find("blocks.1.ffn.2.weight <- "), std::string::npos) << out;
  const std::string peft = run_cli("inspect " + (kGolden / "peft" / "adapter_model.safetensors").string(), &code);
  EXPECT_EQ(code, 0) << peft;
  EXPECT_NE(peft.find("format: peft"), std::string::npos) << peft;
  EXPECT_NE(peft.find("targets: 8 (8 low-rank"), std::string::npos) << peft;
  EXPECT_NE(peft.find("alpha: 3 (metadata) x7 5 (metadata) x1"), std::string::npos) << peft;  // adapter_config.json, alpha_pattern
}

TEST(LoraCli, GenerateWithLorasOnTheDemo) {
  const fs::path demo = scratch() / "demo";
  const std::string spiece = std::string(VIDAX_TEST_DATA_DIR) + "/text/data/tiny_spiece.model";
  int code = -1;
  std::string out = run_cli("make-demo " + demo.string() + " --tokenizer " + spiece, &code);
  ASSERT_EQ(code, 0) << out;
  Json model;
  std::ifstream(demo / "vidax_model.json") >> model;
  const int64_t dim = model.at("dit").at("dim").get<int64_t>();
  const std::string l1 = write("demo_l1.safetensors", {{"diffusion_model.blocks.0.self_attn.q.lora_down.weight", ramp({4, dim}, 0.5f)},
                                                       {"diffusion_model.blocks.0.self_attn.q.lora_up.weight", ramp({dim, 4}, 0.5f)},
                                                       {"diffusion_model.blocks.0.self_attn.q.alpha", Tensor::from_f32({2.0f}, {})}});
  const std::string l2 = write("demo_l2.safetensors", {{"lora_unet_blocks_0_ffn_0.lora_down.weight", ramp({2, dim}, 0.5f)},
                                                       {"lora_unet_blocks_0_ffn_0.lora_up.weight",
                                                        ramp({model.at("dit").at("ffn_dim").get<int64_t>(), 2}, 0.5f)}});
  const std::string bad = write("demo_bad.safetensors", {{"diffusion_model.blocks.0.self_attn.qx.diff_b", ramp({dim}, 0.5f)}});
  auto gen = [&](const std::string& extra, const std::string& name, int* c) {
    return run_cli("generate --weights " + demo.string() + " --prompt cat --steps 2 --seed 3 --output-format latents -o " +
                       (scratch() / name).string() + " " + extra, c);
  };
  out = gen("", "plain.safetensors", &code);
  ASSERT_EQ(code, 0) << out;
  out = gen("--lora " + l1 + ":0.8 --lora " + l2, "lora.safetensors", &code);
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("LoRA " + l1 + " (scale 0.800000) on the DiT: 1 target(s) merged, 0 kept at run time (--lora-mode auto)"),
            std::string::npos)
      << out;
  const Tensor a = io::Checkpoint::open((scratch() / "plain.safetensors").string()).get("latents");
  const Tensor b = io::Checkpoint::open((scratch() / "lora.safetensors").string()).get("latents");
  EXPECT_GT(max_abs_diff(a, b), 1e-3) << "the LoRAs changed nothing";
  Json side;
  std::ifstream(scratch() / "lora.safetensors.json") >> side;
  ASSERT_EQ(side.at("loras").size(), 2u) << side.dump();
  EXPECT_EQ(side["loras"][0]["scale"].get<double>(), 0.8);
  EXPECT_EQ(side.at("lora_mode").get<std::string>(), "auto");
  // Kept at run time instead (the weights untouched, each Linear adds its LoRA in fp32): the same
  // latents as the merge within an fp32 bound, both at --precision fp32.
  out = gen("--precision fp32 --lora " + l1 + ":0.8 --lora " + l2, "merged32.safetensors", &code);
  ASSERT_EQ(code, 0) << out;
  out = gen("--precision fp32 --lora-mode runtime --lora " + l1 + ":0.8 --lora " + l2, "runtime32.safetensors", &code);
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("on the DiT: 0 target(s) merged, 1 kept at run time (--lora-mode runtime)"), std::string::npos) << out;
  const Tensor m32 = io::Checkpoint::open((scratch() / "merged32.safetensors").string()).get("latents");
  const Tensor r32 = io::Checkpoint::open((scratch() / "runtime32.safetensors").string()).get("latents");
  double peak = 0;
  for (float v : m32.to_f32_vector()) peak = std::max(peak, std::fabs(static_cast<double>(v)));
  const double d32 = max_abs_diff(m32, r32);
  std::printf("demo, generate --lora-mode runtime vs merge (fp32): max_abs %.3g of max |latent| %.3g\n", d32, peak);
  EXPECT_LT(d32, 1e-4 * peak);
  out = gen("--lora-mode lazy --lora " + l1, "badmode.safetensors", &code);
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(out.find("--lora-mode lazy: choose merge, runtime or auto"), std::string::npos) << out;
  // An unmatched key stops the run, naming the key.
  out = gen("--lora " + bad, "bad.safetensors", &code);
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(out.find("diffusion_model.blocks.0.self_attn.qx.diff_b"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(scratch() / "bad.safetensors"));
}

TEST(LoraCli, DistillPresetRunsFourStepsWithOneForwardEach) {
  const fs::path demo = scratch() / "demo_preset";
  const std::string spiece = std::string(VIDAX_TEST_DATA_DIR) + "/text/data/tiny_spiece.model";
  int code = -1;
  std::string out = run_cli("make-demo " + demo.string() + " --tokenizer " + spiece, &code);
  ASSERT_EQ(code, 0) << out;
  auto gen = [&](const std::string& extra, const std::string& name) {
    const fs::path o = scratch() / name;
    out = run_cli("generate --weights " + demo.string() + " --prompt cat --seed 5 --output-format latents -o " +
                      o.string() + " " + extra, &code);
    EXPECT_EQ(code, 0) << out;
    Json side;
    std::ifstream(o.string() + ".json") >> side;
    return side;
  };
  const Json p = gen("--preset lightx2v-4step", "preset.safetensors");
  EXPECT_EQ(p.at("steps").get<int64_t>(), 4);
  EXPECT_EQ(p.at("denoiser_calls").get<int64_t>(), 4);  // guidance 1: no unconditional pass
  EXPECT_EQ(p.at("sampler").get<std::string>(), "lightx2v");
  EXPECT_EQ(p.at("shift").get<double>(), 5.0);
  EXPECT_EQ(p.at("guidance").get<double>(), 1.0);
  EXPECT_EQ(p.at("preset").get<std::string>(), "lightx2v-4step");
  // Explicit options win over the preset.
  const Json o = gen("--preset lightx2v-4step --steps 2 --guidance 3", "preset_override.safetensors");
  EXPECT_EQ(o.at("steps").get<int64_t>(), 2);
  EXPECT_EQ(o.at("denoiser_calls").get<int64_t>(), 4);  // 2 guided steps
  out = run_cli("generate --weights " + demo.string() + " --prompt cat --preset lightx2v-8step -o x.mp4", &code);
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("--preset lightx2v-8step: unknown for the wan family; choose one of lightx2v-4step"), std::string::npos) << out;
}

TEST(LoraMerge, PeftLoraBiasMovesTheBiasByThePairFactor) {
  // diffusers writes a ComfyUI diff_b as lora_B.bias; PEFT scales lora_B's whole output, bias included.
  const Tensor a = ramp({4, 8}, 0.3f), b = ramp({8, 4}, 0.4f), bb = ramp({8}, 0.2f);
  const std::string f = write("lora_bias.safetensors",
                              {{"transformer.blocks.0.attn2.to_v.lora_A.weight", a},
                               {"transformer.blocks.0.attn2.to_v.lora_B.weight", b},
                               {"transformer.blocks.0.attn2.to_v.lora_B.bias", bb}},
                              {{"lora_adapter_metadata", R"({"transformer.lora_alpha": 8, "transformer.r": 4})"}});
  auto params = tiny_params();
  const auto base = params;
  apply_loras(params, {{f, 0.5}}, wan::dit_component(), tiny_config());
  const auto b0 = base.at("blocks.0.cross_attn.v.bias").to_f64_vector();
  const auto b1 = params.at("blocks.0.cross_attn.v.bias").to_f64_vector();
  const auto d = bb.to_f64_vector();
  for (size_t i = 0; i < b0.size(); ++i) ASSERT_NEAR(b1[i], b0[i] + 0.5 * 2.0 * d[i], 1e-6) << i;
  // Alone, without its pair, it is refused.
  MemorySource lone("lone");
  lone.add("transformer.blocks.0.attn2.to_v.lora_B.bias", bb);
  EXPECT_EQ(plan_lora(lone, wan::dit_component(), tiny_config()).problems.size(), 1u);
}

TEST(LoraPlan, ComfyUIFullModelPrefixIsComfyUI) {
  MemorySource src("comfy_full");
  src.add("model.diffusion_model.head.head.diff_b", ramp({16}, 0.1f));
  const LoraPlan p = plan_lora(src, wan::dit_component(), tiny_config());
  EXPECT_EQ(p.format, "comfyui");
  ASSERT_EQ(p.targets.size(), 1u);
  EXPECT_EQ(p.targets[0].param, "head.head.bias");
}
