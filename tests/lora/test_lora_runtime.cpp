// LoRAs kept at run time (--lora-mode runtime / auto, docs/lora.md): the same DiT output as the
// merge, on plain and on quantized (Q8_0, int8) weights whose bytes stay untouched; and Wan 2.2
// A14B's two experts each taking their own LoRAs (--lora-high-noise / --lora-low-noise).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_child.h"
#include "core/error.h"
#include "io/checkpoint.h"
#include "io/quant_policy.h"
#include "models/wan/checkpoint_keys.h"
#include "models/wan/dit.h"
#include "models/wan/lora_runtime.h"
#include "models/wan/t2v_load.h"
#include "translate/lora.h"

using namespace vidax;
using namespace vidax::translate;
namespace tw = vidax::translate::wan;  // the key maps
namespace mw = vidax::wan;             // the model and its loader
namespace fs = std::filesystem;

namespace {

fs::path scratch() {
  static const fs::path p = [] {
    fs::path d = fs::temp_directory_path() / ("vidax_test_lora_runtime_" + std::to_string(::getpid()));
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
  }();
  return p;
}

Tensor wave(const Shape& s, float scale, float phase) {
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * std::sin(0.731f * static_cast<float>(i) + phase);
  return Tensor::from_f32(v, s);
}

// dim 64 (Q8_0 blocks of 32 fit every input width), 2 layers.
Json small_config() {
  tw::DitConfig c;
  c.dim = 64;
  c.ffn_dim = 128;
  c.num_heads = 2;
  c.num_layers = 2;
  c.text_dim = 32;
  c.freq_dim = 64;
  c.in_dim = 4;
  c.out_dim = 4;
  return c.to_json();
}

std::map<std::string, Tensor> small_params() {
  std::map<std::string, Tensor> out;
  float phase = 0;
  for (const auto& p : tw::dit_params(tw::DitConfig::from_json(small_config())).params)
    out[p.name] = wave(p.shape, 0.08f, phase += 0.37f);
  return out;
}

// A ComfyUI-format LoRA: low rank on q, ffn.0 and the patch embedding (a Conv3d down), a full
// difference on an o weight and a diff_b on a bias (always merged).
std::string write_lora() {
  const int64_t d = 64, r = 4;
  std::map<std::string, Tensor> t = {
      {"diffusion_model.blocks.0.self_attn.q.lora_down.weight", wave({r, d}, 0.3f, 0.1f)},
      {"diffusion_model.blocks.0.self_attn.q.lora_up.weight", wave({d, r}, 0.3f, 0.2f)},
      {"diffusion_model.blocks.0.self_attn.q.alpha", Tensor::from_f32({2.0f}, {})},
      {"diffusion_model.blocks.1.ffn.0.lora_down.weight", wave({r, d}, 0.3f, 0.3f)},
      {"diffusion_model.blocks.1.ffn.0.lora_up.weight", wave({128, r}, 0.3f, 0.4f)},
      {"diffusion_model.blocks.1.ffn.0.alpha", Tensor::from_f32({6.0f}, {})},
      {"diffusion_model.patch_embedding.lora_down.weight", wave({r, 4, 1, 2, 2}, 0.3f, 0.5f)},
      {"diffusion_model.patch_embedding.lora_up.weight", wave({d, r, 1, 1, 1}, 0.3f, 0.6f)},
      {"diffusion_model.blocks.1.self_attn.o.diff", wave({d, d}, 0.02f, 0.7f)},
      {"diffusion_model.blocks.0.cross_attn.k.diff_b", wave({d}, 0.1f, 0.8f)},
  };
  const std::string p = (scratch() / "runtime_lora.safetensors").string();
  io::save_safetensors(p, t, {});
  return p;
}

// One DiT forward of the small model at a fixed input.
Tensor forward(std::map<std::string, Tensor> params, nn::Adapters adapters = {}) {
  const mw::WanDiT dit = mw::WanDiT::from_weights(mw::DiTConfig::from_json(small_config()), std::move(params),
                                                    mw::Precision::F32, "small", nullptr, std::move(adapters));
  const mw::TextContext text = dit.encode_context(wave({5, 32}, 1.0f, 0.9f));
  return dit.forward(wave({4, 1, 4, 4}, 1.0f, 1.1f), std::vector<double>{700.0}, text);
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (float v : t.to_f32_vector()) m = std::max(m, std::fabs(static_cast<double>(v)));
  return m;
}
double max_abs_diff(const Tensor& a, const Tensor& b) {
  const auto x = a.to_f32_vector(), y = b.to_f32_vector();
  EXPECT_EQ(x.size(), y.size());
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::fabs(static_cast<double>(x[i]) - y[i]));
  return m;
}

std::vector<uint8_t> bytes_of(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.data_ptr());
  return std::vector<uint8_t>(p, p + t.nbytes());
}

}  // namespace

TEST(LoraRuntime, ModeNamesParseAndBadOnesAreRefused) {
  EXPECT_EQ(parse_lora_mode("merge"), LoraMode::Merge);
  EXPECT_EQ(parse_lora_mode("runtime"), LoraMode::Runtime);
  EXPECT_EQ(parse_lora_mode("auto"), LoraMode::Auto);
  EXPECT_THROW(parse_lora_mode("lazy"), Error);
}

// Runtime on plain fp32 weights: every Linear target becomes an adapter (the weights untouched),
// the diff_b still merges, and the output equals the merged model's within an fp32 bound.
TEST(LoraRuntime, RuntimeEqualsMergeInFp32OnPlainWeights) {
  const std::string lora = write_lora();
  const auto base = small_params();
  auto merged = base;
  const auto plans = apply_loras(merged, {{lora, 0.7}}, tw::dit_component(), small_config());
  EXPECT_EQ(plans.at(0).merged, 5u);
  EXPECT_EQ(plans.at(0).kept_runtime, 0u);

  auto kept = base;
  LoraDeltas deltas;
  LoraOptions opt;
  opt.mode = LoraMode::Runtime;
  const auto rplans = apply_loras(kept, {{lora, 0.7}}, tw::dit_component(), small_config(), opt, {}, &deltas);
  EXPECT_EQ(rplans.at(0).kept_runtime, 4u);  // q, ffn.0, patch_embedding, the o diff
  EXPECT_EQ(rplans.at(0).merged, 1u);        // the k bias
  ASSERT_EQ(deltas.size(), 4u);
  EXPECT_TRUE(deltas.count("patch_embedding.weight"));
  EXPECT_FALSE(deltas.at("blocks.1.self_attn.o.weight").at(0).down.defined());  // a full difference
  for (const char* w : {"blocks.0.self_attn.q.weight", "blocks.1.ffn.0.weight", "patch_embedding.weight"})
    EXPECT_EQ(kept.at(w).data_ptr(), base.at(w).data_ptr()) << w << " was rewritten";
  EXPECT_GT(max_abs_diff(kept.at("blocks.0.cross_attn.k.bias"), base.at("blocks.0.cross_attn.k.bias")), 1e-3);

  const Tensor y_base = forward(base);
  const Tensor y_merged = forward(merged);
  const Tensor y_runtime = forward(kept, mw::to_adapters(deltas));
  const double scale = max_abs(y_merged), diff = max_abs_diff(y_runtime, y_merged);
  std::printf("runtime vs merged (fp32): max_abs %.3g of max |y| %.3g; LoRA effect %.3g\n", diff, scale,
              max_abs_diff(y_base, y_merged));
  EXPECT_LT(diff, 1e-5 * scale);
  EXPECT_GT(max_abs_diff(y_base, y_merged), 1e-3 * scale);  // the LoRA does change the output

  // An adapter no Linear reads as its weight is an error, not dropped.
  auto extra = mw::to_adapters(deltas);
  extra["blocks.0.norm3.weight"] = extra.at("blocks.1.self_attn.o.weight");
  try {
    (void)forward(kept, extra);
    FAIL() << "an adapter on a norm gain was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blocks.0.norm3.weight"), std::string::npos) << e.what();
  }
}

// Quantized weights (Q8_0 blocks and int8 with a scale): auto keeps their LoRAs at run time and
// their stored bytes are the same before and after; the output equals merging the same LoRA into
// the dequantized weights; merge mode refuses to rewrite a quantized weight.
TEST(LoraRuntime, QuantizedWeightsKeepTheirBytesAndMatchAMergeIntoTheirDequantizedValues) {
  const std::string lora = write_lora();
  auto quant = small_params();
  quant["blocks.0.self_attn.q.weight"] = io::QuantTarget::parse("q8_0").apply(quant["blocks.0.self_attn.q.weight"]);
  quant["blocks.1.ffn.0.weight"] = Tensor::quantize_scaled(quant["blocks.1.ffn.0.weight"], DType::I8);
  quant["blocks.1.self_attn.o.weight"] = io::QuantTarget::parse("q8_0").apply(quant["blocks.1.self_attn.o.weight"]);
  ASSERT_TRUE(quant["blocks.0.self_attn.q.weight"].is_quantized());
  ASSERT_TRUE(quant["blocks.1.ffn.0.weight"].is_scaled());
  std::map<std::string, std::vector<uint8_t>> before;
  for (const char* w : {"blocks.0.self_attn.q.weight", "blocks.1.self_attn.o.weight"}) before[w] = bytes_of(quant[w]);
  before["blocks.1.ffn.0.weight"] = bytes_of(quant["blocks.1.ffn.0.weight"]);

  // The reference: the same LoRA merged into the dequantized values.
  auto dequant = quant;
  for (auto& [name, t] : dequant)
    if (t.is_weight_only_quantized()) t = t.to(DType::F32);
  apply_loras(dequant, {{lora, 0.7}}, tw::dit_component(), small_config());

  auto kept = quant;
  LoraDeltas deltas;
  LoraOptions opt;
  opt.mode = LoraMode::Auto;
  const auto plans = apply_loras(kept, {{lora, 0.7}}, tw::dit_component(), small_config(), opt, {}, &deltas);
  EXPECT_EQ(plans.at(0).kept_runtime, 3u);  // the three quantized weights
  EXPECT_EQ(plans.at(0).merged, 2u);        // the fp32 patch embedding and the bias
  EXPECT_EQ(deltas.size(), 3u);
  const Tensor y_runtime = forward(kept, mw::to_adapters(deltas));
  for (const auto& [name, b] : before) {
    EXPECT_TRUE(kept.at(name).is_weight_only_quantized()) << name;
    EXPECT_EQ(bytes_of(kept.at(name)), b) << name << "'s stored bytes changed";
  }
  const Tensor y_ref = forward(dequant);
  const double scale = max_abs(y_ref), diff = max_abs_diff(y_runtime, y_ref);
  std::printf("runtime on Q8_0/int8 vs merged into their dequantized values: max_abs %.3g of max |y| %.3g\n", diff,
              scale);
  EXPECT_LT(diff, 1e-5 * scale);

  auto refused = quant;
  try {
    apply_loras(refused, {{lora, 0.7}}, tw::dit_component(), small_config());
    FAIL() << "merge mode rewrote a quantized weight";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is stored quantized"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--lora-mode runtime"), std::string::npos) << e.what();
  }
}

// ---- Wan 2.2 A14B: a LoRA per expert ----------------------------------------------

namespace {

const std::string kA14B = std::string(VIDAX_TEST_DATA_DIR) + "/golden/pipeline/wan22_a14b_tiny";

// A LoRA on the tiny A14B experts (dim 64): q of block 0 and ffn.2 of block 1.
std::string expert_lora(const std::string& name, float phase) {
  std::map<std::string, Tensor> t = {
      {"diffusion_model.blocks.0.self_attn.q.lora_down.weight", wave({2, 64}, 0.4f, phase)},
      {"diffusion_model.blocks.0.self_attn.q.lora_up.weight", wave({64, 2}, 0.4f, phase + 1)},
      {"diffusion_model.blocks.1.ffn.2.lora_down.weight", wave({2, 128}, 0.4f, phase + 2)},
      {"diffusion_model.blocks.1.ffn.2.lora_up.weight", wave({64, 2}, 0.4f, phase + 3)},
  };
  const std::string p = (scratch() / name).string();
  io::save_safetensors(p, t, {});
  return p;
}

struct ExpertOutputs {
  Tensor high, low;  // predict() at a high-noise and a low-noise timestep
  std::string log;
};

ExpertOutputs run_experts(const std::vector<LoraSpec>& high, const std::vector<LoraSpec>& low,
                          LoraMode mode = LoraMode::Merge) {
  pipeline::LoadOptions lo;
  lo.weights_dir = kA14B;
  lo.precision = "fp32";
  lo.loras_high_noise = high;
  lo.loras_low_noise = low;
  lo.lora.mode = mode;
  ExpertOutputs out;
  lo.on_stage = [&out](const std::string& s) { out.log += s + "\n"; };
  mw::LoadedT2V m = mw::load_t2v(lo);
  const pipeline::EncodedPrompt prompt = m.parts.encode_prompt("a cat");
  const Tensor x = wave({16, 1, 4, 4}, 1.0f, 0.3f);
  const double boundary = m.preset.experts->boundary_timestep();
  out.high = m.parts.predict(pipeline::DenoiseInput{x, boundary + 50, prompt});
  out.low = m.parts.predict(pipeline::DenoiseInput{x, boundary - 300, prompt});
  return out;
}

}  // namespace

TEST(LoraExperts, EachExpertChangesOnlyByItsOwnLoras) {
  const LoraSpec a{expert_lora("high.safetensors", 0.2f), 0.9}, b{expert_lora("low.safetensors", 1.7f), 1.2};
  const ExpertOutputs base = run_experts({}, {});
  const ExpertOutputs hi = run_experts({a}, {});
  const ExpertOutputs lo = run_experts({}, {b});
  const ExpertOutputs both = run_experts({a}, {b});
  const double s = max_abs(base.high);
  // The high-noise LoRA moves the high-noise expert only, and the low-noise one the low-noise expert.
  EXPECT_GT(max_abs_diff(hi.high, base.high), 1e-3 * s);
  EXPECT_EQ(max_abs_diff(hi.low, base.low), 0.0);
  EXPECT_EQ(max_abs_diff(lo.high, base.high), 0.0);
  EXPECT_GT(max_abs_diff(lo.low, base.low), 1e-3 * s);
  // Together: each expert as with its own LoRA alone, to the bit.
  EXPECT_EQ(max_abs_diff(both.high, hi.high), 0.0);
  EXPECT_EQ(max_abs_diff(both.low, lo.low), 0.0);
  // The load says which LoRA went where.
  EXPECT_NE(both.log.find("LoRA " + a.path + " (scale 0.900000) on the high-noise DiT: 2 target(s) merged"),
            std::string::npos)
      << both.log;
  EXPECT_NE(both.log.find("LoRA " + b.path + " (scale 1.200000) on the low-noise DiT: 2 target(s) merged"),
            std::string::npos)
      << both.log;
  EXPECT_EQ(both.log.find(a.path + " (scale 0.900000) on the low-noise"), std::string::npos) << both.log;
  // Runtime mode per expert gives the merge's output within the fp32 bound.
  const ExpertOutputs rt = run_experts({a}, {b}, LoraMode::Runtime);
  EXPECT_NE(rt.log.find("on the high-noise DiT: 0 target(s) merged, 2 kept at run time"), std::string::npos) << rt.log;
  EXPECT_LT(max_abs_diff(rt.high, both.high), 1e-5 * s);
  EXPECT_LT(max_abs_diff(rt.low, both.low), 1e-5 * s);
}

TEST(LoraExperts, PlainLoraOnTwoExpertsIsRefusedNamingTheExpertFlags) {
  const LoraSpec a{expert_lora("refused.safetensors", 0.5f), 1.0};
  pipeline::LoadOptions lo;
  lo.weights_dir = kA14B;
  lo.precision = "fp32";
  lo.loras = {a};
  try {
    (void)mw::load_t2v(lo);
    FAIL() << "--lora on two experts was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--lora-high-noise"), std::string::npos) << e.what();
  }
}

// The CLI: generate on the tiny A14B weights with a LoRA per expert records them; the expert
// flags on a one-DiT model are refused.
namespace {
std::string run_cli(const std::string& args, int* code) {
  const auto r = vidax::test::cli::run_line(args);
  *code = r.code;
  return r.all();
}
}  // namespace

TEST(LoraExperts, GenerateRecordsWhichLoraWentToWhichExpert) {
  const std::string hi = expert_lora("cli_high.safetensors", 0.4f), lo = expert_lora("cli_low.safetensors", 2.4f);
  const std::string o = (scratch() / "a14b.safetensors").string();
  int code = -1;
  std::string out = run_cli("generate --weights " + kA14B + " --prompt cat --steps 2 --seed 1 --precision fp32 "
                            "--output-format latents -o " + o + " --lora-high-noise " + hi + ":0.5 --lora-low-noise " + lo,
                            &code);
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("LoRA " + hi + " (scale 0.500000) on the high-noise DiT"), std::string::npos) << out;
  EXPECT_NE(out.find("LoRA " + lo + " (scale 1.000000) on the low-noise DiT"), std::string::npos) << out;
  Json side;
  std::ifstream(o + ".json") >> side;
  ASSERT_EQ(side.at("loras_high_noise").size(), 1u) << side.dump();
  EXPECT_EQ(side["loras_high_noise"][0]["path"].get<std::string>(), hi);
  EXPECT_EQ(side["loras_high_noise"][0]["scale"].get<double>(), 0.5);
  EXPECT_EQ(side.at("loras_low_noise")[0]["path"].get<std::string>(), lo);
  EXPECT_TRUE(side.at("loras").empty());

  const fs::path demo = scratch() / "demo";
  out = run_cli("make-demo " + demo.string() + " --tokenizer " + std::string(VIDAX_TEST_DATA_DIR) +
                    "/text/data/tiny_spiece.model", &code);
  ASSERT_EQ(code, 0) << out;
  out = run_cli("generate --weights " + demo.string() + " --prompt cat --steps 1 --output-format latents -o " +
                    (scratch() / "refused.safetensors").string() + " --lora-high-noise " + hi, &code);
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(out.find("has one DiT, not two experts; give its LoRAs with --lora"), std::string::npos) << out;
}
