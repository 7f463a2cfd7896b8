// The Wan 2.2 VAE (48-channel TI2V VAE) in its layouts: the original names (Wan2.2_VAE.pth, ComfyUI's
// repackaged wan2.2_vae.safetensors) and diffusers' AutoencoderKLWan with is_residual. The pair files
// (tools/golden/wan22_vae_pairs.py) hold the same random bf16 weights of the official WanVAE_ in
// both layouts (the renaming checked there on the two reference models' outputs); here the engine
// must build the same tensors from either file, and the same video from them.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include <cmath>
#include "io/checkpoint.h"
#include "models/wan/bench.h"
#include "models/wan/checkpoint_keys.h"
#include "pipeline/bench.h"
#include "pipeline/scratch.h"
#include "models/wan/t2v_load.h"
#include "models/wan/vae22.h"
#include "translate/keymap.h"
#include "translate/source.h"
#include "test_diff.h"

using namespace vidax;
using namespace vidax::wan;

namespace {

const std::string kPair = std::string(VIDAX_TEST_DATA_DIR) + "/translate/data/wan22_pair_vae.";

// The pair files' config (tools/golden/wan22_vae_pairs.py CONFIG).
Wan22VAEConfig pair_config() {
  Wan22VAEConfig c;
  c.dim = 2;
  c.dec_dim = 4;
  c.z_dim = 16;
  return c;
}

WeightFiles vae_file(const std::string& path) {
  WeightFiles f;
  f.root = path;
  f.vae = path;
  f.vae_single = true;
  return f;
}

double max_diff(const Tensor& a, const Tensor& b) { return test::diff(a, b).max_abs; }

double max_abs(const Tensor& t) {
  double m = 0;
  for (float v : t.to_f32_vector()) m = std::max(m, static_cast<double>(std::fabs(v)));
  return m;
}

// A deterministic latent [1, z, f, h, w] of values in [-1.5, 1.5].
Tensor latent(int64_t z, int64_t f, int64_t h, int64_t w) {
  std::vector<float> v(static_cast<size_t>(z * f * h * w));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 1.5f * std::sin(0.37f * static_cast<float>(i) + 0.1f);
  return Tensor::from_f32(v, {1, z, f, h, w});
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Wan22VaeLayouts, DiffusersNamesMapOntoEveryOfficialParameterBitForBit) {
  const Wan22VAEConfig cfg = pair_config();
  auto orig = translate::CheckpointSource::open(kPair + "original.pth");
  auto diff = translate::CheckpointSource::open(kPair + "diffusers.safetensors");
  EXPECT_EQ(translate::wan::vae22_layout_of(orig->names()), "original");
  ASSERT_EQ(translate::wan::vae22_layout_of(diff->names()), "diffusers");
  const auto map = translate::wan::vae22_keymap("diffusers", cfg.dim_mult.size(), cfg.num_res_blocks);
  const auto shapes = Wan22VAE::parameter_shapes(cfg);
  ASSERT_EQ(shapes.size(), orig->names().size());
  ASSERT_EQ(shapes.size(), diff->names().size());
  std::set<std::string> used;
  for (const auto& [name, shape] : shapes) {
    auto r = translate::resolve(map, name);
    ASSERT_TRUE(r && r->keys.size() == 1) << name;
    const std::string& key = r->keys.front();
    ASSERT_TRUE(diff->contains(key)) << name << " <- " << key;
    EXPECT_TRUE(used.insert(key).second) << key << " used twice";
    const Tensor a = orig->get(name).to(DType::F32), b = diff->get(key).to(DType::F32);
    ASSERT_EQ(a.shape(), shape) << name;
    ASSERT_EQ(b.shape(), shape) << key;
    EXPECT_EQ(max_diff(a, b), 0.0) << name << " <- " << key;
  }
  EXPECT_EQ(used.size(), diff->names().size());
}

TEST(Wan22VaeLayouts, BothFilesDecodeAndEncodeTheSame) {
  const Wan22VAEConfig cfg = pair_config();
  const auto a = load_vae22(vae_file(kPair + "original.pth"), cfg, 0, /*with_encoder=*/true);
  const auto b = load_vae22(vae_file(kPair + "diffusers.safetensors"), cfg, 0, /*with_encoder=*/true);
  const Tensor z = latent(cfg.z_dim, 2, 2, 2);
  const Tensor va = a->decode(z), vb = b->decode(z);
  ASSERT_EQ(va.shape(), (Shape{1, 3, 5, 32, 32}));
  EXPECT_GT(max_abs(va), 0.0);
  EXPECT_EQ(max_diff(va, vb), 0.0);
  const Tensor mu_a = a->encode(va), mu_b = b->encode(va);
  EXPECT_EQ(mu_a.shape(), (Shape{1, cfg.z_dim, 2, 2, 2}));
  EXPECT_EQ(max_diff(mu_a, mu_b), 0.0);
}

TEST(Wan22VaeLayouts, DiffusersConfigIsReadAndCheckedAgainstTheWan22Vae) {
  auto diff = translate::CheckpointSource::open(kPair + "diffusers.safetensors");
  const auto parsed = Wan22VAEConfig::from_json(nlohmann::json::parse(diff->metadata().at("config")));
  EXPECT_EQ(parsed.to_json(), pair_config().to_json());
  // The published TI2V-5B vae/config.json (diffusers' names, the wrapper's statistics) is the default.
  const LatentScale s = wan22_latent_scale();
  nlohmann::json pub = {{"_class_name", "AutoencoderKLWan"}, {"_diffusers_version", "0.35.0"},
                        {"attn_scales", nlohmann::json::array()}, {"base_dim", 160}, {"decoder_base_dim", 256},
                        {"dim_mult", {1, 2, 4, 4}}, {"dropout", 0.0}, {"in_channels", 12}, {"out_channels", 12},
                        {"is_residual", true}, {"latents_mean", s.mean}, {"latents_std", s.std},
                        {"num_res_blocks", 2}, {"patch_size", 2}, {"scale_factor_spatial", 16},
                        {"scale_factor_temporal", 4}, {"temperal_downsample", {false, true, true}}, {"z_dim", 48}};
  EXPECT_EQ(Wan22VAEConfig::from_json(pub).to_json(), Wan22VAEConfig{}.to_json());
  auto refused = [&](const std::string& field, const nlohmann::json& value) {
    nlohmann::json j = pub;
    j[field] = value;
    return error_of([&] { (void)Wan22VAEConfig::from_json(j); });
  };
  EXPECT_NE(refused("is_residual", false).find("Wan 2.1 VAE"), std::string::npos);
  EXPECT_NE(refused("in_channels", 3).find("in_channels 3"), std::string::npos);
  EXPECT_NE(refused("scale_factor_spatial", 8).find("scale_factor_spatial 8"), std::string::npos);
  nlohmann::json other_mean = s.mean;
  other_mean[0] = 0.5;
  EXPECT_NE(refused("latents_mean", other_mean).find("latents_mean differs"), std::string::npos);
  EXPECT_NE(refused("mystery", 1).find("unknown field 'mystery'"), std::string::npos);
}

TEST(Wan22VaeLayouts, ForeignTensorsAreNamed) {
  // A config of one residual block per level against the pair file (two): the second blocks' names
  // are reported, not skipped.
  Wan22VAEConfig one = pair_config();
  one.num_res_blocks = 1;
  const std::string e = error_of([&] { (void)load_vae22(vae_file(kPair + "diffusers.safetensors"), one, 0, true); });
  EXPECT_NE(e.find("tensors the Wan 2.2 VAE (diffusers layout)"), std::string::npos) << e;
  EXPECT_NE(e.find("encoder.down_blocks.0.resnets.1.conv1.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("decoder.up_blocks.0.resnets.2.conv1.weight"), std::string::npos) << e;
}

// `vidax bench --vae FILE` with the Wan 2.2 VAE: the decode runs on the file's weights in diffusers'
// names (the tiny TI2V golden's VAE renamed), not on a Wan 2.1 component's.
TEST(Wan22VaeLayouts, BenchDecodesADiffusersVaeFile) {
  const std::string g = std::string(VIDAX_TEST_DATA_DIR) + "/golden/pipeline/wan22_ti2v_tiny/Wan2.2_VAE.safetensors";
  const Wan22VAEConfig tiny = Wan22VAEConfig::from_json(
      nlohmann::json::parse(R"({"dim": 4, "dec_dim": 6, "z_dim": 48})"));  // the tiny demo's VAE
  const auto map = translate::wan::vae22_keymap("diffusers", tiny.dim_mult.size(), tiny.num_res_blocks);
  io::Checkpoint ck = io::Checkpoint::open(g);
  std::map<std::string, Tensor> renamed;
  for (const auto& name : ck.names()) {
    auto r = translate::resolve(map, name);
    ASSERT_TRUE(r) << name;
    renamed[r->keys.front()] = ck.get(name);
  }
  const std::string file = (vidax::test::scratch_dir("wan22_bench_vae") / "vae.safetensors").string();
  io::save_safetensors(file, renamed);
  pipeline::BenchOptions o;
  o.model = "wan2.2-ti2v-tiny-demo";
  o.steps = 0;
  o.frames = 5, o.height = 64, o.width = 64;
  o.vae_file = file;
  const nlohmann::json r = run_bench(o, [](const std::string&) {});
  EXPECT_EQ(r.at("vae_weights"), file);
  EXPECT_GT(r.at("vae_seconds").get<double>(), 0.0);
}

// The published TI2V-5B VAE's diffusers key list (names and shapes of AutoencoderKLWan with the
// published config, tools/golden/wan22_vae_pairs.py): the map of the default config puts every
// official parameter on exactly one of its keys, of the same shape, and leaves none over.
TEST(Wan22VaeLayouts, PublishedDiffusersKeyListIsCoveredExactly) {
  std::ifstream in(std::string(VIDAX_TEST_DATA_DIR) + "/translate/data/wan2.2_vae.diffusers.txt");
  ASSERT_TRUE(in.good());
  std::map<std::string, Shape> listed;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
    ASSERT_NE(t2, std::string::npos) << line;
    Shape s;
    for (const auto& d : nlohmann::json::parse(line.substr(t2 + 1))) s.push_back(d.get<int64_t>());
    listed[line.substr(0, t1)] = s;
  }
  const Wan22VAEConfig cfg;
  const auto map = translate::wan::vae22_keymap("diffusers", cfg.dim_mult.size(), cfg.num_res_blocks);
  const auto shapes = Wan22VAE::parameter_shapes(cfg);
  std::set<std::string> used;
  for (const auto& [name, shape] : shapes) {
    auto r = translate::resolve(map, name);
    ASSERT_TRUE(r && r->keys.size() == 1) << name;
    auto it = listed.find(r->keys.front());
    ASSERT_NE(it, listed.end()) << name << " <- " << r->keys.front();
    EXPECT_EQ(it->second, shape) << name;
    used.insert(it->first);
  }
  EXPECT_EQ(used.size(), listed.size());
  EXPECT_EQ(listed.size(), 196u);
}
