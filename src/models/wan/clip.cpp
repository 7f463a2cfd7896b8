#include "models/wan/clip.h"

#include <cmath>

#include "backend/ops.h"
#include "core/error.h"
#include "io/image_resize.h"
#include "parity/parity.h"
#include "translate/config_fields.h"
#include "translate/inspect.h"
#include "translate/source.h"

namespace vidax::wan {

using nlohmann::json;
using translate::value_or;

ClipVisionConfig ClipVisionConfig::vit_h_14() { return {}; }

ClipVisionConfig ClipVisionConfig::from_json(const json& j) {
  VIDAX_CHECK(j.is_object(), "CLIP config: expected an object of XLMRobertaCLIP init args, got " << j.dump());
  ClipVisionConfig c;
  c.image_size = value_or<int64_t>(j, "image_size", c.image_size);
  c.patch_size = value_or<int64_t>(j, "patch_size", c.patch_size);
  c.vision_dim = value_or<int64_t>(j, "vision_dim", c.vision_dim);
  c.vision_heads = value_or<int64_t>(j, "vision_heads", c.vision_heads);
  c.vision_layers = value_or<int64_t>(j, "vision_layers", c.vision_layers);
  c.vision_mlp_ratio = value_or<double>(j, "vision_mlp_ratio", c.vision_mlp_ratio);
  c.vision_pool = value_or<std::string>(j, "vision_pool", c.vision_pool);
  c.vision_pre_norm = value_or<bool>(j, "vision_pre_norm", c.vision_pre_norm);
  c.vision_post_norm = value_or<bool>(j, "vision_post_norm", c.vision_post_norm);
  c.activation = value_or<std::string>(j, "activation", c.activation);
  c.norm_eps = value_or<double>(j, "norm_eps", c.norm_eps);
  c.embed_dim = value_or<int64_t>(j, "embed_dim", c.embed_dim);
  // What CLIPModel.visual runs: a class-token ViT with a pre-norm, GELU blocks, all but the last.
  VIDAX_CHECK(c.vision_pool == "token", "CLIP config: vision_pool '" << c.vision_pool
                                                                      << "' is not supported (the Wan CLIP is 'token')");
  VIDAX_CHECK(c.vision_pre_norm, "CLIP config: vision_pre_norm false is not supported (the Wan CLIP has a pre-norm)");
  VIDAX_CHECK(!c.vision_post_norm, "CLIP config: vision_post_norm true (post-norm blocks) is not supported");
  VIDAX_CHECK(c.activation == "gelu", "CLIP config: activation '" << c.activation << "' is not supported (the Wan CLIP's is 'gelu')");
  VIDAX_CHECK(c.patch_size >= 1 && c.image_size >= c.patch_size && c.image_size % c.patch_size == 0,
              "CLIP config: image_size " << c.image_size << " is not a multiple of patch_size " << c.patch_size);
  VIDAX_CHECK(c.vision_layers >= 1, "CLIP config: vision_layers " << c.vision_layers << " (use_31_block needs >= 1)");
  VIDAX_CHECK(c.vision_heads >= 1 && c.vision_dim % c.vision_heads == 0,
              "CLIP config: vision_dim " << c.vision_dim << " is not divisible by vision_heads " << c.vision_heads);
  VIDAX_CHECK(c.mlp_dim() >= 1, "CLIP config: vision_mlp_ratio " << c.vision_mlp_ratio << " gives no MLP width");
  return c;
}

json ClipVisionConfig::to_json() const {
  return {{"embed_dim", embed_dim},         {"image_size", image_size},   {"patch_size", patch_size},
          {"vision_dim", vision_dim},       {"vision_mlp_ratio", vision_mlp_ratio},
          {"vision_heads", vision_heads},   {"vision_layers", vision_layers}, {"vision_pool", vision_pool},
          {"vision_pre_norm", vision_pre_norm}, {"vision_post_norm", vision_post_norm},
          {"activation", activation},       {"norm_eps", norm_eps}};
}

translate::ParamSpec clip_visual_params(const ClipVisionConfig& c) {
  translate::ParamSpec s;
  const int64_t d = c.vision_dim, m = c.mlp_dim();
  s.add("visual.patch_embedding.weight", {d, 3, c.patch_size, c.patch_size});
  s.add("visual.cls_embedding", {1, 1, d});
  s.add("visual.pos_embedding", {1, c.tokens(), d});
  s.add("visual.pre_norm.weight", {d});
  s.add("visual.pre_norm.bias", {d});
  for (int64_t i = 0; i < c.blocks_run(); ++i) {
    const std::string p = "visual.transformer." + std::to_string(i) + ".";
    s.add(p + "norm1.weight", {d});
    s.add(p + "norm1.bias", {d});
    s.add(p + "attn.to_qkv.weight", {3 * d, d});
    s.add(p + "attn.to_qkv.bias", {3 * d});
    s.add(p + "attn.proj.weight", {d, d});
    s.add(p + "attn.proj.bias", {d});
    s.add(p + "norm2.weight", {d});
    s.add(p + "norm2.bias", {d});
    s.add(p + "mlp.0.weight", {m, d});
    s.add(p + "mlp.0.bias", {m});
    s.add(p + "mlp.2.weight", {d, m});
    s.add(p + "mlp.2.bias", {d});
  }
  return s;
}

translate::KeyMap clip_visual_keymap(const std::string& layout, const ClipVisionConfig& c) {
  VIDAX_CHECK(layout == "original", "CLIP: unknown layout '" << layout << "' (known: original)");
  translate::KeyMap m;
  m.layout = layout;
  m.rules.push_back(translate::key_rule("{x*}", "{x*}"));
  // What XLMRobertaCLIP holds and CLIPModel.visual(use_31_block=True) never reads: the text tower
  // and the logit scale, the last block, the post-norm and the projection head.
  m.ignored = {"textual.{x*}", "log_scale", "visual.transformer." + std::to_string(c.vision_layers - 1) + ".{x*}",
               "visual.post_norm.{x*}", "visual.head", "visual.head.{x*}"};
  return m;
}

namespace {

class ClipVisualComponent : public translate::Component {
 public:
  std::string name() const override { return "wan2.1-clip-visual"; }
  std::string family() const override { return "wan2.1"; }
  std::vector<std::string> layouts() const override { return {"original"}; }
  translate::Json default_config() const override { return ClipVisionConfig::vit_h_14().to_json(); }
  std::optional<translate::Json> read_config(const translate::Json& j) const override {
    if (!j.is_object() || !j.contains("vision_dim")) return std::nullopt;
    return ClipVisionConfig::from_json(j).to_json();
  }
  translate::Json infer_config(const translate::TensorSource& src, const std::string& layout) const override {
    ClipVisionConfig c;
    const translate::KeyMap m = clip_visual_keymap(layout, c);
    if (auto* t = translate::find_param(src, m, "visual.patch_embedding.weight"); t && t->shape.size() == 4) {
      c.vision_dim = t->shape[0];
      c.patch_size = t->shape[2];
    }
    if (auto* t = translate::find_param(src, m, "visual.pos_embedding"); t && t->shape.size() == 3) {
      const auto g = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(t->shape[1] - 1))));
      c.image_size = g * c.patch_size;
    }
    if (auto* t = translate::find_param(src, m, "visual.transformer.0.mlp.0.weight"); t && t->shape.size() == 2)
      c.vision_mlp_ratio = static_cast<double>(t->shape[0]) / static_cast<double>(c.vision_dim);
    int64_t layers = 0;
    while (src.find("visual.transformer." + std::to_string(layers) + ".norm1.weight")) ++layers;
    if (layers > 0) c.vision_layers = layers;
    // The head count is not in the shapes: ViT-H/14's 16 heads (80 channels each) when the width fits.
    if (c.vision_dim % c.vision_heads != 0) c.vision_heads = 1;
    return c.to_json();
  }
  translate::ParamSpec params(const translate::Json& cfg) const override {
    return clip_visual_params(ClipVisionConfig::from_json(cfg));
  }
  translate::KeyMap keymap(const std::string& layout, const translate::Json& cfg) const override {
    return clip_visual_keymap(layout, ClipVisionConfig::from_json(cfg));
  }
  std::string variant(const translate::Json& cfg) const override {
    return ClipVisionConfig::from_json(cfg).to_json() == ClipVisionConfig::vit_h_14().to_json() ? "vit-h-14"
                                                                                                : "custom";
  }
};

}  // namespace

const translate::Component& clip_visual_component() {
  static const ClipVisualComponent c;
  return c;
}

Tensor clip_preprocess(const Tensor& frames, const ClipVisionConfig& c) {
  VIDAX_CHECK(frames.dim() == 4 && frames.size(1) == 3,
              "CLIP: expects frames [N, 3, H, W] in [-1, 1], got " << frames.str());
  // F.interpolate(bicubic) to image_size, then mul_(0.5).add_(0.5) and Normalize, all fp32.
  Tensor x = io::resize_bicubic(frames.to(DType::F32), c.image_size, c.image_size);
  x = ops::add_scalar(ops::scale(x, 0.5), 0.5);
  const Tensor mean = Tensor::from_f32({0.48145466f, 0.4578275f, 0.40821073f}, {1, 3, 1, 1});
  const Tensor std = Tensor::from_f32({0.26862954f, 0.26130258f, 0.27577711f}, {1, 3, 1, 1});
  return ops::div(ops::sub(x, mean), std);
}

ClipVision::ClipVision(const ClipVisionConfig& cfg, nn::ParamSource& params, DType compute)
    : cfg_(cfg), compute_(compute) {
  const int64_t d = cfg.vision_dim, m = cfg.mlp_dim(), p = cfg.patch_size;
  patch_w_ = params.take("visual.patch_embedding.weight", {d, 3, p, p}).to(DType::F32);
  cls_ = params.take("visual.cls_embedding", {1, 1, d}).to(DType::F32);
  pos_ = params.take("visual.pos_embedding", {1, cfg.tokens(), d}).to(DType::F32);
  pre_norm_w_ = params.take("visual.pre_norm.weight", {d}).to(DType::F32);
  pre_norm_b_ = params.take("visual.pre_norm.bias", {d}).to(DType::F32);
  for (int64_t i = 0; i < cfg.blocks_run(); ++i) {
    const std::string pre = "visual.transformer." + std::to_string(i) + ".";
    Block b;
    b.norm1_w = params.take(pre + "norm1.weight", {d}).to(DType::F32);
    b.norm1_b = params.take(pre + "norm1.bias", {d}).to(DType::F32);
    b.norm2_w = params.take(pre + "norm2.weight", {d}).to(DType::F32);
    b.norm2_b = params.take(pre + "norm2.bias", {d}).to(DType::F32);
    b.qkv = nn::Linear::load(params, pre + "attn.to_qkv", d, 3 * d, compute);
    b.proj = nn::Linear::load(params, pre + "attn.proj", d, d, compute);
    b.fc1 = nn::Linear::load(params, pre + "mlp.0", d, m, compute);
    b.fc2 = nn::Linear::load(params, pre + "mlp.2", m, d, compute);
    blocks_.push_back(std::move(b));
  }
}

Tensor ClipVision::forward(const Tensor& pixels) const {
  const int64_t s = cfg_.image_size, d = cfg_.vision_dim, h = cfg_.vision_heads;
  VIDAX_CHECK(pixels.dim() == 4 && pixels.size(1) == 3 && pixels.size(2) == s && pixels.size(3) == s,
              "CLIP: expects pixels [N, 3, " << s << ", " << s << "], got " << pixels.str());
  const int64_t n = pixels.size(0), g = cfg_.grid();
  // Patch embedding -> [N, g*g, dim] tokens, the class token in front, + positions, pre-norm (fp32).
  Tensor x = ops::conv2d(pixels.to(DType::F32), patch_w_, std::nullopt, {cfg_.patch_size, cfg_.patch_size}, {0, 0});
  x = x.reshape({n, d, g * g}).transpose(1, 2).contiguous();
  std::vector<Tensor> with_cls;
  for (int64_t i = 0; i < n; ++i) with_cls.push_back(ops::concat({cls_, x.slice(0, i, i + 1)}, 1));
  x = ops::add(ops::concat(with_cls, 0), pos_);
  x = ops::layer_norm(x, pre_norm_w_, pre_norm_b_, cfg_.norm_eps);
  const int64_t l = x.size(1), hd = d / h;
  for (const Block& b : blocks_) {
    // x + attn(norm1(x)): to_qkv viewed [N, L, 3, heads, head_dim], softmax attention, proj.
    const Tensor qkv = b.qkv(ops::layer_norm(x, b.norm1_w, b.norm1_b, cfg_.norm_eps)).reshape({n, l, 3, h, hd});
    const Tensor a = ops::attention(qkv.select(2, 0).contiguous(), qkv.select(2, 1).contiguous(),
                                    qkv.select(2, 2).contiguous());
    x = ops::add(x, b.proj(a.reshape({n, l, d})).to(DType::F32));
    // x + mlp(norm2(x)): Linear, GELU (erf: nn.GELU()), Linear.
    const Tensor hmid = b.fc1.gelu(ops::layer_norm(x, b.norm2_w, b.norm2_b, cfg_.norm_eps), ops::GeluMode::Erf);
    x = ops::add(x, b.fc2(hmid).to(DType::F32));
  }
  return x;
}

// ---- parity kind wan.clip.visual ------------------------------------------------------

namespace {

parity::Produced run_clip_golden(const parity::Golden& g, const parity::Options& opt) {
  VIDAX_CHECK(opt.mesh.empty(), g.path << ": wan.clip.visual runs on a single rank");
  const ClipVisionConfig cfg = ClipVisionConfig::from_json(g.config);
  translate::MemorySource src(g.path);
  for (const std::string& n : g.file.names())
    if (!translate::is_golden_io_key(n)) src.add(n, g.file.get(n));
  translate::Match m = translate::match(src, clip_visual_component(), cfg.to_json(), "original");
  translate::check(m.plan, {}, "CLIP visual from " + g.path);
  nn::ParamSource params = nn::ParamSource::from_map(translate::materialize(src, m.plan, {}), g.path);
  const std::string precision = opt.precision.empty() ? parity::golden_precision(g) : opt.precision;
  ClipVision clip(cfg, params, precision == "bf16" ? DType::BF16 : DType::F32);
  params.expect_all_taken();
  // input.videos: CLIPModel.visual's list of [3, 1, H, W] frames stacked, [N, 3, 1, H, W] (or one [3, 1, H, W]).
  Tensor v = g.input("videos").to(DType::F32);
  if (v.dim() == 4) v = v.unsqueeze(0);
  VIDAX_CHECK(v.dim() == 5 && v.size(1) == 3 && v.size(2) == 1,
              g.path << ": input.videos " << v.str() << ", expected [N, 3, 1, H, W] (CLIPModel.visual's frames)");
  parity::Produced out;
  out["output"] = clip.encode(v.squeeze(2).contiguous());
  return out;
}

}  // namespace

void register_clip_parity_kind() { parity::register_kind("wan.clip.visual", run_clip_golden); }

}  // namespace vidax::wan
