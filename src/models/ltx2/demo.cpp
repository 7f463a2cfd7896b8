// `vidax make-demo --model ltx2.3-tiny-demo` (demo.h).
#include "models/ltx2/demo.h"

#include "models/ltx2/ic_lora_run.h"

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "io/checkpoint.h"
#include "models/ltx2/audio_vae.h"
#include "models/ltx2/checkpoint.h"
#include "models/ltx2/dit.h"
#include "models/ltx2/text_connector.h"
#include "models/ltx2/two_stage_run.h"
#include "models/ltx2/upsampler.h"
#include "models/ltx2/video_vae.h"
#include "models/ltx2/vocoder_bwe.h"
#include "nn/params.h"
#include "pipeline/output.h"
#include "text/gemma3_config.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace vidax::ltx2 {

namespace {

// splitmix64 + Box-Muller: portable, deterministic demo weights.
class DemoRandom {
 public:
  explicit DemoRandom(uint64_t seed) : state_(seed ^ 0x4c5458322e33ull) {}
  double uniform() {  // (0, 1)
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (static_cast<double>(z >> 11) + 0.5) / 9007199254740992.0;
  }
  double normal() { return std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307179586 * uniform()); }

 private:
  uint64_t state_;
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Tensor random_tensor(const std::string& name, const Shape& shape, DemoRandom& rng) {
  const int64_t n = shape_numel(shape);
  std::vector<float> v(static_cast<size_t>(n));
  if (name.find("norm") != std::string::npos) {
    std::fill(v.begin(), v.end(), ends_with(name, ".bias") ? 0.0f : 1.0f);
  } else {
    const double std = ends_with(name, ".bias") || shape.size() < 2 || n == 0
                           ? 0.02
                           : 1.0 / std::sqrt(static_cast<double>(n / shape[0]));
    for (auto& x : v) x = static_cast<float>(rng.normal() * std);
  }
  return Tensor::from_f32(v, shape);
}

// A generated source that keeps what it made under `prefix` + the module's name.
nn::ParamSource recording(std::map<std::string, Tensor>& out, const std::string& prefix, DemoRandom& rng,
                          const std::string& what) {
  return nn::ParamSource::generated(
      [&out, prefix, &rng](const std::string& name, const Shape& shape) {
        Tensor t = random_tensor(name, shape, rng);
        out[prefix + name] = t;
        return t;
      },
      "the demo's " + what);
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream os(p, std::ios::binary);
  os << text;
  VIDAX_CHECK(os.good(), "make-demo: cannot write " << p.string());
}

const std::vector<std::string>& specials() {
  static const std::vector<std::string> s = {"<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"};
  return s;
}

}  // namespace

int64_t write_demo_tokenizer(const std::string& dir) {
  fs::create_directories(dir);
  json vocab = json::object(), added = json::array(), decoder_cfg = json::object();
  int64_t next = 0;
  for (const std::string& s : specials()) {
    vocab[s] = next;
    added.push_back({{"id", next}, {"content", s}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
                     {"normalized", false}, {"special", true}});
    decoder_cfg[std::to_string(next)] = {{"content", s}, {"lstrip", false}, {"normalized", false},
                                         {"rstrip", false}, {"single_word", false}, {"special", true}};
    ++next;
  }
  for (int b = 0; b < 256; ++b) {
    char piece[8];
    std::snprintf(piece, sizeof piece, "<0x%02X>", b);
    vocab[piece] = next++;
  }
  const std::string space = "\xe2\x96\x81";  // U+2581, the normalized space
  vocab[space] = next++;
  for (char ch = 0x21; ch <= 0x7e; ++ch) vocab[std::string(1, ch)] = next++;
  // Whole words (letters, digits, '_'; with and without the leading space) of the default negative
  // prompt and of common prompts, each built by merging its prefixes left to right, so that a
  // prompt of such words is about one token per word, as with Gemma's real vocabulary (the negative
  // prompt fits the 1024 tokens the reference keeps).
  json merges = json::array();
  auto add_word = [&](const std::string& w) {
    std::string prefix = w.rfind(space, 0) == 0 ? space : w.substr(0, 1);
    for (size_t i = prefix.size(); i < w.size(); ++i) {
      const std::string piece = prefix + w[i];
      if (!vocab.contains(piece)) {
        merges.push_back(json::array({prefix, std::string(1, w[i])}));
        vocab[piece] = next++;
      }
      prefix = piece;
    }
  };
  std::string text = default_negative_prompt();
  text += " a the of in on at with and red panda cat dog snow tree bamboo climbing beach sea sky city street night "
          "day sunset forest mountain river car man woman child bird horse astronaut moon walking running flying";
  std::string word;
  auto flush = [&] {
    if (!word.empty()) {
      add_word(word);
      add_word(space + word);
    }
    word.clear();
  };
  for (char ch : text) {
    if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') {
      word += ch;
      continue;
    }
    flush();
  }
  flush();
  const json tok = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xe2\x96\x81"}}},
      {"pre_tokenizer", nullptr},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {{{"SpecialToken", {{"id", "<bos>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"pair",
         {{{"SpecialToken", {{"id", "<bos>"}, {"type_id", 0}}}},
          {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
          {{"SpecialToken", {{"id", "<bos>"}, {"type_id", 0}}}},
          {{"Sequence", {{"id", "B"}, {"type_id", 0}}}}}},
        {"special_tokens", {{"<bos>", {{"id", "<bos>"}, {"ids", {2}}, {"tokens", {"<bos>"}}}}}}}},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders",
         {{{"type", "Replace"}, {"pattern", {{"String", "\xe2\x96\x81"}}}, {"content", " "}},
          {{"type", "ByteFallback"}},
          {{"type", "Fuse"}}}}}},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", "<unk>"}, {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr}, {"fuse_unk", true}, {"byte_fallback", true}, {"ignore_merges", false},
        {"vocab", vocab}, {"merges", merges}}}};
  write_text(fs::path(dir) / "tokenizer.json", tok.dump(1));
  const json cfg = {{"add_bos_token", true},       {"add_eos_token", false},         {"added_tokens_decoder", decoder_cfg},
                    {"bos_token", "<bos>"},        {"eos_token", "<eos>"},           {"pad_token", "<pad>"},
                    {"unk_token", "<unk>"},        {"tokenizer_class", "GemmaTokenizer"},
                    {"clean_up_tokenization_spaces", false}, {"spaces_between_special_tokens", false}};
  write_text(fs::path(dir) / "tokenizer_config.json", cfg.dump(1));
  return next;
}

DemoWeights demo_weights(const Preset& p, uint64_t seed) {
  VIDAX_CHECK(p.variant.demo && p.config.is_object() && p.gemma.is_object(),
              "make-demo: " << p.name() << " is not a demo model");
  DemoRandom rng(seed);
  DemoWeights w;
  const json& c = p.config;
  const json& t = c.at("transformer");
  const text::Gemma3Config gemma = text::Gemma3Config::from_json(p.gemma);
  {  // Gemma-3 under google/gemma-3's names (language_model.model.*: the "multimodal" key map).
    for (const auto& spec : text::gemma3_params(gemma).params)
      w.gemma["language_model.model." + spec.name] = random_tensor(spec.name, spec.shape, rng);
  }
  {  // The V2 feature extractor: video / audio_aggregate_embed over the flattened hidden states.
    VIDAX_CHECK(feature_extractor_version_of(t) == FeatureExtractorVersion::V2, "make-demo: the demo is LTX-2.3 (V2)");
    const int64_t flat = gemma.hidden_size * (gemma.num_hidden_layers + 1);
    const DiTConfig dit = DiTConfig::from_json(t);
    for (const auto& [name, out] : std::vector<std::pair<std::string, int64_t>>{
             {"video_aggregate_embed", dit.inner_dim()}, {"audio_aggregate_embed", dit.audio_inner_dim()}}) {
      w.checkpoint["text_embedding_projection." + name + ".weight"] =
          random_tensor(name + ".weight", {out, flat}, rng);
      w.checkpoint["text_embedding_projection." + name + ".bias"] = random_tensor(name + ".bias", {out}, rng);
    }
  }
  {
    nn::ParamSource s = recording(w.checkpoint, "model.diffusion_model.video_embeddings_connector.", rng, "connector");
    const EmbeddingsConnector v(video_connector_config(t), s, "");
    nn::ParamSource a = recording(w.checkpoint, "model.diffusion_model.audio_embeddings_connector.", rng, "connector");
    const EmbeddingsConnector ac(audio_connector_config(t), a, "");
  }
  {
    nn::ParamSource s = recording(w.checkpoint, "model.diffusion_model.", rng, "DiT");
    const LTXModel dit(DiTConfig::from_json(t), s, DType::F32);
  }
  {
    std::map<std::string, Tensor> vae;
    nn::ParamSource s = recording(vae, "", rng, "video VAE");
    const VideoDecoder dec(VideoVaeConfig::from_json(c.at("vae")), s, "", DType::F32);
    for (auto& [n, x] : vae) w.checkpoint[(n.rfind("per_channel_statistics.", 0) == 0 ? "vae." : "vae.decoder.") + n] = x;
  }
  {
    std::map<std::string, Tensor> avae;
    nn::ParamSource s = recording(avae, "", rng, "audio VAE");
    const AudioDecoder dec(AudioVaeConfig::from_json(c.at("audio_vae")), s);
    for (auto& [n, x] : avae)
      w.checkpoint[(n.rfind("per_channel_statistics.", 0) == 0 ? "audio_vae." : "audio_vae.decoder.") + n] = x;
  }
  {
    nn::ParamSource s = recording(w.checkpoint, "vocoder.", rng, "vocoder");
    const VocoderWithBwe voc(VocoderBweConfig::from_json(c.at("vocoder")), s);
  }
  {  // The video encoder last (the other parts' draws unchanged); it shares the decoder's statistics.
    std::map<std::string, Tensor> enc;
    nn::ParamSource s = recording(enc, "", rng, "video VAE encoder");
    const VideoEncoder e(VideoVaeConfig::from_json(c.at("vae")), s, "", DType::F32);
    for (auto& [n, x] : enc)
      if (n.rfind("per_channel_statistics.", 0) != 0) w.checkpoint["vae.encoder." + n] = x;
  }
  return w;
}

namespace {

// The two-stage pipeline's files beside the demo checkpoint, by their published names
// (two_stage_run.h): a spatial x2 LatentUpsampler (128 / 32 channels, 1 block per stage, dims 3;
// __metadata__.config its config) and a rank-2 distilled LoRA (diffusion_model.<module>.lora_A /
// lora_B, no alpha, as ltx-core applies it) on every block's attention q / k / v / out and FFN
// Linears; each drawn from its own stream so that the other files' weights do not move.
void write_two_stage_demo_files(const fs::path& out, const DemoWeights& w, uint64_t seed) {
  const json up_cfg = {{"_class_name", "LatentUpsampler"}, {"in_channels", 128},    {"mid_channels", 32},
                       {"num_blocks_per_stage", 1},        {"dims", 3},             {"spatial_upsample", true},
                       {"temporal_upsample", false},       {"spatial_scale", 2.0},  {"rational_resampler", false}};
  {
    DemoRandom rng(seed + 1);
    std::map<std::string, Tensor> up;
    nn::ParamSource s = recording(up, "", rng, "spatial upsampler");
    const LatentUpsampler u(UpsamplerConfig::from_json(up_cfg), s);
    io::save_safetensors((out / kSpatialUpsamplerFile).string(), up,
                         {{"config", up_cfg.dump()}, {"vidax.note", "random demo weights"}});
  }
  DemoRandom rng(seed + 2);
  std::map<std::string, Tensor> lora;
  const std::string pre = "model.diffusion_model.";
  const int64_t rank = 2;
  for (const auto& [name, t] : w.checkpoint) {
    if (name.rfind(pre + "transformer_blocks.", 0) != 0 || t.dim() != 2 || !ends_with(name, ".weight")) continue;
    const std::string module = name.substr(pre.size(), name.size() - pre.size() - 7);
    const bool target = module.find(".to_q") != std::string::npos || module.find(".to_k") != std::string::npos ||
                        module.find(".to_v") != std::string::npos || module.find(".to_out.0") != std::string::npos ||
                        ends_with(module, "ff.net.0.proj") || ends_with(module, "ff.net.2");
    if (!target) continue;
    const int64_t o = t.size(0), i = t.size(1);
    std::vector<float> a(static_cast<size_t>(rank * i)), b(static_cast<size_t>(o * rank));
    for (auto& x : a) x = static_cast<float>(rng.normal() / std::sqrt(static_cast<double>(i)));
    for (auto& x : b) x = static_cast<float>(0.5 * rng.normal() / std::sqrt(static_cast<double>(rank)));
    lora["diffusion_model." + module + ".lora_A.weight"] = Tensor::from_f32(a, {rank, i});
    lora["diffusion_model." + module + ".lora_B.weight"] = Tensor::from_f32(b, {o, rank});
  }
  io::save_safetensors((out / kDistilledLoraFile).string(), lora, {{"vidax.note", "random demo weights"}});
}

}  // namespace

json make_demo_weights(const pipeline::DemoOptions& opt, const std::string& model) {
  VIDAX_CHECK(!opt.out_dir.empty(), "make-demo: no output directory");
  const Preset& p = preset(model);
  VIDAX_CHECK(p.variant.demo, "make-demo: " << model << " is not a demo model");
  const fs::path out(opt.out_dir);
  const fs::path gemma_dir = out / kDemoGemmaFolder;
  fs::create_directories(gemma_dir);
  const int64_t ids = write_demo_tokenizer(gemma_dir.string());
  const int64_t rows = p.gemma.at("text_config").at("vocab_size").get<int64_t>();
  VIDAX_CHECK(ids <= rows, "make-demo: the demo tokenizer's " << ids << " ids do not fit Gemma's " << rows << " rows");
  const DemoWeights w = demo_weights(p, opt.seed);
  const std::string ckpt = (out / (p.name() + ".safetensors")).string();
  io::save_safetensors(ckpt, w.checkpoint,
                       {{"config", p.config.dump()}, {"model_version", "2.3.0"}, {"vidax.note", "random demo weights"}});
  io::save_safetensors((gemma_dir / "model.safetensors").string(), w.gemma,
                       {{"format", "pt"}, {"vidax.note", "random demo weights"}});
  pipeline::write_json_file((gemma_dir / "config.json").string(), p.gemma);
  write_two_stage_demo_files(out, w, opt.seed);
  // The IC-LoRA --reference-video / --video need (ic_lora_run.h); a LoRA beside the checkpoint is not
  // taken as the model (checkpoint.h).
  const std::string ic_lora = (out / (p.name() + "-ic-lora.safetensors")).string();
  io::save_safetensors(ic_lora, demo_ic_lora(w.checkpoint, opt.seed + 1),
                       {{"reference_downscale_factor", "1"}, {"vidax.note", "random demo IC-LoRA"}});
  json written{{"model", p.name()},
               {"note", "tiny random-weight " + p.name() + " checkpoint made by `vidax make-demo`; its video and "
                                                          "audio are noise"},
               {"checkpoint", fs::path(ckpt).filename().string()},
               {"gemma_root", kDemoGemmaFolder},
               {"ic_lora", fs::path(ic_lora).filename().string()},
               {"config", p.config},
               {"tokenizer_ids", ids},
               {"seed", opt.seed}};
  pipeline::write_json_file((out / "vidax_model.json").string(), written);
  return written;
}

}  // namespace vidax::ltx2
