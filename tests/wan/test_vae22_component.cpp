// The Wan 2.2 VAE as a translator component, "wan2.2-vae" (docs/bugs.md row 105): a lone VAE file
// (Wan2.2_VAE.pth / .safetensors, ComfyUI's wan2.2_vae.safetensors: the same names; diffusers'
// AutoencoderKLWan with is_residual) is inspected as that part with full coverage, converts to
// the engine's names bit for bit, and the --vae part check takes it; a Wan 2.1 VAE file stays 2.1.
// Fixtures: the tiny TI2V golden's VAE (dim 4, dec_dim 6, z_dim 48) and the layout pair files
// (tools/golden/wan22_vae_pairs.py: dim 2, dec_dim 4, z_dim 16, the same weights in both layouts).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "engine/builtin_kinds.h"
#include "engine/families.h"
#include "io/checkpoint.h"
#include "models/wan/checkpoint_keys.h"
#include "models/wan/vae22.h"
#include "models/wan/weights.h"
#include "pipeline/scratch.h"
#include "translate/inspect.h"
#include "translate/source.h"

using namespace vidax;
namespace fs = std::filesystem;
using wan::Wan22VAEConfig;

namespace {

const std::string kData = VIDAX_TEST_DATA_DIR;
const std::string kTiny = kData + "/golden/pipeline/wan22_ti2v_tiny/Wan2.2_VAE.safetensors";
const std::string kPair = kData + "/translate/data/wan22_pair_vae.";
const std::string kWan21 = kData + "/golden/pipeline/wan_pipeline_tiny/Wan2.1_VAE.safetensors";

Wan22VAEConfig config(int64_t dim, int64_t dec_dim, int64_t z_dim) {
  Wan22VAEConfig c;
  c.dim = dim, c.dec_dim = dec_dim, c.z_dim = z_dim;
  return c;
}

// `src` copied into the scratch folder under `name` (the file names a user has).
std::string copy_as(const std::string& src, const std::string& name) {
  const fs::path p = vidax::test::scratch_dir("wan22_vae_component_" + fs::path(name).stem().string()) / name;
  fs::copy_file(src, p, fs::copy_options::overwrite_existing);
  return p.string();
}

// Every tensor of a and b: the same names, dtypes, shapes and values (bit for bit).
void expect_same_tensors(const std::string& a_path, const std::string& b_path) {
  auto a = translate::CheckpointSource::open(a_path), b = translate::CheckpointSource::open(b_path);
  ASSERT_EQ(a->names(), b->names());
  for (const auto& n : a->names()) {
    const Tensor x = a->get(n), y = b->get(n);
    ASSERT_EQ(x.dtype(), y.dtype()) << n;
    ASSERT_EQ(x.shape(), y.shape()) << n;
    EXPECT_EQ(x.to_f64_vector(), y.to_f64_vector()) << n;
  }
}

}  // namespace

TEST(Wan22VaeComponent, InspectReportsALoneVaeFileWithFullCoverage) {
  engine::register_builtins();
  struct File {
    std::string path, layout;
    Wan22VAEConfig cfg;
  };
  const File files[] = {{copy_as(kTiny, "Wan2.2_VAE.safetensors"), "original", config(4, 6, 48)},
                        {copy_as(kTiny, "wan2.2_vae.safetensors"), "original", config(4, 6, 48)},  // ComfyUI's name
                        {kPair + "original.pth", "original", config(2, 4, 16)},
                        {kPair + "diffusers.safetensors", "diffusers", config(2, 4, 16)}};
  for (const File& f : files) {
    const translate::InspectReport r = translate::inspect(f.path);
    EXPECT_TRUE(r.ok()) << r.to_text();
    const nlohmann::json j = r.to_json();
    EXPECT_EQ(j.at("family"), "wan2.2") << f.path;
    ASSERT_EQ(j.at("components").size(), 1u) << f.path;
    const nlohmann::json& c = j.at("components")[0];
    EXPECT_EQ(c.at("component"), "wan2.2-vae") << f.path;
    EXPECT_EQ(c.at("layout"), f.layout) << f.path;
    EXPECT_EQ(Wan22VAEConfig::from_json(c.at("config")).to_json(), f.cfg.to_json()) << f.path;
    EXPECT_EQ(c.at("variant"), "custom") << f.path;  // tiny, not the published VAE
    EXPECT_NE(r.to_text().find("OK: full coverage"), std::string::npos) << r.to_text();
  }
}

// The published VAE's diffusers key list (names and shapes only): the component infers the
// published config from the shapes (variant wan2.2-vae) and covers every key.
TEST(Wan22VaeComponent, ThePublishedShapesAreThePublishedVae) {
  std::ifstream in(kData + "/translate/data/wan2.2_vae.diffusers.txt");
  ASSERT_TRUE(in.good());
  translate::MemorySource src("published key list");
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
    ASSERT_NE(t2, std::string::npos) << line;
    src.add(line.substr(0, t1), DType::BF16, nlohmann::json::parse(line.substr(t2 + 1)).get<Shape>());
  }
  const translate::Component& comp = translate::wan::vae22_component();
  const translate::Match m = translate::match(src, comp);
  EXPECT_EQ(m.layout, "diffusers");
  EXPECT_EQ(Wan22VAEConfig::from_json(m.config).to_json(), Wan22VAEConfig{}.to_json());
  EXPECT_EQ(comp.variant(m.config), "wan2.2-vae");
  EXPECT_TRUE(m.plan.complete()) << m.plan.problems();
  EXPECT_EQ(m.plan.consumed_keys, src.names().size());
}

// `convert --layout engine` writes the official names: from diffusers' names the same tensors as
// the original file, bit for bit; from the original names the file again.
TEST(Wan22VaeComponent, ConvertsToTheEngineNamesBitForBit) {
  engine::register_builtins();
  const fs::path dir = vidax::test::scratch_dir("wan22_vae_convert");
  translate::ConvertOptions o;
  o.layout = "engine";
  for (const auto& [in, ref] : {std::pair<std::string, std::string>{kPair + "diffusers.safetensors", kPair + "original.pth"},
                                {kPair + "original.pth", kPair + "original.pth"},
                                {kTiny, kTiny}}) {
    const std::string out = (dir / (fs::path(in).stem().string() + ".engine.safetensors")).string();
    const translate::ConvertResult r = translate::convert(in, out, o);
    EXPECT_EQ(r.component, "wan2.2-vae") << in;
    expect_same_tensors(out, ref);
  }
}

// The --vae part check takes the VAE the tensors are: a Wan 2.2 file as wan2.2-vae (its config
// from its shapes), a Wan 2.1 file as wan2.1-vae; the 2.1 check refuses a 2.2 file by name.
TEST(Wan22VaeComponent, ThePartCheckUsesTheVaeTheFileIs) {
  engine::register_builtins();
  pipeline::PartFiles f;
  f.vae = copy_as(kTiny, "Wan2.2_VAE.safetensors");
  const engine::PartsResolved two = engine::check_part_files("", f);
  EXPECT_EQ(two.family->name(), "wan");
  ASSERT_EQ(two.checked.parts.size(), 1u);
  EXPECT_EQ(two.checked.parts[0].flag, "--vae");
  EXPECT_EQ(two.checked.parts[0].component, "wan2.2-vae");
  EXPECT_EQ(Wan22VAEConfig::from_json(two.checked.parts[0].config).to_json(), config(4, 6, 48).to_json());
  f.vae = kWan21;
  const engine::PartsResolved one = engine::check_part_files("", f);
  ASSERT_EQ(one.checked.parts.size(), 1u);
  EXPECT_EQ(one.checked.parts[0].component, "wan2.1-vae");
  EXPECT_EQ(&wan::vae_component_of(kWan21), &translate::wan::vae_component());
  const nlohmann::json j21 = translate::inspect(kWan21).to_json();
  EXPECT_EQ(j21.at("components")[0].at("component"), "wan2.1-vae");
  EXPECT_EQ(j21.at("complete"), true);
  EXPECT_EQ(&wan::vae_component_of(kPair + "diffusers.safetensors"), &translate::wan::vae22_component());
  try {
    wan::single_file_config(kTiny, translate::wan::vae_component(), "--vae");
    ADD_FAILURE() << "a Wan 2.2 VAE passed as a Wan 2.1 VAE";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("it looks like a Wan 2.2 VAE"), std::string::npos) << e.what();
  }
}

// The coverage can fail: the tiny VAE without one tensor, or with one foreign tensor more, is
// still told as the Wan 2.2 VAE but reported incomplete, naming the tensor.
TEST(Wan22VaeComponent, AMissingOrForeignTensorIsIncomplete) {
  engine::register_builtins();
  const io::Checkpoint ck = io::Checkpoint::open(kTiny);
  const fs::path dir = vidax::test::scratch_dir("wan22_vae_incomplete");
  struct Edit {
    std::string file, drop, add, needle;
  };
  for (const Edit& e : {Edit{"missing.safetensors", "decoder.head.2.bias", "", "decoder.head.2.bias"},
                        Edit{"foreign.safetensors", "", "decoder.mystery.weight", "decoder.mystery.weight"}}) {
    std::map<std::string, Tensor> t;
    for (const auto& n : ck.names())
      if (n != e.drop) t.emplace(n, ck.get(n));
    if (!e.add.empty()) t.emplace(e.add, Tensor::zeros({2, 2}, DType::F32));
    const std::string path = (dir / e.file).string();
    io::save_safetensors(path, t);
    const translate::InspectReport r = translate::inspect(path);
    EXPECT_FALSE(r.ok()) << r.to_text();
    const nlohmann::json j = r.to_json();
    EXPECT_EQ(j.at("components")[0].at("component"), "wan2.2-vae") << e.file;
    EXPECT_NE(r.to_text().find(e.needle), std::string::npos) << r.to_text();
    EXPECT_NE(r.to_text().find("FAIL: incomplete coverage"), std::string::npos) << r.to_text();
  }
}

// The encode kind's golden holds the encoder half (the decode golden the whole state dict, as
// Wan2.2_VAE.pth), a decoder-only file the other half: the half components cover them exactly
// (the encode golden was read as a Wan 2.1 VAE encoder, with a shape mismatch).
TEST(Wan22VaeComponent, TheHalvesCoverAHalfFile) {
  engine::register_builtins();
  std::map<std::string, Tensor> decoder;
  const io::Checkpoint ck = io::Checkpoint::open(kTiny);
  for (const auto& n : ck.names())
    if (n.rfind("decoder.", 0) == 0 || n.rfind("conv2.", 0) == 0) decoder.emplace(n, ck.get(n));
  const std::string decoder_file = (vidax::test::scratch_dir("wan22_vae_halves") / "decoder.safetensors").string();
  io::save_safetensors(decoder_file, decoder);
  for (const auto& [file, comp] :
       {std::pair<std::string, std::string>{kData + "/golden/wan22_vae_encode.safetensors", "wan2.2-vae-encoder"},
        {kData + "/golden/wan22_vae_decode.safetensors", "wan2.2-vae"},
        {decoder_file, "wan2.2-vae-decoder"}}) {
    const translate::InspectReport r = translate::inspect(file);
    EXPECT_TRUE(r.ok()) << r.to_text();
    EXPECT_EQ(r.to_json().at("components")[0].at("component"), comp) << r.to_text();
  }
}
