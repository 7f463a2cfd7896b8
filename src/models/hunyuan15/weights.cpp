#include "models/hunyuan15/weights.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "io/text_file.h"
#include "models/hunyuan15/dit_config.h"

namespace fs = std::filesystem;

namespace vidax::hunyuan15 {

namespace {

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}
bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

bool has_safetensors(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".safetensors") return true;
  return false;
}

}  // namespace

bool is_i2v_version(const std::string& version) { return version.find("_i2v") != std::string::npos; }

std::vector<std::string> transformer_versions(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(dir) / "transformer", ec))
    if (e.is_directory()) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

bool is_checkpoint(const std::string& dir) {
  if (!is_dir(fs::path(dir) / "text_encoder" / "llm")) return false;
  for (const std::string& v : transformer_versions(dir)) {
    const fs::path cfg = fs::path(dir) / "transformer" / v / "config.json";
    if (is_file(cfg) && is_config(io::read_json_file(cfg.string()))) return true;
  }
  return false;
}

WeightFiles find_weights(const std::string& dir, const std::string& version) {
  const fs::path root(dir);
  WeightFiles f;
  f.root = dir;
  f.transformer_version = version;
  std::string missing;
  auto need = [&](const fs::path& p, bool folder, const char* what) {
    if (folder ? is_dir(p) : is_file(p)) return p.string();
    missing += "\n  " + p.string() + " (" + what + ")";
    return std::string();
  };
  const fs::path tr = root / "transformer" / version;
  if (!is_dir(tr)) {
    std::string present;
    for (const std::string& v : transformer_versions(dir)) present += (present.empty() ? "" : ", ") + v;
    throw Error(msg() << "HunyuanVideo 1.5 weights " << dir << ": no transformer/" << version
                      << "/ (the transformer this model needs); present: "
                      << (present.empty() ? std::string("none (no transformer/ folder)") : present)
                      << " (the t2v cfg-distilled and step-distilled, the sparse and the super-resolution transformers are "
                         "not built yet)");
  }
  f.dit = tr.string();
  need(tr / "config.json", false, "the transformer's config");
  if (!has_safetensors(tr)) missing += "\n  " + (tr / "diffusion_pytorch_model.safetensors").string() + " (the transformer's weights)";
  f.vae = need(root / "vae", true, "the VAE folder");
  if (!f.vae.empty()) {
    need(root / "vae" / "config.json", false, "the VAE's config");
    need(root / "vae" / "diffusion_pytorch_model.safetensors", false, "the VAE's weights");
  }
  const fs::path te = root / "text_encoder";
  f.llm = need(te / "llm", true, "the Qwen2.5-VL text encoder folder, _load_text_encoders' text_encoder/llm");
  if (!f.llm.empty()) {
    need(te / "llm" / "config.json", false, "the Qwen2.5-VL config");
    need(te / "llm" / "tokenizer.json", false, "the Qwen2.5-VL tokenizer");
  }
  f.byt5_config = need(te / "byt5-small" / "config.json", false, "google/byt5-small's config, _load_byt5's byT5_google_path");
  const fs::path glyph = te / "Glyph-SDXL-v2";
  f.glyph_colors = need(glyph / "assets" / "color_idx.json", false, "the Glyph-SDXL-v2 color tokens");
  f.glyph_fonts = need(glyph / "assets" / "multilingual_10-lang_idx.json", false, "the Glyph-SDXL-v2 font tokens");
  for (const char* name : {"byt5_model.pt", "byt5_model.safetensors"})
    if (f.byt5_weights.empty() && is_file(glyph / "checkpoints" / name)) f.byt5_weights = (glyph / "checkpoints" / name).string();
  if (f.byt5_weights.empty())
    missing += "\n  " + (glyph / "checkpoints" / "byt5_model.pt").string() + " (the Glyph ByT5 weights)";
  if (is_i2v_version(version)) {
    const fs::path sig = root / "vision_encoder" / "siglip";
    f.siglip = need(sig, true, "the SigLIP image encoder folder, _load_vision_encoder's vision_encoder/siglip");
    if (!f.siglip.empty()) {
      need(sig / "image_encoder" / "config.json", false, "the SigLIP config");
      need(sig / "feature_extractor" / "preprocessor_config.json", false, "the SigLIP image processor config");
      if (!has_safetensors(sig / "image_encoder"))
        missing += "\n  " + (sig / "image_encoder" / "model.safetensors").string() + " (the SigLIP weights)";
    }
  }
  VIDAX_CHECK(missing.empty(), "HunyuanVideo 1.5 weights " << dir << " (the official ckpts/ layout) is missing:" << missing);
  return f;
}

}  // namespace vidax::hunyuan15
