#include "models/hunyuan/demo.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "core/error.h"
#include "io/checkpoint.h"
#include "models/hunyuan/checkpoint_keys.h"
#include "models/hunyuan/presets.h"
#include "models/hunyuan/text_encoder.h"
#include "models/hunyuan/vae.h"
#include "pipeline/output.h"
#include "text/bpe_tokenizer.h"
#include "text/clip_text.h"
#include "text/llama_config.h"
#include "text/text_clean.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace vidax::hunyuan {

namespace {

// The special tokens the prompt templates use, and the pad token (Llama-3's names).
const std::vector<std::string>& llm_specials() {
  static const std::vector<std::string> s = {"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                                             "<|end_header_id|>", "<|eot_id|>", "<pad>"};
  return s;
}

// `text` cut at the special tokens (which are dropped) and at the prompt's "{}".
std::vector<std::string> plain_chunks(const std::string& text) {
  std::vector<std::string> cuts = llm_specials();
  cuts.push_back("{}");
  return demo_plain_chunks(text, cuts);
}

void write_text(const fs::path& p, const std::string& text) { demo_write_text(p.string(), text); }

std::string byte_symbols(const std::string& utf8) { return demo_byte_symbols(utf8); }

// splitmix64 + Box-Muller: portable, deterministic demo weights.
class DemoRandom {
 public:
  explicit DemoRandom(uint64_t seed) : state_(seed ^ 0x2545f4914f6cdd1dull) {}
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

// Norm weights 1 and their biases 0, other biases ~ N(0, 0.02^2), matrices and embedding tables
// ~ N(0, 1 / fan_in) (fan_in: every dimension but the first), so activations stay O(1).
std::map<std::string, Tensor> random_weights(const std::vector<std::pair<std::string, Shape>>& shapes,
                                             DemoRandom& rng) {
  std::map<std::string, Tensor> m;
  for (const auto& [name, shape] : shapes) {
    const int64_t n = shape_numel(shape);
    std::vector<float> v(static_cast<size_t>(n));
    if (name.find("norm") != std::string::npos) {
      std::fill(v.begin(), v.end(), ends_with(name, ".bias") ? 0.0f : 1.0f);
    } else {
      const double std = ends_with(name, ".bias") || shape.size() < 2
                             ? 0.02
                             : 1.0 / std::sqrt(static_cast<double>(n / shape[0]));
      for (auto& x : v) x = static_cast<float>(rng.normal() * std);
    }
    m[name] = Tensor::from_f32(v, shape);
  }
  return m;
}

std::vector<std::pair<std::string, Shape>> shapes_of(const translate::ParamSpec& spec) {
  std::vector<std::pair<std::string, Shape>> out;
  for (const auto& p : spec.params) out.emplace_back(p.name, p.shape);
  return out;
}

void save_part(const fs::path& dir, const std::string& file, const std::map<std::string, Tensor>& w,
               const json& config) {
  fs::create_directories(dir);
  io::save_safetensors((dir / file).string(), w, {{"format", "pt"}, {"vidax.note", "random demo weights"}});
  pipeline::write_json_file((dir / "config.json").string(), config);
}

}  // namespace

std::vector<std::string> demo_plain_chunks(std::string text, const std::vector<std::string>& cuts) {
  std::vector<std::string> out;
  for (;;) {
    size_t at = std::string::npos, len = 0;
    for (const auto& c : cuts) {
      const size_t p = text.find(c);
      if (p < at) at = p, len = c.size();
    }
    if (at == std::string::npos) break;
    if (at > 0) out.push_back(text.substr(0, at));
    text = text.substr(at + len);
  }
  if (!text.empty()) out.push_back(text);
  return out;
}

std::string demo_byte_symbols(const std::string& utf8) {
  std::string s;
  for (unsigned char b : utf8) s += text::gpt2_byte_alphabet()[b];
  return s;
}

void demo_write_text(const std::string& path, const std::string& text) {
  const fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path());
  std::ofstream os(p, std::ios::binary);
  os << text;
  VIDAX_CHECK(os.good(), "make-demo: cannot write " << p.string());
}

std::map<std::string, Tensor> demo_random_weights(const std::vector<std::pair<std::string, Shape>>& shapes,
                                                  uint64_t seed) {
  DemoRandom rng(seed);
  return random_weights(shapes, rng);
}

int64_t write_demo_llm_tokenizer(const std::string& dir) {
  fs::create_directories(dir);
  json vocab = json::object();
  int64_t next = 0;
  for (int b = 0; b < 256; ++b) vocab[text::gpt2_byte_alphabet()[static_cast<size_t>(b)]] = next++;
  // The templates' pieces, whole (as Llama-3's vocabulary has them), in a fixed order.
  for (const char* name : {"dit-llm-encode", "dit-llm-encode-video"})
    for (const std::string& chunk : plain_chunks(prompt_template(name).text))
      for (const std::u32string& piece : text::llama3_pretokenize(text::utf8_to_u32(chunk))) {
        const std::string sym = byte_symbols(text::u32_to_utf8(piece));
        if (!vocab.contains(sym)) vocab[sym] = next++;
      }
  json added = json::array();
  for (const std::string& s : llm_specials())
    added.push_back({{"id", next++}, {"content", s}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
                     {"normalized", false}, {"special", true}});
  const json tok = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"}, {"pattern", {{"Regex", text::kLlama3SplitPattern}}}, {"behavior", "Isolated"},
           {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}}},
      {"post_processor",
       {{"type", "Sequence"},
        {"processors",
         {{{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}},
          {{"type", "TemplateProcessing"},
           {"single", {{{"SpecialToken", {{"id", "<|begin_of_text|>"}, {"type_id", 0}}}},
                       {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
           {"pair", {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
           {"special_tokens",
            {{"<|begin_of_text|>",
              {{"id", "<|begin_of_text|>"}, {"ids", {added[0]["id"]}}, {"tokens", {"<|begin_of_text|>"}}}}}}}}}}},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", true},
        {"vocab", vocab}, {"merges", json::array()}}}};
  write_text(fs::path(dir) / "tokenizer.json", tok.dump(1));
  write_text(fs::path(dir) / "tokenizer_config.json",
             json{{"pad_token", "<pad>"}, {"tokenizer_class", "PreTrainedTokenizerFast"}}.dump(1));
  return next;
}

int64_t write_demo_clip_tokenizer(const std::string& dir) {
  fs::create_directories(dir);
  json vocab = json::object();
  int64_t next = 0;
  for (int b = 0; b < 256; ++b) vocab[text::gpt2_byte_alphabet()[static_cast<size_t>(b)]] = next++;
  for (int b = 0; b < 256; ++b) vocab[text::gpt2_byte_alphabet()[static_cast<size_t>(b)] + "</w>"] = next++;
  vocab["<|startoftext|>"] = next++;
  vocab["<|endoftext|>"] = next++;  // the largest id, as CLIP-L's 49407 (its pooling takes the argmax)
  write_text(fs::path(dir) / "vocab.json", vocab.dump());
  write_text(fs::path(dir) / "merges.txt", "#version: 0.2\n");
  return next;
}

json make_demo_weights(const pipeline::DemoOptions& opt, const std::string& model) {
  VIDAX_CHECK(!opt.out_dir.empty(), "make-demo: no output directory");
  const Preset& p = preset(model);
  VIDAX_CHECK(p.variant.demo, "make-demo: " << model << " is not a demo model");
  const fs::path out(opt.out_dir);
  fs::create_directories(out);

  const int64_t llm_ids = write_demo_llm_tokenizer((out / "tokenizer").string());
  const int64_t clip_ids = write_demo_clip_tokenizer((out / "tokenizer_2").string());
  const text::LlamaConfig llm = text::LlamaConfig::from_json(p.llm);
  const text::ClipTextConfig clip = text::ClipTextConfig::from_json(p.clip);
  VIDAX_CHECK(llm_ids <= llm.vocab_size && clip_ids == clip.vocab_size,
              "make-demo: the demo tokenizers' " << llm_ids << " / " << clip_ids << " ids do not fit the text encoders' "
                                                 << llm.vocab_size << " / " << clip.vocab_size << " rows");

  DemoRandom rng(opt.seed);
  const DiTConfig dit = DiTConfig::from_json(p.dit);
  const VAEConfig vae = VAEConfig::from_json(p.vae);
  save_part(out / "transformer", "diffusion_pytorch_model.safetensors", random_weights(shapes_of(dit_params(dit)), rng),
            p.dit);
  save_part(out / "vae", "diffusion_pytorch_model.safetensors",
            random_weights(HunyuanVAE::parameter_shapes(vae, {.encoder = true, .decoder = true}), rng), p.vae);
  save_part(out / "text_encoder", "model.safetensors", random_weights(shapes_of(text::llama_params(llm)), rng), p.llm);
  save_part(out / "text_encoder_2", "model.safetensors", random_weights(shapes_of(text::clip_text_params(clip)), rng),
            p.clip);
  pipeline::write_json_file((out / "model_index.json").string(),
                            json{{"_class_name", "HunyuanVideoPipeline"}, {"_vidax_note", "random demo weights"}});
  json written{{"model", p.name()},
               {"note", "tiny random-weight " + p.name() + " checkpoint made by `vidax make-demo`; its videos are noise"},
               {"dit", p.dit},
               {"vae", p.vae},
               {"llm", p.llm},
               {"clip", p.clip},
               {"text_len", p.text_len},
               {"tokenizer_ids", {{"llm", llm_ids}, {"clip", clip_ids}}},
               {"seed", opt.seed}};
  pipeline::write_json_file((out / "vidax_model.json").string(), written);
  return written;
}

}  // namespace vidax::hunyuan
