// The Wan 2.2 VAE (vae2_2.py's WanVAE_, the 48-channel VAE of TI2V-5B) as a translator component,
// "wan2.2-vae", so that `vidax inspect` / `convert` and the part checks of `--vae FILE` know it
// (docs/bugs.md row 105). Its one key table is the loader's: the parameters are
// Wan22VAE::parameter_shapes of the config, the diffusers names vae22_keymap's.
#include <algorithm>

#include "models/wan/checkpoint_keys.h"
#include "models/wan/vae22.h"
#include "translate/config_fields.h"

namespace vidax::translate::wan {

namespace {

using vidax::wan::Wan22VAE;
using vidax::wan::Wan22VAEConfig;

// Enough levels and residual blocks for every config Wan22VAEConfig accepts (2..4 levels): the
// diffusers map of a larger structure names every smaller one's parameters alike.
constexpr size_t kMaxLevels = 4;
constexpr int64_t kMaxResBlocks = 16;

// The whole VAE, or one half (the golden files of encode / decode hold one, as Wan 2.1's halves).
class Vae22Component : public Component {
 public:
  explicit Vae22Component(Wan22VAE::Parts parts) : parts_(parts) {}
  std::string name() const override {
    return parts_.encoder && parts_.decoder ? "wan2.2-vae" : parts_.encoder ? "wan2.2-vae-encoder" : "wan2.2-vae-decoder";
  }
  std::string family() const override { return "wan2.2"; }
  // ComfyUI's repackaged wan2.2_vae.safetensors has Wan2.2_VAE.pth's names: "original".
  std::vector<std::string> layouts() const override { return {"original", "diffusers"}; }
  Json default_config() const override { return Wan22VAEConfig{}.to_json(); }
  // WanVAE_'s init args with dec_dim (the 2.1 VAE has none), or diffusers' AutoencoderKLWan with
  // is_residual (without it, the Wan 2.1 VAE).
  std::optional<Json> read_config(const Json& j) const override {
    if (!j.is_object()) return std::nullopt;
    const bool official = has(j, "dec_dim") && has(j, "z_dim");
    const bool diffusers = has(j, "is_residual") && j["is_residual"].is_boolean() && j["is_residual"].get<bool>();
    if (!official && !diffusers) return std::nullopt;
    return Wan22VAEConfig::from_json(j).to_json();
  }
  // From the shapes (the engine's names through the layout's map): dim from encoder.conv1, z_dim
  // from conv1 / conv2 / decoder.conv1, the levels and residual blocks from the encoder's (else the
  // decoder's) nested Sequentials, each level's width from its first residual block, temporal
  // downsampling from the resamples' time convs, dec_dim from the decoder's last level.
  Json infer_config(const TensorSource& src, const std::string& layout) const override {
    Wan22VAEConfig c;
    const KeyMap m = vae22_keymap(layout, kMaxLevels, kMaxResBlocks);
    auto info = [&](const std::string& n) { return find_param(src, m, n); };
    auto dim0 = [&](const std::string& n) -> int64_t {
      const TensorInfo* t = info(n);
      return t && !t->shape.empty() ? t->shape[0] : 0;
    };
    if (int64_t d = dim0("encoder.conv1.weight")) c.dim = d;
    if (int64_t z = dim0("conv2.weight")) c.z_dim = z;
    else if (int64_t z2 = dim0("conv1.weight")) c.z_dim = z2 / 2;
    auto level = [](const std::string& half, size_t i) {
      return half + "." + (half == "encoder" ? "downsamples." : "upsamples.") + std::to_string(i) + "." +
             (half == "encoder" ? "downsamples." : "upsamples.");
    };
    auto res_width = [&](const std::string& half, size_t i, int64_t j) {
      return dim0(level(half, i) + std::to_string(j) + ".residual.2.weight");
    };
    const std::string half = res_width("encoder", 0, 0) ? "encoder" : "decoder";
    size_t levels = 0;
    while (levels < kMaxLevels && res_width(half, levels, 0)) ++levels;
    int64_t blocks = 0;
    while (blocks < kMaxResBlocks && res_width(half, 0, blocks)) ++blocks;
    const int64_t R = half == "encoder" ? blocks : blocks - 1;
    if (levels >= 2 && R >= 1) {
      c.num_res_blocks = R;
      std::vector<int64_t> widths(levels);  // in encoder order (the decoder's reversed)
      for (size_t i = 0; i < levels; ++i) widths[half == "encoder" ? i : levels - 1 - i] = res_width(half, i, 0);
      // The resamples' names: the map of this structure (the larger one read index R as a residual block).
      const KeyMap exact = vae22_keymap(layout, levels, R);
      c.temperal_downsample.assign(levels - 1, false);
      for (size_t i = 0; i + 1 < levels; ++i) {
        const std::string resample = half == "encoder" ? level("encoder", i) + std::to_string(R)
                                                       : level("decoder", levels - 2 - i) + std::to_string(R + 1);
        c.temperal_downsample[i] = find_param(src, exact, resample + ".time_conv.weight") != nullptr;
      }
      const int64_t base = half == "encoder" ? c.dim : widths.front();  // dim_mult[0] = 1 in every Wan VAE
      if (half == "decoder") c.dec_dim = base;
      c.dim_mult.assign(levels, 1);
      for (size_t i = 0; i < levels; ++i) c.dim_mult[i] = base > 0 && widths[i] % base == 0 ? widths[i] / base : 1;
      if (half == "encoder")
        if (int64_t w = res_width("decoder", levels - 1, 0); w > 0) c.dec_dim = w / c.dim_mult.front();
    }
    return c.to_json();
  }
  ParamSpec params(const Json& cfg) const override {
    ParamSpec s;
    for (auto& [name, shape] : Wan22VAE::parameter_shapes(Wan22VAEConfig::from_json(cfg), parts_)) s.add(name, shape);
    return s;
  }
  KeyMap keymap(const std::string& layout, const Json& cfg) const override {
    const Wan22VAEConfig c = Wan22VAEConfig::from_json(cfg);
    return vae22_keymap(layout, c.dim_mult.size(), c.num_res_blocks);
  }
  std::string variant(const Json& cfg) const override {
    return Wan22VAEConfig::from_json(cfg).to_json() == Wan22VAEConfig{}.to_json() ? "wan2.2-vae" : "custom";
  }

 private:
  Wan22VAE::Parts parts_;
};

}  // namespace

const Component& vae22_component() {
  static const Vae22Component c(Wan22VAE::Parts{/*encoder=*/true, /*decoder=*/true});
  return c;
}
const Component& vae22_encoder_component() {
  static const Vae22Component c(Wan22VAE::Parts{/*encoder=*/true, /*decoder=*/false});
  return c;
}
const Component& vae22_decoder_component() {
  static const Vae22Component c(Wan22VAE::Parts{/*encoder=*/false, /*decoder=*/true});
  return c;
}

}  // namespace vidax::translate::wan
