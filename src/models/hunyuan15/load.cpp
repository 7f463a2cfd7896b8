#include "models/hunyuan15/load.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "io/text_file.h"
#include "models/hunyuan/text_encoder.h"
#include "models/hunyuan15/checkpoint_keys.h"
#include "models/hunyuan15/i2v.h"
#include "models/hunyuan15/siglip.h"
#include "models/hunyuan15/text_byt5.h"
#include "models/hunyuan15/text_encoder.h"
#include "text/byt5_tokenizer.h"
#include "text/llama_encoder.h"
#include "text/qwen2_config.h"
#include "text/t5_encoder.h"
#include "text/umt5_keys.h"
#include "translate/component.h"
#include "translate/source.h"

namespace fs = std::filesystem;

namespace vidax::hunyuan15 {

namespace {

DType compute_of(const std::string& precision) {
  if (precision == "fp32") return DType::F32;
  if (precision == "bf16") return DType::BF16;
  throw Error(msg() << "--precision " << precision << ": HunyuanVideo 1.5 runs fp32 or bf16");
}

// A folder's weights as the translator opens them: its *.safetensors.index.json when it has one,
// else the folder (every tensor file in it).
std::string weights_in(const std::string& folder) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec)) {
    const std::string n = e.path().filename().string();
    if (n.size() > 23 && n.compare(n.size() - 23, 23, ".safetensors.index.json") == 0) return e.path().string();
  }
  return folder;
}

std::map<std::string, Tensor> load_strict(const std::string& path, const translate::Component& comp,
                                          const nlohmann::json& config) {
  auto src = translate::CheckpointSource::open(path);
  return translate::load(*src, comp, config);
}

// The Glyph ByT5 weights as create_byt5 loads them: a checkpoint holding a "state_dict" (flattened:
// names under "state_dict.") keeps only its keys under module.text_tower.encoder., that prefix
// stripped; any other is the T5Stack's state dict itself.
std::map<std::string, Tensor> load_byt5_weights(const std::string& path, const nlohmann::json& config) {
  auto src = translate::CheckpointSource::open(path);
  const std::vector<std::string> names = src->names();
  const bool wrapped = std::any_of(names.begin(), names.end(), [](const std::string& n) { return n.rfind("state_dict.", 0) == 0; });
  if (!wrapped) return translate::load(*src, translate::t5::umt5_component(), config);
  constexpr const char* kPrefix = "state_dict.module.text_tower.encoder.";
  translate::MemorySource kept(path + " " + kPrefix + "*");
  for (const std::string& n : names)
    if (n.rfind(kPrefix, 0) == 0) kept.add(n.substr(std::string(kPrefix).size()), src->get(n));
  VIDAX_CHECK(!kept.names().empty(), "HunyuanVideo 1.5: " << path << " holds a state_dict with no key under "
                                                           << kPrefix << " (what create_byt5 keeps)");
  return translate::load(kept, translate::t5::umt5_component(), config);
}

// The pipeline's TextEncoder + glyph ByT5 (load.h).
class TextEncoders final : public PromptEncoder {
 public:
  TextEncoders(std::shared_ptr<const text::ByteLevelBpeTokenizer> tok, std::shared_ptr<const text::LlamaTextEncoder> llm,
               hunyuan::LlmEncodeOptions opt, int64_t text_len, int64_t crop, std::shared_ptr<const text::ByT5Tokenizer> btok,
               std::shared_ptr<const text::T5Encoder> byt5)
      : tok_(std::move(tok)), llm_(std::move(llm)), opt_(opt), text_len_(text_len), crop_(crop),
        btok_(std::move(btok)), byt5_(std::move(byt5)) {}

  PromptEmbeds encode(const std::string& prompt) override { return encode_with_glyphs(prompt, prompt); }
  // The negative prompt: its Qwen states, the glyph half of "" (zeros, mask zeros).
  PromptEmbeds encode_negative(const std::string& prompt) override { return encode_with_glyphs(prompt, ""); }

 private:
  PromptEmbeds encode_with_glyphs(const std::string& prompt, const std::string& glyph_prompt) {
    const ChatTemplate& tmpl = hunyuan15::prompt_template(kVideoTemplate);
    const text::TokenizedBatch b = text2tokens(*tok_, {prompt}, tmpl, text_len_, crop_);
    const hunyuan::LlmEncoding e = hunyuan::encode_llm(*llm_, b.ids, b.mask, opt_);
    PromptEmbeds out;
    out.text_states = e.hidden_state.squeeze(0).to(DType::F32).contiguous();
    out.text_mask = e.attention_mask->squeeze(0).to(DType::I64).contiguous();
    out.truncated = b.prompts.at(0).truncated;
    const GlyphEncoding g = encode_glyph_prompt(*btok_, *byt5_, glyph_prompt);
    out.byt5_states = g.states.squeeze(0).to(DType::F32).contiguous();
    out.byt5_mask = g.mask.squeeze(0).to(DType::I64).contiguous();
    return out;
  }

  std::shared_ptr<const text::ByteLevelBpeTokenizer> tok_;
  std::shared_ptr<const text::LlamaTextEncoder> llm_;
  hunyuan::LlmEncodeOptions opt_;
  int64_t text_len_, crop_;
  std::shared_ptr<const text::ByT5Tokenizer> btok_;
  std::shared_ptr<const text::T5Encoder> byt5_;
};

}  // namespace

std::shared_ptr<PromptEncoder> make_prompt_encoder(const WeightFiles& files, const std::string& precision,
                                                   int64_t text_len) {
  const DType compute = compute_of(precision);
  VIDAX_CHECK(text_len >= 1, "HunyuanVideo 1.5: text_len " << text_len << " must be positive");
  // The tokenizers and configs first (find_weights named every file): a bad one fails before any weight.
  auto tok = std::make_shared<const text::ByteLevelBpeTokenizer>(text::ByteLevelBpeTokenizer::from_dir(files.llm));
  const int64_t crop = crop_start(*tok, prompt_template(kVideoTemplate));
  const text::Qwen25VLTextConfig qcfg =
      text::Qwen25VLTextConfig::from_json(io::read_json_file((fs::path(files.llm) / "config.json").string()));
  auto btok = std::make_shared<const text::ByT5Tokenizer>(glyph_special_tokens(files.glyph_colors, files.glyph_fonts));
  text::T5EncoderConfig bcfg = text::T5EncoderConfig::from_json(io::read_json_file(files.byt5_config));
  bcfg.vocab = btok->size();  // resize_token_embeddings(len(tokenizer))
  VIDAX_CHECK(bcfg.dim == kByt5Width, "HunyuanVideo 1.5: the ByT5 config " << files.byt5_config << " has d_model "
                                                                          << bcfg.dim << "; the DiT's glyph input takes "
                                                                          << kByt5Width << " (byt5-small's)");

  const std::map<std::string, Tensor> qp =
      load_strict(weights_in(files.llm), text::qwen25_vl_text_component(), qcfg.to_json());
  auto llm = std::make_shared<const text::LlamaTextEncoder>(
      qcfg.llama, [&](const std::string& n) { return qp.at(n); }, compute);
  const std::map<std::string, Tensor> bp = load_byt5_weights(files.byt5_weights, bcfg.to_json());
  auto byt5 = std::make_shared<const text::T5Encoder>(bcfg, [&](const std::string& n) { return bp.at(n); }, compute);

  // _load_text_encoders' TextEncoder: max_length 1000, skip 2, no final norm, the mask on; encode
  // crops the video template's crop_start.
  hunyuan::LlmEncodeOptions opt;
  opt.max_length = text_len + crop;
  opt.crop_start = crop;
  opt.hidden_state_skip_layer = 2;
  opt.apply_final_norm = false;
  opt.use_attention_mask = true;
  return std::make_shared<TextEncoders>(tok, llm, opt, text_len, crop, btok, byt5);
}

LoadedT2V load_t2v(const pipeline::LoadOptions& opt, std::shared_ptr<PromptEncoder> encoder) {
  auto stage = [&](const std::string& s) {
    if (opt.on_stage) opt.on_stage(s);
  };
  VIDAX_CHECK(opt.device.empty() || opt.device == "cpu",
              "--device " << opt.device << ": HunyuanVideo 1.5 runs on the CPU backend only so far (--device cpu)");
  VIDAX_CHECK(!opt.mesh, "--mesh: HunyuanVideo 1.5 runs on a single rank so far");
  VIDAX_CHECK(!opt.offload, "--offload: HunyuanVideo 1.5's DiT is not streamed yet");
  VIDAX_CHECK(opt.vae_tile == 0, "--vae-tile " << opt.vae_tile
                                               << ": HunyuanVideo 1.5's VAE decodes in the pipeline's tiles (256 "
                                                  "pixels, overlap 0.125); no other tile size yet");
  VIDAX_CHECK(opt.loras.empty() && opt.loras_high_noise.empty() && opt.loras_low_noise.empty(),
              "--lora: HunyuanVideo 1.5 LoRAs are not supported yet");
  VIDAX_CHECK(!opt.files.any(), "--diffusion-model / --vae / --text-encoder / --tokenizer: HunyuanVideo 1.5 takes a "
                                "weights folder (the official ckpts/ layout) so far");
  LoadedT2V out;
  out.preset = preset(opt.model.empty() ? kT2V480p : opt.model);
  out.files = find_weights(opt.weights_dir, out.preset.transformer_version);
  out.precision = opt.precision.empty() ? out.preset.variant.defaults.precision : opt.precision;
  const DType compute = compute_of(out.precision);
  out.preset.dit = io::read_json_file((fs::path(out.files.dit) / "config.json").string());
  out.preset.vae = io::read_json_file((fs::path(out.files.vae) / "config.json").string());
  const DiTConfig dit_cfg = DiTConfig::from_json(out.preset.dit);
  // The text side first: a missing or bad encoder fails before gigabytes of DiT are read.
  if (!encoder) {
    stage("loading the text encoders " + out.files.llm + ", " + out.files.byt5_weights);
    encoder = make_prompt_encoder(out.files, out.precision, out.preset.text_len);
  }
  stage("loading the DiT " + out.files.dit);
  auto dit = std::make_shared<const HunyuanVideo15DiT>(HunyuanVideo15DiT::from_weights(
      dit_cfg, load_strict(weights_in(out.files.dit), dit_component(), dit_cfg.to_json()), compute, out.files.dit));
  // i2v: the VAE's encoder too (the reference image's latent) and the SigLIP (_load_vision_encoder).
  const bool i2v = out.preset.i2v();
  stage(std::string(i2v ? "loading the VAE " : "loading the VAE decoder ") + out.files.vae);
  auto vae = std::make_shared<const HunyuanVideo15VAE>(
      load_vae(out.files.vae, VAEParts{.encoder = i2v, .decoder = true}, DType::F32));
  T2VOptions t;
  t.tiling = VAETiling::pipeline();
  t.vision_tokens = out.preset.vision_tokens;
  t.text_len = out.preset.text_len;
  if (!i2v) {
    out.parts = make_t2v_parts(dit, vae, encoder, t);
    return out;
  }
  stage("loading the SigLIP image encoder " + out.files.siglip);
  auto siglip = std::make_shared<const SiglipEncoder>(load_siglip(out.files.siglip, compute));
  out.preset.siglip = siglip->model->config().to_json();
  out.preset.siglip_processor = siglip->processor.to_json();
  I2VOptions o;
  o.t2v = t;
  out.parts = make_i2v_parts(dit, vae, siglip, encoder, o);
  return out;
}

}  // namespace vidax::hunyuan15
