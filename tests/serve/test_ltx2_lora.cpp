// `lora` in POST /v1/videos on an LTX-2 model (docs/lora.md, docs/models/ltx2.md "LoRAs in `vidax
// generate`"): the tiny LTX-2.3 demo served, a LoRA from --lora-dir switched in per job through the
// family's Parts::use_loras, the base restored for the next job bit for bit, and the switched-in
// LoRA the same latents as a model loaded with it merged at load (as `vidax generate --lora`).
#include <fstream>

#include "io/video.h"
#include "models/ltx2/checkpoint.h"
#include "models/ltx2/checkpoint_keys.h"
#include "models/ltx2/presets.h"
#include "serve/video_request.h"
#include "serve_fixture.h"

using namespace vidax;
using namespace vidax::test;

namespace {

const std::string& ltx2_demo_dir() {
  static const std::string d = [] {
    pipeline::DemoOptions o;
    o.out_dir = fresh_dir("ltx2_demo").string();
    engine::family_of_model(ltx2::k23TinyDemo).make_demo(ltx2::k23TinyDemo, o);
    return o.out_dir;
  }();
  return d;
}

// ltx-trainer's naming on every attention query of the demo DiT (lora_A / lora_B, no alpha).
fs::path ltx2_lora_folder() {
  static const fs::path d = [] {
    const fs::path dir = fresh_dir("ltx2_loras");
    const ltx2::CheckpointFiles f = ltx2::find_checkpoint(ltx2_demo_dir());
    const json cfg = ltx2::dit_config_json(ltx2::DiTConfig::from_json(f.config.at("transformer")));
    std::map<std::string, Tensor> t;
    for (const auto& p : ltx2::dit_component().params(cfg).params) {
      if (p.shape.size() != 2 || !p.name.ends_with(".to_q.weight")) continue;
      const std::string k = "diffusion_model." + p.name.substr(0, p.name.size() - 7);
      std::vector<float> a(static_cast<size_t>(4 * p.shape[1])), b(static_cast<size_t>(p.shape[0] * 4));
      for (size_t i = 0; i < a.size(); ++i) a[i] = 0.3f * std::sin(0.7f * static_cast<float>(i));
      for (size_t i = 0; i < b.size(); ++i) b[i] = 0.3f * std::cos(1.3f * static_cast<float>(i));
      t[k + ".lora_A.weight"] = Tensor::from_f32(a, {4, p.shape[1]});
      t[k + ".lora_B.weight"] = Tensor::from_f32(b, {p.shape[0], 4});
    }
    io::save_safetensors((dir / "style.safetensors").string(), t);
    return dir;
  }();
  return d;
}

std::vector<uint8_t> frames_of(TestServer& s, const std::string& id) {
  EXPECT_EQ(s.wait_for(id, "completed")["status"], "completed");
  auto c = s.get("/v1/videos/" + id + "/content");
  EXPECT_TRUE(c && c->status == 200);
  if (!c || c->status != 200) return {};
  const fs::path f = serve_scratch() / (id + ".mp4");
  std::ofstream(f, std::ios::binary) << c->body;
  io::RgbVideo rgb;
  io::read_video(f.string(), &rgb);
  return rgb.rgb;
}

}  // namespace

TEST(ServeLtx2Lora, SwitchesPerJobRestoresTheBaseAndMatchesAMergeAtLoad) {
  const serve::ServedModel model = serve::load_served_model(ltx2_demo_dir(), "", nullptr, translate::LoraMode::Merge);
  ASSERT_TRUE(model.switches_loras());
  serve::ServeOptions opt;
  opt.lora_dir = ltx2_lora_folder().string();
  TestServer s(fresh_dir("ltx2_lora_switch"), opt, {model});
  const json base = {{"model", ltx2::k23TinyDemo}, {"prompt", "a red panda"}, {"size", "64x32"},
                     {"frames", 9},                {"steps", 2},             {"seed", 7}};
  json style = base;
  style["lora"] = json::array({{{"name", "style"}}});
  const auto a = frames_of(s, s.submit(base));
  const auto b = frames_of(s, s.submit(style));
  const auto c = frames_of(s, s.submit(base));
  ASSERT_FALSE(a.empty());
  EXPECT_NE(a, b) << "the LoRA changed nothing";
  EXPECT_EQ(a, c) << "a LoRA outlived its job";

  // The switched-in LoRA = a model loaded with it merged at load, to the bit.
  pipeline::LoadOptions lo;
  lo.weights_dir = ltx2_demo_dir();
  lo.loras = {{(ltx2_lora_folder() / "style.safetensors").string(), 1.0}};
  const pipeline::LoadedModel merged = engine::family_of_model(ltx2::k23TinyDemo).load(lo);
  const pipeline::Request req = serve::to_pipeline_request(serve::parse_video_request(base, false, {model}),
                                                           model.variant().defaults);
  const std::vector<float> want = pipeline::run_generation(merged.parts, req, {}, false).latents.to_f32_vector();
  const pipeline::Parts& parts = model.loaded()->parts;
  parts.use_loras(lo.loras);
  EXPECT_EQ(pipeline::run_generation(parts, req, {}, false).latents.to_f32_vector(), want);
  parts.use_loras({});
  EXPECT_NE(pipeline::run_generation(parts, req, {}, false).latents.to_f32_vector(), want);
}
