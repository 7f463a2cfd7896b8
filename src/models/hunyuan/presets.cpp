#include "models/hunyuan/presets.h"

#include "core/error.h"
#include "models/hunyuan/dit_config.h"
#include "models/hunyuan/vae.h"

namespace vidax::hunyuan {

namespace {

Preset t2v(const char* name, const char* description, int64_t height, int64_t width) {
  Preset p;
  p.variant.name = name;
  p.variant.description = description;
  p.variant.tasks = {"t2v"};
  pipeline::Defaults& d = p.variant.defaults;
  d.frames = 129;
  d.height = height;
  d.width = width;
  d.steps = 50;
  d.guidance = 6.0;  // --embedded-cfg-scale
  d.shift = 7.0;     // --flow-shift
  d.sampler = "flow_match_euler";
  d.fps = 24;
  d.precision = "bf16";
  d.negative_prompt = "";  // --cfg-scale 1: inference.py sets the negative prompt to ""
  p.dit = DiTConfig::t2v_720p().to_json();
  p.vae = VAEConfig{}.to_json();
  return p;
}

}  // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = {
      t2v(kT2V720p, "HunyuanVideo 1.0 text-to-video 13B (HYVideo-T/2-cfgdistill), 720p: 720x1280, 129 frames", 720,
          1280),
      t2v(kT2V544p, "HunyuanVideo 1.0 text-to-video 13B, the README's 540p setting: 544x960, 129 frames", 544, 960),
  };
  return all;
}

const Preset& preset(const std::string& name) {
  std::string known;
  for (const auto& p : presets()) {
    if (p.name() == name) return p;
    known += (known.empty() ? "" : ", ") + p.name();
  }
  throw Error(msg() << "unknown HunyuanVideo model '" << name << "'; known: " << known);
}

}  // namespace vidax::hunyuan
