// The Wan 2.1 maps against the real key lists (names, dtypes, shapes of the
// published checkpoints, written by tools/golden/wan_keylists.py from the
// reference classes): every layout is covered exactly, the parameter counts are
// the real ones, detection finds the component, layout and variant, and a
// removed, renamed or reshaped key fails naming that key.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "models/wan/checkpoint_keys.h"
#include "text/umt5_keys.h"
#include "keylist_header.h"
#include "test_names.h"

using namespace vidax;
using namespace vidax::translate;

namespace {

using test::data_path;

using test::KeyListHeader;  // the "# config: {...}" and "# parameters: N" header lines of a key list
using test::read_header;

struct Case {
  std::string file;
  std::string component;
  std::string layout;
  std::string variant;
  int64_t parameters;
  size_t tensors;
};

// Parameter counts: from the key lists (sums of shape products), the numbers the reference page derives.
const std::vector<Case> kCases = {
    {"wan2.1_dit_t2v_1.3b.original.txt", "wan2.1-dit", "original", "t2v-1.3B", 1418996800, 825},
    {"wan2.1_dit_t2v_1.3b.diffusers.txt", "wan2.1-dit", "diffusers", "t2v-1.3B", 1418996800, 825},
    {"wan2.1_dit_t2v_14b.original.txt", "wan2.1-dit", "original", "t2v-14B", 14288491584, 1095},
    {"wan2.1_dit_t2v_14b.diffusers.txt", "wan2.1-dit", "diffusers", "t2v-14B", 14288491584, 1095},
    {"wan2.1_dit_i2v_14b.original.txt", "wan2.1-dit", "original", "i2v-14B", 16394878784, 1303},
    {"wan2.1_dit_i2v_14b.diffusers.txt", "wan2.1-dit", "diffusers", "i2v-14B", 16394878784, 1303},
    {"wan2.1_dit_flf2v_14b.original.txt", "wan2.1-dit", "original", "flf2v-14B", 16395536704, 1304},
    {"wan2.1_dit_flf2v_14b.diffusers.txt", "wan2.1-dit", "diffusers", "flf2v-14B", 16395536704, 1304},
    {"wan2.1_dit_tiny.original.txt", "wan2.1-dit", "original", "custom", 133776, 69},
    {"wan2.1_dit_tiny.diffusers.txt", "wan2.1-dit", "diffusers", "custom", 133776, 69},
    {"wan2.1_vae.original.txt", "wan2.1-vae", "original", "wan2.1-vae", 126892531, 194},
    {"wan2.1_vae.diffusers.txt", "wan2.1-vae", "diffusers", "wan2.1-vae", 126892531, 194},
    {"wan2.1_vae_tiny.original.txt", "wan2.1-vae", "original", "custom", 635679, 146},
    {"wan2.1_vae_tiny.diffusers.txt", "wan2.1-vae", "diffusers", "custom", 635679, 146},
    {"umt5_xxl.original.txt", "umt5-encoder", "original", "umt5-xxl", 5680910336, 242},
    {"umt5_xxl.diffusers.txt", "umt5-encoder", "diffusers", "umt5-xxl", 5680910336, 242},
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.file; }

class WanKeyLists : public ::testing::TestWithParam<Case> {};

}  // namespace

TEST_P(WanKeyLists, ConfigDerivedSpecCoversTheLayoutExactly) {
  const Case& c = GetParam();
  auto src = read_key_list(data_path(c.file));
  KeyListHeader h = read_header(c.file);
  ASSERT_EQ(h.parameters, c.parameters);
  ASSERT_EQ(src->names().size(), c.tensors);
  const Component& comp = component(c.component);
  // The reference's own config (original or diffusers spelling) gives the engine's parameter set.
  Match m = match(*src, comp, h.config, c.layout);
  EXPECT_TRUE(m.plan.complete()) << c.file << ":\n" << m.plan.problems();
  EXPECT_EQ(m.spec.parameter_count(), c.parameters);
  EXPECT_EQ(m.spec.params.size(), c.tensors);
  EXPECT_EQ(comp.variant(m.config), c.variant);
}

TEST_P(WanKeyLists, DetectsComponentLayoutAndConfigFromKeysAlone) {
  const Case& c = GetParam();
  auto src = read_key_list(data_path(c.file));
  auto d = detect(*src);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->comp->name(), c.component);
  EXPECT_EQ(d->layout, c.layout);
  // No config given, none in metadata: inferred from the shapes.
  Match m = match(*src, *d->comp);
  EXPECT_EQ(m.config_origin, "inferred");
  EXPECT_EQ(m.layout, c.layout);
  {
    EXPECT_TRUE(m.plan.complete()) << c.file << ":\n" << m.plan.problems();
    EXPECT_EQ(m.spec.parameter_count(), c.parameters);
    EXPECT_EQ(d->comp->variant(m.config), c.variant);
  }
}

TEST_P(WanKeyLists, RemovedRenamedOrReshapedKeyFailsNamingIt) {
  const Case& c = GetParam();
  auto src = read_key_list(data_path(c.file));
  Json cfg = read_header(c.file).config;
  const Component& comp = component(c.component);
  auto names = src->names();
  const std::string victim = names[names.size() / 2];
  const TensorInfo info = *src->find(victim);

  src->remove(victim);
  Match m = match(*src, comp, cfg, c.layout);
  ASSERT_EQ(m.plan.missing.size(), 1u) << m.plan.problems();
  EXPECT_EQ(m.plan.missing[0].param.shape, info.shape);
  EXPECT_EQ(m.plan.missing[0].looked_for.front(), victim);
  EXPECT_NE(m.plan.problems().find("'" + victim + "'"), std::string::npos);
  EXPECT_THROW(check(m.plan, {}, c.file), Error);

  src->add(victim + "_renamed", info.dtype, info.shape);
  m = match(*src, comp, cfg, c.layout);
  EXPECT_EQ(m.plan.unused_keys, std::vector<std::string>{victim + "_renamed"});
  EXPECT_EQ(m.plan.missing.size(), 1u);

  src->remove(victim + "_renamed");
  Shape wrong = info.shape;
  wrong.push_back(2);
  src->add(victim, info.dtype, wrong);
  m = match(*src, comp, cfg, c.layout);
  ASSERT_EQ(m.plan.mismatches.size(), 1u);
  EXPECT_EQ(m.plan.mismatches[0].key, victim);
  EXPECT_EQ(m.plan.mismatches[0].found, wrong);
}

INSTANTIATE_TEST_SUITE_P(All, WanKeyLists, ::testing::ValuesIn(kCases), [](const auto& info) {
  return vidax::test::gtest_name(info.param.file.substr(0, info.param.file.size() - 4));
});

TEST(WanKeyMaps, OriginalAndDiffusersListsAreTheSameParametersRenamed) {
  // Each diffusers key is the image of exactly one engine parameter, with the same shape.
  for (const std::string stem : {"wan2.1_dit_i2v_14b", "wan2.1_vae", "umt5_xxl"}) {
    auto orig = read_key_list(data_path(stem + ".original.txt"));
    auto diff = read_key_list(data_path(stem + ".diffusers.txt"));
    auto d = detect(*diff);
    ASSERT_TRUE(d);
    KeyMap map = d->comp->keymap("diffusers", d->comp->default_config());
    std::set<std::string> images;
    for (const auto& n : orig->names()) {
      auto rr = resolve(map, n);
      ASSERT_TRUE(rr) << n;
      const TensorInfo* ti = nullptr;
      for (const auto& k : rr->keys)
        if ((ti = diff->find(k))) break;
      ASSERT_NE(ti, nullptr) << n;
      EXPECT_EQ(ti->shape, orig->find(n)->shape) << n << " -> " << ti->name;
      EXPECT_TRUE(images.insert(ti->name).second) << "two parameters map to " << ti->name;
    }
    EXPECT_EQ(images.size(), diff->names().size());
  }
}

TEST(WanKeyMaps, ComfyUiPrefixIsDetected) {
  auto orig = read_key_list(data_path("wan2.1_dit_t2v_1.3b.original.txt"));
  MemorySource comfy("comfy");
  for (const auto& n : orig->names()) comfy.add("model.diffusion_model." + n, orig->find(n)->dtype, orig->find(n)->shape);
  auto d = detect(comfy);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->comp->name(), "wan2.1-dit");
  EXPECT_EQ(d->layout, "comfyui");
  Match m = match(comfy, *d->comp);
  EXPECT_TRUE(m.plan.complete()) << m.plan.problems();
  EXPECT_EQ(d->comp->variant(m.config), "t2v-1.3B");
}

TEST(WanConfig, ReadsBothSpellingsAndRejectsOthers) {
  using wan::DitConfig;
  Json official = {{"_class_name", "WanModel"}, {"dim", 5120}, {"eps", 1e-06}, {"ffn_dim", 13824},
                   {"freq_dim", 256}, {"in_dim", 16}, {"model_type", "t2v"}, {"num_heads", 40},
                   {"num_layers", 40}, {"out_dim", 16}, {"text_len", 512}};
  EXPECT_EQ(DitConfig::from_json(official), DitConfig::t2v_14b());
  Json diffusers = read_header("wan2.1_dit_i2v_14b.diffusers.txt").config;
  EXPECT_EQ(DitConfig::from_json(diffusers), DitConfig::i2v_14b());
  EXPECT_THROW(DitConfig::from_json(Json{{"z_dim", 16}}), Error);
  EXPECT_EQ(t5::T5Config::from_json(read_header("umt5_xxl.diffusers.txt").config), t5::T5Config::umt5_xxl());
  EXPECT_EQ(t5::T5Config::from_json(read_header("umt5_xxl.original.txt").config), t5::T5Config::umt5_xxl());
  // A config of another component is not taken for this one.
  EXPECT_FALSE(wan::dit_component().read_config(read_header("umt5_xxl.original.txt").config));
  EXPECT_FALSE(wan::vae_component().read_config(official));
  EXPECT_FALSE(t5::umt5_component().read_config(official));
}

TEST(WanConfig, DiffusersFieldsFollowWanTransformer3DModel) {
  // WanTransformer3DModel builds norm_q / norm_k whatever qk_norm says, and takes
  // `out_channels or in_channels` with out_channels defaulting to 16.
  using wan::DitConfig;
  Json d = read_header("wan2.1_dit_i2v_14b.diffusers.txt").config;
  d["qk_norm"] = nullptr;
  EXPECT_TRUE(DitConfig::from_json(d).qk_norm);
  d.erase("out_channels");
  EXPECT_EQ(DitConfig::from_json(d).out_dim, 16);  // in_channels is 36
  d["out_channels"] = nullptr;
  EXPECT_EQ(DitConfig::from_json(d).out_dim, 36);
  // A field of the wrong type is refused by name.
  d["num_layers"] = "40";
  try {
    DitConfig::from_json(d);
    ADD_FAILURE() << "a string num_layers was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("num_layers"), std::string::npos) << e.what();
  }
}

// Golden files for VAE decode (encode) and an engine that only decodes hold one
// half of the VAE: the half is its own component, detected and matched strictly.
// Issue 16: nlohmann's get<int64_t>() read num_layers 2.7 as 2, and a bool field
// took 0/1; every field is now read for its own type, naming the field.
TEST(WanConfig, FieldsAreReadStrictlyNeverCoerced) {
  using wan::DitConfig;
  auto error_of = [](const Json& j) -> std::string {
    try {
      (void)DitConfig::from_json(j);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  const Json base = DitConfig::t2v_1_3b().to_json();
  Json j = base;
  j["num_layers"] = 2.7;
  EXPECT_NE(error_of(j).find("config field 'num_layers' must be an integer, found 2.7"), std::string::npos)
      << error_of(j);
  j = base;
  j["num_layers"] = 30.0;  // the same number as 30
  EXPECT_EQ(error_of(j), "");
  EXPECT_EQ(DitConfig::from_json(j).num_layers, 30);
  j = base;
  j["qk_norm"] = "yes";
  EXPECT_NE(error_of(j).find("config field 'qk_norm' must be true or false, found \"yes\""), std::string::npos)
      << error_of(j);
  j = base;
  j["qk_norm"] = 1;
  EXPECT_NE(error_of(j).find("'qk_norm' must be true or false"), std::string::npos) << error_of(j);
  j = base;
  j["patch_size"] = {1, 2.5, 2};
  EXPECT_NE(error_of(j).find("'patch_size[1]' must be an integer"), std::string::npos) << error_of(j);
  j = base;
  j["eps"] = "1e-6";
  EXPECT_NE(error_of(j).find("'eps' must be a number"), std::string::npos) << error_of(j);
  j = base;
  j["model_type"] = 2;
  EXPECT_NE(error_of(j).find("'model_type' must be a string"), std::string::npos) << error_of(j);
}

TEST(WanKeyMaps, VaeHalvesAreTheirOwnComponents) {
  for (const std::string file : {"wan2.1_vae.original.txt", "wan2.1_vae.diffusers.txt", "wan2.1_vae_tiny.original.txt",
                                 "wan2.1_vae_tiny.diffusers.txt"}) {
    auto full = read_key_list(data_path(file));
    Match whole = match(*full, wan::vae_component());
    ASSERT_TRUE(whole.plan.complete()) << file << "\n" << whole.plan.problems();
    for (const auto* half : {&wan::vae_encoder_component(), &wan::vae_decoder_component()}) {
      const bool enc = half == &wan::vae_encoder_component();
      // The keys of this half: the engine names of the half, mapped to this layout.
      std::set<std::string> keep;
      for (const auto& b : whole.plan.bound)
        if ((b.param.name.rfind(enc ? "encoder." : "decoder.", 0) == 0) ||
            b.param.name.rfind(enc ? "conv1." : "conv2.", 0) == 0)
          keep.insert(b.keys.begin(), b.keys.end());
      SubsetSource part(full, [&](const std::string& n) { return keep.count(n) > 0; });
      auto d = detect(part);
      ASSERT_TRUE(d);
      EXPECT_EQ(d->comp, half) << file;
      Match m = match(part, *half);
      EXPECT_TRUE(m.plan.complete()) << file << " " << half->name() << "\n" << m.plan.problems();
      EXPECT_EQ(m.config, whole.config) << file << " " << half->name();  // config inferred from the half alone
      // And the whole VAE on a half names what is missing.
      Match w = match(part, wan::vae_component(), whole.config);
      EXPECT_EQ(w.plan.missing.size(), full->names().size() - keep.size());
    }
  }
}
