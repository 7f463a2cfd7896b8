#include "models/wan/weights.h"

#include <filesystem>
#include <cctype>
#include <fstream>
#include <vector>

#include "core/error.h"
#include "io/text_file.h"
#include "io/output_target.h"
#include "models/wan/checkpoint_keys.h"
#include "text/umt5_keys.h"
#include "translate/config_fields.h"
#include "translate/source.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace vidax::wan {

namespace {

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}
bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

json read_json(const fs::path& p) { return io::read_json_file(p.string()); }

json read_json_if_present(const fs::path& p) { return is_file(p) ? read_json(p) : json(); }

// Refuses a name that exists but cannot be a weights file (a directory, a FIFO,
// /dev/zero, a link loop): "no DiT found" would send the user looking elsewhere.
void check_not_special(const fs::path& p, const char* what) {
  const std::string problem = io::input_file_problem(p.string());
  VIDAX_CHECK(problem.empty(), "the " << what << " file " << p.string() << " is " << problem << ", not a weights file");
}

// The first candidate that exists, else an error naming them all.
std::string first_existing(const fs::path& root, const std::vector<std::string>& candidates, const char* what) {
  std::string tried;
  for (const auto& c : candidates)
    if (!is_dir(root / c)) check_not_special(root / c, what);  // folders are fine here (the tokenizer's)
  for (const auto& c : candidates) {
    if (is_file(root / c) || is_dir(root / c)) return (root / c).string();
    tried += "\n  " + (root / c).string();
  }
  throw Error(msg() << "weights directory " << root.string() << ": no " << what << " found; looked for:" << tried);
}

// A sharded model's index, else its single file, else every shard listed by name.
std::string safetensors_model(const fs::path& dir, const std::string& stem, const char* what) {
  check_not_special(dir / (stem + ".safetensors.index.json"), what);
  check_not_special(dir / (stem + ".safetensors"), what);
  if (is_file(dir / (stem + ".safetensors.index.json"))) return (dir / (stem + ".safetensors.index.json")).string();
  if (is_file(dir / (stem + ".safetensors"))) return (dir / (stem + ".safetensors")).string();
  std::vector<std::string> shards;
  if (is_dir(dir))
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string n = e.path().filename().string();
      if (n.rfind(stem + "-", 0) == 0 && n.size() > 12 && n.substr(n.size() - 12) == ".safetensors")
        shards.push_back(n);
    }
  VIDAX_CHECK(shards.empty(), "weights directory " << dir.string() << ": " << what << " has " << shards.size()
                                                   << " shards (" << shards.front() << ", ...) but no "
                                                   << stem << ".safetensors.index.json");
  throw Error(msg() << "weights directory " << dir.string() << ": no " << what << " found; looked for "
                    << (dir / (stem + ".safetensors")).string() << " and " << stem << ".safetensors.index.json");
}

// Reads a field with `read`; a wrong type is named with the file it came from.
template <class F>
auto in_file(const std::string& file, F&& read) {
  try {
    return read();
  } catch (const Error& e) {
    throw Error(msg() << file << ": " << e.what());
  }
}

// The DiT width of a WanModel config (original) or WanTransformer3DModel config (diffusers).
int64_t dit_dim(const json& c) {
  using translate::value_or;
  if (!c.is_object()) return 0;
  if (c.contains("dim")) return value_or<int64_t>(c, "dim", 0);
  if (c.contains("num_attention_heads") && c.contains("attention_head_dim"))
    return value_or<int64_t>(c, "num_attention_heads", 0) * value_or<int64_t>(c, "attention_head_dim", 0);
  return 0;
}
int64_t dit_layers(const json& c) { return c.is_object() ? translate::value_or<int64_t>(c, "num_layers", 0) : 0; }
// t2v | i2v | flf2v | ti2v, from either spelling (diffusers: image_dim / pos_embed_seq_len).
std::string dit_model_type(const json& c) {
  if (!c.is_object()) return "t2v";
  return translate::wan::DitConfig::from_json(c).model_type;
}
bool same_dit(const json& a, const json& b) {
  return dit_dim(a) == dit_dim(b) && dit_layers(a) == dit_layers(b) && dit_model_type(a) == dit_model_type(b);
}

// Among presets of one architecture (Wan 2.1 I2V 480P and 720P), the one whose resolution the
// weights' path names ("...-720P"), else the first.
std::string pick_by_path(const std::vector<const Preset*>& matches, const std::string& path) {
  if (matches.empty()) return "";
  std::string lower = path;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const Preset* p : matches) {
    const std::string& n = p->name();
    const size_t dash = n.rfind('-');
    if (dash != std::string::npos && lower.find(n.substr(dash + 1)) != std::string::npos) return n;
  }
  return matches.front()->name();
}

// vidax_model.json's "model", "" when absent.
std::string model_named(const json& vm, const std::string& file) {
  if (!vm.is_object()) return "";
  return in_file(file, [&] { return translate::value_or<std::string>(vm, "model", ""); });
}

}  // namespace

namespace {

// The parts a Wan model has, for telling the user what a single file looks like.
const std::vector<const translate::Component*>& wan_parts() {
  static const std::vector<const translate::Component*> parts = {
      &translate::wan::dit_component(), &translate::wan::vae_component(), &translate::t5::umt5_component(),
      &translate::wan::vae22_component()};
  return parts;
}

std::string part_words(const translate::Component& c) {
  if (&c == &translate::wan::dit_component()) return "a Wan DiT (diffusion model)";
  if (&c == &translate::wan::vae_component()) return "a Wan VAE";
  if (&c == &translate::wan::vae22_component()) return "a Wan 2.2 VAE (the 48-channel VAE of TI2V-5B)";
  if (&c == &translate::t5::umt5_component()) return "a UMT5 text encoder";
  return c.name();
}

// A single part file's path, refused when it is not a regular file.
std::string part_file(const std::string& path, const std::string& flag) {
  const std::string problem = io::input_file_problem(path);
  VIDAX_CHECK(problem.empty(), flag << " " << path << " is " << problem << ", not a weights file");
  return path;
}

// The tokenizer of a model given as files: --tokenizer, else a folder with spiece.model beside
// the text encoder's file (tokenizer/, google/umt5-xxl/ as the Wan-AI repo ships it, the folder itself).
std::string find_tokenizer(const std::string& given, const std::string& text_encoder) {
  if (!given.empty()) {
    fs::path p(given);
    if (is_file(p) && p.filename() == "spiece.model") p = p.parent_path();
    VIDAX_CHECK(is_dir(p), "--tokenizer " << given << " is not a folder (give the folder holding spiece.model)");
    return p.string();
  }
  const fs::path base = fs::path(text_encoder).parent_path();
  std::string tried;
  for (const fs::path& c : {base / "tokenizer", base / "google" / "umt5-xxl", base, base.parent_path() / "tokenizer"}) {
    if (is_file(c / "spiece.model")) return c.string();
    tried += "\n  " + (c / "spiece.model").string();
  }
  throw Error(msg() << "no tokenizer for the text encoder " << text_encoder
                    << ": pass --tokenizer DIR (a folder with the UMT5 spiece.model, e.g. google/umt5-xxl/ of "
                       "Wan-AI/Wan2.1-T2V-1.3B); looked for:"
                    << tried);
}

}  // namespace

nlohmann::json single_file_config(const std::string& path, const translate::Component& want, const std::string& flag) {
  auto src = translate::CheckpointSource::open(part_file(path, flag));
  const auto det = translate::detect(*src, wan_parts());
  if (!det) {
    const auto names = src->names();
    std::string some;
    for (size_t i = 0; i < names.size() && i < 3; ++i) some += (i ? ", " : "") + names[i];
    throw Error(msg() << flag << " " << path << ": none of its " << names.size()
                      << " tensor names matches a Wan DiT, VAE or UMT5 encoder in any layout this build knows "
                         "(original, diffusers, comfyui, gguf); its first names: "
                      << (some.empty() ? "(none)" : some));
  }
  VIDAX_CHECK(det->comp == &want, flag << " " << path << " is not " << part_words(want) << ": it looks like "
                                       << part_words(*det->comp) << " (" << det->claimed << " tensors in the "
                                       << det->layout << " layout)");
  nlohmann::json config = translate::match(*src, want).config;
  // A DiT file without a stored config: the head count is inferred as dim / 128 (every published
  // Wan DiT's head_dim). A width that is no multiple of 128 is no published model, and a guess would
  // compute a different one without a word: refuse it.
  if (&want == &translate::wan::dit_component() && !src->metadata().count("config") && config.contains("dim") &&
      config["dim"].is_number_integer() && config["dim"].get<int64_t>() % 128 != 0)
    throw Error(msg() << flag << " " << path << ": the DiT's width " << config["dim"].get<int64_t>()
                      << " is not a multiple of 128 (the head_dim of every published Wan DiT) and the file stores "
                         "no config, so its head count cannot be known; give the folder with its config.json "
                         "(--weights) instead");
  return config;
}

json vae22_file_config(const std::string& path) {
  auto src = translate::CheckpointSource::open(path);
  const auto meta = src->metadata();
  auto it = meta.find("config");
  if (it == meta.end()) return json();
  json c = json::parse(it->second, nullptr, /*allow_exceptions=*/false);
  VIDAX_CHECK(!c.is_discarded(), "--vae " << path << ": its metadata's \"config\" is not JSON");
  return c;
}

WeightFiles find_weights(const std::string& dir_str, const Preset& preset, const pipeline::PartFiles& over) {
  const fs::path dir(dir_str);
  WeightFiles f;
  f.root = dir_str;
  const bool has_dir = !dir_str.empty();
  if (has_dir) {
    VIDAX_CHECK(is_dir(dir), "weights directory " << dir_str << " does not exist (or is not a directory)");
    f.vidax_model = read_json_if_present(dir / "vidax_model.json");
  } else {
    std::string missing;
    if (over.diffusion_model.empty()) missing += " --diffusion-model";
    if (over.vae.empty()) missing += " --vae";
    if (over.text_encoder.empty()) missing += " --text-encoder";
    VIDAX_CHECK(missing.empty(), "without --weights, the model's parts must all be files; missing:" << missing);
  }
  const bool need_dit = over.diffusion_model.empty(), need_vae = over.vae.empty(), need_t5 = over.text_encoder.empty();
  VIDAX_CHECK(!preset.experts || need_dit,
              "--diffusion-model " << over.diffusion_model << ": " << preset.name()
                                   << " has two DiTs (a high-noise and a low-noise expert), one file cannot hold both; "
                                      "give the checkpoint folder with --weights");
  if (!has_dir) {
    f.layout = "files";
  } else if (is_file(dir / "model_index.json")) {
    f.layout = "diffusers";
    if (need_dit) {
      VIDAX_CHECK(is_dir(dir / "transformer"), "weights directory " << dir_str
                                                                  << " has model_index.json (diffusers layout) but no transformer/");
      f.dit = safetensors_model(dir / "transformer", "diffusion_pytorch_model", "transformer");
      f.dit_config = read_json_if_present(dir / "transformer" / "config.json");
      if (preset.experts) {  // diffusers' WanPipeline: transformer = high noise, transformer_2 = low noise
        VIDAX_CHECK(is_dir(dir / "transformer_2"),
                    "weights directory " << dir_str << ": " << preset.name()
                                         << " has two experts, but there is no transformer_2/ (the low-noise DiT) next "
                                            "to transformer/ (the high-noise one)");
        f.dit_low_noise = safetensors_model(dir / "transformer_2", "diffusion_pytorch_model", "transformer_2");
        f.dit_low_noise_config = read_json_if_present(dir / "transformer_2" / "config.json");
        const json index = read_json(dir / "model_index.json");
        if (index.is_object() && index.contains("boundary_ratio") && !index["boundary_ratio"].is_null()) {
          const json& b = index["boundary_ratio"];
          VIDAX_CHECK(b.is_number() && b.get<double>() > 0.0 && b.get<double>() < 1.0,
                      (dir / "model_index.json").string() << ": boundary_ratio " << b.dump()
                                                          << " is not a number between 0 and 1");
          f.boundary_ratio = b.get<double>();
        }
      }
    }
    if (need_vae) {
      f.vae = safetensors_model(dir / "vae", "diffusion_pytorch_model", "VAE");
      f.vae_config = read_json_if_present(dir / "vae" / "config.json");
    }
    if (need_t5) {
      f.t5 = safetensors_model(dir / "text_encoder", "model", "text encoder");
      f.t5_config = read_json_if_present(dir / "text_encoder" / "config.json");
    }
    if (over.tokenizer.empty()) f.tokenizer = first_existing(dir, {"tokenizer"}, "tokenizer");
  } else {
    f.layout = "original";
    if (need_dit && preset.experts) {  // Wan2.2's text2video.py: WanModel.from_pretrained(dir, subfolder=...)
      const Preset::Experts& e = *preset.experts;
      for (const std::string* sub : {&e.high_noise_dir, &e.low_noise_dir})
        VIDAX_CHECK(is_dir(dir / *sub), "weights directory "
                                            << dir_str << ": " << preset.name() << " has two experts, but there is no "
                                            << *sub << "/ (the " << (sub == &e.high_noise_dir ? "high" : "low")
                                            << "-noise DiT); found " << (is_dir(dir / e.high_noise_dir) ? e.high_noise_dir + "/" : "")
                                            << (is_dir(dir / e.low_noise_dir) ? e.low_noise_dir + "/" : "")
                                            << (is_dir(dir / e.high_noise_dir) || is_dir(dir / e.low_noise_dir) ? "" : "neither")
                                            << " (both come with Wan-AI/Wan2.2-T2V-A14B)");
      f.dit = safetensors_model(dir / e.high_noise_dir, "diffusion_pytorch_model", "high-noise DiT");
      f.dit_config = read_json_if_present(dir / e.high_noise_dir / "config.json");
      f.dit_low_noise = safetensors_model(dir / e.low_noise_dir, "diffusion_pytorch_model", "low-noise DiT");
      f.dit_low_noise_config = read_json_if_present(dir / e.low_noise_dir / "config.json");
    } else if (need_dit) {
      f.dit = safetensors_model(dir, "diffusion_pytorch_model", "DiT (diffusion_pytorch_model*.safetensors)");
      f.dit_config = read_json_if_present(dir / "config.json");
    }
    auto swap_ext = [](const std::string& name, const std::string& ext) {
      return fs::path(name).replace_extension(ext).string();
    };
    if (need_vae)
      f.vae = first_existing(dir, {preset.vae_file, swap_ext(preset.vae_file, ".pth"), swap_ext(preset.vae_file, ".safetensors")},
                             "VAE");
    if (need_t5)
      f.t5 = first_existing(dir, {preset.t5_file, swap_ext(preset.t5_file, ".pth"), swap_ext(preset.t5_file, ".safetensors")},
                            "UMT5 text encoder");
    if (over.tokenizer.empty()) f.tokenizer = first_existing(dir, {preset.tokenizer_dir, "tokenizer"}, "tokenizer directory");
  }
  // I2V / FLF2V: the CLIP image encoder (original layout only: the diffusers layout's image_encoder/
  // is transformers' CLIPVisionModel, another key set and preprocessing, not read yet).
  if (preset.uses_clip()) {
    VIDAX_CHECK(has_dir, "an image-to-video model needs its CLIP image encoder: give --weights DIR (holding "
                             << preset.clip_file << ")");
    VIDAX_CHECK(f.layout != "diffusers",
                "weights directory " << dir_str << ": the diffusers image-to-video layout (image_encoder/, "
                                        "transformers' CLIPVisionModel) is not supported yet; use the original "
                                        "Wan-AI/Wan2.1-I2V-14B-* layout");
    auto swap = [](const std::string& name, const std::string& ext) { return fs::path(name).replace_extension(ext).string(); };
    f.clip = first_existing(dir, {preset.clip_file, swap(preset.clip_file, ".pth"), swap(preset.clip_file, ".safetensors")},
                            "CLIP image encoder");
  }
  // Single files: each replaces its part; its config is its own (the folder's would describe another file).
  if (!need_dit) {
    f.dit = part_file(over.diffusion_model, "--diffusion-model");
    f.dit_config = single_file_config(f.dit, translate::wan::dit_component(), "--diffusion-model");
    f.dit_single = true;
    if (f.vidax_model.is_object()) f.vidax_model.erase("dit"), f.vidax_model.erase("model");
  }
  if (!need_vae) {
    f.vae = part_file(over.vae, "--vae");
    // The Wan 2.2 VAE loads through load_vae22 (which checks its names as it loads): its config is
    // the file's own when it stores one, else the preset's.
    f.vae_config = preset.vae_version == "wan2.2" ? vae22_file_config(f.vae)
                                                  : single_file_config(f.vae, translate::wan::vae_component(), "--vae");
    f.vae_single = true;
    if (f.vidax_model.is_object()) f.vidax_model.erase("vae");
  }
  if (!need_t5) {
    f.t5 = part_file(over.text_encoder, "--text-encoder");
    f.t5_config = single_file_config(f.t5, translate::t5::umt5_component(), "--text-encoder");
    f.t5_single = true;
    if (f.vidax_model.is_object()) f.vidax_model.erase("t5");
  }
  if (!over.tokenizer.empty() || f.tokenizer.empty()) f.tokenizer = find_tokenizer(over.tokenizer, f.t5);
  VIDAX_CHECK(is_file(fs::path(f.tokenizer) / "spiece.model"),
              "tokenizer directory " << f.tokenizer << " has no spiece.model (the UMT5 SentencePiece model)");
  return f;
}

const translate::Component& vae_component_of(const std::string& path) {
  if (path.empty() || !is_file(path)) return translate::wan::vae_component();  // part_file names the problem
  // Which VAE the tensors are: the Wan 2.2 VAE's nested levels (Down_ResidualBlock /
  // Up_ResidualBlock, or diffusers' down_blocks.{i}.resnets) against the 2.1 VAE's flat ones.
  auto src = translate::CheckpointSource::open(path);
  const auto det = translate::detect(*src, {&translate::wan::vae_component(), &translate::wan::vae22_component()});
  return det && det->comp == &translate::wan::vae22_component() ? translate::wan::vae22_component()
                                                                 : translate::wan::vae_component();
}

pipeline::PartsChecked check_wan_part_files(const pipeline::PartFiles& over) {
  VIDAX_CHECK(!over.diffusion_model.empty() || !over.vae.empty() || !over.text_encoder.empty(),
              "no part given as a file (--diffusion-model, --vae, --text-encoder)");
  pipeline::PartsChecked out;
  const std::pair<const std::string*, const char*> flags[] = {
      {&over.diffusion_model, "--diffusion-model"}, {&over.vae, "--vae"}, {&over.text_encoder, "--text-encoder"}};
  const translate::Component* comps[] = {&translate::wan::dit_component(), &vae_component_of(over.vae),
                                         &translate::t5::umt5_component()};
  for (size_t i = 0; i < 3; ++i) {
    const std::string& path = *flags[i].first;
    if (path.empty()) continue;
    pipeline::PartChecked p;
    p.flag = flags[i].second;
    p.path = part_file(path, p.flag);
    p.component = comps[i]->name();
    p.config = single_file_config(path, *comps[i], p.flag);
    out.parts.push_back(std::move(p));
  }
  if (!over.diffusion_model.empty()) out.variant = detect_model("", over);
  return out;
}

std::string detect_model(const std::string& dir, const pipeline::PartFiles& over) {
  if (over.diffusion_model.empty()) return dir.empty() ? "" : detect_model(dir);
  const json c = single_file_config(over.diffusion_model, translate::wan::dit_component(), "--diffusion-model");
  // A file has no vidax_model.json: its shapes decide, the demo's too (never a two-expert model:
  // one file holds one DiT).
  std::vector<const Preset*> matches;
  for (const auto& p : presets())
    if (!p.experts && same_dit(c, p.dit)) matches.push_back(&p);
  return pick_by_path(matches, over.diffusion_model);
}

std::string detect_model(const std::string& dir_str) {
  const fs::path dir(dir_str);
  json vm = read_json_if_present(dir / "vidax_model.json");
  if (std::string m = model_named(vm, (dir / "vidax_model.json").string()); !m.empty()) return m;
  // Two experts: the original layout's expert folders (config.json in each), diffusers' transformer_2/.
  const Preset::Experts layout;
  const bool experts = is_dir(dir / layout.high_noise_dir) || is_dir(dir / "transformer_2");
  fs::path cp = dir / "config.json";
  json c = read_json_if_present(cp);
  if (c.is_null()) c = read_json_if_present(cp = dir / "transformer" / "config.json");
  if (c.is_null()) c = read_json_if_present(cp = dir / layout.high_noise_dir / "config.json");
  if (c.is_null()) return "";
  std::vector<const Preset*> matches;
  in_file(cp.string(), [&] {
    for (const auto& p : presets())
      if (!p.variant.demo && same_dit(c, p.dit) && p.experts.has_value() == experts) matches.push_back(&p);
    return 0;
  });
  return pick_by_path(matches, fs::absolute(dir).string());
}

void check_preset_matches(const WeightFiles& files, const Preset& preset) {
  const std::string vm_file = (fs::path(files.root) / "vidax_model.json").string();
  if (const std::string m = model_named(files.vidax_model, vm_file); !m.empty()) {
    VIDAX_CHECK(m == preset.name(), "--model " << preset.name() << " but " << files.root << "/vidax_model.json says "
                                             << m);
  }
  if (files.dit_config.is_null()) return;
  const std::string cfg_file =
      files.dit_single ? files.dit
                       : (fs::path(files.root) / (files.layout == "diffusers" ? "transformer/config.json" : "config.json"))
                             .string();
  const int64_t dim = in_file(cfg_file, [&] { return dit_dim(files.dit_config); });
  const int64_t layers = in_file(cfg_file, [&] { return dit_layers(files.dit_config); });
  const std::string type = in_file(cfg_file, [&] { return dit_model_type(files.dit_config); });
  VIDAX_CHECK(dim == dit_dim(preset.dit) && layers == dit_layers(preset.dit),
              "--model " << preset.name() << " expects a DiT of dim " << dit_dim(preset.dit) << " and "
                         << dit_layers(preset.dit) << " layers, but the config in " << files.root << " says dim "
                         << dim << " and " << layers << " layers");
  VIDAX_CHECK(type == dit_model_type(preset.dit),
              "--model " << preset.name() << " is a " << dit_model_type(preset.dit) << " model, but the DiT in "
                         << cfg_file << " is " << type << " (model_type)");
  if (!files.dit_low_noise_config.is_null()) {  // the low-noise expert has the same architecture
    const int64_t dim2 = dit_dim(files.dit_low_noise_config), layers2 = dit_layers(files.dit_low_noise_config);
    VIDAX_CHECK(dim2 == dim && layers2 == layers,
                files.root << ": the low-noise expert's config says dim " << dim2 << " and " << layers2
                           << " layers, the high-noise expert's dim " << dim << " and " << layers
                           << " layers; the two experts of " << preset.name() << " share one architecture");
  }
}

}  // namespace vidax::wan
