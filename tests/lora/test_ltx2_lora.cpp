// LTX-2 LoRAs (docs/lora.md, docs/models/ltx2.md) through the LTX-2 DiT component
// (src/models/ltx2/checkpoint_keys.h): a file with ltx-trainer's naming and target modules gives full
// coverage (video and audio streams, the cross-modal attention, the FFNs); the goldens of
// tools/golden/ltx2_lora.py (ltx-trainer's own file fused by ltx-core, and the same A / B as a
// ComfyUI file with alpha != rank against the peft model) match when merged or kept at run time and
// fail without the LoRA or at another scale; an unmatched key is an error naming it; a Wan LoRA is
// refused naming the family mismatch; `vidax inspect` on an LTX-2 LoRA and on LTX-2 checkpoints.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "cli_child.h"
#include "core/error.h"
#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "models/ltx2/checkpoint_keys.h"
#include "parity/parity.h"
#include "translate/inspect.h"
#include "translate/lora.h"

using namespace vidax;
using namespace vidax::translate;
namespace fs = std::filesystem;

namespace {

const fs::path kLora = fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "lora";
const fs::path kLtx2 = fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "ltx2";

struct Registered : ::testing::Environment {
  void SetUp() override {
    engine::register_builtins();
    register_component(ltx2::dit_component());
  }
};
const auto* const kRegistered = ::testing::AddGlobalTestEnvironment(new Registered);

// A tiny audio-video LTX-2.3-style DiT: 2 blocks, video 2 x 16, audio 2 x 8, gated attention, prompt AdaLN.
Json tiny_config() {
  ltx2::DiTConfig c;
  c.num_attention_heads = 2;
  c.attention_head_dim = 16;
  c.cross_attention_dim = 32;
  c.in_channels = c.out_channels = 16;
  c.audio_num_attention_heads = 2;
  c.audio_attention_head_dim = 8;
  c.audio_cross_attention_dim = 16;
  c.audio_in_channels = c.audio_out_channels = 8;
  c.num_layers = 2;
  c.double_precision_rope = true;
  c.apply_gated_attention = true;
  c.cross_attention_adaln = true;
  return ltx2::dit_config_json(c);
}

// ltx-trainer's LoRA for `targets` (PEFT's match: the module name is a target or ends in "." + it),
// saved as trainer.py does: diffusion_model.<module>.lora_A.weight [r, in] / .lora_B.weight [out, r].
MemorySource trainer_lora(const Json& cfg, const std::vector<std::string>& targets, int64_t rank,
                          std::vector<std::string>* modules) {
  MemorySource src("trainer_lora.safetensors");
  for (const auto& p : ltx2::dit_component().params(cfg).params) {
    if (p.shape.size() != 2 || !p.name.ends_with(".weight")) continue;
    const std::string module = p.name.substr(0, p.name.size() - 7);
    bool hit = false;
    for (const auto& t : targets) hit |= module == t || module.ends_with("." + t);
    if (!hit) continue;
    modules->push_back(module);
    src.add("diffusion_model." + module + ".lora_A.weight", DType::BF16, {rank, p.shape[1]});
    src.add("diffusion_model." + module + ".lora_B.weight", DType::BF16, {p.shape[0], rank});
  }
  return src;
}

// configs/t2v_lora.yaml's attention targets (every attention) plus its commented-out FFN targets.
const std::vector<std::string> kTrainerTargets = {"to_k", "to_q", "to_v", "to_out.0", "ff.net.0.proj", "ff.net.2",
                                                   "audio_ff.net.0.proj", "audio_ff.net.2"};

std::pair<std::string, double> lora_of(const fs::path& golden) {
  const Json j = Json::parse(io::Checkpoint::open(golden.string()).metadata().at("lora"));
  return {(kLora / j.at("file").get<std::string>()).string(), j.at("scale").get<double>()};
}

}  // namespace

TEST(Ltx2Lora, TheTrainersTargetModulesAreFullyCovered) {
  const Json cfg = tiny_config();
  std::vector<std::string> modules;
  const MemorySource lora = trainer_lora(cfg, kTrainerTargets, 4, &modules);
  // Per block: 6 attentions (video / audio self and text attention, both cross-modal directions) x
  // 4 projections, and 2 FFNs x 2 linears.
  ASSERT_EQ(modules.size(), 2u * 28u);
  const LoraPlan plan = plan_lora(lora, ltx2::dit_component(), cfg);
  EXPECT_EQ(plan.format, "comfyui");
  EXPECT_EQ(plan.layout, "original");
  EXPECT_TRUE(plan.unmatched.empty()) << plan.unmatched.size() << " unmatched, e.g. " << plan.unmatched.front();
  EXPECT_TRUE(plan.problems.empty());
  ASSERT_EQ(plan.targets.size(), modules.size());
  std::set<std::string> params;
  for (const auto& t : plan.targets) {
    params.insert(t.param);
    EXPECT_EQ(t.rank, 4);
    EXPECT_EQ(t.alpha_from, "none (factor 1)") << t.param;  // ltx-core: W += strength * B @ A
    EXPECT_DOUBLE_EQ(t.factor(), 1.0);
  }
  for (const char* p : {"transformer_blocks.1.attn1.to_q.weight", "transformer_blocks.0.audio_attn2.to_out.0.weight",
                        "transformer_blocks.1.audio_to_video_attn.to_k.weight",
                        "transformer_blocks.0.video_to_audio_attn.to_v.weight", "transformer_blocks.1.ff.net.0.proj.weight",
                        "transformer_blocks.0.audio_ff.net.2.weight"})
    EXPECT_TRUE(params.count(p)) << p;
  EXPECT_NO_THROW(check_lora(plan, {}));
  // The same file on its own: inspect finds the LTX-2 DiT and applies every key.
  const LoraInspection ins = inspect_lora(lora);
  EXPECT_EQ(ins.comp->name(), "ltx2-dit");
  EXPECT_TRUE(ins.plan.unmatched.empty() && ins.plan.problems.empty()) << ins.to_text();
  EXPECT_EQ(ins.plan.targets.size(), modules.size());
}

TEST(Ltx2Lora, AnUnmatchedKeyIsAnErrorNamingItUnlessAllowed) {
  const Json cfg = tiny_config();
  std::vector<std::string> modules;
  MemorySource lora = trainer_lora(cfg, {"to_q"}, 2, &modules);
  lora.add("diffusion_model.transformer_blocks.7.attn1.to_q.lora_A.weight", DType::BF16, {2, 32});
  lora.add("diffusion_model.transformer_blocks.7.attn1.to_q.lora_B.weight", DType::BF16, {32, 2});
  const LoraPlan plan = plan_lora(lora, ltx2::dit_component(), cfg);
  ASSERT_EQ(plan.unmatched.size(), 2u);
  try {
    check_lora(plan, {});
    FAIL() << "an unmatched key passed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("diffusion_model.transformer_blocks.7.attn1.to_q.lora_A.weight"),
              std::string::npos)
        << e.what();
  }
  LoraOptions allow;
  allow.allow_unmatched = true;
  EXPECT_NO_THROW(check_lora(plan, allow));
  // A LoRA shaped for another width is a problem naming the parameter, always.
  MemorySource wide("wide.safetensors");
  wide.add("diffusion_model.transformer_blocks.0.attn1.to_q.lora_A.weight", DType::BF16, {2, 64});
  wide.add("diffusion_model.transformer_blocks.0.attn1.to_q.lora_B.weight", DType::BF16, {64, 2});
  const LoraPlan bad = plan_lora(wide, ltx2::dit_component(), cfg);
  ASSERT_FALSE(bad.problems.empty());
  EXPECT_THROW(check_lora(bad, allow), Error);
}

class Ltx2LoraGolden : public testing::TestWithParam<std::string> {};

TEST_P(Ltx2LoraGolden, TheEngineMergeMatchesTheReference) {
  const fs::path golden = kLora / (GetParam() + ".safetensors");
  const auto [lora, scale] = lora_of(golden);
  parity::Options opt;
  opt.precision = "fp32";
  opt.loras = {lora + ":" + std::to_string(scale)};
  opt.lora_mode = "merge";
  const parity::Report merged = parity::run(golden.string(), opt);
  ASSERT_FALSE(merged.rows.empty());
  EXPECT_TRUE(merged.ok()) << GetParam() << ": max_abs " << merged.rows[0].max_abs;
  for (const auto& row : merged.rows) EXPECT_LE(row.max_abs, 1e-5) << GetParam() << " " << row.name;  // fp32 bound
  opt.lora_mode = "runtime";
  EXPECT_TRUE(parity::run(golden.string(), opt).ok()) << GetParam() << " (runtime)";
  opt.lora_mode = "auto";
  opt.loras.clear();
  EXPECT_FALSE(parity::run(golden.string(), opt).ok()) << GetParam() << " passes without its LoRA";
  opt.loras = {lora};  // scale 1 instead of the golden's
  EXPECT_FALSE(parity::run(golden.string(), opt).ok()) << GetParam() << " passes at scale 1";
}

INSTANTIATE_TEST_SUITE_P(Formats, Ltx2LoraGolden, testing::Values("ltx2_lora_trainer", "ltx2_lora_comfyui"));

TEST(Ltx2Lora, TheComfyUiAlphaIsReadFromItsKeyAndTheTrainerFileHasNone) {
  const Json cfg = tiny_config();
  auto comfy = CheckpointSource::open((kLora / "ltx2_lora_comfyui.lora.safetensors").string());
  const LoraInspection ins = inspect_lora(*comfy);
  ASSERT_EQ(ins.comp->name(), "ltx2-dit");
  ASSERT_FALSE(ins.plan.targets.empty());
  for (const auto& t : ins.plan.targets) {
    EXPECT_EQ(t.alpha_from, "key");
    EXPECT_DOUBLE_EQ(t.factor(), 2.0);  // alpha 8 / rank 4
  }
  auto trainer = CheckpointSource::open((kLora / "ltx2_lora_trainer.lora.safetensors").string());
  for (const auto& t : inspect_lora(*trainer).plan.targets) EXPECT_DOUBLE_EQ(t.factor(), 1.0);
}

TEST(Ltx2Lora, AWanLoraIsRefusedNamingTheFamilies) {
  parity::Options opt;
  opt.precision = "fp32";
  opt.loras = {(kLora / "wan_lora_comfyui.lora.safetensors").string()};
  for (bool allow : {false, true}) {
    opt.lora_allow_unmatched = allow;
    try {
      parity::run((kLtx2 / "ltx2_dit_av23.safetensors").string(), opt);
      FAIL() << "a Wan LoRA was applied to LTX-2 (allow_unmatched " << allow << ")";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("a wan2.1 LoRA"), std::string::npos) << m;
      EXPECT_NE(m.find("ltx2 model"), std::string::npos) << m;
    }
  }
  // And the other way: an LTX-2 LoRA on a Wan DiT golden.
  opt.lora_allow_unmatched = false;
  opt.loras = {(kLora / "ltx2_lora_trainer.lora.safetensors").string()};
  try {
    parity::run((kLora / "wan_lora_comfyui.safetensors").string(), opt);
    FAIL() << "an LTX-2 LoRA was applied to Wan";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a ltx2 LoRA"), std::string::npos) << e.what();
  }
}

// ---- CLI ----------------------------------------------------------------------------

namespace {
std::string run_cli(const std::string& args, int* code) {
  const auto r = vidax::test::cli::run_line(args);
  *code = r.code;
  return r.all();
}
}  // namespace

TEST(Ltx2LoraCli, InspectNamesTheLtx2DitFormatAndCoverage) {
  int code = -1;
  std::string out = run_cli("inspect " + (kLora / "ltx2_lora_trainer.lora.safetensors").string(), &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("LoRA for ltx2-dit"), std::string::npos) << out;
  EXPECT_NE(out.find("format: comfyui (module names of the original layout)"), std::string::npos) << out;
  EXPECT_NE(out.find("rank: 4 x28"), std::string::npos) << out;
  EXPECT_NE(out.find("alpha: 4 (none (factor 1)) x28"), std::string::npos) << out;
  EXPECT_NE(out.find("transformer_blocks.0.video_to_audio_attn.to_out.0.weight <- "), std::string::npos) << out;
  EXPECT_NE(out.find("OK: every key applies"), std::string::npos) << out;
}

TEST(Ltx2LoraCli, InspectNamesTheFamilyLayoutAndCoverageOfCheckpoints) {
  for (const auto& [file, layout] : std::vector<std::pair<std::string, std::string>>{
           {"ltx2_dit_av23.safetensors", "original"},
           {"ltx2_dit_av23_comfyui.safetensors", "comfyui"},
           {"ltx2_dit_av23_diffusers.safetensors", "diffusers"}}) {
    int code = -1;
    const std::string out = run_cli("inspect " + (kLtx2 / file).string(), &code);
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find("ltx2-dit custom, layout " + layout + " (config metadata)"), std::string::npos) << out;
    EXPECT_NE(out.find("F32 x226"), std::string::npos) << out;
    EXPECT_NE(out.find("coverage: complete, 226/226 parameters filled"), std::string::npos) << out;
    const std::string json = run_cli("inspect --json " + (kLtx2 / file).string(), &code);
    EXPECT_EQ(code, 0) << json;
    EXPECT_NE(json.find("\"family\": \"ltx2\""), std::string::npos) << json;
  }
}

TEST(Ltx2LoraCli, ConvertTheDiffusersLayoutToTheEngineNames) {
  const fs::path out = fs::temp_directory_path() / ("ltx2_converted_" + std::to_string(::getpid()) + ".safetensors");
  int code = -1;
  std::string log = run_cli("convert " + (kLtx2 / "ltx2_dit_av23_diffusers.safetensors").string() + " " + out.string() +
                                " --layout engine",
                            &code);
  ASSERT_EQ(code, 0) << log;
  EXPECT_NE(log.find("engine names of ltx2-dit"), std::string::npos) << log;
  // The official names and values: every parameter equals the official golden's.
  auto converted = io::Checkpoint::open(out.string());
  auto official = io::Checkpoint::open((kLtx2 / "ltx2_dit_av23.safetensors").string());
  size_t params = 0;
  for (const auto& n : official.names()) {
    if (is_golden_io_key(n)) continue;
    ++params;
    ASSERT_TRUE(converted.contains(n)) << n;
    EXPECT_EQ(converted.get(n).to_f32_vector(), official.get(n).to_f32_vector()) << n;
  }
  EXPECT_EQ(params, 226u);
  log = run_cli("inspect " + out.string(), &code);
  EXPECT_EQ(code, 0) << log;
  EXPECT_NE(log.find("layout original"), std::string::npos) << log;
  fs::remove(out);
}

TEST(Ltx2Lora, DiffusersAndKohyaNamesReachTheSameParameters) {
  const Json cfg = tiny_config();
  // diffusers' module names (LTX2VideoTransformer3DModel): proj_in is patchify_proj, time_embed.linear
  // is adaln_single.linear; the attention names are shared.
  MemorySource diff("diffusers_lora.safetensors");
  diff.add("transformer.proj_in.lora_A.weight", DType::F32, {2, 16});
  diff.add("transformer.proj_in.lora_B.weight", DType::F32, {32, 2});
  diff.add("transformer.time_embed.linear.lora_A.weight", DType::F32, {2, 32});
  diff.add("transformer.time_embed.linear.lora_B.weight", DType::F32, {9 * 32, 2});
  diff.add("transformer.transformer_blocks.1.audio_to_video_attn.to_q.lora_A.weight", DType::F32, {2, 32});
  diff.add("transformer.transformer_blocks.1.audio_to_video_attn.to_q.lora_B.weight", DType::F32, {16, 2});
  const LoraPlan d = plan_lora(diff, ltx2::dit_component(), cfg);
  EXPECT_EQ(d.format, "diffusers");
  EXPECT_TRUE(d.unmatched.empty() && d.problems.empty());
  std::set<std::string> dp;
  for (const auto& t : d.targets) dp.insert(t.param);
  EXPECT_EQ(dp, (std::set<std::string>{"patchify_proj.weight", "adaln_single.linear.weight",
                                       "transformer_blocks.1.audio_to_video_attn.to_q.weight"}));
  // kohya: the underscore form of the official module names.
  MemorySource kohya("kohya_lora.safetensors");
  kohya.add("lora_unet_transformer_blocks_0_video_to_audio_attn_to_out_0.lora_down.weight", DType::F32, {2, 16});
  kohya.add("lora_unet_transformer_blocks_0_video_to_audio_attn_to_out_0.lora_up.weight", DType::F32, {16, 2});
  kohya.add("lora_unet_transformer_blocks_0_video_to_audio_attn_to_out_0.alpha", Tensor::from_f32({3.0f}, Shape{}));
  const LoraPlan k = plan_lora(kohya, ltx2::dit_component(), cfg);
  ASSERT_EQ(k.targets.size(), 1u) << (k.problems.empty() ? "" : k.problems.front());
  EXPECT_EQ(k.targets[0].param, "transformer_blocks.0.video_to_audio_attn.to_out.0.weight");
  EXPECT_DOUBLE_EQ(k.targets[0].factor(), 1.5);  // alpha 3 / rank 2
}
