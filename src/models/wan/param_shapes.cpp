#include "models/wan/param_shapes.h"

#include "core/error.h"

using nlohmann::json;

namespace vidax::wan {

ParamShapes wan_dit_param_shapes(const json& c) {
  const int64_t dim = c.at("dim"), ffn = c.at("ffn_dim"), freq = c.at("freq_dim"), text = c.at("text_dim");
  const int64_t in = c.at("in_dim"), out = c.at("out_dim"), layers = c.at("num_layers");
  const auto patch = c.at("patch_size").get<std::vector<int64_t>>();
  VIDAX_CHECK(c.value("model_type", std::string("t2v")) == "t2v", "only the t2v DiT is supported here");
  ParamShapes p;
  auto linear = [&](const std::string& n, int64_t o, int64_t i) {
    p.push_back({n + ".weight", {o, i}});
    p.push_back({n + ".bias", {o}});
  };
  p.push_back({"patch_embedding.weight", {dim, in, patch[0], patch[1], patch[2]}});
  p.push_back({"patch_embedding.bias", {dim}});
  linear("text_embedding.0", dim, text);
  linear("text_embedding.2", dim, dim);
  linear("time_embedding.0", dim, freq);
  linear("time_embedding.2", dim, dim);
  linear("time_projection.1", 6 * dim, dim);
  for (int64_t i = 0; i < layers; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    for (const char* attn : {"self_attn", "cross_attn"}) {
      for (const char* proj : {"q", "k", "v", "o"}) linear(b + attn + "." + proj, dim, dim);
      p.push_back({b + attn + ".norm_q.weight", {dim}});
      p.push_back({b + attn + ".norm_k.weight", {dim}});
    }
    p.push_back({b + "norm3.weight", {dim}});
    p.push_back({b + "norm3.bias", {dim}});
    linear(b + "ffn.0", ffn, dim);
    linear(b + "ffn.2", dim, ffn);
    p.push_back({b + "modulation", {1, 6, dim}});
  }
  linear("head.head", patch[0] * patch[1] * patch[2] * out, dim);
  p.push_back({"head.modulation", {1, 2, dim}});
  return p;
}

namespace {

// Pieces of wan/modules/vae.py, each adding its parameters under a prefix.
struct VaeShapes {
  ParamShapes p;
  void conv3d(const std::string& n, int64_t o, int64_t i, int64_t kt, int64_t kh, int64_t kw) {
    p.push_back({n + ".weight", {o, i, kt, kh, kw}});
    p.push_back({n + ".bias", {o}});
  }
  void conv2d(const std::string& n, int64_t o, int64_t i, int64_t k) {
    p.push_back({n + ".weight", {o, i, k, k}});
    p.push_back({n + ".bias", {o}});
  }
  void residual(const std::string& n, int64_t in, int64_t out) {
    p.push_back({n + ".residual.0.gamma", {in, 1, 1, 1}});
    conv3d(n + ".residual.2", out, in, 3, 3, 3);
    p.push_back({n + ".residual.3.gamma", {out, 1, 1, 1}});
    conv3d(n + ".residual.6", out, out, 3, 3, 3);
    if (in != out) conv3d(n + ".shortcut", out, in, 1, 1, 1);
  }
  void attention(const std::string& n, int64_t d) {
    p.push_back({n + ".norm.gamma", {d, 1, 1}});
    conv2d(n + ".to_qkv", 3 * d, d, 1);
    conv2d(n + ".proj", d, d, 1);
  }
  void resample(const std::string& n, int64_t d, const std::string& mode) {
    if (mode == "upsample2d" || mode == "upsample3d") conv2d(n + ".resample.1", d / 2, d, 3);
    if (mode == "downsample2d" || mode == "downsample3d") conv2d(n + ".resample.1", d, d, 3);
    if (mode == "upsample3d") conv3d(n + ".time_conv", 2 * d, d, 3, 1, 1);
    if (mode == "downsample3d") conv3d(n + ".time_conv", d, d, 3, 1, 1);
  }
  void middle(const std::string& n, int64_t d) {
    residual(n + ".0", d, d);
    attention(n + ".1", d);
    residual(n + ".2", d, d);
  }
  void head(const std::string& n, int64_t in, int64_t out) {
    p.push_back({n + ".0.gamma", {in, 1, 1, 1}});
    conv3d(n + ".2", out, in, 3, 3, 3);
  }
};

}  // namespace

ParamShapes wan_vae_param_shapes(const json& c) {
  const int64_t dim = c.at("dim"), z = c.at("z_dim"), nres = c.at("num_res_blocks");
  const auto mult = c.at("dim_mult").get<std::vector<int64_t>>();
  const auto down = c.at("temperal_downsample").get<std::vector<bool>>();
  VIDAX_CHECK(c.at("attn_scales").empty(), "the demo VAE has no attention scales");
  VIDAX_CHECK(mult.size() == 4 && down.size() == 3, "the Wan VAE decoder is written for 4 levels");
  VaeShapes s;
  // Encoder3d(dim, 2 z, ...): dims = dim * [1] + dim_mult.
  std::vector<int64_t> dims{dim};
  for (int64_t m : mult) dims.push_back(dim * m);
  s.conv3d("encoder.conv1", dims[0], 3, 3, 3, 3);
  int64_t k = 0;
  for (size_t i = 0; i + 1 < dims.size(); ++i) {
    int64_t in = dims[i];
    const int64_t out = dims[i + 1];
    for (int64_t r = 0; r < nres; ++r, in = out) s.residual("encoder.downsamples." + std::to_string(k++), in, out);
    if (i != mult.size() - 1)
      s.resample("encoder.downsamples." + std::to_string(k++), out, down[i] ? "downsample3d" : "downsample2d");
  }
  s.middle("encoder.middle", dims.back());
  s.head("encoder.head", dims.back(), 2 * z);
  s.conv3d("conv1", 2 * z, 2 * z, 1, 1, 1);
  s.conv3d("conv2", z, z, 1, 1, 1);
  // Decoder3d: dims = dim * [dim_mult[-1]] + dim_mult[::-1]; temperal_upsample = reversed.
  std::vector<int64_t> ddims{dim * mult.back()};
  for (auto it = mult.rbegin(); it != mult.rend(); ++it) ddims.push_back(dim * *it);
  s.conv3d("decoder.conv1", ddims[0], z, 3, 3, 3);
  s.middle("decoder.middle", ddims[0]);
  k = 0;
  for (size_t i = 0; i + 1 < ddims.size(); ++i) {
    int64_t in = ddims[i];
    const int64_t out = ddims[i + 1];
    if (i == 1 || i == 2 || i == 3) in /= 2;  // the upsampler before halved the channels
    for (int64_t r = 0; r < nres + 1; ++r, in = out) s.residual("decoder.upsamples." + std::to_string(k++), in, out);
    if (i != mult.size() - 1)
      s.resample("decoder.upsamples." + std::to_string(k++), out, down[down.size() - 1 - i] ? "upsample3d" : "upsample2d");
  }
  s.head("decoder.head", ddims.back(), 3);
  return s.p;
}

ParamShapes umt5_param_shapes(const json& c) {
  const int64_t vocab = c.at("vocab"), dim = c.at("dim"), da = c.at("dim_attn"), dff = c.at("dim_ffn");
  const int64_t heads = c.at("num_heads"), layers = c.at("num_layers"), buckets = c.at("num_buckets");
  VIDAX_CHECK(!c.at("shared_pos").get<bool>(), "the demo text encoder is UMT5 (shared_pos false)");
  ParamShapes p;
  p.push_back({"token_embedding.weight", {vocab, dim}});
  for (int64_t i = 0; i < layers; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    p.push_back({b + "norm1.weight", {dim}});
    for (const char* n : {"q", "k", "v"}) p.push_back({b + "attn." + n + ".weight", {da, dim}});
    p.push_back({b + "attn.o.weight", {dim, da}});
    p.push_back({b + "norm2.weight", {dim}});
    p.push_back({b + "ffn.gate.0.weight", {dff, dim}});
    p.push_back({b + "ffn.fc1.weight", {dff, dim}});
    p.push_back({b + "ffn.fc2.weight", {dim, dff}});
    p.push_back({b + "pos_embedding.embedding.weight", {buckets, heads}});
  }
  p.push_back({"norm.weight", {dim}});
  return p;
}

}  // namespace vidax::wan
