#include "models/hunyuan15/siglip.h"

#include <cmath>
#include <filesystem>

#include "backend/ops.h"
#include "core/error.h"
#include "io/image_resize.h"
#include "io/text_file.h"
#include "parity/parity.h"
#include "translate/config_fields.h"
#include "translate/inspect.h"
#include "translate/source.h"

namespace fs = std::filesystem;

namespace vidax::hunyuan15 {

using nlohmann::json;
using translate::value_or;

SiglipVisionConfig SiglipVisionConfig::so400m_patch14_384() { return {}; }

SiglipVisionConfig SiglipVisionConfig::from_json(const json& in) {
  VIDAX_CHECK(in.is_object(), "SigLIP config: expected a SiglipVisionConfig object, got " << in.dump());
  const json& j = in.contains("vision_config") ? in.at("vision_config") : in;
  SiglipVisionConfig c;
  c.hidden_size = value_or<int64_t>(j, "hidden_size", c.hidden_size);
  c.intermediate_size = value_or<int64_t>(j, "intermediate_size", c.intermediate_size);
  c.num_hidden_layers = value_or<int64_t>(j, "num_hidden_layers", c.num_hidden_layers);
  c.num_attention_heads = value_or<int64_t>(j, "num_attention_heads", c.num_attention_heads);
  c.num_channels = value_or<int64_t>(j, "num_channels", c.num_channels);
  c.image_size = value_or<int64_t>(j, "image_size", c.image_size);
  c.patch_size = value_or<int64_t>(j, "patch_size", c.patch_size);
  c.hidden_act = value_or<std::string>(j, "hidden_act", c.hidden_act);
  c.layer_norm_eps = value_or<double>(j, "layer_norm_eps", c.layer_norm_eps);
  VIDAX_CHECK(c.hidden_act == "gelu_pytorch_tanh",
              "SigLIP config: hidden_act '" << c.hidden_act << "' is not supported (built: gelu_pytorch_tanh, the published one)");
  VIDAX_CHECK(c.num_channels == 3, "SigLIP config: num_channels " << c.num_channels << " (RGB pictures: 3)");
  // The patch embedding is a stride-patch_size Conv2d: floor(image_size / patch_size) patches a side (the
  // published 384 / 14 gives 27: 729 tokens, the last 6 pixel rows and columns unread).
  VIDAX_CHECK(c.patch_size >= 1 && c.image_size >= c.patch_size,
              "SigLIP config: image_size " << c.image_size << " is smaller than patch_size " << c.patch_size);
  VIDAX_CHECK(c.num_hidden_layers >= 1, "SigLIP config: num_hidden_layers " << c.num_hidden_layers << " must be >= 1");
  VIDAX_CHECK(c.num_attention_heads >= 1 && c.hidden_size % c.num_attention_heads == 0,
              "SigLIP config: hidden_size " << c.hidden_size << " is not divisible by num_attention_heads "
                                            << c.num_attention_heads);
  VIDAX_CHECK(c.intermediate_size >= 1, "SigLIP config: intermediate_size " << c.intermediate_size << " must be >= 1");
  return c;
}

json SiglipVisionConfig::to_json() const {
  return {{"model_type", "siglip_vision_model"},      {"hidden_size", hidden_size},
          {"intermediate_size", intermediate_size},   {"num_hidden_layers", num_hidden_layers},
          {"num_attention_heads", num_attention_heads}, {"num_channels", num_channels},
          {"image_size", image_size},                 {"patch_size", patch_size},
          {"hidden_act", hidden_act},                 {"layer_norm_eps", layer_norm_eps}};
}

SiglipProcessorConfig SiglipProcessorConfig::from_json(const json& j) {
  VIDAX_CHECK(j.is_object(), "SigLIP preprocessor config: expected an object, got " << j.dump());
  SiglipProcessorConfig p;
  p.do_resize = value_or<bool>(j, "do_resize", p.do_resize);
  p.do_rescale = value_or<bool>(j, "do_rescale", p.do_rescale);
  p.do_normalize = value_or<bool>(j, "do_normalize", p.do_normalize);
  p.resample = value_or<int>(j, "resample", p.resample);
  p.rescale_factor = value_or<double>(j, "rescale_factor", p.rescale_factor);
  if (j.contains("size")) {
    const json& s = j.at("size");
    VIDAX_CHECK(s.is_object() && s.contains("height") && s.contains("width"),
                "SigLIP preprocessor config: size " << s.dump() << " (built: {\"height\": H, \"width\": W})");
    p.height = s.at("height").get<int64_t>();
    p.width = s.at("width").get<int64_t>();
  }
  if (j.contains("image_mean")) p.image_mean = j.at("image_mean").get<std::vector<double>>();
  if (j.contains("image_std")) p.image_std = j.at("image_std").get<std::vector<double>>();
  VIDAX_CHECK(p.resample == 3, "SigLIP preprocessor config: resample " << p.resample
                                                                      << " is not built (3, bicubic, the published one)");
  VIDAX_CHECK(p.height >= 1 && p.width >= 1, "SigLIP preprocessor config: size " << p.height << "x" << p.width);
  VIDAX_CHECK(p.image_mean.size() == 3 && p.image_std.size() == 3,
              "SigLIP preprocessor config: image_mean and image_std need 3 values (RGB)");
  for (double s : p.image_std) VIDAX_CHECK(s != 0.0, "SigLIP preprocessor config: an image_std of 0");
  VIDAX_CHECK(p.rescale_factor > 0.0, "SigLIP preprocessor config: rescale_factor " << p.rescale_factor << " must be > 0");
  return p;
}

json SiglipProcessorConfig::to_json() const {
  return {{"do_resize", do_resize}, {"do_rescale", do_rescale}, {"do_normalize", do_normalize},
          {"size", {{"height", height}, {"width", width}}}, {"resample", resample},
          {"rescale_factor", rescale_factor}, {"image_mean", image_mean}, {"image_std", image_std}};
}

translate::ParamSpec siglip_params(const SiglipVisionConfig& c) {
  translate::ParamSpec s;
  const int64_t d = c.hidden_size, m = c.intermediate_size;
  s.add("embeddings.patch_embedding.weight", {d, c.num_channels, c.patch_size, c.patch_size});
  s.add("embeddings.patch_embedding.bias", {d});
  s.add("embeddings.position_embedding.weight", {c.tokens(), d});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "encoder.layers." + std::to_string(i) + ".";
    for (const char* n : {"layer_norm1", "layer_norm2"}) {
      s.add(p + n + ".weight", {d});
      s.add(p + n + ".bias", {d});
    }
    for (const char* n : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
      s.add(p + "self_attn." + n + ".weight", {d, d});
      s.add(p + "self_attn." + n + ".bias", {d});
    }
    s.add(p + "mlp.fc1.weight", {m, d});
    s.add(p + "mlp.fc1.bias", {m});
    s.add(p + "mlp.fc2.weight", {d, m});
    s.add(p + "mlp.fc2.bias", {d});
  }
  s.add("post_layernorm.weight", {d});
  s.add("post_layernorm.bias", {d});
  return s;
}

translate::KeyMap siglip_keymap(const std::string& layout, const SiglipVisionConfig&) {
  translate::KeyMap m;
  m.layout = layout;
  if (layout == "vision_model") {
    m.rules.push_back(translate::key_rule("{x*}", "vision_model.{x}"));
    m.ignored = {"vision_model.head.{x*}"};
  } else if (layout == "plain") {
    m.rules.push_back(translate::key_rule("{x*}", "{x}"));
    m.ignored = {"head.{x*}"};
  } else {
    throw Error(msg() << "SigLIP: unknown layout '" << layout << "' (known: vision_model, plain)");
  }
  return m;
}

namespace {

class SiglipComponent : public translate::Component {
 public:
  std::string name() const override { return "hunyuan1.5-siglip-vision"; }
  std::string family() const override { return "hunyuanvideo1.5"; }
  std::vector<std::string> layouts() const override { return {"vision_model", "plain"}; }
  translate::Json default_config() const override { return SiglipVisionConfig::so400m_patch14_384().to_json(); }
  std::optional<translate::Json> read_config(const translate::Json& j) const override {
    if (!j.is_object()) return std::nullopt;
    const std::string t = j.value("model_type", std::string());
    if (t != "siglip_vision_model" && t != "siglip") return std::nullopt;
    return SiglipVisionConfig::from_json(j).to_json();
  }
  translate::Json infer_config(const translate::TensorSource& src, const std::string& layout) const override {
    SiglipVisionConfig c;
    const translate::KeyMap m = siglip_keymap(layout, c);
    if (auto* t = translate::find_param(src, m, "embeddings.patch_embedding.weight"); t && t->shape.size() == 4) {
      c.hidden_size = t->shape[0];
      c.patch_size = t->shape[2];
    }
    if (auto* t = translate::find_param(src, m, "embeddings.position_embedding.weight"); t && t->shape.size() == 2) {
      const auto g = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(t->shape[0]))));
      c.image_size = g * c.patch_size;
    }
    if (auto* t = translate::find_param(src, m, "encoder.layers.0.mlp.fc1.weight"); t && t->shape.size() == 2)
      c.intermediate_size = t->shape[0];
    int64_t layers = 0;
    while (translate::find_param(src, m, "encoder.layers." + std::to_string(layers) + ".layer_norm1.weight")) ++layers;
    if (layers > 0) c.num_hidden_layers = layers;
    if (c.hidden_size % c.num_attention_heads != 0) c.num_attention_heads = 1;  // not in the shapes
    return c.to_json();
  }
  translate::ParamSpec params(const translate::Json& cfg) const override {
    return siglip_params(SiglipVisionConfig::from_json(cfg));
  }
  translate::KeyMap keymap(const std::string& layout, const translate::Json& cfg) const override {
    return siglip_keymap(layout, SiglipVisionConfig::from_json(cfg));
  }
  std::string variant(const translate::Json& cfg) const override {
    return SiglipVisionConfig::from_json(cfg).to_json() == SiglipVisionConfig::so400m_patch14_384().to_json()
               ? "so400m-patch14-384"
               : "custom";
  }
};

}  // namespace

const translate::Component& siglip_component() {
  static const SiglipComponent c;
  return c;
}

Tensor siglip_preprocess(const Tensor& picture, const SiglipProcessorConfig& p) {
  VIDAX_CHECK(picture.dim() == 3 && picture.size(2) == 3 && picture.dtype() == DType::U8,
              "SigLIP preprocess: expects an [H, W, 3] U8 picture, got " << picture.str());
  // process_image: [H, W, 3] -> [3, H, W] uint8, contiguous.
  Tensor x = picture.to_host().permute({2, 0, 1}).contiguous();
  // tvF.resize(bicubic, antialias=True) on the uint8 tensor (returned as is at the same size).
  if (p.do_resize && (x.size(1) != p.height || x.size(2) != p.width))
    x = io::resize_bicubic_antialias_u8(x, p.height, p.width);
  x = x.to(DType::F32);
  // rescale_and_normalize: with both, mean and std scaled by 1 / rescale_factor (fp32 tensors times a
  // Python float), then tvF.normalize's sub_(mean).div_(std); rescale alone: x * rescale_factor.
  const float inv = static_cast<float>(1.0 / p.rescale_factor);
  std::vector<float> mean(3), std(3);
  for (int i = 0; i < 3; ++i) {
    mean[i] = static_cast<float>(p.image_mean[i]);
    std[i] = static_cast<float>(p.image_std[i]);
    if (p.do_rescale && p.do_normalize) {
      mean[i] *= inv;
      std[i] *= inv;
    }
  }
  if (p.do_normalize) {
    x = ops::div(ops::sub(x, Tensor::from_f32(mean, {3, 1, 1})), Tensor::from_f32(std, {3, 1, 1}));
  } else if (p.do_rescale) {
    x = ops::mul(x, Tensor::full({1}, static_cast<float>(p.rescale_factor), DType::F32));
  }
  return x.unsqueeze(0).contiguous();
}

SiglipVision::SiglipVision(const SiglipVisionConfig& cfg, nn::ParamSource& params, DType compute) : cfg_(cfg) {
  const int64_t d = cfg.hidden_size, m = cfg.intermediate_size, p = cfg.patch_size;
  patch_w_ = params.take("embeddings.patch_embedding.weight", {d, cfg.num_channels, p, p}).to(DType::F32);
  patch_b_ = params.take("embeddings.patch_embedding.bias", {d}).to(DType::F32);
  pos_ = params.take("embeddings.position_embedding.weight", {cfg.tokens(), d}).to(DType::F32);
  for (int64_t i = 0; i < cfg.num_hidden_layers; ++i) {
    const std::string pre = "encoder.layers." + std::to_string(i) + ".";
    Layer l;
    l.ln1_w = params.take(pre + "layer_norm1.weight", {d}).to(DType::F32);
    l.ln1_b = params.take(pre + "layer_norm1.bias", {d}).to(DType::F32);
    l.ln2_w = params.take(pre + "layer_norm2.weight", {d}).to(DType::F32);
    l.ln2_b = params.take(pre + "layer_norm2.bias", {d}).to(DType::F32);
    l.q = nn::Linear::load(params, pre + "self_attn.q_proj", d, d, compute);
    l.k = nn::Linear::load(params, pre + "self_attn.k_proj", d, d, compute);
    l.v = nn::Linear::load(params, pre + "self_attn.v_proj", d, d, compute);
    l.out = nn::Linear::load(params, pre + "self_attn.out_proj", d, d, compute);
    l.fc1 = nn::Linear::load(params, pre + "mlp.fc1", d, m, compute);
    l.fc2 = nn::Linear::load(params, pre + "mlp.fc2", m, d, compute);
    layers_.push_back(std::move(l));
  }
  post_w_ = params.take("post_layernorm.weight", {d}).to(DType::F32);
  post_b_ = params.take("post_layernorm.bias", {d}).to(DType::F32);
}

Tensor SiglipVision::forward(const Tensor& pixels) const {
  const int64_t s = cfg_.image_size, d = cfg_.hidden_size, h = cfg_.num_attention_heads;
  VIDAX_CHECK(pixels.dim() == 4 && pixels.size(1) == cfg_.num_channels && pixels.size(2) == s && pixels.size(3) == s,
              "SigLIP: expects pixel_values [N, 3, " << s << ", " << s << "], got " << pixels.str());
  const int64_t n = pixels.size(0), l = cfg_.tokens(), hd = d / h;
  // SiglipVisionEmbeddings: patch_embedding, flatten(2).transpose(1, 2), + position_embedding.
  Tensor x = ops::conv2d(pixels.to(DType::F32), patch_w_, patch_b_, {cfg_.patch_size, cfg_.patch_size}, {0, 0});
  x = ops::add(x.reshape({n, d, l}).transpose(1, 2).contiguous(), pos_.unsqueeze(0));
  const double eps = cfg_.layer_norm_eps;
  for (const Layer& b : layers_) {
    const Tensor y = ops::layer_norm(x, b.ln1_w, b.ln1_b, eps);
    const Tensor q = b.q(y).reshape({n, l, h, hd}), k = b.k(y).reshape({n, l, h, hd}), v = b.v(y).reshape({n, l, h, hd});
    const Tensor a = ops::attention(q, k, v);  // softmax(q k^T * head_dim^-0.5) v, no mask
    x = ops::add(x, b.out(a.reshape({n, l, d})).to(DType::F32));
    const Tensor mid = b.fc1.gelu(ops::layer_norm(x, b.ln2_w, b.ln2_b, eps), ops::GeluMode::Tanh);
    x = ops::add(x, b.fc2(mid).to(DType::F32));
  }
  return ops::layer_norm(x, post_w_, post_b_, eps);
}

SiglipEncoder load_siglip(const std::string& siglip_dir, DType compute) {
  const fs::path root(siglip_dir);
  const fs::path enc = root / "image_encoder", cfg_path = enc / "config.json";
  const fs::path proc_path = root / "feature_extractor" / "preprocessor_config.json";
  for (const fs::path& f : {cfg_path, proc_path})
    VIDAX_CHECK(fs::exists(f), "HunyuanVideo 1.5 SigLIP: " << f.string()
                                                           << " not found (the official _load_vision_encoder reads "
                                                              "vision_encoder/siglip/image_encoder/ and feature_extractor/)");
  SiglipEncoder out;
  out.processor = SiglipProcessorConfig::from_json(io::read_json_file(proc_path.string()));
  const SiglipVisionConfig cfg = SiglipVisionConfig::from_json(io::read_json_file(cfg_path.string()));
  const fs::path single = enc / "model.safetensors";
  auto src = translate::CheckpointSource::open(fs::exists(single) ? single.string() : enc.string());
  nn::ParamSource params =
      nn::ParamSource::from_map(translate::load(*src, siglip_component(), cfg.to_json()), enc.string());
  out.model = std::make_shared<const SiglipVision>(cfg, params, compute);
  params.expect_all_taken();
  return out;
}

// ---- parity kind hunyuan1.5.image.siglip -----------------------------------------------

namespace {

parity::Produced run_siglip_golden(const parity::Golden& g, const parity::Options& opt) {
  VIDAX_CHECK(opt.mesh.empty(), g.path << ": hunyuan1.5.image.siglip runs on a single rank");
  VIDAX_CHECK(g.config.is_object() && g.config.contains("vision"),
              g.path << ": config needs \"vision\" (image_encoder/config.json) and \"processor\"");
  const SiglipVisionConfig cfg = SiglipVisionConfig::from_json(g.config.at("vision"));
  const SiglipProcessorConfig proc =
      SiglipProcessorConfig::from_json(g.config.value("processor", SiglipProcessorConfig{}.to_json()));
  translate::MemorySource src(g.path);
  for (const std::string& n : g.file.names())
    if (!translate::is_golden_io_key(n)) src.add(n, g.file.get(n));
  nn::ParamSource params = nn::ParamSource::from_map(translate::load(src, siglip_component(), cfg.to_json()), g.path);
  const std::string precision = opt.precision.empty() ? parity::golden_precision(g) : opt.precision;
  VIDAX_CHECK(precision == "fp32" || precision == "bf16", "hunyuan1.5.image.siglip: precision must be fp32 or bf16");
  const SiglipVision model(cfg, params, precision == "bf16" ? DType::BF16 : DType::F32);
  params.expect_all_taken();
  parity::Produced out;
  // input.image: the [H, W, 3] uint8 picture encode_images takes; or input.pixel_values, preprocessed.
  Tensor pixels;
  if (g.file.contains("input.image")) {
    pixels = siglip_preprocess(g.input("image"), proc);
    out["inter.pixel_values"] = pixels;
  } else {
    pixels = g.input("pixel_values").to(DType::F32);
  }
  out["output"] = model.forward(pixels);
  return out;
}

}  // namespace

void register_siglip_parity_kind() {
  translate::register_component(siglip_component());
  parity::register_kind("hunyuan1.5.image.siglip", run_siglip_golden);
}

}  // namespace vidax::hunyuan15
