#include "models/hunyuan15/demo.h"

#include <filesystem>
#include <fstream>

#include "backend/ops.h"
#include "core/error.h"
#include "io/checkpoint.h"
#include "models/hunyuan/demo.h"
#include "models/hunyuan15/checkpoint_keys.h"
#include "models/hunyuan15/presets.h"
#include "models/hunyuan15/siglip.h"
#include "models/hunyuan15/text_byt5.h"
#include "models/hunyuan15/text_encoder.h"
#include "models/hunyuan15/vae.h"
#include "pipeline/output.h"
#include "text/bpe_tokenizer.h"
#include "text/byt5_tokenizer.h"
#include "text/qwen2_config.h"
#include "text/t5_config.h"
#include "text/text_clean.h"
#include "text/umt5_keys.h"
#include "translate/keymap.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace vidax::hunyuan15 {

namespace {

const std::vector<std::string>& qwen_specials() {
  static const std::vector<std::string> s = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  return s;
}

// `text` cut at the special tokens (which are dropped).
std::vector<std::string> plain_chunks(const std::string& text) { return hunyuan::demo_plain_chunks(text, qwen_specials()); }

std::string byte_symbols(const std::string& utf8) { return hunyuan::demo_byte_symbols(utf8); }

void write_text(const fs::path& p, const std::string& text) { hunyuan::demo_write_text(p.string(), text); }

std::vector<std::pair<std::string, Shape>> shapes_of(const translate::ParamSpec& spec) {
  std::vector<std::pair<std::string, Shape>> out;
  for (const auto& p : spec.params) out.emplace_back(p.name, p.shape);
  return out;
}

// Engine-named tensors under a layout's stored names: an Identity rule's first key, a Concat rule's
// keys each an equal part along its axis (the fused q / k / v).
std::map<std::string, Tensor> to_layout(const std::map<std::string, Tensor>& engine, const translate::KeyMap& map) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : engine) {
    const auto r = translate::resolve(map, name);
    VIDAX_CHECK(r && !r->keys.empty(), "make-demo: layout " << map.layout << " stores no key for " << name);
    if (r->rule->transform == translate::Transform::Identity) {
      out[r->keys.front()] = t;
      continue;
    }
    VIDAX_CHECK(r->rule->transform == translate::Transform::Concat,
                "make-demo: " << name << " is stored by a " << translate::transform_name(r->rule->transform)
                              << " rule; the demo writes Identity and Concat ones only");
    const int64_t n = static_cast<int64_t>(r->keys.size()), d = r->rule->dim, size = t.size(d);
    VIDAX_CHECK(size % n == 0, "make-demo: " << name << " " << t.str() << " does not split into " << n << " equal parts");
    for (int64_t i = 0; i < n; ++i) out[r->keys[static_cast<size_t>(i)]] = t.slice(d, i * (size / n), (i + 1) * (size / n)).contiguous();
  }
  return out;
}

void write_json(const fs::path& file, const json& j) {
  fs::create_directories(file.parent_path());
  pipeline::write_json_file(file.string(), j);
}

void save(const fs::path& file, const std::map<std::string, Tensor>& w) {
  fs::create_directories(file.parent_path());
  io::save_safetensors(file.string(), w, {{"format", "pt"}, {"vidax.note", "random demo weights"}});
}

}  // namespace

int64_t write_demo_qwen_tokenizer(const std::string& dir) {
  json vocab = json::object();
  int64_t next = 0;
  for (int b = 0; b < 256; ++b) vocab[text::gpt2_byte_alphabet()[static_cast<size_t>(b)]] = next++;
  // The templates' pieces, whole, in a fixed order (the crop_start probe's words too).
  for (const char* name : {"li-dit-encode-image-json", "li-dit-encode-video-json"})
    for (const std::string& chunk : plain_chunks(render_chat(prompt_template(name), "a photo of a cat")))
      for (const std::u32string& piece : text::qwen2_pretokenize(text::utf8_to_u32(chunk))) {
        const std::string sym = byte_symbols(text::u32_to_utf8(piece));
        if (!vocab.contains(sym)) vocab[sym] = next++;
      }
  json added = json::array();
  for (const std::string& s : qwen_specials())
    added.push_back({{"id", next++}, {"content", s}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
                     {"normalized", false}, {"special", true}});
  const json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  const json tok = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"}, {"pattern", {{"Regex", text::kQwen2SplitPattern}}}, {"behavior", "Isolated"},
           {"invert", false}},
          byte_level}}}},
      {"post_processor", byte_level},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", true},
        {"vocab", vocab}, {"merges", json::array()}}}};
  write_text(fs::path(dir) / "tokenizer.json", tok.dump(1));
  write_text(fs::path(dir) / "tokenizer_config.json",
             json{{"pad_token", "<|endoftext|>"}, {"eos_token", "<|im_end|>"}, {"tokenizer_class", "Qwen2Tokenizer"}}
                 .dump(1));
  return next;
}

json make_demo_weights(const pipeline::DemoOptions& opt, const std::string& model) {
  VIDAX_CHECK(!opt.out_dir.empty(), "make-demo: no output directory");
  const Preset& p = preset(model);
  VIDAX_CHECK(p.variant.demo, "make-demo: " << model << " is not a demo model");
  const fs::path out(opt.out_dir);
  const fs::path te = out / "text_encoder", glyph = te / "Glyph-SDXL-v2";
  fs::create_directories(out);

  // Text: the Qwen tokenizer and model, the Glyph assets, byt5-small's config, the ByT5 weights.
  const int64_t qwen_ids = write_demo_qwen_tokenizer((te / "llm").string());
  const text::Qwen25VLTextConfig qcfg = text::Qwen25VLTextConfig::from_json(p.llm);
  VIDAX_CHECK(qwen_ids <= qcfg.llama.vocab_size, "make-demo: the demo tokenizer's " << qwen_ids << " ids do not fit "
                                                                                    << qcfg.llama.vocab_size << " rows");
  json qjson = p.llm;
  qjson["model_type"] = "qwen2_5_vl";
  write_json(te / "llm" / "config.json", qjson);
  save(te / "llm" / "model.safetensors",
       to_layout(hunyuan::demo_random_weights(shapes_of(text::qwen25_vl_text_params(qcfg)), opt.seed + 1),
                 text::qwen25_vl_text_keymap("qwen2.5-vl")));
  write_text(glyph / "assets" / "color_idx.json", json{{"white", 0}, {"black", 1}, {"red", 2}, {"gold", 3}}.dump());
  write_text(glyph / "assets" / "multilingual_10-lang_idx.json",
             nlohmann::ordered_json{{"en-Montserrat-Regular", 0}, {"zh-SourceHanSans", 1}, {"en-Lobster", 2},
                                    {"ja-NotoSansJP", 3}}
                 .dump());
  write_json(te / "byt5-small" / "config.json", p.byt5);
  const text::ByT5Tokenizer btok(glyph_special_tokens((glyph / "assets" / "color_idx.json").string(),
                                                      (glyph / "assets" / "multilingual_10-lang_idx.json").string()));
  text::T5EncoderConfig bcfg = text::T5EncoderConfig::from_json(p.byt5);
  bcfg.vocab = btok.size();  // resize_token_embeddings(len(tokenizer)), as create_byt5
  save(glyph / "checkpoints" / "byt5_model.safetensors",
       to_layout(hunyuan::demo_random_weights(
                     shapes_of(translate::t5::t5_params(translate::t5::T5Config::from_json(bcfg.to_json()))),
                     opt.seed + 2),
                 translate::t5::t5_keymap("t5-stack")));

  // The DiT and the VAE.
  const fs::path tr = out / "transformer" / p.transformer_version;
  const DiTConfig dit = DiTConfig::from_json(p.dit);
  write_json(tr / "config.json", p.dit);
  save(tr / "diffusion_pytorch_model.safetensors",
       to_layout(hunyuan::demo_random_weights(shapes_of(dit_params(dit)), opt.seed + 3), dit_keymap("original")));
  const VAEConfig vae = VAEConfig::from_json(p.vae);
  write_json(out / "vae" / "config.json", p.vae);
  save(out / "vae" / "diffusion_pytorch_model.safetensors",
       hunyuan::demo_random_weights(HunyuanVideo15VAE::parameter_shapes(vae, {.encoder = true, .decoder = true}),
                                    opt.seed + 4));

  // i2v: the SigLIP as the published vision_encoder/siglip/ holds it (transformers' vision_model.* names).
  if (p.i2v()) {
    const fs::path sig = out / "vision_encoder" / "siglip";
    const SiglipVisionConfig s = SiglipVisionConfig::from_json(p.siglip);
    write_json(sig / "image_encoder" / "config.json", p.siglip);
    save(sig / "image_encoder" / "model.safetensors",
         to_layout(hunyuan::demo_random_weights(shapes_of(siglip_params(s)), opt.seed + 5),
                   siglip_keymap("vision_model", s)));
    write_json(sig / "feature_extractor" / "preprocessor_config.json", p.siglip_processor);
  }

  json written{{"model", p.name()},
               {"note", "tiny random-weight " + p.name() + " checkpoint made by `vidax make-demo`; its videos are noise"},
               {"transformer_version", p.transformer_version},
               {"dit", p.dit},
               {"vae", p.vae},
               {"llm", qjson},
               {"byt5", p.byt5},
               {"text_len", p.text_len},
               {"tokenizer_ids", {{"qwen", qwen_ids}, {"byt5", btok.size()}}},
               {"seed", opt.seed}};
  if (p.i2v()) written["siglip"] = p.siglip;
  pipeline::write_json_file((out / "vidax_model.json").string(), written);
  return written;
}

}  // namespace vidax::hunyuan15
