#include "models/wan/dit_config.h"

#include "core/error.h"

namespace vidax::wan {

namespace {

template <class T>
void read_if(const nlohmann::json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  try {
    out = it->get<T>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(msg() << "Wan DiT config: field '" << key << "' has the wrong type (" << it->dump() << ")");
  }
}

void read_patch(const nlohmann::json& j, std::array<int64_t, 3>& out) {
  auto it = j.find("patch_size");
  if (it == j.end() || it->is_null()) return;
  VIDAX_CHECK(it->is_array() && it->size() == 3, "Wan DiT config: patch_size must be 3 integers, got " << it->dump());
  for (size_t i = 0; i < 3; ++i) out[i] = (*it)[i].get<int64_t>();
}

bool is_diffusers(const nlohmann::json& j) {
  if (j.contains("_class_name") && j["_class_name"].is_string())
    return j["_class_name"].get<std::string>() == "WanTransformer3DModel";
  return j.contains("num_attention_heads") || j.contains("attention_head_dim") || j.contains("in_channels");
}

}  // namespace

std::array<int64_t, 3> DiTConfig::rope_axis_dims() const {
  const int64_t d = head_dim();
  return {d - 4 * (d / 6), 2 * (d / 6), 2 * (d / 6)};
}

DiTConfig DiTConfig::from_json(const nlohmann::json& j) {
  VIDAX_CHECK(j.is_object(), "Wan DiT config must be a JSON object, got " << j.dump());
  DiTConfig c;
  if (is_diffusers(j)) {
    // diffusers WanTransformer3DModel.__init__ defaults
    c.layout = DiTLayout::Diffusers;
    int64_t heads = 40, head_dim = 128;
    c.in_dim = 16, c.out_dim = 16, c.text_dim = 4096, c.freq_dim = 256, c.ffn_dim = 13824, c.num_layers = 40;
    read_if(j, "num_attention_heads", heads);
    read_if(j, "attention_head_dim", head_dim);
    read_patch(j, c.patch_size);
    read_if(j, "in_channels", c.in_dim);
    c.out_dim = c.in_dim;  // out_channels = out_channels or in_channels
    read_if(j, "out_channels", c.out_dim);
    read_if(j, "text_dim", c.text_dim);
    read_if(j, "freq_dim", c.freq_dim);
    read_if(j, "ffn_dim", c.ffn_dim);
    read_if(j, "num_layers", c.num_layers);
    read_if(j, "cross_attn_norm", c.cross_attn_norm);
    read_if(j, "eps", c.eps);
    read_if(j, "rope_max_seq_len", c.rope_max_seq_len);
    c.num_heads = heads;
    c.dim = heads * head_dim;
    // WanAttention builds norm_q/norm_k unconditionally: the qk_norm field is never read.
    c.qk_norm = true;
    c.text_len = 512;  // WanPipeline pads prompts to max_sequence_length=512; I2V splits at 512
    bool image = j.contains("image_dim") && !j["image_dim"].is_null();
    bool flf = j.contains("pos_embed_seq_len") && !j["pos_embed_seq_len"].is_null();
    c.model_type = flf ? "flf2v" : image ? "i2v" : "t2v";
    read_if(j, "image_dim", c.image_dim);
  } else {
    VIDAX_CHECK(j.contains("dim") || j.contains("num_heads") || j.contains("_class_name"),
                "Wan DiT config is neither WanModel's init args nor a WanTransformer3DModel config: " << j.dump());
    c.layout = DiTLayout::Original;
    read_if(j, "model_type", c.model_type);
    read_patch(j, c.patch_size);
    read_if(j, "text_len", c.text_len);
    read_if(j, "in_dim", c.in_dim);
    read_if(j, "dim", c.dim);
    read_if(j, "ffn_dim", c.ffn_dim);
    read_if(j, "freq_dim", c.freq_dim);
    read_if(j, "text_dim", c.text_dim);
    read_if(j, "out_dim", c.out_dim);
    read_if(j, "num_heads", c.num_heads);
    read_if(j, "num_layers", c.num_layers);
    read_if(j, "qk_norm", c.qk_norm);
    read_if(j, "cross_attn_norm", c.cross_attn_norm);
    read_if(j, "eps", c.eps);
    if (j.contains("window_size") && j["window_size"].is_array()) {
      for (const auto& w : j["window_size"])
        VIDAX_CHECK(w.get<int64_t>() == -1, "Wan DiT config: local attention window_size "
                                                << j["window_size"].dump() << " is not supported (only (-1, -1))");
    }
  }
  c.validate();
  return c;
}

DiTConfig DiTConfig::preset(const std::string& name) {
  DiTConfig c;
  c.patch_size = {1, 2, 2};
  c.text_len = 512, c.in_dim = 16, c.out_dim = 16, c.freq_dim = 256, c.text_dim = 4096;
  if (name == "wan2.1-t2v-1.3b") {
    c.dim = 1536, c.ffn_dim = 8960, c.num_heads = 12, c.num_layers = 30;
  } else if (name == "wan2.1-t2v-14b") {
    c.dim = 5120, c.ffn_dim = 13824, c.num_heads = 40, c.num_layers = 40;
  } else {
    throw Error(msg() << "unknown Wan DiT preset '" << name << "' (known: wan2.1-t2v-1.3b, wan2.1-t2v-14b)");
  }
  c.validate();
  return c;
}

void DiTConfig::validate() const {
  VIDAX_CHECK(model_type == "t2v" || model_type == "i2v" || model_type == "flf2v",
              "Wan DiT: model_type '" << model_type << "' is not implemented (t2v, i2v, flf2v)");
  // WanI2VCrossAttention splits the context at the hard-coded T5_CONTEXT_TOKEN_NUMBER = 512.
  VIDAX_CHECK(!has_image_input() || text_len == 512,
              "Wan DiT: " << model_type << " needs text_len 512 (the reference splits image and text rows at 512), got "
                          << text_len);
  VIDAX_CHECK(dim > 0 && num_heads > 0 && dim % num_heads == 0,
              "Wan DiT: dim " << dim << " is not a multiple of num_heads " << num_heads);
  VIDAX_CHECK(head_dim() % 2 == 0, "Wan DiT: head dim " << head_dim() << " must be even (RoPE pairs)");
  VIDAX_CHECK(freq_dim > 0 && freq_dim % 2 == 0, "Wan DiT: freq_dim " << freq_dim << " must be even");
  for (int64_t p : patch_size) VIDAX_CHECK(p >= 1, "Wan DiT: patch_size entries must be >= 1");
  VIDAX_CHECK(in_dim > 0 && out_dim > 0 && ffn_dim > 0 && text_dim > 0 && text_len > 0 && num_layers >= 0,
              "Wan DiT: sizes must be positive (in_dim " << in_dim << ", out_dim " << out_dim << ", ffn_dim "
                                                         << ffn_dim << ", text_dim " << text_dim << ", text_len "
                                                         << text_len << ", num_layers " << num_layers << ")");
  VIDAX_CHECK(eps > 0, "Wan DiT: eps must be > 0");
  VIDAX_CHECK(rope_max_seq_len > 0, "Wan DiT: rope_max_seq_len must be > 0");
}

nlohmann::json DiTConfig::to_json() const {
  return {{"model_type", model_type}, {"patch_size", patch_size}, {"text_len", text_len}, {"in_dim", in_dim},
          {"dim", dim}, {"ffn_dim", ffn_dim}, {"freq_dim", freq_dim}, {"text_dim", text_dim},
          {"out_dim", out_dim}, {"num_heads", num_heads}, {"num_layers", num_layers},
          {"window_size", {-1, -1}}, {"qk_norm", qk_norm}, {"cross_attn_norm", cross_attn_norm}, {"eps", eps}};
}

}  // namespace vidax::wan
