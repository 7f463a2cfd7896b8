#include "models/wan/demo_weights.h"

#include <cmath>
#include <filesystem>
#include <map>

#include "core/error.h"
#include "io/checkpoint.h"
#include "pipeline/output.h"
#include "models/wan/param_shapes.h"
#include "models/wan/presets.h"
#include "models/wan/vae22.h"
#include "text/t5_tokenizer.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace vidax::wan {

// ---- random weights ----------------------------------------------------------------

namespace {

// splitmix64 + Box-Muller: simple, portable, deterministic demo weights.
class DemoRandom {
 public:
  explicit DemoRandom(uint64_t seed) : s_(seed ^ 0x9e3779b97f4a7c15ull) {}
  double uniform() {  // (0, 1)
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (static_cast<double>(z >> 11) + 0.5) / 9007199254740992.0;
  }
  double normal() {
    const double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t s_;
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Scales that keep activations O(1) through random layers: norm weights 1,
// biases small, weights ~ N(0, 1/fan_in), modulation ~ N(0, 1/dim) as the
// reference initializes it, embeddings ~ N(0, 1).
Tensor random_param(const std::string& name, const Shape& shape, DemoRandom& rng, DType dtype) {
  const int64_t n = shape_numel(shape);
  std::vector<float> v(static_cast<size_t>(n));
  const bool is_norm = ends_with(name, ".gamma") || name.find("norm") != std::string::npos;
  if (is_norm) {
    const float fill = ends_with(name, ".bias") ? 0.0f : 1.0f;
    std::fill(v.begin(), v.end(), fill);
  } else {
    double std = 1.0;
    if (ends_with(name, ".bias")) std = 0.02;
    else if (ends_with(name, "modulation")) std = 1.0 / std::sqrt(static_cast<double>(shape.back()));
    else if (name.find("embedding.weight") != std::string::npos && shape.size() == 2 &&
             name.find("text_embedding") == std::string::npos && name.find("time_embedding") == std::string::npos)
      std = name.find("pos_embedding") != std::string::npos ? 0.1 : 1.0;
    else if (shape.size() >= 2) std = 1.0 / std::sqrt(static_cast<double>(n / shape[0]));
    for (auto& x : v) x = static_cast<float>(rng.normal() * std);
  }
  return Tensor::from_f32(v, shape, dtype);
}

std::map<std::string, Tensor> random_weights(const ParamShapes& shapes, DemoRandom& rng, DType dtype) {
  std::map<std::string, Tensor> m;
  for (const auto& [name, shape] : shapes) m[name] = random_param(name, shape, rng, dtype);
  return m;
}

}  // namespace

json make_demo_weights(const pipeline::DemoOptions& opt, const std::string& model) {
  VIDAX_CHECK(!opt.out_dir.empty(), "make-demo: no output directory");
  VIDAX_CHECK(fs::is_regular_file(opt.spiece_model),
              "make-demo: the demo tokenizer " << opt.spiece_model
                  << " is missing; build it with `cmake --build build --target vidax_demo_spiece` "
                     "(needs spm_train, Debian package sentencepiece) or pass --tokenizer");
  const Preset& preset = wan::preset(model);
  VIDAX_CHECK(preset.variant.demo, "make-demo: " << model << " is not a demo model");
  const fs::path out(opt.out_dir);
  fs::create_directories(out / preset.tokenizer_dir);

  // Tokenizer first: the text encoder's vocabulary is its size.
  const fs::path spm = out / preset.tokenizer_dir / "spiece.model";
  fs::copy_file(opt.spiece_model, spm, fs::copy_options::overwrite_existing);
  const int64_t vocab = text::T5Tokenizer::load(spm.parent_path().string()).vocab_size();

  json dit = preset.dit, vae = preset.vae, t5 = preset.t5;
  t5["vocab"] = vocab;
  DemoRandom rng(opt.seed);
  const std::map<std::string, std::string> meta{{"format", "pt"}, {"vidax.note", "random demo weights"}};
  json config = dit;  // what the original repo's config.json holds: WanModel's init args
  config["_class_name"] = dit.value("model_type", std::string()) == "vace" ? "VaceWanModel" : "WanModel";
  // Wan 2.2 I2V-A14B's i2v WanModel has no img_emb / image cross-attention: the parameters of the
  // t2v architecture at its in_dim (t2v_load.cpp runs it so); config.json keeps model_type i2v.
  json dit_params = dit;
  if (!preset.image_task().empty() && !preset.uses_clip()) dit_params["model_type"] = "t2v";
  if (preset.experts) {  // Wan2.2 A14B: one folder per expert, each with its config.json
    for (const std::string& sub : {preset.experts->high_noise_dir, preset.experts->low_noise_dir}) {
      fs::create_directories(out / sub);
      io::save_safetensors((out / sub / "diffusion_pytorch_model.safetensors").string(),
                           random_weights(wan_dit_param_shapes(dit_params), rng, DType::F32), meta);
      pipeline::write_json_file((out / sub / "config.json").string(), config);
    }
  } else {
    io::save_safetensors((out / "diffusion_pytorch_model.safetensors").string(),
                         random_weights(wan_dit_param_shapes(dit), rng, DType::F32), meta);
    pipeline::write_json_file((out / "config.json").string(), config);
  }
  const ParamShapes vae_shapes = preset.vae_version == "wan2.2"
                                     ? Wan22VAE::parameter_shapes(Wan22VAEConfig::from_json(vae))
                                     : wan_vae_param_shapes(vae);
  io::save_safetensors((out / preset.vae_file).string(), random_weights(vae_shapes, rng, DType::F32), meta);
  io::save_safetensors((out / preset.t5_file).string(), random_weights(umt5_param_shapes(t5), rng, DType::BF16),
                       meta);
  if (!preset.clip.is_null())
    io::save_safetensors((out / preset.clip_file).string(),
                         random_weights(clip_visual_param_shapes(preset.clip), rng, DType::F32), meta);

  json written{{"model", preset.name()},
               {"note", preset.name() == kTinyDemoModel
                            ? std::string("tiny random-weight Wan 2.1 checkpoint made by `vidax make-demo`; its videos are noise")
                            : "tiny random-weight " + preset.name() + " checkpoint made by `vidax make-demo`; its videos are noise"},
             {"dit", dit},
             {"vae", vae},
             {"t5", t5},
             {"seed", opt.seed}};
  if (!preset.clip.is_null()) written["clip"] = preset.clip;
  pipeline::write_json_file((out / "vidax_model.json").string(), written);
  return written;
}

}  // namespace vidax::wan
