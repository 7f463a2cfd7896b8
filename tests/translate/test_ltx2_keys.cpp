// The LTX-2 DiT as a translator component (src/models/ltx2/checkpoint_keys.h) against the key lists
// of the reference classes (tools/golden/ltx2_keylists.py: ltx_core's LTXModel and diffusers'
// LTX2VideoTransformer3DModel state_dict names, the 19B size and a tiny 2.3-style model): every
// layout covered exactly, detection from the keys alone (component, layout, variant, config), a
// removed / renamed / reshaped key named; and the layout pair (tools/golden/ltx2_layouts.py): the same
// weights under the official, ComfyUI and diffusers names give the same DiT output, bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <set>

#include "core/error.h"
#include "io/checkpoint.h"
#include "models/ltx2/checkpoint_keys.h"
#include "models/ltx2/dit.h"
#include "parity/parity.h"
#include "engine/builtin_kinds.h"
#include "translate/inspect.h"
#include "keylist_header.h"
#include "test_names.h"

using namespace vidax;
using namespace vidax::translate;

namespace {

using test::data_path;
std::string golden_path(const std::string& name) { return std::string(VIDAX_TEST_DATA_DIR) + "/golden/ltx2/" + name; }

struct Registered : ::testing::Environment {
  void SetUp() override { register_component(ltx2::dit_component()); }
};
const auto* const kRegistered = ::testing::AddGlobalTestEnvironment(new Registered);

using Header = test::KeyListHeader;
using test::read_header;

struct Case {
  std::string file, layout, variant;
  int64_t parameters;
  size_t tensors;
};
// Parameter counts: the key lists' own (sums of the shapes' products).
const std::vector<Case> kCases = {
    {"ltx2_dit_19b.original.txt", "original", "19b", 18876174592, 3510},
    {"ltx2_dit_19b.diffusers.txt", "diffusers", "19b", 18876174592, 3510},
    {"ltx2_dit_tiny23.original.txt", "original", "custom", 128352, 227},
    {"ltx2_dit_tiny23.diffusers.txt", "diffusers", "custom", 128352, 227},
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.file; }

class Ltx2KeyLists : public ::testing::TestWithParam<Case> {};

}  // namespace

TEST_P(Ltx2KeyLists, TheReferenceConfigGivesExactlyTheLayoutsKeys) {
  const Case& c = GetParam();
  auto src = read_key_list(data_path(c.file));
  const Header h = read_header(c.file);
  ASSERT_EQ(h.parameters, c.parameters);
  ASSERT_EQ(src->names().size(), c.tensors);
  const Component& comp = ltx2::dit_component();
  const Match m = match(*src, comp, h.config, c.layout);
  EXPECT_TRUE(m.plan.complete()) << c.file << ":\n" << m.plan.problems();
  EXPECT_EQ(m.spec.parameter_count(), c.parameters);
  EXPECT_EQ(m.spec.params.size(), c.tensors);
  EXPECT_EQ(comp.variant(m.config), c.variant);
}

TEST_P(Ltx2KeyLists, DetectsComponentLayoutVariantAndConfigFromTheKeysAlone) {
  const Case& c = GetParam();
  auto src = read_key_list(data_path(c.file));
  auto d = detect(*src);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->comp->name(), "ltx2-dit");
  EXPECT_EQ(d->comp->family(), "ltx2");
  EXPECT_EQ(d->layout, c.layout);
  const Match m = match(*src, *d->comp);
  EXPECT_EQ(m.config_origin, "inferred");
  EXPECT_TRUE(m.plan.complete()) << c.file << ":\n" << m.plan.problems();
  EXPECT_EQ(m.spec.parameter_count(), c.parameters);
  EXPECT_EQ(d->comp->variant(m.config), c.variant);
}

TEST_P(Ltx2KeyLists, ARemovedRenamedOrReshapedKeyFailsNamingIt) {
  const Case& c = GetParam();
  auto src = read_key_list(data_path(c.file));
  const Json cfg = read_header(c.file).config;
  const Component& comp = ltx2::dit_component();
  const auto names = src->names();
  const std::string victim = names[names.size() / 2];
  const TensorInfo info = *src->find(victim);
  src->remove(victim);
  Match m = match(*src, comp, cfg, c.layout);
  ASSERT_EQ(m.plan.missing.size(), 1u) << m.plan.problems();
  EXPECT_EQ(m.plan.missing[0].looked_for.front(), victim);
  EXPECT_NE(m.plan.problems().find("'" + victim + "'"), std::string::npos) << m.plan.problems();
  src->add(victim + "_renamed", info.dtype, info.shape);
  m = match(*src, comp, cfg, c.layout);
  EXPECT_EQ(m.plan.unused_keys, std::vector<std::string>{victim + "_renamed"});
  src->remove(victim + "_renamed");
  Shape wrong = info.shape;
  wrong.push_back(2);
  src->add(victim, info.dtype, wrong);
  m = match(*src, comp, cfg, c.layout);
  ASSERT_EQ(m.plan.mismatches.size(), 1u);
  EXPECT_EQ(m.plan.mismatches[0].key, victim);
}

INSTANTIATE_TEST_SUITE_P(All, Ltx2KeyLists, ::testing::ValuesIn(kCases), [](const auto& info) {
  return vidax::test::gtest_name(info.param.file.substr(0, info.param.file.size() - 4));
});

TEST(Ltx2KeyMaps, EveryDiffusersKeyIsTheImageOfOneOfficialParameter) {
  for (const std::string stem : {"ltx2_dit_19b", "ltx2_dit_tiny23"}) {
    auto orig = read_key_list(data_path(stem + ".original.txt"));
    auto diff = read_key_list(data_path(stem + ".diffusers.txt"));
    const KeyMap map = ltx2::dit_keymap("diffusers");
    std::set<std::string> images;
    for (const auto& n : orig->names()) {
      auto rr = resolve(map, n);
      ASSERT_TRUE(rr) << n;
      const TensorInfo* ti = diff->find(rr->keys.at(0));
      ASSERT_NE(ti, nullptr) << n << " -> " << rr->keys.at(0);
      EXPECT_EQ(ti->shape, orig->find(n)->shape) << n;
      EXPECT_TRUE(images.insert(ti->name).second) << "two parameters map to " << ti->name;
    }
    EXPECT_EQ(images.size(), diff->names().size()) << stem;
  }
}

TEST(Ltx2KeyMaps, TheSingleFilePrefixIsTheComfyUiLayoutAndItsTextConnectorsAreNotTheDits) {
  auto orig = read_key_list(data_path("ltx2_dit_19b.original.txt"));
  MemorySource single("ltx-2-19b-dev.safetensors");
  for (const auto& n : orig->names()) single.add("model.diffusion_model." + n, orig->find(n)->dtype, orig->find(n)->shape);
  auto d = detect(single);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->comp->name(), "ltx2-dit");
  EXPECT_EQ(d->layout, "comfyui");
  Match m = match(single, *d->comp);
  EXPECT_TRUE(m.plan.complete()) << m.plan.problems();
  EXPECT_EQ(d->comp->variant(m.config), "19b");
  // The monolith's text connectors live under the same prefix: the DiT leaves them unused, by name.
  single.add("model.diffusion_model.video_embeddings_connector.learnable_registers", DType::BF16, {128, 3840});
  m = match(single, *d->comp);
  EXPECT_EQ(m.plan.unused_keys,
            std::vector<std::string>{"model.diffusion_model.video_embeddings_connector.learnable_registers"});
}

TEST(Ltx2Config, ReadsTheMetadataTheTransformerDictAndDiffusersAndRoundTrips) {
  const Component& comp = ltx2::dit_component();
  const Json meta = read_header("ltx2_dit_19b.original.txt").config;  // {"transformer": {...}}
  ASSERT_TRUE(meta.contains("transformer"));
  const auto a = comp.read_config(meta), b = comp.read_config(meta["transformer"]);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(*comp.read_config(*a), *a);  // canonical form reads back to itself
  const ltx2::DiTConfig c = ltx2::DiTConfig::from_json(*a);
  EXPECT_EQ(c.num_layers, 48);
  EXPECT_EQ(c.caption_channels, 3840);
  // diffusers' config.json: the default class is the 19B (the same parameters).
  const auto d = comp.read_config(read_header("ltx2_dit_19b.diffusers.txt").config);
  ASSERT_TRUE(d);
  EXPECT_EQ(comp.variant(*d), "19b");
  const auto t = comp.read_config(read_header("ltx2_dit_tiny23.diffusers.txt").config);
  ASSERT_TRUE(t);
  const ltx2::DiTConfig tc = ltx2::DiTConfig::from_json(*t);
  EXPECT_TRUE(tc.apply_gated_attention && tc.cross_attention_adaln && tc.use_keyframes_abs_pos_embedding);
  EXPECT_FALSE(tc.ff_bias);
  EXPECT_FALSE(tc.caption_projection);
  // Not an LTX-2 config: not read as one; a broken one is an error naming the field.
  EXPECT_FALSE(comp.read_config(Json{{"dim", 1536}, {"num_layers", 30}, {"ffn_dim", 8960}}));
  Json bad = meta;
  bad["transformer"]["qk_norm"] = "layer_norm";
  try {
    comp.read_config(bad);
    FAIL() << "a qk_norm the configurator refuses was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("qk_norm"), std::string::npos) << e.what();
  }
  Json uneven = read_header("ltx2_dit_tiny23.diffusers.txt").config;
  uneven["audio_gated_attn"] = false;
  EXPECT_THROW(comp.read_config(uneven), Error);
  try {
    ltx2::dit_keymap("kohya");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("original, comfyui, diffusers"), std::string::npos) << e.what();
  }
}

// ---- the layout pair (tools/golden/ltx2_layouts.py) ----------------------------------

namespace {

// The file's DiT parameters through the component (layout detected), and the model's output on the
// file's inputs.
ltx2::DiTOutput run_file(const std::string& path, std::map<std::string, Tensor>* params_out = nullptr) {
  auto file = io::Checkpoint::open(path);
  MemorySource src(path);
  for (const auto& n : file.names())
    if (!is_golden_io_key(n)) src.add(n, file.get(n));
  const Json cfg = Json::parse(file.metadata().at("config"));
  auto params = load(src, ltx2::dit_component(), cfg);
  if (params_out) *params_out = params;
  nn::ParamSource ps = nn::ParamSource::from_map(std::move(params), path);
  const ltx2::LTXModel model(ltx2::DiTConfig::from_json(cfg), ps, DType::F32);
  ps.expect_all_taken();
  auto modality = [&](const std::string& s) {
    ltx2::Modality m;
    m.latent = file.get("input." + s + ".latent");
    m.sigma = file.get("input." + s + ".sigma");
    m.timesteps = file.get("input." + s + ".timesteps");
    m.positions = file.get("input." + s + ".positions");
    m.context = file.get("input." + s + ".context");
    return m;
  };
  const ltx2::Modality v = modality("video"), a = modality("audio");
  return model.forward(&v, &a);
}

bool bit_equal(const Tensor& x, const Tensor& y) {
  const Tensor a = x.contiguous(), b = y.contiguous();
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
}

}  // namespace

TEST(Ltx2Layouts, TheSameWeightsInEveryLayoutGiveTheSameOutputBitForBit) {
  std::map<std::string, Tensor> po, pc, pd;
  const auto o = run_file(golden_path("ltx2_dit_av23.safetensors"), &po);
  const auto c = run_file(golden_path("ltx2_dit_av23_comfyui.safetensors"), &pc);
  const auto d = run_file(golden_path("ltx2_dit_av23_diffusers.safetensors"), &pd);
  ASSERT_EQ(po.size(), pd.size());
  ASSERT_EQ(po.size(), pc.size());
  for (const auto& [name, t] : po) {
    EXPECT_TRUE(bit_equal(t, pd.at(name))) << name;
    EXPECT_TRUE(bit_equal(t, pc.at(name))) << name;
  }
  EXPECT_TRUE(bit_equal(o.video, d.video) && bit_equal(o.audio, d.audio));
  EXPECT_TRUE(bit_equal(o.video, c.video) && bit_equal(o.audio, c.audio));
  // Each file is also a golden of the official forward (kind ltx2.dit, fp32).
  engine::register_builtin_kinds();
  parity::Options opt;
  opt.precision = "fp32";
  for (const char* f : {"ltx2_dit_av23_diffusers.safetensors", "ltx2_dit_av23_comfyui.safetensors"}) {
    const parity::Report r = parity::run(golden_path(f), opt);
    EXPECT_TRUE(r.ok()) << f;
  }
}

TEST(Ltx2Layouts, ASwappedPairOfDiffusersTensorsFailsTheGolden) {
  // Negative control: the diffusers file with two same-shaped tensors exchanged (block 0's video
  // self-attention to_q / to_k) still loads (names and shapes fit) and must fail the reference output.
  auto file = io::Checkpoint::open(golden_path("ltx2_dit_av23_diffusers.safetensors"));
  std::map<std::string, Tensor> all;
  for (const auto& n : file.names()) all[n] = file.get(n);
  const std::string a = "transformer_blocks.0.attn1.to_q.weight", b = "transformer_blocks.0.attn1.to_k.weight";
  ASSERT_TRUE(all.count(a) && all.count(b));
  std::swap(all[a], all[b]);
  const std::string path = (std::filesystem::temp_directory_path() / "ltx2_dit_av23_diffusers_swapped.safetensors").string();
  io::save_safetensors(path, all, file.metadata());
  engine::register_builtin_kinds();
  parity::Options opt;
  opt.precision = "fp32";
  EXPECT_FALSE(parity::run(path, opt).ok());
  std::filesystem::remove(path);
}

// ---- the video VAE (tests/ltx2/data/video_vae_keys.json: the official VideoEncoder / VideoDecoder
// state dicts of the published structure, tools/golden/ltx2_video_vae.py) ------------------------

namespace {

struct VaeLists {
  Json config;
  std::map<std::string, Shape> encoder, decoder;
};
VaeLists vae_lists() {
  std::ifstream f(std::string(VIDAX_TEST_DATA_DIR) + "/ltx2/data/video_vae_keys.json");
  const Json j = Json::parse(f);
  VaeLists l;
  l.config = j.at("config");
  for (const auto& [k, v] : j.at("encoder").items()) l.encoder[k] = v.get<Shape>();
  for (const auto& [k, v] : j.at("decoder").items()) l.decoder[k] = v.get<Shape>();
  return l;
}
// The halves as files store them: bare (golden files), the ComfyUI split file (encoder. / decoder.,
// statistics bare), the official single file (vae.encoder. / vae.decoder. / vae.per_channel_statistics.).
void add_half(MemorySource& src, const std::map<std::string, Shape>& half, const std::string& root,
              const std::string& half_prefix) {
  for (const auto& [k, s] : half) {
    const std::string name = k.rfind("per_channel_statistics.", 0) == 0 ? root + k : root + half_prefix + k;
    if (!src.find(name)) src.add(name, DType::BF16, s);
  }
}

}  // namespace

TEST(Ltx2VideoVae, EveryFileShapeIsDetectedAndCoveredExactly) {
  for (const translate::Component* c :
       {&ltx2::video_vae_component(), &ltx2::video_vae_encoder_component(), &ltx2::video_vae_decoder_component()})
    register_component(*c);
  const VaeLists l = vae_lists();
  struct FileCase {
    std::string what, component, layout;
    std::function<void(MemorySource&)> fill;
    size_t tensors;
  };
  const std::vector<FileCase> cases = {
      {"decoder golden", "ltx2-video-vae-decoder", "original", [&](MemorySource& s) { add_half(s, l.decoder, "", ""); }, 92},
      {"encoder golden", "ltx2-video-vae-encoder", "original", [&](MemorySource& s) { add_half(s, l.encoder, "", ""); }, 94},
      {"ComfyUI split VAE", "ltx2-video-vae", "original",
       [&](MemorySource& s) { add_half(s, l.encoder, "", "encoder."), add_half(s, l.decoder, "", "decoder."); }, 184},
      {"single-file VAE", "ltx2-video-vae", "checkpoint",
       [&](MemorySource& s) { add_half(s, l.encoder, "vae.", "encoder."), add_half(s, l.decoder, "vae.", "decoder."); }, 184},
      {"single-file decoder", "ltx2-video-vae-decoder", "checkpoint",
       [&](MemorySource& s) { add_half(s, l.decoder, "vae.", "decoder."); }, 92},
      {"split decoder", "ltx2-video-vae-decoder", "split", [&](MemorySource& s) { add_half(s, l.decoder, "", "decoder."); }, 92},
  };
  for (const auto& c : cases) {
    MemorySource src(c.what);
    c.fill(src);
    ASSERT_EQ(src.names().size(), c.tensors) << c.what;
    auto d = detect(src);
    ASSERT_TRUE(d) << c.what;
    EXPECT_EQ(d->comp->name(), c.component) << c.what;
    EXPECT_EQ(d->layout, c.layout) << c.what;
    Match m = match(src, *d->comp, l.config, d->layout);
    EXPECT_TRUE(m.plan.complete()) << c.what << ":\n" << m.plan.problems();
    EXPECT_EQ(m.spec.params.size(), c.tensors) << c.what;
    EXPECT_EQ(d->comp->variant(m.config), "ltx-2") << c.what;
    // The checkpoint's buffers no module has are ignored by name; any other extra key is unused.
    const std::string root = c.layout == "checkpoint" ? "vae." : "";
    src.add(root + "per_channel_statistics.channel", DType::F32, {128});
    src.add(root + "per_channel_statistics.mean-of-stds", DType::F32, {128});
    m = match(src, *d->comp, l.config, d->layout);
    EXPECT_TRUE(m.plan.complete()) << c.what << ":\n" << m.plan.problems();
    EXPECT_EQ(m.plan.ignored_keys.size(), 2u) << c.what;
    src.add(root + "per_channel_statistics.bogus", DType::F32, {128});
    m = match(src, *d->comp, l.config, d->layout);
    EXPECT_EQ(m.plan.unused_keys, std::vector<std::string>{root + "per_channel_statistics.bogus"}) << c.what;
  }
}

TEST(Ltx2VideoVae, TheGoldenFilesAreTheirHalvesWithTheirOwnConfig) {
  for (const translate::Component* c :
       {&ltx2::video_vae_component(), &ltx2::video_vae_encoder_component(), &ltx2::video_vae_decoder_component()})
    register_component(*c);
  for (const auto& [file, comp] : std::vector<std::pair<std::string, std::string>>{
           {"ltx2_vae_decode.safetensors", "ltx2-video-vae-decoder"},
           {"ltx2_vae_encode.safetensors", "ltx2-video-vae-encoder"},
           {"ltx2_vae_decode_variants.safetensors", "ltx2-video-vae-decoder"},
           {"ltx2_vae_encode_variants.safetensors", "ltx2-video-vae-encoder"}}) {
    const InspectReport r = inspect(golden_path(file));
    ASSERT_EQ(r.units.size(), 1u) << file;
    ASSERT_NE(r.units[0].comp, nullptr) << file;
    EXPECT_EQ(r.units[0].comp->name(), comp) << file;
    EXPECT_EQ(r.units[0].match.config_origin, "metadata") << file;
    EXPECT_TRUE(r.units[0].complete()) << file << ":\n" << r.units[0].match.plan.problems();
  }
  // A config of another part is not the VAE's; a bad block kind is an error naming it.
  EXPECT_FALSE(ltx2::video_vae_component().read_config(Json{{"transformer", Json::object()}}));
  Json bad = ltx2::video_vae_published_config();
  bad["decoder_blocks"][0][0] = "res_z";
  EXPECT_THROW(ltx2::video_vae_component().read_config(bad), Error);
}

// ---- the audio VAE and the vocoder (tests/translate/data/ltx2_audio_keys.json: the official
// AudioEncoder / AudioDecoder / Vocoder state dicts at the configurators' defaults,
// tools/golden/ltx2_audio_keylists.py) --------------------------------------------------------------

namespace {

void register_audio() {
  for (const translate::Component* c : {&ltx2::audio_vae_component(), &ltx2::audio_vae_encoder_component(),
                                        &ltx2::audio_vae_decoder_component(), &ltx2::vocoder_component(),
                                        &ltx2::vocoder_bwe_component()})
    register_component(*c);
}
std::map<std::string, Shape> audio_list(const std::string& part) {
  std::ifstream f(data_path("ltx2_audio_keys.json"));
  const Json j = Json::parse(f);
  std::map<std::string, Shape> out;
  for (const auto& [k, v] : j.at(part).items()) out[k] = v.get<Shape>();
  return out;
}

}  // namespace

TEST(Ltx2AudioParts, EveryFileShapeIsDetectedAndCoveredExactly) {
  register_audio();
  const auto enc = audio_list("audio_vae_encoder"), dec = audio_list("audio_vae_decoder"), voc = audio_list("vocoder");
  struct FileCase {
    std::string what, component, layout;
    std::function<void(MemorySource&)> fill;
    size_t tensors;
  };
  auto half = [](MemorySource& s, const std::map<std::string, Shape>& h, const std::string& root, const std::string& pre) {
    add_half(s, h, root, pre);
  };
  const std::vector<FileCase> cases = {
      {"audio decoder golden", "ltx2-audio-vae-decoder", "original", [&](MemorySource& s) { half(s, dec, "", ""); }, 66},
      {"audio encoder golden", "ltx2-audio-vae-encoder", "original", [&](MemorySource& s) { half(s, enc, "", ""); }, 54},
      {"single-file audio decoder", "ltx2-audio-vae-decoder", "checkpoint",
       [&](MemorySource& s) { half(s, dec, "audio_vae.", "decoder."); }, 66},
      {"single-file audio VAE", "ltx2-audio-vae", "checkpoint",
       [&](MemorySource& s) { half(s, enc, "audio_vae.", "encoder."), half(s, dec, "audio_vae.", "decoder."); }, 118},
      {"vocoder golden", "ltx2-vocoder", "original",
       [&](MemorySource& s) { for (const auto& [k, sh] : voc) s.add(k, DType::BF16, sh); }, 194},
      {"single-file vocoder", "ltx2-vocoder", "checkpoint",
       [&](MemorySource& s) { for (const auto& [k, sh] : voc) s.add("vocoder." + k, DType::BF16, sh); }, 194},
  };
  for (const auto& c : cases) {
    MemorySource src(c.what);
    c.fill(src);
    ASSERT_EQ(src.names().size(), c.tensors) << c.what;
    auto d = detect(src);
    ASSERT_TRUE(d) << c.what;
    EXPECT_EQ(d->comp->name(), c.component) << c.what;
    EXPECT_EQ(d->layout, c.layout) << c.what;
    const Match m = match(src, *d->comp);  // the defaults: the reference's own
    EXPECT_TRUE(m.plan.complete()) << c.what << ":\n" << m.plan.problems();
    EXPECT_EQ(m.spec.params.size(), c.tensors) << c.what;
    EXPECT_EQ(d->comp->variant(m.config), "ltx-2") << c.what;
  }
}

TEST(Ltx2AudioParts, TheGoldenFilesAreTheirPartsWithTheirOwnConfig) {
  register_audio();
  for (const auto& [file, comp] : std::vector<std::pair<std::string, std::string>>{
           {"ltx2_audio_vae_decode.safetensors", "ltx2-audio-vae-decoder"},
           {"ltx2_audio_vae_encode.safetensors", "ltx2-audio-vae-encoder"},
           {"ltx2_audio_vae_decode_variants.safetensors", "ltx2-audio-vae-decoder"},
           {"ltx2_vocoder_tiny.safetensors", "ltx2-vocoder"},
           {"ltx2_vocoder_amp_snake.safetensors", "ltx2-vocoder"},
           {"ltx2_vocoder_bwe.safetensors", "ltx2-vocoder-bwe"},
           {"ltx2_vocoder_bwe_b2.safetensors", "ltx2-vocoder-bwe"}}) {
    const InspectReport r = inspect(golden_path(file));
    ASSERT_EQ(r.units.size(), 1u) << file;
    ASSERT_NE(r.units[0].comp, nullptr) << file;
    EXPECT_EQ(r.units[0].comp->name(), comp) << file;
    EXPECT_EQ(r.units[0].match.config_origin, "metadata") << file;
    EXPECT_TRUE(r.units[0].complete()) << file << ":\n" << r.units[0].match.plan.problems();
    EXPECT_EQ(r.units[0].comp->variant(r.units[0].match.config), "custom") << file;  // tiny configs
  }
  // Each part reads only its own section of a whole metadata config.
  const Json meta{{"transformer", read_header("ltx2_dit_tiny23.original.txt").config["transformer"]},
                  {"vocoder", {{"upsample_rates", {2, 3}}, {"upsample_kernel_sizes", {4, 7}}, {"resblock", "1"}}},
                  {"audio_vae", {{"model", {{"params", {{"ddconfig", {{"ch", 8}}}}}}}}}};
  EXPECT_EQ(ltx2::vocoder_component().read_config(meta)->at("upsample_rates"), Json({2, 3}));
  EXPECT_EQ(ltx2::audio_vae_component().read_config(meta)->at("model").at("params").at("ddconfig").at("ch"), 8);
  EXPECT_TRUE(ltx2::dit_component().read_config(meta));
  EXPECT_FALSE(ltx2::vocoder_component().read_config(Json{{"transformer", Json::object()}}));
  EXPECT_FALSE(ltx2::audio_vae_component().read_config(meta["transformer"]));
}

// ---- one file holding several components -------------------------------------------------------

TEST(Ltx2SingleFile, InspectSplitsTheBundledCheckpointIntoItsParts) {
  // ltx2_pipeline_t2v holds its parts as the official single file does: model.diffusion_model.*,
  // vae.decoder.* + vae.per_channel_statistics.*, audio_vae.decoder.* + audio_vae.per_channel_statistics.*,
  // vocoder.*, and the whole pipeline config (each part's section) in its metadata.
  engine::register_builtin_components();
  const InspectReport r = inspect(golden_path("ltx2_pipeline_t2v.safetensors"));
  std::map<std::string, const Unit*> by;
  for (const auto& u : r.units) {
    ASSERT_NE(u.comp, nullptr) << u.label;
    by[u.comp->name()] = &u;
  }
  const std::map<std::string, std::pair<std::string, size_t>> want{
      {"ltx2-dit", {"comfyui", 118}},
      {"ltx2-video-vae-decoder", {"checkpoint", 29}},
      {"ltx2-audio-vae-decoder", {"checkpoint", 42}},
      {"ltx2-vocoder", {"checkpoint", 32}}};
  ASSERT_EQ(by.size(), want.size());
  for (const auto& [name, lt] : want) {
    ASSERT_TRUE(by.count(name)) << name;
    const Unit& u = *by[name];
    EXPECT_EQ(u.match.layout, lt.first) << name;
    EXPECT_EQ(u.tensors, lt.second) << name;
    EXPECT_EQ(u.match.config_origin, "metadata") << name;
    EXPECT_TRUE(u.complete()) << name << ":\n" << u.match.plan.problems();
  }
  EXPECT_TRUE(r.complete());
  EXPECT_EQ(r.to_json()["family"], "ltx2");
  // A key no component takes stays with the first part, unused by name: the file is not complete.
  // (A V1 projection key, text_embedding_projection.aggregate_embed.weight, is now the
  // ltx2-text-projection-v1 component's: its own unit, complete.)
  auto file = io::Checkpoint::open(golden_path("ltx2_pipeline_t2v.safetensors"));
  for (const bool projection : {true, false}) {
    std::map<std::string, Tensor> t;
    for (const auto& n : file.names()) t[n] = file.get(n);
    const std::string key = projection ? "text_embedding_projection.aggregate_embed.weight" : "text_embedding_projection.stray.weight";
    t[key] = Tensor::from_f32(std::vector<float>(6, 0.5f), {2, 3});
    const std::string path = (std::filesystem::temp_directory_path() / "ltx2_single_extra.safetensors").string();
    io::save_safetensors(path, t, file.metadata());
    const InspectReport x = inspect(path);
    std::filesystem::remove(path);
    if (projection) {
      EXPECT_TRUE(x.complete()) << x.to_text();
      bool found = false;
      for (const auto& u : x.units) found |= u.comp && u.comp->name() == "ltx2-text-projection-v1" && u.complete();
      EXPECT_TRUE(found) << x.to_text();
      continue;
    }
    EXPECT_FALSE(x.complete());
    const Json j = x.to_json();
    EXPECT_EQ(j["unmatched_keys"], Json::array({key})) << j.dump();
  }
}
