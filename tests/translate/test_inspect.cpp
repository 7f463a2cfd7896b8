// inspect and convert on real files: sparse safetensors checkpoints built from
// the real key lists (original folder, diffusers pipeline, sharded 14B index),
// the exact parameter counts, failures that name the key, zero-copy opening,
// and the `vidax` CLI itself.
#include <gtest/gtest.h>

#include "cli_child.h"
#include "engine/builtin_kinds.h"
#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <random>
#include <cstring>
#include <filesystem>

#include "io/checkpoint.h"
#include "sparse_checkpoint.h"
#include "translate/inspect.h"
#include "models/wan/checkpoint_keys.h"
#include "text/umt5_keys.h"

using namespace vidax;
using namespace vidax::translate;

// Detection matches against the registered components: the engine registers every family's.
struct RegisteredComponents : ::testing::Environment {
  void SetUp() override { vidax::engine::register_builtin_components(); }
};
const auto* const kRegistered = ::testing::AddGlobalTestEnvironment(new RegisteredComponents);
using vidax::testing::TempDir;
using vidax::testing::write_sparse_safetensors;

namespace {

std::string data_path(const std::string& name) { return std::string(VIDAX_TEST_DATA_DIR) + "/translate/data/" + name; }

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
}

// Runs the vidax binary; returns (exit code, stdout).
std::pair<int, std::string> run_vidax(const std::string& args) {
  EXPECT_TRUE(std::filesystem::exists(vidax::test::cli::vidax_binary()))
      << vidax::test::cli::vidax_binary() << " is not built (cmake --build build --target vidax_app)";
  const auto r = vidax::test::cli::run_line(args);
  return {r.code, r.all()};
}

const Unit* find_unit(const InspectReport& r, const std::string& comp) {
  for (const auto& u : r.units)
    if (u.comp && u.comp->name() == comp) return &u;
  return nullptr;
}

}  // namespace

TEST(Inspect, OriginalFolderWithDitVaeAndTextEncoder) {
  TempDir dir;
  write_sparse_safetensors(dir / "diffusion_pytorch_model.safetensors",
                           *read_key_list(data_path("wan2.1_dit_t2v_1.3b.original.txt")));
  write_sparse_safetensors(dir / "Wan2.1_VAE.safetensors", *read_key_list(data_path("wan2.1_vae.original.txt")));
  write_sparse_safetensors(dir / "models_t5_umt5-xxl-enc-bf16.safetensors",
                           *read_key_list(data_path("umt5_xxl.original.txt")));
  write_text(dir / "config.json",
             R"({"_class_name": "WanModel", "_diffusers_version": "0.30.0", "dim": 1536, "eps": 1e-06,
                 "ffn_dim": 8960, "freq_dim": 256, "in_dim": 16, "model_type": "t2v", "num_heads": 12,
                 "num_layers": 30, "out_dim": 16, "text_len": 512})");
  InspectReport r = inspect(dir.path.string());
  ASSERT_EQ(r.units.size(), 3u) << r.to_text();
  EXPECT_TRUE(r.complete()) << r.to_text();
  const Unit* dit = find_unit(r, "wan2.1-dit");
  ASSERT_TRUE(dit);
  EXPECT_EQ(dit->parameters, 1418996800);
  EXPECT_EQ(dit->match.config_origin, dir / "config.json");
  EXPECT_EQ(find_unit(r, "wan2.1-vae")->parameters, 126892531);
  EXPECT_EQ(find_unit(r, "umt5-encoder")->parameters, 5680910336);
  Json j = r.to_json();
  EXPECT_EQ(j["family"], "wan2.1");
  EXPECT_EQ(j["variant"], "t2v-1.3B");
  EXPECT_EQ(j["layout"], "original");
  EXPECT_EQ(j["parameters"].get<int64_t>(), 1418996800 + 126892531 + 5680910336);
  EXPECT_EQ(j["dtypes"]["BF16"]["tensors"], 242);
  EXPECT_TRUE(j["unmatched_keys"].empty());
  EXPECT_TRUE(j["missing_params"].empty());
}

TEST(Inspect, DiffusersPipelineFolder) {
  TempDir dir;
  write_text(dir / "model_index.json", R"({"_class_name": "WanPipeline"})");
  for (const char* sub : {"transformer", "vae", "text_encoder", "tokenizer", "scheduler"})
    std::filesystem::create_directories(dir.path / sub);
  write_text(dir / "tokenizer/tokenizer_config.json", "{}");
  write_sparse_safetensors(dir / "transformer/diffusion_pytorch_model.safetensors",
                           *read_key_list(data_path("wan2.1_dit_t2v_1.3b.diffusers.txt")));
  write_text(dir / "transformer/config.json", R"({
      "_class_name": "WanTransformer3DModel", "attention_head_dim": 128, "cross_attn_norm": true, "eps": 1e-06,
      "ffn_dim": 8960, "freq_dim": 256, "in_channels": 16, "num_attention_heads": 12, "num_layers": 30,
      "out_channels": 16, "patch_size": [1, 2, 2], "qk_norm": "rms_norm_across_heads", "text_dim": 4096})");
  write_sparse_safetensors(dir / "vae/diffusion_pytorch_model.safetensors",
                           *read_key_list(data_path("wan2.1_vae.diffusers.txt")));
  write_sparse_safetensors(dir / "text_encoder/model.safetensors", *read_key_list(data_path("umt5_xxl.diffusers.txt")));
  InspectReport r = inspect(dir.path.string());
  ASSERT_EQ(r.units.size(), 3u) << r.to_text();
  EXPECT_TRUE(r.complete()) << r.to_text();
  Json j = r.to_json();
  EXPECT_EQ(j["layout"], "diffusers");
  EXPECT_EQ(j["variant"], "t2v-1.3B");
  EXPECT_EQ(find_unit(r, "wan2.1-dit")->parameters, 1418996800);
}

TEST(Inspect, MissingOrRenamedKeyFailsNamingIt) {
  TempDir dir;
  auto src = read_key_list(data_path("wan2.1_dit_t2v_1.3b.original.txt"));
  const std::string victim = "blocks.7.cross_attn.norm_k.weight";
  ASSERT_TRUE(src->contains(victim));
  src->remove(victim);
  src->add("blocks.7.cross_attn.norm_k.weight_typo", DType::F32, {1536});
  const std::string file = dir / "dit.safetensors";
  write_sparse_safetensors(file, *src);
  InspectReport r = inspect(file);
  EXPECT_FALSE(r.complete());
  Json j = r.to_json();
  EXPECT_EQ(j["unmatched_keys"], Json::array({"blocks.7.cross_attn.norm_k.weight_typo"}));
  EXPECT_EQ(j["missing_params"], Json::array({victim + " [1536]"}));
  EXPECT_NE(r.to_text().find("'" + victim + "'"), std::string::npos) << r.to_text();
  // The CLI exits non-zero and names both.
  auto [rc, out] = run_vidax("inspect " + file);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find(victim), std::string::npos) << out;
  EXPECT_NE(out.find("blocks.7.cross_attn.norm_k.weight_typo"), std::string::npos) << out;
}

TEST(Inspect, CliJsonOnFullCoverage) {
  TempDir dir;
  const std::string file = dir / "dit.safetensors";
  write_sparse_safetensors(file, *read_key_list(data_path("wan2.1_dit_t2v_1.3b.diffusers.txt")));
  auto [rc, out] = run_vidax("inspect --json " + file);
  ASSERT_EQ(rc, 0) << out;
  Json j = Json::parse(out);
  EXPECT_EQ(j["family"], "wan2.1");
  EXPECT_EQ(j["variant"], "t2v-1.3B");
  EXPECT_EQ(j["layout"], "diffusers");
  EXPECT_EQ(j["tensors"], 825);
  EXPECT_EQ(j["parameters"].get<int64_t>(), 1418996800);
  EXPECT_EQ(j["dtypes"]["F32"]["bytes"].get<uint64_t>(), 4ull * 1418996800);
  EXPECT_TRUE(j["unmatched_keys"].empty());
  EXPECT_TRUE(j["missing_params"].empty());
}

// The 14B-shaped checkpoint in bf16 (~28.6 GB, sparse), sharded with an index:
// opening and matching reads headers only, and translating to the engine's
// names yields zero-copy views, so resident memory stays far below the size.
TEST(Inspect, Sharded14BIsZeroCopy) {
  TempDir dir;
  auto src = read_key_list(data_path("wan2.1_dit_t2v_14b.original.txt"));
  auto names = src->names();
  std::vector<std::string> a(names.begin(), names.begin() + names.size() / 2), b(names.begin() + names.size() / 2,
                                                                                   names.end());
  uint64_t size = write_sparse_safetensors(dir / "diffusion_pytorch_model-00001-of-00002.safetensors", *src, a,
                                           DType::BF16);
  size += write_sparse_safetensors(dir / "diffusion_pytorch_model-00002-of-00002.safetensors", *src, b, DType::BF16);
  Json index = {{"metadata", {{"total_size", size}}}, {"weight_map", Json::object()}};
  for (const auto& n : a) index["weight_map"][n] = "diffusion_pytorch_model-00001-of-00002.safetensors";
  for (const auto& n : b) index["weight_map"][n] = "diffusion_pytorch_model-00002-of-00002.safetensors";
  write_text(dir / "diffusion_pytorch_model.safetensors.index.json", index.dump());
  ASSERT_GT(size, 28'000'000'000ull);

  const uint64_t rss0 = vidax::testing::resident_bytes();
  auto t0 = std::chrono::steady_clock::now();
  InspectReport r = inspect(dir / "diffusion_pytorch_model.safetensors.index.json");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r.complete()) << r.to_text();
  ASSERT_EQ(r.units.size(), 1u);
  EXPECT_EQ(r.units[0].parameters, 14288491584);
  EXPECT_EQ(r.units[0].comp->variant(r.units[0].match.config), "t2v-14B");
  EXPECT_LT(seconds, 5.0) << "inspect took " << seconds << " s";
  auto tensors = materialize(*r.units[0].source, r.units[0].match.plan, {});
  EXPECT_EQ(tensors.size(), 1095u);
  EXPECT_EQ(tensors.at("blocks.39.ffn.0.weight").shape(), (Shape{13824, 5120}));
  EXPECT_EQ(tensors.at("blocks.39.ffn.0.weight").dtype(), DType::BF16);
  const uint64_t rss1 = vidax::testing::resident_bytes();
  EXPECT_LT(rss1 - std::min(rss0, rss1), 256ull << 20) << "resident memory grew by " << (rss1 - rss0) << " bytes";
  std::printf("[ info ] 14B sparse (%.1f GB): inspect %.3f s, RSS %.1f -> %.1f MB\n", size / 1e9, seconds,
              rss0 / 1e6, rss1 / 1e6);
}

// ---- convert ----------------------------------------------------------------

namespace {
// A tiny DiT with real random values, in the diffusers layout.
std::shared_ptr<MemorySource> tiny_diffusers_dit() {
  auto keys = read_key_list(data_path("wan2.1_dit_tiny.diffusers.txt"));
  auto src = std::make_shared<MemorySource>("tiny");
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  for (const auto& n : keys->names()) {
    std::vector<float> v(static_cast<size_t>(shape_numel(keys->find(n)->shape)));
    for (auto& x : v) x = nd(rng);
    src->add(n, Tensor::from_f32(v, keys->find(n)->shape));
  }
  return src;
}
std::map<std::string, Tensor> all_tensors(const TensorSource& s) {
  std::map<std::string, Tensor> m;
  for (const auto& n : s.names()) m[n] = s.get(n);
  return m;
}
}  // namespace

TEST(Convert, KeepIsAPureFormatConversion) {
  TempDir dir;
  auto src = tiny_diffusers_dit();
  io::save_safetensors(dir / "in.safetensors", all_tensors(*src), {{"note", "kept"}});
  ConvertResult res = convert(dir / "in.safetensors", dir / "out.safetensors", {});
  EXPECT_EQ(res.tensors, src->names().size());
  io::Checkpoint out = io::Checkpoint::open(dir / "out.safetensors");
  EXPECT_EQ(out.names(), src->names());
  EXPECT_EQ(out.metadata().at("note"), "kept");
  for (const auto& n : src->names()) {
    EXPECT_EQ(out.info(n).dtype, DType::F32);
    EXPECT_EQ(out.get(n).to_f32_vector(), src->get(n).to_f32_vector()) << n;
  }
}

TEST(Convert, DtypeCastsFloatsLikeTorch) {
  TempDir dir;
  auto src = tiny_diffusers_dit();
  io::save_safetensors(dir / "in.safetensors", all_tensors(*src));
  ConvertOptions o;
  o.dtype = "bf16";
  convert(dir / "in.safetensors", dir / "out.safetensors", o);
  io::Checkpoint out = io::Checkpoint::open(dir / "out.safetensors");
  const std::string n = "blocks.1.attn2.to_q.weight";
  EXPECT_EQ(out.info(n).dtype, DType::BF16);
  EXPECT_EQ(out.get(n).to_f32_vector(), src->get(n).to(DType::BF16).to_f32_vector());
}

// --dtype q4_k / q8_0: a GGUF whose matrices take the type, bit for bit ggml's reference
// quantizer; 1-D, small, head and misfit-row tensors keep their type and the report says why;
// --dtype f32 dequantizes the GGUF back; a GGUF to safetensors without --dtype is refused.
TEST(Convert, GgufBlockTypesAndBack) {
  TempDir dir;
  std::map<std::string, Tensor> in;
  auto rnd = [](const Shape& s, uint64_t seed) {
    std::mt19937 g(static_cast<uint32_t>(seed));
    std::normal_distribution<float> nd(0.f, 0.05f);
    std::vector<float> v(static_cast<size_t>(shape_numel(s)));
    for (auto& x : v) x = nd(g);
    return Tensor::from_f32(v, s);
  };
  in["blocks.0.attn.q.weight"] = rnd({64, 256}, 1);
  in["blocks.0.ffn.0.weight"] = rnd({64, 96}, 2).to(DType::BF16);  // rows of 96: Q8_0 yes, Q4_K no
  in["blocks.0.norm.weight"] = rnd({256}, 3);
  in["head.head.weight"] = rnd({64, 256}, 4);
  in["small.weight"] = rnd({8, 32}, 5);
  io::save_safetensors(dir / "in.safetensors", in);
  ConvertOptions o;
  o.dtype = "q4_k";
  ConvertResult r = convert(dir / "in.safetensors", dir / "out.gguf", o);
  EXPECT_EQ(r.format, "gguf");
  EXPECT_EQ(r.quantized, 1u);
  io::Checkpoint g = io::Checkpoint::open(dir / "out.gguf");
  EXPECT_EQ(g.info("blocks.0.attn.q.weight").quant, QuantType::Q4_K);
  Tensor want = Tensor::quantize(in["blocks.0.attn.q.weight"], QuantType::Q4_K);
  EXPECT_EQ(std::memcmp(g.get("blocks.0.attn.q.weight").data_ptr(), want.data_ptr(), want.nbytes()), 0);
  EXPECT_EQ(g.info("blocks.0.ffn.0.weight").dtype, DType::BF16);  // kept as it was
  EXPECT_EQ(g.info("blocks.0.ffn.0.weight").quant, QuantType::None);
  EXPECT_EQ(g.info("blocks.0.norm.weight").dtype, DType::F32);
  std::string reasons;
  for (const auto& [why, names] : r.kept_wide) reasons += why + ":" + std::to_string(names.size()) + ";";
  EXPECT_NE(reasons.find("not a multiple of Q4_K's 256-value block:1"), std::string::npos) << reasons;
  EXPECT_NE(reasons.find("1-D"), std::string::npos) << reasons;
  EXPECT_NE(reasons.find("output head stays wide:1"), std::string::npos) << reasons;
  EXPECT_NE(reasons.find("small"), std::string::npos) << reasons;

  o.dtype = "q8_0";
  r = convert(dir / "in.safetensors", dir / "out8.gguf", o);
  EXPECT_EQ(r.quantized, 2u);  // rows of 96 fit Q8_0's 32-value blocks
  EXPECT_EQ(io::Checkpoint::open(dir / "out8.gguf").info("blocks.0.ffn.0.weight").quant, QuantType::Q8_0);

  o.dtype = "f32";  // any input, GGUF included, dequantized
  convert(dir / "out.gguf", dir / "back.safetensors", o);
  io::Checkpoint back = io::Checkpoint::open(dir / "back.safetensors");
  EXPECT_EQ(back.info("blocks.0.attn.q.weight").dtype, DType::F32);
  EXPECT_EQ(back.get("blocks.0.attn.q.weight").to_f32_vector(), want.to_f32_vector());
  EXPECT_EQ(back.get("blocks.0.ffn.0.weight").to_f32_vector(), in["blocks.0.ffn.0.weight"].to_f32_vector());

  try {
    convert(dir / "out.gguf", dir / "kept.safetensors", {});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("'blocks.0.attn.q.weight'"), std::string::npos) << m;
    EXPECT_NE(m.find("--dtype"), std::string::npos) << m;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "kept.safetensors"));
}

TEST(Convert, EngineLayoutWritesOriginalNamesWithTheSameValues) {
  TempDir dir;
  auto src = tiny_diffusers_dit();
  Json cfg = wan::DitConfig::from_json(Json::parse(R"({"attention_head_dim": 32, "cross_attn_norm": true,
      "eps": 1e-06, "ffn_dim": 96, "freq_dim": 32, "in_channels": 4, "num_attention_heads": 2, "num_layers": 2,
      "out_channels": 4, "patch_size": [1, 2, 2], "qk_norm": "rms_norm_across_heads", "text_dim": 48})")).to_json();
  io::save_safetensors(dir / "in.safetensors", all_tensors(*src), {{"config", cfg.dump()}});
  ConvertOptions o;
  o.layout = "engine";
  ConvertResult res = convert(dir / "in.safetensors", dir / "out.safetensors", o);
  EXPECT_EQ(res.component, "wan2.1-dit");
  io::Checkpoint out = io::Checkpoint::open(dir / "out.safetensors");
  auto want = read_key_list(data_path("wan2.1_dit_tiny.original.txt"));
  EXPECT_EQ(out.names(), want->names());
  EXPECT_EQ(out.get("blocks.1.norm3.weight").to_f32_vector(), src->get("blocks.1.norm2.weight").to_f32_vector());
  EXPECT_EQ(out.get("head.modulation").to_f32_vector(), src->get("scale_shift_table").to_f32_vector());
  // The output inspects as the engine's own layout, with its config in the metadata.
  InspectReport r = inspect(dir / "out.safetensors");
  EXPECT_TRUE(r.complete()) << r.to_text();
  EXPECT_EQ(r.units[0].match.layout, "original");
  EXPECT_EQ(r.units[0].match.config_origin, "metadata");
  // An incomplete input is refused, naming the key.
  src->remove("blocks.0.attn1.to_q.bias");
  io::save_safetensors(dir / "bad.safetensors", all_tensors(*src), {{"config", cfg.dump()}});
  try {
    convert(dir / "bad.safetensors", dir / "bad_out.safetensors", o);
    FAIL() << "an incomplete checkpoint must not convert";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blocks.0.attn1.to_q.bias"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "bad_out.safetensors"));
  // Unless the user allows it: then the rest converts.
  o.translate.allow_missing = true;
  ConvertResult partial = convert(dir / "bad.safetensors", dir / "bad_out.safetensors", o);
  EXPECT_EQ(partial.tensors, 68u);
}

TEST(Inspect, GoldenFileInputsAreNotParameters) {
  TempDir dir;
  auto src = tiny_diffusers_dit();
  auto m = all_tensors(*src);
  m["input.x"] = Tensor::zeros({4, 1, 4, 4}, DType::F32);
  m["output"] = Tensor::zeros({4, 1, 4, 4}, DType::F32);
  m["inter.blocks.0"] = Tensor::zeros({4, 64}, DType::F32);
  Json cfg = Json::parse(R"({"attention_head_dim": 32,
      "ffn_dim": 96, "freq_dim": 32, "in_channels": 4, "num_attention_heads": 2, "num_layers": 2,
      "out_channels": 4, "patch_size": [1, 2, 2], "qk_norm": "rms_norm_across_heads", "text_dim": 48})");
  io::save_safetensors(dir / "golden.safetensors", m, {{"kind", "wan.dit"}, {"config", cfg.dump()}});
  InspectReport r = inspect(dir / "golden.safetensors");
  EXPECT_TRUE(r.complete()) << r.to_text();
  EXPECT_EQ(r.units[0].excluded_golden, 3u);
  EXPECT_EQ(r.units[0].match.config_origin, "metadata");
  EXPECT_EQ(r.units[0].match.layout, "diffusers");
}

// Tiny checkpoints with real values, in the original layout (safetensors, or
// .pth as Wan ships the VAE and text encoder) and converted to the diffusers
// layout by the reference's own code (tools/golden/wan_translate_pairs.py):
// both must give bit-identical engine tensors. Name and shape checks cannot
// see a swap of two same-shaped tensors (q/k, norm2/norm3, wi_0/wi_1); this can.
TEST(TranslatePairs, BothLayoutsGiveTheSameEngineTensors) {
  struct Pair {
    std::string original, diffusers;
    const Component* comp;
    size_t tensors;
  };
  for (const Pair& p : {Pair{"wan_pair_dit.original.safetensors", "wan_pair_dit.diffusers.safetensors",
                             &wan::dit_component(), 69},
                        Pair{"wan_pair_vae.original.pth", "wan_pair_vae.diffusers.safetensors",
                             &wan::vae_component(), 194},
                        Pair{"wan_pair_t5.original.pth", "wan_pair_t5.diffusers.safetensors",
                             &t5::umt5_component(), 22}}) {
    InspectReport ro = inspect(data_path(p.original)), rd = inspect(data_path(p.diffusers));
    ASSERT_TRUE(ro.complete()) << ro.to_text();
    ASSERT_TRUE(rd.complete()) << rd.to_text();
    EXPECT_EQ(ro.units[0].match.layout, "original");
    EXPECT_EQ(rd.units[0].match.layout, "diffusers");
    auto a = load_component(data_path(p.original), *p.comp);
    auto b = load_component(data_path(p.diffusers), *p.comp);
    ASSERT_EQ(a.size(), p.tensors) << p.original;
    ASSERT_EQ(b.size(), p.tensors) << p.diffusers;
    for (const auto& [name, t] : a) {
      ASSERT_TRUE(b.count(name)) << name;
      EXPECT_EQ(t.dtype(), DType::BF16);
      EXPECT_EQ(t.to_f32_vector(), b.at(name).to_f32_vector()) << p.diffusers << ": " << name;
    }
  }
}

// The original layout as Wan ships it: DiT safetensors + config.json, VAE and
// text encoder as torch .pth files (tiny, real values).
TEST(Inspect, OriginalFolderWithPthFiles) {
  TempDir dir;
  std::filesystem::copy_file(data_path("wan_pair_dit.original.safetensors"), dir / "diffusion_pytorch_model.safetensors");
  std::filesystem::copy_file(data_path("wan_pair_vae.original.pth"), dir / "Wan2.1_VAE.pth");
  std::filesystem::copy_file(data_path("wan_pair_t5.original.pth"), dir / "models_t5_umt5-xxl-enc-bf16.pth");
  std::filesystem::create_directories(dir.path / "google" / "umt5-xxl");  // tokenizer folder: ignored
  InspectReport r = inspect(dir.path.string());
  EXPECT_TRUE(r.complete()) << r.to_text();
  ASSERT_EQ(r.units.size(), 3u) << r.to_text();
  for (const char* c : {"wan2.1-dit", "wan2.1-vae", "umt5-encoder"}) {
    const Unit* u = find_unit(r, c);
    ASSERT_TRUE(u) << c << "\n" << r.to_text();
    EXPECT_EQ(u->match.layout, "original");
  }
  EXPECT_EQ(find_unit(r, "wan2.1-dit")->match.config_origin, "metadata");
  auto vae = load_component(dir.path.string(), wan::vae_component());
  EXPECT_EQ(vae.size(), 194u);
  EXPECT_EQ(vae.at("decoder.upsamples.3.time_conv.weight").shape(), (Shape{32, 16, 3, 1, 1}));
}

TEST(Convert, CliEngineLayoutThenInspect) {
  TempDir dir;
  const std::string out = dir / "engine.safetensors";
  auto [rc, text] = run_vidax("convert " + data_path("wan_pair_vae.diffusers.safetensors") + " " + out +
                              " --layout engine --dtype f32");
  ASSERT_EQ(rc, 0) << text;
  EXPECT_NE(text.find("wan2.1-vae"), std::string::npos) << text;
  io::Checkpoint c = io::Checkpoint::open(out);
  EXPECT_EQ(c.info("decoder.upsamples.4.shortcut.weight").dtype, DType::F32);
  auto [rc2, json] = run_vidax("inspect --json " + out);
  ASSERT_EQ(rc2, 0) << json;
  Json j = Json::parse(json);
  EXPECT_EQ(j["layout"], "original");
  EXPECT_EQ(j["components"][0]["config_origin"], "metadata");
  // Bad arguments are refused by the parser.
  EXPECT_NE(run_vidax("convert a b --dtype int3").first, 0);
}

namespace {

// The demo checkpoint (`vidax make-demo`) in dir, with `edit` applied to one of its
// files' tensors (file name, tensor name, flat index, value).
void make_demo_with(const TempDir& dir, const std::string& file, const std::string& tensor, int64_t index,
                    float value) {
  const std::string spiece = std::string(VIDAX_TEST_DATA_DIR) + "/text/data/tiny_spiece.model";
  auto [rc, out] = run_vidax("make-demo " + dir.path.string() + " --tokenizer " + spiece);
  ASSERT_EQ(rc, 0) << out;
  if (file.empty()) return;
  const std::string path = dir / file;
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> meta;
  {
    const io::Checkpoint ck = io::Checkpoint::open(path);
    for (const auto& n : ck.names()) tensors[n] = ck.get(n).clone();
    meta = ck.metadata();
  }
  Tensor& t = tensors.at(tensor);
  std::vector<double> v = t.to_f64_vector();
  v.at(static_cast<size_t>(index)) = value;
  t = Tensor::from_f64(v, t.shape(), t.dtype());
  io::save_safetensors(path, tensors, meta);
}

}  // namespace

TEST(Inspect, CountNonFiniteEveryFloatDtype) {
  const double nan = std::nan(""), inf = INFINITY;
  for (DType dt : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::F8_E5M2}) {
    const Tensor t = Tensor::from_f64({1.0, nan, -inf, 0.0, inf, nan, nan, -2.5}, {8}, dt);
    const NonFinite f = count_non_finite(t);
    EXPECT_EQ(f.nan, 3) << dtype_name(dt);
    EXPECT_EQ(f.inf, 2) << dtype_name(dt);
  }
  // E4M3 has no Inf: S.1111.111 is its only NaN.
  const Tensor e4 = Tensor::from_f64({1.0, nan, 448.0, -nan}, {4}, DType::F8_E4M3);
  EXPECT_EQ(count_non_finite(e4).nan, 2);
  EXPECT_EQ(count_non_finite(Tensor::from_f64({1, 2, 3}, {3}, DType::I32)).nan, 0);
  // Largest finite values are not Inf.
  const Tensor big = Tensor::from_f64({65504.0, -3.3895e38}, {2}, DType::F32);
  EXPECT_EQ(count_non_finite(big).inf, 0);
}

TEST(Inspect, CheckValuesNamesNonFiniteWeights) {
  // Issue 16: a NaN in a DiT q.weight gave "OK: full coverage". Headers alone cannot
  // see it (and the default says so); --check-values finds and names it, exit 1.
  TempDir dir;
  make_demo_with(dir, "diffusion_pytorch_model.safetensors", "blocks.0.self_attn.q.weight", 5, std::nanf(""));
  {
    auto [rc, out] = run_vidax("inspect " + dir.path.string());
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("OK: full coverage (values not read; --check-values scans them for NaN and Inf)"),
              std::string::npos)
        << out;
  }
  auto [rc, out] = run_vidax("inspect --check-values " + dir.path.string());
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("values: NON-FINITE in 1 tensor:\n      blocks.0.self_attn.q.weight (1 NaN)"), std::string::npos)
      << out;
  EXPECT_NE(out.find("FAIL: non-finite (NaN or Inf) weights"), std::string::npos) << out;
  EXPECT_EQ(out.find("OK:"), std::string::npos) << out;
  EXPECT_NE(out.find("values: all finite"), std::string::npos) << out;  // the VAE and T5 files are fine

  const InspectReport r = inspect(dir.path.string(), {.check_values = true});
  EXPECT_TRUE(r.complete());
  EXPECT_FALSE(r.values_ok());
  EXPECT_FALSE(r.ok());
  auto [jrc, js] = run_vidax("inspect --json --check-values " + dir.path.string());
  EXPECT_EQ(jrc, 1);
  const Json j = Json::parse(js);
  EXPECT_EQ(j["values_finite"], false);
  bool found = false;
  for (const auto& c : j["components"])
    for (const auto& f : c.value("non_finite", Json::array())) {
      EXPECT_EQ(f["name"], "blocks.0.self_attn.q.weight");
      EXPECT_EQ(f["nan"], 1);
      EXPECT_EQ(f["inf"], 0);
      found = true;
    }
  EXPECT_TRUE(found) << js;
}

TEST(Inspect, CheckValuesFindsInfInABf16TextEncoder) {
  TempDir dir;
  make_demo_with(dir, "models_t5_umt5-xxl-enc-bf16.safetensors", "token_embedding.weight", 0, -INFINITY);
  auto [rc, out] = run_vidax("inspect --check-values " + dir.path.string());
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("token_embedding.weight (1 Inf)"), std::string::npos) << out;
  TempDir clean;
  make_demo_with(clean, "", "", 0, 0);
  auto [crc, cout_] = run_vidax("inspect --check-values " + clean.path.string());
  EXPECT_EQ(crc, 0) << cout_;
  EXPECT_NE(cout_.find("OK: full coverage, every value finite"), std::string::npos) << cout_;
}

TEST(Inspect, SpecialFilesAreRefusedNotOpened) {
  // Issue 16: inspect on a FIFO blocked in open(). Scratch nodes only.
  TempDir dir;
  const std::string fifo = dir / "pipe.safetensors";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  try {
    inspect(fifo);
    ADD_FAILURE() << "a FIFO was inspected";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), fifo + ": is a FIFO (named pipe), not a checkpoint file or folder");
  }
  std::filesystem::create_symlink(dir / "loop", dir / "loop");
  try {
    inspect(dir / "loop");
    ADD_FAILURE() << "a symlink loop was inspected";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("symbolic links"), std::string::npos) << e.what();
  }
  auto [rc, out] = run_vidax("inspect " + fifo);  // returns: it does not block
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("is a FIFO (named pipe)"), std::string::npos) << out;
}
