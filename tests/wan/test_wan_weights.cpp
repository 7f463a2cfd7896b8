// Finding the parts of a Wan checkpoint directory (original and diffusers
// layouts) and the clear errors when something is missing or mismatched.
#include <gtest/gtest.h>

#include "pipeline/error_of.h"
#include "pipeline/scratch.h"
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "models/wan/weights.h"
#include "engine/families.h"
#include "pipeline/family.h"
#include "pipeline/request_check.h"

namespace fs = std::filesystem;
using namespace vidax;
using namespace vidax::wan;

namespace {

fs::path fresh_dir(const std::string& name) {
  return vidax::test::scratch_dir("weights_" + name);
}
void touch(const fs::path& p, const std::string& text = "") {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}
}  // namespace

using test::error_of;

TEST(WanWeights, OriginalLayout) {
  fs::path d = fresh_dir("orig");
  touch(d / "diffusion_pytorch_model.safetensors");
  touch(d / "Wan2.1_VAE.pth");
  touch(d / "models_t5_umt5-xxl-enc-bf16.pth");
  touch(d / "google/umt5-xxl/spiece.model");
  touch(d / "config.json", R"({"_class_name": "WanModel", "dim": 1536, "num_layers": 30})");
  const auto& preset = wan::preset("wan2.1-t2v-1.3b");
  WeightFiles f = find_weights(d.string(), preset);
  EXPECT_EQ(f.layout, "original");
  EXPECT_EQ(f.dit, (d / "diffusion_pytorch_model.safetensors").string());
  EXPECT_EQ(f.vae, (d / "Wan2.1_VAE.pth").string());
  EXPECT_EQ(f.t5, (d / "models_t5_umt5-xxl-enc-bf16.pth").string());
  EXPECT_EQ(f.tokenizer, (d / "google/umt5-xxl").string());
  EXPECT_EQ(detect_model(d.string()), "wan2.1-t2v-1.3b");
  EXPECT_NO_THROW(check_preset_matches(f, preset));
  const std::string e = error_of([&] { check_preset_matches(f, wan::preset("wan2.1-t2v-14b")); });
  EXPECT_NE(e.find("--model wan2.1-t2v-14b expects a DiT of dim 5120 and 40 layers"), std::string::npos) << e;
  EXPECT_NE(e.find("says dim 1536 and 30 layers"), std::string::npos) << e;
}

TEST(WanWeights, ShardedOriginalNeedsItsIndex) {
  fs::path d = fresh_dir("sharded");
  touch(d / "diffusion_pytorch_model-00001-of-00002.safetensors");
  touch(d / "diffusion_pytorch_model-00002-of-00002.safetensors");
  const std::string e = error_of([&] { find_weights(d.string(), preset("wan2.1-t2v-14b")); });
  EXPECT_NE(e.find("has 2 shards"), std::string::npos) << e;
  EXPECT_NE(e.find("no diffusion_pytorch_model.safetensors.index.json"), std::string::npos) << e;
  touch(d / "diffusion_pytorch_model.safetensors.index.json", "{}");
  const std::string e2 = error_of([&] { find_weights(d.string(), preset("wan2.1-t2v-14b")); });
  EXPECT_NE(e2.find("no VAE found; looked for:"), std::string::npos) << e2;
  EXPECT_NE(e2.find("Wan2.1_VAE.pth"), std::string::npos) << e2;
}

TEST(WanWeights, DiffusersLayout) {
  fs::path d = fresh_dir("diffusers");
  touch(d / "model_index.json", "{}");
  touch(d / "transformer/diffusion_pytorch_model.safetensors.index.json", "{}");
  touch(d / "transformer/config.json", R"({"num_attention_heads": 12, "attention_head_dim": 128, "num_layers": 30})");
  touch(d / "vae/diffusion_pytorch_model.safetensors");
  touch(d / "text_encoder/model.safetensors.index.json", "{}");
  touch(d / "tokenizer/spiece.model");
  WeightFiles f = find_weights(d.string(), preset("wan2.1-t2v-1.3b"));
  EXPECT_EQ(f.layout, "diffusers");
  EXPECT_EQ(f.dit, (d / "transformer/diffusion_pytorch_model.safetensors.index.json").string());
  EXPECT_EQ(f.t5, (d / "text_encoder/model.safetensors.index.json").string());
  EXPECT_EQ(f.tokenizer, (d / "tokenizer").string());
  EXPECT_EQ(detect_model(d.string()), "wan2.1-t2v-1.3b");
}

TEST(WanWeights, MissingDirectoryAndTokenizer) {
  std::string e = error_of([&] { find_weights("/nonexistent/vidax/w", preset("wan2.1-t2v-1.3b")); });
  EXPECT_NE(e.find("weights directory /nonexistent/vidax/w does not exist"), std::string::npos) << e;
  fs::path d = fresh_dir("notok");
  touch(d / "diffusion_pytorch_model.safetensors");
  touch(d / "Wan2.1_VAE.pth");
  touch(d / "models_t5_umt5-xxl-enc-bf16.pth");
  fs::create_directories(d / "google/umt5-xxl");
  e = error_of([&] { find_weights(d.string(), preset("wan2.1-t2v-1.3b")); });
  EXPECT_NE(e.find("has no spiece.model"), std::string::npos) << e;
}

TEST(WanPresets, OfficialDefaults) {
  const auto& p = preset("wan2.1-t2v-1.3b");
  EXPECT_EQ(p.variant.defaults.steps, 50);
  EXPECT_EQ(p.variant.defaults.shift, 5.0);
  EXPECT_EQ(p.variant.defaults.guidance, 5.0);
  EXPECT_EQ(p.variant.defaults.frames, 81);
  EXPECT_EQ(p.variant.defaults.fps, 16);
  EXPECT_EQ(p.variant.defaults.sampler, "unipc");
  EXPECT_EQ(p.variant.defaults.negative_prompt.rfind("色调艳丽，过曝，静态", 0), 0u);
  EXPECT_NE(p.variant.defaults.negative_prompt.find("背景人很多，倒着走"), std::string::npos);
  const std::string e = error_of([] { preset("wan2.2-t2v"); });
  EXPECT_NE(e.find("unknown model 'wan2.2-t2v'; known: wan2.1-t2v-1.3b, wan2.1-t2v-14b, wan2.1-tiny-demo"),
            std::string::npos) << e;
}

// The Wan family through the engine's registry: detection, variants, geometry and the memory
// plan of the published 14B model (28.6 GB of bf16 DiT weights).
TEST(WanFamily, RegistryGeometryAndMemory) {
  const pipeline::Family& f = engine::family_of_model("wan2.1-t2v-14b");
  EXPECT_EQ(f.name(), "wan");
  EXPECT_EQ(&f, &engine::family("wan"));
  EXPECT_NE(error_of([] { engine::family_of_model("wan2.2-t2v"); }).find("known: wan2.1-t2v-1.3b"),
            std::string::npos);
  const pipeline::Geometry g = f.geometry("wan2.1-t2v-1.3b");
  EXPECT_EQ(g.frame_multiple(), 4);
  EXPECT_EQ(g.height_multiple(), 16);
  EXPECT_EQ(g.vae_label, "the Wan VAE");
  pipeline::Request r;
  r.frames = 81;
  r.height = 720;
  r.width = 1280;
  const pipeline::MemoryPlan m = f.memory_plan("wan2.1-t2v-14b", r, "bf16");
  ASSERT_GE(m.items.size(), 2u);
  EXPECT_EQ(m.items[1].what, "DiT weights");
  EXPECT_NEAR(m.items[1].bytes / 2, 28.6e9, 0.1e9);  // the weights and their packed copy
  EXPECT_GT(m.peak_bytes(), 57e9);
  const std::string j = engine::models_json().dump();
  for (const char* v : {"wan2.1-t2v-1.3b", "wan2.1-t2v-14b", "wan2.1-tiny-demo", "\"t2v\""})
    EXPECT_NE(j.find(v), std::string::npos) << v;
}

// The one request check: the family's size rules and the memory, before anything is loaded.
TEST(WanFamily, RequestCheckRefusesBeforeLoading) {
  const pipeline::Family& f = engine::family("wan");
  pipeline::Request r;
  r.frames = 80;
  r.height = 480;
  r.width = 832;
  EXPECT_NE(error_of([&] { pipeline::check_request(f, "wan2.1-t2v-1.3b", r, "bf16", {}); })
                .find("--frames 80: the Wan VAE needs 4k+1 frames (e.g. 77 or 81)"),
            std::string::npos);
  // The 14B model at 1280x720x81 in bf16: about 60 GB at its peak (weights and their packed copy).
  r.frames = 81;
  r.height = 720;
  r.width = 1280;
  const double peak = f.memory_plan("wan2.1-t2v-14b", r, "bf16").peak_bytes();
  if (static_cast<double>(pipeline::mem_total_bytes()) < peak) {
    EXPECT_NE(error_of([&] { pipeline::check_request(f, "wan2.1-t2v-14b", r, "bf16", {}); })
                  .find("but the machine has"),
              std::string::npos);
  } else {
    EXPECT_NO_THROW(pipeline::check_request(f, "wan2.1-t2v-14b", r, "bf16", {}));
  }
  // The tiny demo fits anywhere and comes back with its geometry.
  r.frames = 9;
  r.height = 64;
  r.width = 96;
  EXPECT_EQ(pipeline::check_request(f, "wan2.1-tiny-demo", r, "fp32", {}).geometry.frame_multiple(), 4);
}

// VACE 14B under --offload: the vace blocks stream with the main blocks (dit.h StreamedBlocks), so
// the resident part is the embeddings and the head only, far below the 8 vace blocks' weights
// (~5.6 GB in bf16) that stayed resident before; the pool's group is vace block 0 (with before_proj).
TEST(WanFamily, VaceOffloadStreamsTheVaceBlocksInThePlan) {
  const pipeline::Family& f = engine::family("wan");
  pipeline::Request r;
  r.frames = 81;
  r.height = 480;
  r.width = 832;
  r.offload = true;
  const pipeline::MemoryPlan m = f.memory_plan("wan2.1-vace-14b", r, "bf16");
  const pipeline::MemoryPlan t2v = f.memory_plan("wan2.1-t2v-14b", r, "bf16");
  auto item = [](const pipeline::MemoryPlan& p, const std::string& starts) {
    for (const auto& i : p.items)
      if (i.what.rfind(starts, 0) == 0) return i;
    ADD_FAILURE() << "no item " << starts;
    return pipeline::MemoryItem{};
  };
  const auto rest = item(m, "DiT weights outside the blocks"), pool = item(m, "DiT and vace blocks streamed");
  EXPECT_EQ(pool.what, "DiT and vace blocks streamed (2 of 48 in the pool)");
  // The rest: the T2V model's plus the vace patch embedding (a linear of 96 * 4 -> 5120), not GBs.
  EXPECT_LT(rest.bytes - item(t2v, "DiT weights outside the blocks").bytes, 0.05e9);
  // The group: a 14B block (~0.35 B parameters) plus two 5120 x 5120 projections, x2 (pool) x2 (packed) in bf16.
  EXPECT_GT(pool.bytes, item(t2v, "DiT blocks streamed").bytes);
  EXPECT_LT(pool.bytes, 1.2 * item(t2v, "DiT blocks streamed").bytes);
}
