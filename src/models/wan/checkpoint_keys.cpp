#include "models/wan/checkpoint_keys.h"

#include <algorithm>
#include <cmath>

#include "translate/config_fields.h"

namespace vidax::translate::wan {

// ===========================================================================
// DiT (WanModel)
// ===========================================================================

DitConfig DitConfig::t2v_1_3b() { return DitConfig{}; }

DitConfig DitConfig::t2v_14b() {
  DitConfig c;
  c.dim = 5120;
  c.ffn_dim = 13824;
  c.num_heads = 40;
  c.num_layers = 40;
  return c;
}

DitConfig DitConfig::i2v_14b() {
  DitConfig c = t2v_14b();
  c.model_type = "i2v";
  c.in_dim = 36;
  return c;
}

DitConfig DitConfig::ti2v_5b() {  // Wan2.2 wan/configs/wan_ti2v_5B.py (z_dim 48 of the Wan 2.2 VAE)
  DitConfig c;
  c.model_type = "ti2v";
  c.in_dim = 48;
  c.out_dim = 48;
  c.dim = 3072;
  c.ffn_dim = 14336;
  c.num_heads = 24;
  c.num_layers = 30;
  return c;
}

DitConfig DitConfig::vace_1_3b() {
  DitConfig c;
  c.model_type = "vace";
  c.vace_layers = {0, 5, 10, 15, 20, 25};
  c.vace_in_dim = 96;  // 32 (inactive and reactive latents) + 64 (the 8x8 mask)
  return c;
}

DitConfig DitConfig::vace_14b() {
  DitConfig c = t2v_14b();
  c.model_type = "vace";
  c.vace_layers = {0, 5, 10, 15, 20, 25, 30, 35};
  c.vace_in_dim = 96;
  return c;
}

bool is_diffusers_dit_config(const Json& j) {
  if (!j.is_object()) return false;
  if (has(j, "_class_name") && j["_class_name"].is_string()) {
    const std::string c = j["_class_name"].get<std::string>();
    return c == "WanTransformer3DModel" || c == "WanVACETransformer3DModel";
  }
  return has(j, "num_attention_heads") || has(j, "attention_head_dim") || has(j, "in_channels");
}

namespace {

// VaceWanModel asserts 0 in vace_layers (vace block 0 adds the patch-embedded latent); each
// entry must name a main block, once.
void check_vace(const DitConfig& c) {
  VIDAX_CHECK(!c.vace_layers.empty() && c.vace_layers[0] == 0,
              "Wan VACE DiT config: vace_layers must start with layer 0 (VaceWanModel asserts 0 in vace_layers)");
  for (size_t i = 0; i < c.vace_layers.size(); ++i) {
    VIDAX_CHECK(c.vace_layers[i] >= 0 && c.vace_layers[i] < c.num_layers,
                "Wan VACE DiT config: vace_layers entry " << c.vace_layers[i] << " is not a layer of 0.." << c.num_layers - 1);
    VIDAX_CHECK(i == 0 || c.vace_layers[i] > c.vace_layers[i - 1],
                "Wan VACE DiT config: vace_layers must be increasing without repeats");
  }
  VIDAX_CHECK(c.vace_in_dim > 0, "Wan VACE DiT config: vace_in_dim must be positive, got " << c.vace_in_dim);
}

}  // namespace

DitConfig DitConfig::from_json(const Json& j) {
  VIDAX_CHECK(j.is_object(), "Wan DiT config must be a JSON object, got " << j.dump());
  const auto read_patch = [&](DitConfig& c) {
    if (!has(j, "patch_size") || j["patch_size"].is_null()) return;
    const auto p = value_or<std::vector<int64_t>>(j, "patch_size", {});
    VIDAX_CHECK(p.size() == 3, "Wan DiT config: patch_size must be 3 integers, got " << j["patch_size"].dump());
    c.patch_size = {p[0], p[1], p[2]};
  };
  DitConfig c;
  if (is_diffusers_dit_config(j)) {
    // WanTransformer3DModel.__init__ defaults. It builds norm_q / norm_k whatever
    // qk_norm says (the field is never read) and applies `out_channels or
    // in_channels` to out_channels (default 16): null means in_channels.
    const int64_t heads = value_or<int64_t>(j, "num_attention_heads", 40);
    c.num_heads = heads;
    c.dim = heads * value_or<int64_t>(j, "attention_head_dim", 128);
    c.in_dim = value_or<int64_t>(j, "in_channels", 16);
    c.out_dim = has(j, "out_channels") && j["out_channels"].is_null() ? c.in_dim : value_or<int64_t>(j, "out_channels", 16);
    c.ffn_dim = value_or<int64_t>(j, "ffn_dim", 13824);
    c.freq_dim = value_or<int64_t>(j, "freq_dim", 256);
    c.text_dim = value_or<int64_t>(j, "text_dim", 4096);
    c.num_layers = value_or<int64_t>(j, "num_layers", 40);
    c.cross_attn_norm = value_or<bool>(j, "cross_attn_norm", true);
    c.qk_norm = true;
    c.eps = value_or<double>(j, "eps", 1e-6);
    c.text_len = 512;  // WanPipeline pads prompts to max_sequence_length = 512; I2V splits the context at 512
    const bool image = has(j, "image_dim") && !j["image_dim"].is_null();
    const bool flf = has(j, "pos_embed_seq_len") && !j["pos_embed_seq_len"].is_null();
    // Without image_dim the class has no image branch; two Wan 2.2 models are told by their
    // channels, as their original config.json names them: I2V-A14B's 'i2v' takes y on the input
    // (16 + 4 + 16 = 36 channels in, 16 out), TI2V-5B's 'ti2v' the Wan 2.2 VAE's 48-channel latent
    // (its pipeline passes per-token timesteps, WanPipeline's expand_timesteps).
    c.model_type = flf ? "flf2v" : image ? "i2v" : c.in_dim == 36 && c.out_dim == 16 ? "i2v"
                                                 : c.in_dim == 48 && c.out_dim == 48 ? "ti2v" : "t2v";
    read_patch(c);
    // WanVACETransformer3DModel: vace_layers (default 0, 5, .., 35) and vace_in_channels (96).
    const bool vace = (has(j, "_class_name") && j["_class_name"] == "WanVACETransformer3DModel") ||
                      has(j, "vace_layers") || has(j, "vace_in_channels");
    if (vace) {
      VIDAX_CHECK(c.model_type == "t2v", "Wan VACE DiT config: a VACE model with image inputs is not supported");
      c.model_type = "vace";
      c.vace_layers = value_or<std::vector<int64_t>>(j, "vace_layers", {0, 5, 10, 15, 20, 25, 30, 35});
      c.vace_in_dim = value_or<int64_t>(j, "vace_in_channels", 96);
      check_vace(c);
    }
    return c;
  }
  VIDAX_CHECK(has(j, "dim") || has(j, "num_heads") || (has(j, "_class_name") && j["_class_name"] == "WanModel"),
              "not a Wan DiT config (neither WanModel's init args nor a WanTransformer3DModel config): " << j.dump());
  // WanModel.__init__ defaults. Its config.json leaves out patch_size, text_dim,
  // qk_norm, cross_attn_norm and window_size (ignore_for_config): they always take
  // these defaults (the Wan configs all use qk_norm = cross_attn_norm = True).
  c.model_type = value_or<std::string>(j, "model_type", "t2v");
  c.text_len = value_or<int64_t>(j, "text_len", 512);
  c.in_dim = value_or<int64_t>(j, "in_dim", 16);
  c.dim = value_or<int64_t>(j, "dim", 2048);
  c.ffn_dim = value_or<int64_t>(j, "ffn_dim", 8192);
  c.freq_dim = value_or<int64_t>(j, "freq_dim", 256);
  c.text_dim = value_or<int64_t>(j, "text_dim", 4096);
  c.out_dim = value_or<int64_t>(j, "out_dim", 16);
  c.num_heads = value_or<int64_t>(j, "num_heads", 16);
  c.num_layers = value_or<int64_t>(j, "num_layers", 32);
  c.qk_norm = value_or<bool>(j, "qk_norm", true);
  c.cross_attn_norm = value_or<bool>(j, "cross_attn_norm", true);
  c.eps = value_or<double>(j, "eps", 1e-6);
  read_patch(c);
  // ti2v (Wan 2.2 TI2V-5B): t2v's parameters; the image enters as the first latent frame.
  VIDAX_CHECK(c.model_type == "t2v" || c.model_type == "i2v" || c.model_type == "flf2v" || c.model_type == "ti2v" ||
                  c.model_type == "vace",
              "Wan DiT config: model_type '" << c.model_type << "' is not t2v, i2v, flf2v, ti2v or vace");
  VIDAX_CHECK(c.model_type == "vace" || (!has(j, "vace_layers") && !has(j, "vace_in_dim")) ||
                  (j.value("vace_layers", Json()).is_null() && j.value("vace_in_dim", Json()).is_null()),
              "Wan DiT config: vace_layers / vace_in_dim given for model_type '" << c.model_type << "'");
  if (c.model_type == "vace") {
    // VaceWanModel.__init__: vace_layers None -> range(0, num_layers, 2); vace_in_dim None -> in_dim.
    if (has(j, "vace_layers") && !j["vace_layers"].is_null()) {
      c.vace_layers = value_or<std::vector<int64_t>>(j, "vace_layers", {});
    } else {
      for (int64_t i = 0; i < c.num_layers; i += 2) c.vace_layers.push_back(i);
    }
    c.vace_in_dim = has(j, "vace_in_dim") && !j["vace_in_dim"].is_null() ? value_or<int64_t>(j, "vace_in_dim", 0)
                                                                         : c.in_dim;
    check_vace(c);
  }
  return c;
}

Json DitConfig::to_json() const {
  Json j{{"model_type", model_type}, {"patch_size", patch_size}, {"text_len", text_len},
         {"in_dim", in_dim},         {"dim", dim},               {"ffn_dim", ffn_dim},
         {"freq_dim", freq_dim},     {"text_dim", text_dim},     {"out_dim", out_dim},
         {"num_heads", num_heads},   {"num_layers", num_layers}, {"qk_norm", qk_norm},
         {"cross_attn_norm", cross_attn_norm}, {"eps", eps}};
  if (model_type == "vace") {
    j["vace_layers"] = vace_layers;
    j["vace_in_dim"] = vace_in_dim;
  }
  return j;
}

ParamSpec dit_params(const DitConfig& c) {
  ParamSpec s;
  const int64_t d = c.dim;
  auto linear = [&](const std::string& n, int64_t out, int64_t in) {
    s.add(n + ".weight", {out, in});
    s.add(n + ".bias", {out});
  };
  s.add("patch_embedding.weight", {d, c.in_dim, c.patch_size[0], c.patch_size[1], c.patch_size[2]});
  s.add("patch_embedding.bias", {d});
  linear("text_embedding.0", d, c.text_dim);
  linear("text_embedding.2", d, d);
  linear("time_embedding.0", d, c.freq_dim);
  linear("time_embedding.2", d, d);
  linear("time_projection.1", 6 * d, d);
  const bool image = c.model_type == "i2v" || c.model_type == "flf2v";
  // Main blocks, then (VACE) the vace blocks: a WanAttentionBlock each, plus before_proj
  // (the one at layer 0) and after_proj.
  const int64_t n_vace = static_cast<int64_t>(c.vace_layers.size());
  for (int64_t k = 0; k < c.num_layers + n_vace; ++k) {
    const bool vace = k >= c.num_layers;
    const int64_t i = vace ? k - c.num_layers : k;
    const std::string b = (vace ? "vace_blocks." : "blocks.") + std::to_string(i) + ".";
    if (vace) {
      if (c.vace_layers[static_cast<size_t>(i)] == 0) linear(b + "before_proj", d, d);
      linear(b + "after_proj", d, d);
    }
    for (const char* attn : {"self_attn.", "cross_attn."}) {
      for (const char* p : {"q", "k", "v", "o"}) linear(b + attn + p, d, d);
      if (c.qk_norm) {
        s.add(b + attn + "norm_q.weight", {d});
        s.add(b + attn + "norm_k.weight", {d});
      }
    }
    if (image) {  // WanI2VCrossAttention
      linear(b + "cross_attn.k_img", d, d);
      linear(b + "cross_attn.v_img", d, d);
      if (c.qk_norm) s.add(b + "cross_attn.norm_k_img.weight", {d});
    }
    if (c.cross_attn_norm) {  // norm3: the only affine LayerNorm of a block
      s.add(b + "norm3.weight", {d});
      s.add(b + "norm3.bias", {d});
    }
    linear(b + "ffn.0", c.ffn_dim, d);
    linear(b + "ffn.2", d, c.ffn_dim);
    s.add(b + "modulation", {1, 6, d});
  }
  if (c.model_type == "vace") {
    s.add("vace_patch_embedding.weight", {d, c.vace_in_dim, c.patch_size[0], c.patch_size[1], c.patch_size[2]});
    s.add("vace_patch_embedding.bias", {d});
  }
  linear("head.head", c.out_dim * c.patch_size[0] * c.patch_size[1] * c.patch_size[2], d);
  s.add("head.modulation", {1, 2, d});
  if (image) {  // MLPProj over 1280-wide CLIP features
    s.add("img_emb.proj.0.weight", {1280});
    s.add("img_emb.proj.0.bias", {1280});
    linear("img_emb.proj.1", 1280, 1280);
    linear("img_emb.proj.3", d, 1280);
    s.add("img_emb.proj.4.weight", {d});
    s.add("img_emb.proj.4.bias", {d});
    if (c.model_type == "flf2v") s.add("img_emb.emb_pos", {1, 514, 1280});
  }
  return s;
}

// diffusers' TRANSFORMER_KEYS_RENAME_DICT, as anchored rules (engine <- diffusers).
static const SuffixTable kDitDiffusers = {
    {"patch_embedding.{p}", "patch_embedding.{p}"},
    {"text_embedding.0.{p}", "condition_embedder.text_embedder.linear_1.{p}"},
    {"text_embedding.2.{p}", "condition_embedder.text_embedder.linear_2.{p}"},
    {"time_embedding.0.{p}", "condition_embedder.time_embedder.linear_1.{p}"},
    {"time_embedding.2.{p}", "condition_embedder.time_embedder.linear_2.{p}"},
    {"time_projection.1.{p}", "condition_embedder.time_proj.{p}"},
    {"blocks.{i}.self_attn.q.{p}", "blocks.{i}.attn1.to_q.{p}"},
    {"blocks.{i}.self_attn.k.{p}", "blocks.{i}.attn1.to_k.{p}"},
    {"blocks.{i}.self_attn.v.{p}", "blocks.{i}.attn1.to_v.{p}"},
    {"blocks.{i}.self_attn.o.{p}", "blocks.{i}.attn1.to_out.0.{p}"},
    {"blocks.{i}.self_attn.norm_q.{p}", "blocks.{i}.attn1.norm_q.{p}"},
    {"blocks.{i}.self_attn.norm_k.{p}", "blocks.{i}.attn1.norm_k.{p}"},
    {"blocks.{i}.cross_attn.q.{p}", "blocks.{i}.attn2.to_q.{p}"},
    {"blocks.{i}.cross_attn.k.{p}", "blocks.{i}.attn2.to_k.{p}"},
    {"blocks.{i}.cross_attn.v.{p}", "blocks.{i}.attn2.to_v.{p}"},
    {"blocks.{i}.cross_attn.o.{p}", "blocks.{i}.attn2.to_out.0.{p}"},
    {"blocks.{i}.cross_attn.norm_q.{p}", "blocks.{i}.attn2.norm_q.{p}"},
    {"blocks.{i}.cross_attn.norm_k.{p}", "blocks.{i}.attn2.norm_k.{p}"},
    {"blocks.{i}.cross_attn.k_img.{p}", "blocks.{i}.attn2.add_k_proj.{p}"},
    {"blocks.{i}.cross_attn.v_img.{p}", "blocks.{i}.attn2.add_v_proj.{p}"},
    {"blocks.{i}.cross_attn.norm_k_img.{p}", "blocks.{i}.attn2.norm_added_k.{p}"},
    // The cross-attention LayerNorm is norm3 in WanModel and norm2 in diffusers
    // (WanModel's norm2, the FFN norm, has no parameters).
    {"blocks.{i}.norm3.{p}", "blocks.{i}.norm2.{p}"},
    {"blocks.{i}.ffn.0.{p}", "blocks.{i}.ffn.net.0.proj.{p}"},
    {"blocks.{i}.ffn.2.{p}", "blocks.{i}.ffn.net.2.{p}"},
    {"blocks.{i}.modulation", "blocks.{i}.scale_shift_table"},
    {"head.head.{p}", "proj_out.{p}"},
    {"head.modulation", "scale_shift_table"},
    {"img_emb.proj.0.{p}", "condition_embedder.image_embedder.norm1.{p}"},
    {"img_emb.proj.1.{p}", "condition_embedder.image_embedder.ff.net.0.proj.{p}"},
    {"img_emb.proj.3.{p}", "condition_embedder.image_embedder.ff.net.2.{p}"},
    {"img_emb.proj.4.{p}", "condition_embedder.image_embedder.norm2.{p}"},
    {"img_emb.emb_pos", "condition_embedder.image_embedder.pos_embed"},
};



KeyMap dit_keymap(const std::string& layout) {
  if (layout == "original") return original_identity();
  // ComfyUI single files carry WanModel names under the diffusion-model prefix.
  if (layout == "comfyui") return with_key_prefix(original_identity(), "model.diffusion_model.", "comfyui");
  if (layout == "diffusers") {
    KeyMap m{"diffusers", {}};
    add_nested(m.rules, "", "", kDitDiffusers);
    // WanVACETransformer3DModel: its vace blocks are named as the main blocks, with proj_in /
    // proj_out for VaceWanAttentionBlock's before_proj / after_proj.
    SuffixTable vace{{"vace_patch_embedding.{p}", "vace_patch_embedding.{p}"},
                     {"vace_blocks.{i}.before_proj.{p}", "vace_blocks.{i}.proj_in.{p}"},
                     {"vace_blocks.{i}.after_proj.{p}", "vace_blocks.{i}.proj_out.{p}"}};
    for (const auto& [e, k] : kDitDiffusers)
      if (std::string(e).rfind("blocks.{i}.", 0) == 0) vace.push_back({"vace_" + std::string(e), "vace_" + std::string(k)});
    add_nested(m.rules, "", "", vace);
    return m;
  }
  throw Error(msg() << "wan2.1-dit: unknown layout '" << layout << "' (original, diffusers, comfyui)");
}

// ===========================================================================
// VAE (WanVAE_)
// ===========================================================================

VaeConfig VaeConfig::from_json(const Json& j) {
  VIDAX_CHECK((has(j, "dim") || has(j, "base_dim")) && has(j, "z_dim"),
              "not a Wan VAE config (WanVAE_ args or AutoencoderKLWan config): " << j.dump());
  VaeConfig c;
  c.dim = has(j, "base_dim") ? required<int64_t>(j, "base_dim") : required<int64_t>(j, "dim");
  c.z_dim = required<int64_t>(j, "z_dim");
  c.num_res_blocks = value_or<int64_t>(j, "num_res_blocks", c.num_res_blocks);
  c.dim_mult = value_or(j, "dim_mult", c.dim_mult);
  c.attn_scales = value_or(j, "attn_scales", c.attn_scales);
  c.temperal_downsample = value_or(j, "temperal_downsample", c.temperal_downsample);
  VIDAX_CHECK(!c.dim_mult.empty(), "Wan VAE config: empty dim_mult");
  VIDAX_CHECK(c.temperal_downsample.size() + 1 == c.dim_mult.size(),
              "Wan VAE config: temperal_downsample needs len(dim_mult)-1 = " << c.dim_mult.size() - 1 << " entries");
  // Wan 2.2's VAE (z_dim 48, is_residual) has other module names: not this component.
  VIDAX_CHECK(!value_or<bool>(j, "is_residual", false), "Wan 2.2 VAE (is_residual) is not the Wan 2.1 VAE");
  return c;
}

Json VaeConfig::to_json() const {
  return Json{{"dim", dim},
              {"z_dim", z_dim},
              {"dim_mult", dim_mult},
              {"num_res_blocks", num_res_blocks},
              {"attn_scales", attn_scales},
              {"temperal_downsample", temperal_downsample}};
}

namespace {

struct VaeSpecBuilder {
  ParamSpec& s;
  void conv3d(const std::string& n, int64_t out, int64_t in, int64_t kt, int64_t kh, int64_t kw) {
    s.add(n + ".weight", {out, in, kt, kh, kw});
    s.add(n + ".bias", {out});
  }
  void residual(const std::string& p, int64_t in, int64_t out) {  // ResidualBlock
    s.add(p + "residual.0.gamma", {in, 1, 1, 1});
    conv3d(p + "residual.2", out, in, 3, 3, 3);
    s.add(p + "residual.3.gamma", {out, 1, 1, 1});
    conv3d(p + "residual.6", out, out, 3, 3, 3);
    if (in != out) conv3d(p + "shortcut", out, in, 1, 1, 1);
  }
  void attention(const std::string& p, int64_t d) {  // AttentionBlock (per-frame, 2D convs)
    s.add(p + "norm.gamma", {d, 1, 1});
    s.add(p + "to_qkv.weight", {3 * d, d, 1, 1});
    s.add(p + "to_qkv.bias", {3 * d});
    s.add(p + "proj.weight", {d, d, 1, 1});
    s.add(p + "proj.bias", {d});
  }
  void resample(const std::string& p, int64_t d, const std::string& mode) {  // Resample
    int64_t out = mode.rfind("upsample", 0) == 0 ? d / 2 : d;
    s.add(p + "resample.1.weight", {out, d, 3, 3});
    s.add(p + "resample.1.bias", {out});
    if (mode == "upsample3d") conv3d(p + "time_conv", 2 * d, d, 3, 1, 1);
    if (mode == "downsample3d") conv3d(p + "time_conv", d, d, 3, 1, 1);
  }
};

bool in_scales(const std::vector<double>& scales, double s) {
  for (double x : scales)
    if (std::fabs(x - s) < 1e-12) return true;
  return false;
}

}  // namespace

ParamSpec vae_params(const VaeConfig& c) {
  ParamSpec s;
  VaeSpecBuilder b{s};
  const size_t levels = c.dim_mult.size();
  // Encoder3d: dims = dim * [1] + dim_mult
  std::vector<int64_t> dims{c.dim};
  for (int64_t m : c.dim_mult) dims.push_back(c.dim * m);
  b.conv3d("encoder.conv1", dims[0], 3, 3, 3, 3);
  int idx = 0;
  double scale = 1.0;
  int64_t out_dim = dims[0];
  for (size_t i = 0; i < levels; ++i) {
    int64_t in_dim = dims[i];
    out_dim = dims[i + 1];
    for (int64_t r = 0; r < c.num_res_blocks; ++r) {
      b.residual("encoder.downsamples." + std::to_string(idx++) + ".", in_dim, out_dim);
      if (in_scales(c.attn_scales, scale)) b.attention("encoder.downsamples." + std::to_string(idx++) + ".", out_dim);
      in_dim = out_dim;
    }
    if (i != levels - 1) {
      b.resample("encoder.downsamples." + std::to_string(idx++) + ".", out_dim,
                 c.temperal_downsample[i] ? "downsample3d" : "downsample2d");
      scale /= 2.0;
    }
  }
  b.residual("encoder.middle.0.", out_dim, out_dim);
  b.attention("encoder.middle.1.", out_dim);
  b.residual("encoder.middle.2.", out_dim, out_dim);
  s.add("encoder.head.0.gamma", {out_dim, 1, 1, 1});
  b.conv3d("encoder.head.2", 2 * c.z_dim, out_dim, 3, 3, 3);
  // WanVAE_: conv1 (mu/logvar 1x1x1) and conv2 (latent 1x1x1)
  b.conv3d("conv1", 2 * c.z_dim, 2 * c.z_dim, 1, 1, 1);
  b.conv3d("conv2", c.z_dim, c.z_dim, 1, 1, 1);
  // Decoder3d: dims = dim * [dim_mult[-1]] + reversed(dim_mult); temporal upsample = reversed downsample.
  std::vector<int64_t> ddims{c.dim * c.dim_mult.back()};
  for (size_t i = levels; i-- > 0;) ddims.push_back(c.dim * c.dim_mult[i]);
  std::vector<bool> temperal_upsample(c.temperal_downsample.rbegin(), c.temperal_downsample.rend());
  b.conv3d("decoder.conv1", ddims[0], c.z_dim, 3, 3, 3);
  b.residual("decoder.middle.0.", ddims[0], ddims[0]);
  b.attention("decoder.middle.1.", ddims[0]);
  b.residual("decoder.middle.2.", ddims[0], ddims[0]);
  idx = 0;
  scale = 1.0 / std::pow(2.0, static_cast<double>(levels) - 2);
  for (size_t i = 0; i < levels; ++i) {
    int64_t in_dim = ddims[i];
    out_dim = ddims[i + 1];
    // Decoder3d halves the input of levels 1..3: the previous Resample halved the channels.
    if (i == 1 || i == 2 || i == 3) in_dim /= 2;
    for (int64_t r = 0; r < c.num_res_blocks + 1; ++r) {
      b.residual("decoder.upsamples." + std::to_string(idx++) + ".", in_dim, out_dim);
      if (in_scales(c.attn_scales, scale)) b.attention("decoder.upsamples." + std::to_string(idx++) + ".", out_dim);
      in_dim = out_dim;
    }
    if (i != levels - 1) {
      b.resample("decoder.upsamples." + std::to_string(idx++) + ".", out_dim,
                 temperal_upsample[i] ? "upsample3d" : "upsample2d");
      scale *= 2.0;
    }
  }
  s.add("decoder.head.0.gamma", {out_dim, 1, 1, 1});
  b.conv3d("decoder.head.2", 3, out_dim, 3, 3, 3);
  return s;
}

// Sub-module tables (engine suffix <- diffusers suffix), from convert_vae().
static const SuffixTable kVaeResidual = {
    {"residual.0.gamma", "norm1.gamma"}, {"residual.2.{p}", "conv1.{p}"},   {"residual.3.gamma", "norm2.gamma"},
    {"residual.6.{p}", "conv2.{p}"},     {"shortcut.{p}", "conv_shortcut.{p}"},
};
static const SuffixTable kVaeAttention = {
    {"norm.gamma", "norm.gamma"}, {"to_qkv.{p}", "to_qkv.{p}"}, {"proj.{p}", "proj.{p}"}};
static const SuffixTable kVaeResample = {{"resample.1.{p}", "resample.1.{p}"}, {"time_conv.{p}", "time_conv.{p}"}};

KeyMap vae_keymap(const std::string& layout, const VaeConfig& c) {
  if (layout == "original") return original_identity();
  if (layout == "comfyui") return with_key_prefix(original_identity(), "first_stage_model.", "comfyui");
  VIDAX_CHECK(layout == "diffusers", "wan2.1-vae: unknown layout '" << layout << "' (original, diffusers, comfyui)");
  VIDAX_CHECK(c.attn_scales.empty(), "wan2.1-vae: the diffusers layout is mapped only without attention in the "
                                     "down/up blocks (attn_scales = [], as every Wan 2.1 VAE)");
  KeyMap m{"diffusers", {}};
  auto& r = m.rules;
  r.push_back(key_rule("encoder.conv1.{p}", "encoder.conv_in.{p}"));
  r.push_back(key_rule("decoder.conv1.{p}", "decoder.conv_in.{p}"));
  r.push_back(key_rule("conv1.{p}", "quant_conv.{p}"));
  r.push_back(key_rule("conv2.{p}", "post_quant_conv.{p}"));
  for (const std::string part : {"encoder", "decoder"}) {
    add_nested(r, part + ".middle.0.", part + ".mid_block.resnets.0.", kVaeResidual);
    add_nested(r, part + ".middle.1.", part + ".mid_block.attentions.0.", kVaeAttention);
    add_nested(r, part + ".middle.2.", part + ".mid_block.resnets.1.", kVaeResidual);
    r.push_back(key_rule(part + ".head.0.gamma", part + ".norm_out.gamma"));
    r.push_back(key_rule(part + ".head.2.{p}", part + ".conv_out.{p}"));
  }
  // Encoder: the flat Sequential keeps its indices.
  add_nested(r, "encoder.downsamples.{n}.", "encoder.down_blocks.{n}.", kVaeResidual);
  add_nested(r, "encoder.downsamples.{n}.", "encoder.down_blocks.{n}.", kVaeResample);
  // Decoder: the flat Sequential is regrouped into up_blocks of
  // (num_res_blocks + 1) resnets followed by one upsampler (none in the last).
  const int64_t per_block = c.num_res_blocks + 2;
  for (size_t blk = 0; blk < c.dim_mult.size(); ++blk) {
    const std::string up = "decoder.up_blocks." + std::to_string(blk) + ".";
    for (int64_t j = 0; j <= c.num_res_blocks; ++j)
      add_nested(r, "decoder.upsamples." + std::to_string(blk * per_block + j) + ".",
                 up + "resnets." + std::to_string(j) + ".", kVaeResidual);
    if (blk + 1 != c.dim_mult.size())
      add_nested(r, "decoder.upsamples." + std::to_string(blk * per_block + c.num_res_blocks + 1) + ".",
                 up + "upsamplers.0.", kVaeResample);
  }
  return m;
}

KeyMap vae22_keymap(const std::string& layout, size_t levels, int64_t num_res_blocks) {
  if (layout == "original") return original_identity();
  VIDAX_CHECK(layout == "diffusers", "wan2.2-vae: unknown layout '" << layout << "' (original, diffusers)");
  VIDAX_CHECK(levels >= 1 && num_res_blocks >= 1,
              "wan2.2-vae: " << levels << " levels of " << num_res_blocks << " residual blocks is no Wan 2.2 VAE");
  KeyMap m{"diffusers", {}};
  auto& r = m.rules;
  // What the two VAEs share: the outer convs, the middle blocks, the heads.
  r.push_back(key_rule("encoder.conv1.{p}", "encoder.conv_in.{p}"));
  r.push_back(key_rule("decoder.conv1.{p}", "decoder.conv_in.{p}"));
  r.push_back(key_rule("conv1.{p}", "quant_conv.{p}"));
  r.push_back(key_rule("conv2.{p}", "post_quant_conv.{p}"));
  for (const std::string part : {"encoder", "decoder"}) {
    add_nested(r, part + ".middle.0.", part + ".mid_block.resnets.0.", kVaeResidual);
    add_nested(r, part + ".middle.1.", part + ".mid_block.attentions.0.", kVaeAttention);
    add_nested(r, part + ".middle.2.", part + ".mid_block.resnets.1.", kVaeResidual);
    r.push_back(key_rule(part + ".head.0.gamma", part + ".norm_out.gamma"));
    r.push_back(key_rule(part + ".head.2.{p}", part + ".conv_out.{p}"));
  }
  // Each level is a nested Sequential (Down_ResidualBlock / Up_ResidualBlock): its residual blocks
  // (R in the encoder, R + 1 in the decoder), then its resample (none in the encoder's last level;
  // the decoder's last has none either, the map's rule then simply matches nothing).
  for (size_t lvl = 0; lvl < levels; ++lvl) {
    const std::string l = std::to_string(lvl);
    const std::string enc = "encoder.downsamples." + l + ".downsamples.", dec = "decoder.upsamples." + l + ".upsamples.";
    for (int64_t j = 0; j < num_res_blocks; ++j)
      add_nested(r, enc + std::to_string(j) + ".", "encoder.down_blocks." + l + ".resnets." + std::to_string(j) + ".",
                 kVaeResidual);
    add_nested(r, enc + std::to_string(num_res_blocks) + ".", "encoder.down_blocks." + l + ".downsampler.", kVaeResample);
    for (int64_t j = 0; j <= num_res_blocks; ++j)
      add_nested(r, dec + std::to_string(j) + ".", "decoder.up_blocks." + l + ".resnets." + std::to_string(j) + ".",
                 kVaeResidual);
    add_nested(r, dec + std::to_string(num_res_blocks + 1) + ".", "decoder.up_blocks." + l + ".upsampler.", kVaeResample);
  }
  return m;
}

std::string vae22_layout_of(const std::vector<std::string>& names) {
  for (const auto& n : names)
    if (n.rfind("encoder.conv_in.", 0) == 0 || n.rfind("decoder.conv_in.", 0) == 0) return "diffusers";
  return "original";
}

// ===========================================================================
// Components
// ===========================================================================

namespace {

class DitComponent : public Component {
 public:
  std::string name() const override { return "wan2.1-dit"; }
  std::string family() const override { return "wan2.1"; }
  std::vector<std::string> layouts() const override { return {"original", "diffusers", "comfyui"}; }
  Json default_config() const override { return DitConfig::t2v_1_3b().to_json(); }
  std::optional<Json> read_config(const Json& j) const override {
    bool ours = has(j, "num_attention_heads") || (has(j, "dim") && has(j, "num_layers") &&
                                                   (has(j, "ffn_dim") || has(j, "freq_dim")) && !has(j, "dim_attn"));
    if (!ours) return std::nullopt;
    return DitConfig::from_json(j).to_json();
  }
  Json infer_config(const TensorSource& src, const std::string& layout) const override {
    KeyMap m = dit_keymap(layout);
    DitConfig c;
    auto info = [&](const std::string& n) { return find_param(src, m, n); };
    if (auto* t = info("patch_embedding.weight"); t && t->shape.size() == 5) {
      c.dim = t->shape[0];
      c.in_dim = t->shape[1];
      c.patch_size = {t->shape[2], t->shape[3], t->shape[4]};
    }
    // A partial source (the shapes a LoRA implies, translate/lora.h) may lack the patch
    // embedding: block 0's attention projections are [dim, dim].
    if (!info("patch_embedding.weight"))
      for (const char* p : {"self_attn.q", "self_attn.k", "self_attn.v", "self_attn.o", "cross_attn.q", "cross_attn.o"})
        if (auto* t = info("blocks.0." + std::string(p) + ".weight"); t && t->shape.size() == 2) {
          c.dim = t->shape[0];
          break;
        }
    if (auto* t = info("text_embedding.0.weight"); t && t->shape.size() == 2) c.text_dim = t->shape[1];
    if (auto* t = info("time_embedding.0.weight"); t && t->shape.size() == 2) c.freq_dim = t->shape[1];
    if (auto* t = info("blocks.0.ffn.0.weight"); t && t->shape.size() == 2) c.ffn_dim = t->shape[0];
    else if (auto* t2 = info("blocks.0.ffn.2.weight"); t2 && t2->shape.size() == 2) c.ffn_dim = t2->shape[1];
    if (auto* t = info("head.head.weight"); t && t->shape.size() == 2) {
      int64_t patch = c.patch_size[0] * c.patch_size[1] * c.patch_size[2];
      if (patch > 0 && t->shape[0] % patch == 0) c.out_dim = t->shape[0] / patch;
    }
    c.num_layers = count_layers(src, m, "self_attn.q.weight");
    // The checkpoint does not store the head count; every Wan 2.1/2.2 DiT uses head_dim 128.
    c.num_heads = c.dim % 128 == 0 ? c.dim / 128 : 1;
    c.qk_norm = info("blocks.0.self_attn.norm_q.weight") != nullptr;
    c.cross_attn_norm = info("blocks.0.norm3.weight") != nullptr;
    if (info("blocks.0.cross_attn.k_img.weight")) c.model_type = info("img_emb.emb_pos") ? "flf2v" : "i2v";
    if (auto* t = info("vace_patch_embedding.weight"); t && t->shape.size() == 5) {
      // The checkpoint stores how many vace blocks there are, not where their hints go: every
      // published VACE model spaces them evenly from layer 0 (1.3B: 0, 5, .., 25 of 30; 14B: 0, 5,
      // .., 35 of 40), which is what is assumed here; a config.json says otherwise when it has to.
      c.model_type = "vace";
      c.vace_in_dim = t->shape[1];
      const int64_t n = count_layers(src, m, "after_proj.weight", "vace_blocks.");
      const int64_t step = n > 0 && c.num_layers % n == 0 ? c.num_layers / n : 2;
      for (int64_t i = 0; i < c.num_layers && static_cast<int64_t>(c.vace_layers.size()) < std::max<int64_t>(n, 1);
           i += step)
        c.vace_layers.push_back(i);
    }
    return c.to_json();
  }
  ParamSpec params(const Json& cfg) const override { return dit_params(DitConfig::from_json(cfg)); }
  KeyMap keymap(const std::string& layout, const Json&) const override { return dit_keymap(layout); }
  std::string variant(const Json& cfg) const override {
    DitConfig c = DitConfig::from_json(cfg);
    auto same = [&](DitConfig p) {  // compare what shapes decide
      return p.dim == c.dim && p.ffn_dim == c.ffn_dim && p.num_layers == c.num_layers && p.in_dim == c.in_dim &&
             p.out_dim == c.out_dim && p.model_type == c.model_type && p.text_dim == c.text_dim &&
             p.freq_dim == c.freq_dim && p.patch_size == c.patch_size;
    };
    if (same(DitConfig::t2v_1_3b())) return "t2v-1.3B";
    if (same(DitConfig::t2v_14b())) return "t2v-14B";
    if (same(DitConfig::i2v_14b())) return "i2v-14B";
    if (same(DitConfig::ti2v_5b())) return "ti2v-5B";
    if (same(DitConfig::vace_1_3b()) && c.vace_layers == DitConfig::vace_1_3b().vace_layers) return "vace-1.3B";
    if (same(DitConfig::vace_14b()) && c.vace_layers == DitConfig::vace_14b().vace_layers) return "vace-14B";
    DitConfig flf = DitConfig::i2v_14b();
    flf.model_type = "flf2v";
    if (same(flf)) return "flf2v-14B";
    return "custom";
  }
};

// The whole VAE, or one half: golden files for decode (encode) hold only the
// decoder (encoder) and its 1x1x1 latent conv, as does an engine that only decodes.
enum class VaePart { Whole, Encoder, Decoder };

bool in_part(VaePart part, const std::string& name) {
  switch (part) {
    case VaePart::Whole: return true;
    case VaePart::Encoder: return name.rfind("encoder.", 0) == 0 || name.rfind("conv1.", 0) == 0;
    case VaePart::Decoder: return name.rfind("decoder.", 0) == 0 || name.rfind("conv2.", 0) == 0;
  }
  return false;
}

class VaeComponent : public Component {
 public:
  explicit VaeComponent(VaePart part) : part_(part) {}
  std::string name() const override {
    return part_ == VaePart::Whole ? "wan2.1-vae" : part_ == VaePart::Encoder ? "wan2.1-vae-encoder"
                                                                               : "wan2.1-vae-decoder";
  }
  std::string family() const override { return "wan2.1"; }
  std::vector<std::string> layouts() const override { return {"original", "diffusers", "comfyui"}; }
  Json default_config() const override { return VaeConfig{}.to_json(); }
  std::optional<Json> read_config(const Json& j) const override {
    if (!(has(j, "z_dim") && (has(j, "base_dim") || has(j, "dim_mult")))) return std::nullopt;
    return VaeConfig::from_json(j).to_json();
  }
  Json infer_config(const TensorSource& src, const std::string& layout) const override {
    VaeConfig c;
    KeyMap m = vae_keymap(layout, c);
    if (auto* t = find_param(src, m, "encoder.conv1.weight"); t && !t->shape.empty()) c.dim = t->shape[0];
    if (auto* t = find_param(src, m, "conv1.weight"); t && !t->shape.empty()) c.z_dim = t->shape[0] / 2;
    if (auto* t = find_param(src, m, "conv2.weight"); t && !t->shape.empty()) c.z_dim = t->shape[0];
    if (!infer_levels(src, layout, c)) infer_levels_from_decoder(src, layout, c);
    return c.to_json();
  }
  ParamSpec params(const Json& cfg) const override {
    ParamSpec all = vae_params(VaeConfig::from_json(cfg)), out;
    for (auto& p : all.params)
      if (in_part(part_, p.name)) out.params.push_back(std::move(p));
    return out;
  }

 private:
  VaePart part_;

  static std::string prefix(const std::string& layout) { return layout == "comfyui" ? "first_stage_model." : ""; }
  // Number of distinct module indices under `prefix` (max index + 1; 0 when none).
  static int64_t count_indices(const TensorSource& src, const std::string& prefix) {
    int64_t mx = -1;
    for (const auto& n : src.names()) {
      if (n.rfind(prefix, 0) != 0) continue;
      size_t end = n.find('.', prefix.size());
      std::string idx = n.substr(prefix.size(), end == std::string::npos ? std::string::npos : end - prefix.size());
      if (!idx.empty() && idx.find_first_not_of("0123456789") == std::string::npos)
        mx = std::max<int64_t>(mx, std::stoll(idx));
    }
    return mx + 1;
  }

  // Decoder only: R from the first upsampler's position (original) or the
  // resnets of up block 0 (diffusers), L from the module count, the channels
  // from each level's first resnet (dim = the last level's width, dim_mult[0]
  // taken as 1 as in every Wan VAE), temporal upsampling from the time convs.
  static void infer_levels_from_decoder(const TensorSource& src, const std::string& layout, VaeConfig& c) {
    const std::string pre = prefix(layout);
    const bool diff = layout == "diffusers";
    const std::string dec = pre + (diff ? "decoder.up_blocks." : "decoder.upsamples.");
    int64_t L = 0, R = 0;
    if (diff) {
      L = count_indices(src, dec);
      R = count_indices(src, dec + "0.resnets.") - 1;
    } else {
      const int64_t D = count_indices(src, dec);
      int64_t first = -1;
      for (int64_t k = 0; k < D && first < 0; ++k)
        if (src.contains(dec + std::to_string(k) + ".resample.1.weight")) first = k;
      if (first < 0) return;
      R = first - 1;
      if (R < 0 || (D + 1) % (R + 2) != 0) return;
      L = (D + 1) / (R + 2);
    }
    if (L <= 0 || R < 0) return;
    auto first_resnet = [&](int64_t level) {
      return diff ? dec + std::to_string(level) + ".resnets.0.conv1.weight"
                  : dec + std::to_string(level * (R + 2)) + ".residual.2.weight";
    };
    auto upsampler = [&](int64_t level) {
      return diff ? dec + std::to_string(level) + ".upsamplers.0.time_conv.weight"
                  : dec + std::to_string(level * (R + 2) + R + 1) + ".time_conv.weight";
    };
    const TensorInfo* last = src.find(first_resnet(L - 1));
    if (!last || last->shape.empty()) return;
    VaeConfig out = c;
    out.dim = last->shape[0];
    out.num_res_blocks = R;
    out.dim_mult.assign(static_cast<size_t>(L), 1);
    std::vector<bool> temporal_up;
    for (int64_t i = 0; i < L; ++i) {
      const TensorInfo* t = src.find(first_resnet(i));
      if (!t || t->shape.empty() || t->shape[0] % out.dim != 0) return;
      out.dim_mult[static_cast<size_t>(L - 1 - i)] = t->shape[0] / out.dim;
      if (i + 1 < L) temporal_up.push_back(src.contains(upsampler(i)));
    }
    out.temperal_downsample.assign(temporal_up.rbegin(), temporal_up.rend());
    c = out;
  }

  // The level structure from the encoder's module indices (no attention in the
  // down blocks; diffusers keeps the same flat indices): R = the first
  // Resample's index, L*R + L-1 entries in all. Leaves `c` as is when the keys
  // do not fit that pattern.
  static bool infer_levels(const TensorSource& src, const std::string& layout, VaeConfig& c) {
    const std::string pre = prefix(layout);
    const std::string enc = pre + (layout == "diffusers" ? "encoder.down_blocks." : "encoder.downsamples.");
    const int64_t E = count_indices(src, enc);
    if (E <= 0) return false;
    // The encoder Sequential: per level R res-blocks then a Resample (none after the last).
    int64_t first = -1;
    for (int64_t k = 0; k < E && first < 0; ++k)
      if (src.contains(enc + std::to_string(k) + ".resample.1.weight")) first = k;
    const int64_t R = first < 0 ? E : first;
    if (R <= 0 || (E + 1) % (R + 1) != 0) return false;
    const int64_t L = (E + 1) / (R + 1);
    VaeConfig out = c;
    out.num_res_blocks = R;
    out.dim_mult.clear();
    out.temperal_downsample.clear();
    const std::string conv = layout == "diffusers" ? ".conv1.weight" : ".residual.2.weight";
    for (int64_t i = 0; i < L; ++i) {
      const TensorInfo* t = src.find(enc + std::to_string(i * (R + 1)) + conv);
      if (!t || t->shape.empty() || c.dim <= 0 || t->shape[0] % c.dim != 0) return false;
      out.dim_mult.push_back(t->shape[0] / c.dim);
      if (i + 1 < L) out.temperal_downsample.push_back(src.contains(enc + std::to_string(i * (R + 1) + R) +
                                                                     ".time_conv.weight"));
    }
    c = out;
    return true;
  }
  KeyMap keymap(const std::string& layout, const Json& cfg) const override {
    return vae_keymap(layout, VaeConfig::from_json(cfg));
  }
  std::string variant(const Json& cfg) const override {
    return VaeConfig::from_json(cfg) == VaeConfig{} ? "wan2.1-vae" : "custom";
  }
};

}  // namespace

const Component& dit_component() {
  static const DitComponent c;
  return c;
}
const Component& vae_component() {
  static const VaeComponent c(VaePart::Whole);
  return c;
}
const Component& vae_encoder_component() {
  static const VaeComponent c(VaePart::Encoder);
  return c;
}
const Component& vae_decoder_component() {
  static const VaeComponent c(VaePart::Decoder);
  return c;
}
}  // namespace vidax::translate::wan
