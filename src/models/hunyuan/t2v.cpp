#include "models/hunyuan/t2v.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "backend/ops.h"
#include "core/dtype.h"
#include "core/error.h"
#include "models/hunyuan/checkpoint_keys.h"
#include "models/hunyuan/prompt_encoder.h"
#include "models/hunyuan/text_encoder.h"
#include "models/hunyuan/rope.h"
#include "models/hunyuan/vae_keys.h"
#include "pipeline/interrupt.h"
#include "translate/component.h"
#include "text/clip_tokenizer.h"
#include "translate/source.h"

namespace vidax::hunyuan {

namespace {

DType compute_of(const std::string& precision) {
  if (precision == "fp32") return DType::F32;
  if (precision == "bf16") return DType::BF16;
  throw Error(msg() << "--precision " << precision << ": HunyuanVideo runs fp32 or bf16");
}

// The rotary tables per patch grid: every step of a run has the same latent size.
class RopeCache {
 public:
  explicit RopeCache(const DiTConfig& c) : dims_(c.rope_dim_list), theta_(c.rope_theta) {}
  RotaryTables get(std::array<int64_t, 3> grid) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tables_.find(grid);
    if (it == tables_.end()) it = tables_.emplace(grid, rotary_pos_embed(dims_, grid, theta_)).first;
    return it->second;
  }

 private:
  std::vector<int64_t> dims_;
  double theta_;
  std::mutex mu_;
  std::map<std::array<int64_t, 3>, RotaryTables> tables_;
};

// One part of a checkpoint through the translator, strictly; `allowed_unused`: a key prefix the
// part may leave (the VAE file's encoder half when only the decoder is built), every other key
// must be used.
std::map<std::string, Tensor> translate_part(const std::string& path, const translate::Component& comp,
                                             const nlohmann::json& config,
                                             const std::vector<std::string>& allowed_unused = {}) {
  auto src = translate::CheckpointSource::open(path);
  translate::Match m = translate::match(*src, comp, config);
  std::vector<std::string> unused;
  for (const auto& k : m.plan.unused_keys) {
    bool allowed = false;
    const std::string bare = k.rfind("vae.", 0) == 0 ? k.substr(4) : k;  // the "prefixed" layout's keys
    for (const auto& p : allowed_unused) allowed = allowed || bare.rfind(p, 0) == 0;
    if (!allowed) unused.push_back(k);
  }
  translate::TranslateOptions opts;
  if (unused.empty()) {
    opts.allow_unused = !m.plan.unused_keys.empty();
  } else {
    m.plan.unused_keys = unused;  // the report names only the keys that are really left over
  }
  translate::check(m.plan, opts, comp.name() + " from " + path);
  return translate::materialize(*src, m.plan, opts);
}

}  // namespace

double embedded_guidance_value(double scale, DType compute) {
  if (compute == DType::BF16) {
    const float g = bf16_to_f32(f32_to_bf16(static_cast<float>(scale)));
    return static_cast<double>(bf16_to_f32(f32_to_bf16(g * 1000.0f)));
  }
  return static_cast<double>(static_cast<float>(scale) * 1000.0f);
}

pipeline::Geometry geometry_of(const DiTConfig& dit, const VAEConfig& vae, int64_t text_len) {
  pipeline::Geometry g;
  g.vae_label = "the HunyuanVideo VAE";
  g.z_dim = vae.latent_channels;
  g.vae_stride_t = vae.temporal_factor();
  g.vae_stride_s = vae.spatial_factor();
  g.patch_t = dit.patch_size[0];
  g.patch_h = dit.patch_size[1];
  g.patch_w = dit.patch_size[2];
  g.text_len = text_len;
  return g;
}

pipeline::Parts make_t2v_parts(std::shared_ptr<const HunyuanDiT> dit, std::shared_ptr<const HunyuanVAE> vae,
                               VAETiling tiling, std::shared_ptr<PromptEncoder> encoder, int64_t text_len) {
  VIDAX_CHECK(dit && vae && encoder, "HunyuanVideo: the DiT, the VAE and the prompt encoder are all needed");
  const DiTConfig& c = dit->config();
  VIDAX_CHECK(c.in_channels == vae->config().latent_channels && c.out_channels == c.in_channels,
              "the HunyuanVideo DiT (in_channels " << c.in_channels << ", out_channels " << c.out_channels
                                                   << ") does not fit the VAE (latent_channels "
                                                   << vae->config().latent_channels << ")");
  pipeline::Parts p;
  p.geometry = geometry_of(c, vae->config(), text_len);
  p.prediction = pipeline::PredictionType::FlowVelocity;
  p.guidance = pipeline::GuidanceKind::Embedded;
  p.encode_prompt = [encoder, dim = c.text_states_dim, dim2 = c.text_states_dim_2](const std::string& prompt) {
    return to_encoded_prompt(encoder->encode(prompt), dim, dim2);
  };
  auto rope = std::make_shared<RopeCache>(c);
  p.predict = [dit, rope](const pipeline::DenoiseInput& in) {
    const PromptEmbeds& e = prompt_embeds_of(in.prompt);
    DiTInputs d;
    d.x = in.x.unsqueeze(0);
    d.t = {in.t};
    d.text_states = e.text_states.unsqueeze(0);
    d.text_mask = e.text_mask.unsqueeze(0);
    d.text_states_2 = e.text_states_2.unsqueeze(0);
    const RotaryTables tables = rope->get(dit->patch_grid(d.x.shape()));
    d.freqs_cos = tables.cos;
    d.freqs_sin = tables.sin;
    if (dit->config().guidance_embed) d.guidance = {embedded_guidance_value(in.embedded_guidance, dit->compute_dtype())};
    return dit->forward(d).squeeze(0);
  };
  p.decode = [vae, tiling](const Tensor& z, const pipeline::Parts::DecodeProgress& progress) {
    pipeline::throw_if_interrupted("VAE decoding");
    // latents / scaling_factor: a division, as the pipeline's (not a multiply by 1 / f).
    const Tensor scaled = ops::div(z.unsqueeze(0), Tensor::full({1}, vae->config().scaling_factor, z.dtype()));
    Tensor video = ops::clamp(vae->decode_tiled(scaled, tiling), -1.0, 1.0).squeeze(0);
    if (progress) progress(1, 1);
    return video.dtype() == DType::F32 ? video : ops::cast(video, DType::F32);
  };
  return p;
}

namespace {

// A transformers folder's weights: its model.safetensors.index.json when it has one, else the folder
// (every tensor file in it); an error naming the folder when it holds none.
std::string weights_of(const std::string& folder, const char* what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // (pytorch_model-*.bin shards are read as the folder's files: io::Checkpoint takes an index of
  // safetensors only.)
  if (fs::is_regular_file(fs::path(folder) / "model.safetensors.index.json", ec))
    return (fs::path(folder) / "model.safetensors.index.json").string();
  for (const auto& e : fs::directory_iterator(folder, ec)) {
    const std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".safetensors" || ext == ".bin" || ext == ".pt" || ext == ".pth"))
      return folder;
  }
  throw Error(msg() << "HunyuanVideo: the " << what << " folder " << folder
                    << " holds no weights (model.safetensors, model-*.safetensors + model.safetensors.index.json, "
                       "or pytorch_model*.bin)");
}

nlohmann::json config_of(const std::string& folder, const char* what) {
  const std::filesystem::path p = std::filesystem::path(folder) / "config.json";
  std::ifstream is(p);
  VIDAX_CHECK(is.is_open(), "HunyuanVideo: the " << what << " has no config.json (" << p.string() << ")");
  try {
    return nlohmann::json::parse(is);
  } catch (const nlohmann::json::exception& e) {
    throw Error(msg() << p.string() << ": malformed JSON: " << e.what());
  }
}

void require_files(const std::string& folder, const std::vector<std::string>& names, const char* what) {
  std::string missing;
  for (const auto& n : names)
    if (!std::filesystem::is_regular_file(std::filesystem::path(folder) / n))
      missing += "\n  " + (std::filesystem::path(folder) / n).string();
  VIDAX_CHECK(missing.empty(), "HunyuanVideo: the " << what << " is missing:" << missing);
}

Tokenize tokenize_with(std::function<text::TokenizedBatch(const std::string&, int64_t)> encode) {
  return [encode = std::move(encode)](const std::string& text, int64_t max_length) {
    text::TokenizedBatch b = encode(text, max_length);
    return Tokenized{b.ids, b.mask, b.prompts.at(0).truncated};
  };
}

}  // namespace

std::shared_ptr<PromptEncoder> make_prompt_encoder(const WeightFiles& files, const std::string& precision,
                                                   int64_t text_len, const std::string& template_name) {
  const DType compute = compute_of(precision);
  const PromptTemplate& tmpl = prompt_template(template_name);
  VIDAX_CHECK(text_len >= 1, "HunyuanVideo: text_len " << text_len);
  // Every file named before any weight is read: the tokenizers (the official loader's
  // AutoTokenizer on text_encoder/ and text_encoder_2/, diffusers' tokenizer/ and tokenizer_2/),
  // then the encoders' configs and weights.
  require_files(files.tokenizer, {"tokenizer.json"}, "Llama-3 tokenizer (byte-level BPE)");
  require_files(files.tokenizer_2, {"vocab.json", "merges.txt"}, "CLIP tokenizer (BPE)");
  const nlohmann::json llm_json = config_of(files.text_encoder, "LLM text encoder");
  const nlohmann::json clip_json = config_of(files.text_encoder_2, "CLIP text encoder");
  const std::string llm_weights = weights_of(files.text_encoder, "LLM text encoder");
  const std::string clip_weights = weights_of(files.text_encoder_2, "CLIP text encoder");
  auto llm_tok = std::make_shared<const text::ByteLevelBpeTokenizer>(text::ByteLevelBpeTokenizer::from_dir(files.tokenizer));
  auto clip_tok = std::make_shared<const text::ClipBpeTokenizer>(text::ClipBpeTokenizer::from_dir(files.tokenizer_2));

  const text::LlamaConfig llm_cfg = text::LlamaConfig::from_json(llm_json);
  const std::map<std::string, Tensor> llm_params = translate_part(llm_weights, text::llama_component(), llm_cfg.to_json());
  auto llm = std::make_shared<const text::LlamaTextEncoder>(
      llm_cfg, [&](const std::string& n) { return llm_params.at(n); }, compute);
  const text::ClipTextConfig clip_cfg = text::ClipTextConfig::from_json(clip_json);
  const std::map<std::string, Tensor> clip_params =
      translate_part(clip_weights, text::clip_text_component(), clip_cfg.to_json());
  auto clip = std::make_shared<const text::ClipTextEncoder>(
      clip_cfg, [&](const std::string& n) { return clip_params.at(n); }, compute);

  // hyvideo/inference.py: max_length = text_len + crop_start, hidden_state_skip_layer 2, no final
  // norm, the attention mask on; CLIP at 77 tokens.
  LlmEncodeOptions opt;
  opt.max_length = text_len + tmpl.crop_start;
  opt.crop_start = tmpl.crop_start;
  return std::make_shared<HunyuanTextEncoders>(
      llm, opt, tmpl,
      tokenize_with([llm_tok](const std::string& t, int64_t n) { return llm_tok->encode_batch({t}, n); }), clip,
      tokenize_with([clip_tok](const std::string& t, int64_t n) { return clip_tok->encode_batch({t}, n); }), 77);
}

LoadedT2V load_t2v(const pipeline::LoadOptions& opt, std::shared_ptr<PromptEncoder> encoder) {
  auto stage = [&](const std::string& s) {
    if (opt.on_stage) opt.on_stage(s);
  };
  VIDAX_CHECK(opt.device.empty() || opt.device == "cpu",
              "--device " << opt.device << ": HunyuanVideo runs on the CPU backend only so far");
  VIDAX_CHECK(!opt.mesh, "--mesh: HunyuanVideo runs on a single rank so far");
  VIDAX_CHECK(!opt.offload, "--offload: HunyuanVideo's DiT is not streamed yet");
  VIDAX_CHECK(opt.vae_tile == 0, "--vae-tile " << opt.vae_tile
                                               << ": HunyuanVideo's VAE tiles as the reference does (the VAE config's "
                                                  "sample_size / sample_tsize, always on); no other tile size yet");
  VIDAX_CHECK(opt.loras.empty() && opt.loras_high_noise.empty() && opt.loras_low_noise.empty(),
              "--lora: HunyuanVideo LoRAs are not supported yet");
  VIDAX_CHECK(!opt.files.any(), "--diffusion-model / --vae / --text-encoder: HunyuanVideo takes a weights folder "
                                "(the official ckpts/ or diffusers' layout) so far");
  LoadedT2V out;
  out.files = find_weights(opt.weights_dir);
  out.preset = preset(opt.model.empty() ? kT2V720p : opt.model);
  out.precision = opt.precision.empty() ? out.preset.variant.defaults.precision : opt.precision;
  const DType compute = compute_of(out.precision);
  if (!out.files.dit_config.is_null()) out.preset.dit = out.files.dit_config;
  if (!out.files.vae_config.is_null()) out.preset.vae = out.files.vae_config;
  const DiTConfig dit_cfg = DiTConfig::from_json(out.preset.dit);
  const VAEConfig vae_cfg = VAEConfig::from_json(out.preset.vae);
  // The text side first: a missing encoder fails before gigabytes of DiT are read.
  if (!encoder) encoder = make_prompt_encoder(out.files, out.precision, out.preset.text_len);

  stage("loading the DiT " + out.files.dit);
  auto dit = std::make_shared<const HunyuanDiT>(
      HunyuanDiT::from_weights(dit_cfg, translate_part(out.files.dit, dit_component(), dit_cfg.to_json()), compute,
                               out.files.dit));
  stage("loading the VAE decoder " + out.files.vae);
  // The published VAE file holds both halves; the pipeline decodes only.
  nn::ParamSource vae_params = nn::ParamSource::from_map(
      translate_part(out.files.vae, vae_decoder_component(), vae_cfg.to_json(), {"encoder.", "quant_conv."}),
      out.files.vae);
  auto vae = std::make_shared<const HunyuanVAE>(vae_cfg, vae_params, VAEParts{.encoder = false, .decoder = true},
                                                DType::F32);
  vae_params.expect_all_taken();
  out.parts = make_t2v_parts(dit, vae, VAETiling{.spatial = true, .temporal = true}, encoder, out.preset.text_len);
  return out;
}

}  // namespace vidax::hunyuan
