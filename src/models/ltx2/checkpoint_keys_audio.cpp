// The LTX-2 audio VAE's and vocoder's translator components (checkpoint_keys.h).
#include <functional>
#include <set>

#include "models/ltx2/audio_vae.h"
#include "models/ltx2/checkpoint_keys.h"
#include "models/ltx2/vocoder.h"
#include "models/ltx2/vocoder_bwe.h"
#include "translate/config_fields.h"

namespace vidax::ltx2 {

using translate::Json;
using translate::KeyMap;
using translate::ParamSpec;

namespace {

bool same_params(const ParamSpec& a, const ParamSpec& b) {
  if (a.params.size() != b.params.size()) return false;
  for (size_t i = 0; i < a.params.size(); ++i)
    if (a.params[i].name != b.params[i].name || a.params[i].shape != b.params[i].shape) return false;
  return true;
}

// Records what a module takes (names and shapes), building it on Meta tensors; `rename` maps a
// taken name to the engine name (duplicates kept once).
template <class Build>
ParamSpec record(Build&& build, const std::function<std::string(const std::string&)>& rename = {}) {
  ParamSpec s;
  std::set<std::string> seen;
  nn::ParamSource probe = nn::ParamSource::generated(
      [&](const std::string& name, const Shape& shape) {
        const std::string n = rename ? rename(name) : name;
        if (seen.insert(n).second) s.add(n, shape);
        return Tensor::empty(shape, DType::F32, Device::Meta);
      },
      "shapes");
  build(probe);
  return s;
}

// ---- audio VAE ------------------------------------------------------------------------------

// The configurators' defaults (AudioEncoderConfigurator / AudioDecoderConfigurator .get fallbacks).
Json audio_vae_default_config() {
  return Json{{"model",
               {{"params",
                 {{"ddconfig",
                   {{"ch", 128}, {"out_ch", 2}, {"ch_mult", {1, 2, 4}}, {"num_res_blocks", 2},
                    {"attn_resolutions", {8, 16, 32}}, {"resolution", 256}, {"z_channels", 8}}},
                  {"sampling_rate", 16000}}}}}};
}

std::optional<Json> audio_vae_dict(const Json& j) {
  if (!j.is_object()) return std::nullopt;
  if (j.contains("audio_vae") && j["audio_vae"].is_object()) return j["audio_vae"];
  if (j.contains("model") && j["model"].is_object() && j["model"].contains("params") &&
      j["model"]["params"].is_object() && j["model"]["params"].contains("ddconfig"))
    return j;
  return std::nullopt;
}

ParamSpec audio_vae_params(const AudioVaeConfig& c, const std::string& part) {
  const std::string stats = "per_channel_statistics.";
  return record(
      [&](nn::ParamSource& p) {
        if (part != "decoder") AudioEncoder enc(c, p, part == "whole" ? "encoder." : "", DType::F32);
        if (part != "encoder") AudioDecoder dec(c, p, part == "whole" ? "decoder." : "", DType::F32);
      },
      [&](const std::string& n) {
        for (const char* half : {"encoder.", "decoder."})
          if (part == "whole" && n.rfind(half + stats, 0) == 0) return n.substr(std::string(half).size());
        return n;
      });
}

class AudioVaeComponent : public translate::Component {
 public:
  explicit AudioVaeComponent(std::string part) : part_(std::move(part)) {}
  std::string name() const override { return part_ == "whole" ? "ltx2-audio-vae" : "ltx2-audio-vae-" + part_; }
  std::string family() const override { return "ltx2"; }
  std::vector<std::string> layouts() const override { return {"original", "checkpoint"}; }
  Json default_config() const override { return audio_vae_default_config(); }
  std::optional<Json> read_config(const Json& j) const override {
    auto d = audio_vae_dict(j);
    if (!d) return std::nullopt;
    (void)AudioVaeConfig::from_json(*d);  // validates (throws naming the key)
    return d;
  }
  Json infer_config(const translate::TensorSource&, const std::string&) const override {
    return audio_vae_default_config();  // the structure is not read back from the shapes
  }
  ParamSpec params(const Json& cfg) const override { return audio_vae_params(AudioVaeConfig::from_json(cfg), part_); }
  KeyMap keymap(const std::string& layout, const Json&) const override {
    VIDAX_CHECK(layout == "original" || layout == "checkpoint",
                name() << ": unknown layout '" << layout << "' (original, checkpoint)");
    KeyMap m{layout, {}, {}};
    if (layout == "original") {
      m.rules.push_back(translate::key_rule("{name*}", "{name}"));
    } else if (part_ == "whole") {
      m.rules.push_back(translate::key_rule("{name*}", "audio_vae.{name}"));
    } else {
      m.rules.push_back(translate::key_rule("per_channel_statistics.{x}", "audio_vae.per_channel_statistics.{x}"));
      m.rules.push_back(translate::key_rule("{name*}", "audio_vae." + part_ + ".{name}"));
    }
    return m;
  }
  std::string variant(const Json& cfg) const override {
    static const ParamSpec dflt_enc = audio_vae_params(AudioVaeConfig::from_json(audio_vae_default_config()), "encoder");
    static const ParamSpec dflt_dec = audio_vae_params(AudioVaeConfig::from_json(audio_vae_default_config()), "decoder");
    static const ParamSpec dflt_all = audio_vae_params(AudioVaeConfig::from_json(audio_vae_default_config()), "whole");
    const ParamSpec& ref = part_ == "encoder" ? dflt_enc : part_ == "decoder" ? dflt_dec : dflt_all;
    return same_params(params(cfg), ref) ? "ltx-2" : "custom";
  }

 private:
  std::string part_;
};

// ---- vocoder --------------------------------------------------------------------------------

// A vocoder config: the BWE pair (holds "bwe"), a metadata config holding it under "vocoder", or
// Vocoder's init args.
std::optional<Json> vocoder_dict(const Json& j, int depth = 0) {
  if (!j.is_object()) return std::nullopt;
  if (VocoderBweConfig::is_bwe(j)) return j;
  for (const char* k : {"upsample_rates", "resblock_kernel_sizes", "upsample_initial_channel", "resblock"})
    if (j.contains(k)) return j;
  if (depth == 0 && j.contains("vocoder") && j["vocoder"].is_object()) return vocoder_dict(j["vocoder"], 1);
  return std::nullopt;
}

// The canonical spelling: VocoderBweConfig's, or Vocoder's init args. A checkpoint's flat `vocoder` dict
// also carries "stereo", which VocoderConfigurator checks is true (it is no init arg).
Json vocoder_canonical(Json d) {
  if (VocoderBweConfig::is_bwe(d)) return VocoderBweConfig::from_json(d).to_json();
  if (d.contains("stereo")) {
    VIDAX_CHECK(d["stereo"] == true, "LTX-2 vocoder config: stereo is " << d["stereo"].dump()
                                                                        << ", expected true (VocoderConfigurator's check)");
    d.erase("stereo");
  }
  return VocoderConfig::from_json(d).to_json();
}

ParamSpec vocoder_params(const Json& cfg) {
  return record([&](nn::ParamSource& p) {
    if (VocoderBweConfig::is_bwe(cfg)) VocoderWithBwe v(VocoderBweConfig::from_json(cfg), p);
    else Vocoder v(VocoderConfig::from_json(cfg), p);
  });
}

// LTX-2.3's VocoderWithBWE with the generators' default sizes (its fixed values: AMP1, snakebeta;
// the BWE's 16 -> 48 kHz, hop 80, n_fft 512, 64 mels): what detection matches names against.
Json vocoder_bwe_default_config() {
  VocoderBweConfig c;
  for (VocoderConfig* g : {&c.vocoder, &c.bwe}) {
    g->resblock = "AMP1";
    g->activation = "snakebeta";
  }
  c.bwe.apply_final_activation = false;  // the configurator builds the BWE generator without it
  return VocoderBweConfig::from_json(c.to_json()).to_json();
}

// Two components, so that detection (which matches names with each component's default config) tells
// a BWE file (vocoder.* / bwe_generator.* / mel_stft.*) from a plain vocoder stored under `vocoder.`.
class VocoderComponent : public translate::Component {
 public:
  explicit VocoderComponent(bool bwe) : bwe_(bwe) {}
  std::string name() const override { return bwe_ ? "ltx2-vocoder-bwe" : "ltx2-vocoder"; }
  std::string family() const override { return "ltx2"; }
  std::vector<std::string> layouts() const override { return {"original", "checkpoint"}; }
  Json default_config() const override { return bwe_ ? vocoder_bwe_default_config() : VocoderConfig{}.to_json(); }
  std::optional<Json> read_config(const Json& j) const override {
    auto d = vocoder_dict(j);
    if (!d || VocoderBweConfig::is_bwe(*d) != bwe_) return std::nullopt;
    return vocoder_canonical(*d);
  }
  Json infer_config(const translate::TensorSource&, const std::string&) const override {
    return default_config();  // the sizes are not read back from the shapes
  }
  ParamSpec params(const Json& cfg) const override { return vocoder_params(cfg); }
  KeyMap keymap(const std::string& layout, const Json&) const override {
    if (layout == "original") return translate::original_identity();
    VIDAX_CHECK(layout == "checkpoint", name() << ": unknown layout '" << layout << "' (original, checkpoint)");
    return translate::with_key_prefix(translate::original_identity(), "vocoder.", "checkpoint");
  }
  std::string variant(const Json& cfg) const override {
    // LTX-2's HiFi-GAN is the configurator's defaults; the published BWE sizes are not known here.
    static const ParamSpec dflt = vocoder_params(VocoderConfig{}.to_json());
    return !bwe_ && same_params(params(cfg), dflt) ? "ltx-2" : "custom";
  }

 private:
  bool bwe_;
};

}  // namespace

const translate::Component& audio_vae_component() {
  static const AudioVaeComponent c("whole");
  return c;
}
const translate::Component& audio_vae_encoder_component() {
  static const AudioVaeComponent c("encoder");
  return c;
}
const translate::Component& audio_vae_decoder_component() {
  static const AudioVaeComponent c("decoder");
  return c;
}
const translate::Component& vocoder_component() {
  static const VocoderComponent c(false);
  return c;
}
const translate::Component& vocoder_bwe_component() {
  static const VocoderComponent c(true);
  return c;
}

}  // namespace vidax::ltx2
