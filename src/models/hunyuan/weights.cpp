#include "models/hunyuan/weights.h"

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "io/text_file.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace vidax::hunyuan {

namespace {

constexpr const char* kModelDir = "hunyuan-video-t2v-720p";  // hyvideo/constants.py VAE_PATH, --dit-weight

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}
bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

json read_json(const fs::path& p) { return io::read_json_file(p.string()); }

// The first of `candidates` (under root) that exists, else an error naming them all.
std::string first_existing(const fs::path& root, const std::vector<std::string>& candidates, const char* what,
                           bool folder) {
  std::string tried;
  for (const auto& c : candidates) {
    if (folder ? is_dir(root / c) : is_file(root / c)) return (root / c).string();
    tried += "\n  " + (root / c).string();
  }
  throw Error(msg() << "HunyuanVideo weights " << root.string() << ": no " << what << " found; looked for:" << tried);
}

bool diffusers_index(const fs::path& dir) {
  const fs::path mi = dir / "model_index.json";
  if (!is_file(mi)) return false;
  const json j = read_json(mi);
  return j.is_object() && j.value("_class_name", std::string()) == "HunyuanVideoPipeline";
}

}  // namespace

std::string detect_layout(const std::string& dir) {
  const fs::path root(dir);
  if (diffusers_index(root)) return "diffusers";
  if (is_dir(root / kModelDir / "transformers")) return "original";
  return "";
}

WeightFiles find_weights(const std::string& dir) {
  const fs::path root(dir);
  WeightFiles f;
  f.root = dir;
  f.layout = detect_layout(dir);
  VIDAX_CHECK(!f.layout.empty(), "HunyuanVideo weights " << dir
                                                         << ": neither the official layout (" << kModelDir
                                                         << "/transformers/) nor diffusers' (model_index.json of a "
                                                            "HunyuanVideoPipeline)");
  if (f.layout == "original") {
    const fs::path model = root / kModelDir;
    f.dit = first_existing(model / "transformers", {"mp_rank_00_model_states.pt", "pytorch_model_module.pt"},
                           "DiT checkpoint", false);
    f.vae = first_existing(model / "vae", {"pytorch_model.pt"}, "VAE checkpoint", false);
    if (is_file(model / "vae" / "config.json")) f.vae_config = read_json(model / "vae" / "config.json");
    f.text_encoder = first_existing(root, {"text_encoder"}, "LLM text encoder folder (text_encoder/)", true);
    f.text_encoder_2 = first_existing(root, {"text_encoder_2"}, "CLIP text encoder folder (text_encoder_2/)", true);
    f.tokenizer = f.text_encoder;  // hyvideo/constants.py TOKENIZER_PATH: the encoders' own folders
    f.tokenizer_2 = f.text_encoder_2;
    return f;
  }
  const fs::path tr = root / "transformer";
  VIDAX_CHECK(is_dir(tr), "HunyuanVideo weights " << dir << ": no transformer/ folder");
  f.dit = is_file(tr / "diffusion_pytorch_model.safetensors.index.json")
              ? (tr / "diffusion_pytorch_model.safetensors.index.json").string()
              : first_existing(tr, {"diffusion_pytorch_model.safetensors"}, "DiT checkpoint", false);
  if (is_file(tr / "config.json")) f.dit_config = read_json(tr / "config.json");
  f.vae = first_existing(root / "vae", {"diffusion_pytorch_model.safetensors"}, "VAE checkpoint", false);
  if (is_file(root / "vae" / "config.json")) f.vae_config = read_json(root / "vae" / "config.json");
  f.text_encoder = first_existing(root, {"text_encoder"}, "LLM text encoder folder (text_encoder/)", true);
  f.text_encoder_2 = first_existing(root, {"text_encoder_2"}, "CLIP text encoder folder (text_encoder_2/)", true);
  f.tokenizer = first_existing(root, {"tokenizer"}, "LLM tokenizer folder (tokenizer/)", true);
  f.tokenizer_2 = first_existing(root, {"tokenizer_2"}, "CLIP tokenizer folder (tokenizer_2/)", true);
  return f;
}

}  // namespace vidax::hunyuan
