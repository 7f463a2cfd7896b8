#include "models/wan/presets.h"

#include "core/error.h"
#include "models/wan/checkpoint_keys.h"
#include "models/wan/clip.h"
#include "models/wan/vae22.h"
#include "text/umt5_keys.h"

namespace vidax::wan {

using nlohmann::json;
namespace tw = translate::wan;

const std::string& wan21_default_negative_prompt() {
  // wan/configs/shared_config.py, sample_neg_prompt (verbatim).
  static const std::string s =
      "色调艳丽，过曝，静态，细节模糊不清，字幕，风格，作品，画作，画面，静止，整体发灰，最差质量，低质量，"
      "JPEG压缩残留，丑陋的，残缺的，多余的手指，画得不好的手部，画得不好的脸部，畸形的，毁容的，形态畸形的肢体，"
      "手指融合，静止不动的画面，杂乱的背景，三条腿，背景人很多，倒着走";
  return s;
}

const std::string& wan21_i2v_negative_prompt() {
  // wan/configs/wan_i2v_14B.py: "镜头晃动，" + the shared sample_neg_prompt.
  static const std::string s = "镜头晃动，" + wan21_default_negative_prompt();
  return s;
}

const std::string& wan21_flf2v_negative_prompt() {
  // wan/configs/__init__.py: flf2v_14B is a deep copy of i2v_14B with "镜头切换，" prepended to
  // ITS sample_neg_prompt, which already starts with i2v's "镜头晃动，": both prefixes.
  static const std::string s = "镜头切换，" + wan21_i2v_negative_prompt();
  return s;
}

std::string Preset::image_task() const {
  if (!dit.is_object()) return "";
  // diffusers' WanTransformer3DModel config has no model_type: its parser tells it (image_dim, channels).
  const std::string t = translate::wan::is_diffusers_dit_config(dit) ? translate::wan::DitConfig::from_json(dit).model_type
                                                                     : dit.value("model_type", std::string("t2v"));
  return t == "i2v" || t == "flf2v" ? t : "";
}

namespace {

// WanModel init args as the official config.json holds them (window_size is one of
// WanModel's args that the engine does not read: full attention, (-1, -1)).
json dit_args(const tw::DitConfig& c) {
  json j = c.to_json();
  j["window_size"] = {-1, -1};
  return j;
}

std::vector<Preset> make_presets() {
  std::vector<Preset> v;
  Preset small;
  small.variant.name = "wan2.1-t2v-1.3b";
  small.variant.description = "Wan 2.1 text-to-video 1.3B (Wan-AI/Wan2.1-T2V-1.3B), 480p";
  small.variant.tasks = {"t2v"};
  pipeline::Defaults& d = small.variant.defaults;  // generate.py _validate_args / WanT2V.generate
  d.frames = 81;
  d.height = 480;
  d.width = 832;
  d.steps = 50;
  d.shift = 5.0;
  d.guidance = 5.0;
  d.sampler = "unipc";
  d.fps = 16;                // sample_fps
  d.precision = "bf16";      // the reference runs the DiT under autocast(bf16)
  d.negative_prompt = wan21_default_negative_prompt();
  small.dit = dit_args(tw::DitConfig::t2v_1_3b());
  small.vae = tw::VaeConfig{}.to_json();  // WanVAE's _video_vae(): dim 96, z_dim 16
  small.t5 = translate::t5::T5Config::umt5_xxl().to_json();
  v.push_back(small);

  Preset big = small;
  big.variant.name = "wan2.1-t2v-14b";
  big.variant.description = "Wan 2.1 text-to-video 14B (Wan-AI/Wan2.1-T2V-14B), 720p or 480p";
  big.variant.defaults.height = 720;  // generate.py's default size 1280*720 (W*H)
  big.variant.defaults.width = 1280;
  big.dit = dit_args(tw::DitConfig::t2v_14b());
  v.push_back(big);

  Preset tiny = small;
  tiny.variant.name = kTinyDemoModel;
  tiny.variant.description = "tiny random-weight Wan 2.1 architecture written by `vidax make-demo` (noise-like output)";
  tiny.variant.demo = true;
  tiny.variant.defaults.frames = 9;
  tiny.variant.defaults.height = 64;
  tiny.variant.defaults.width = 96;
  tiny.variant.defaults.steps = 8;
  tiny.variant.defaults.precision = "fp32";
  tw::DitConfig tdit;
  tdit.dim = 64;
  tdit.ffn_dim = 128;
  tdit.num_heads = 2;
  tdit.num_layers = 2;
  tdit.freq_dim = 64;
  tdit.text_dim = 32;
  tiny.dit = dit_args(tdit);
  tw::VaeConfig tvae;
  tvae.dim = 4;
  tiny.vae = tvae.to_json();
  translate::t5::T5Config tt5;
  tt5.vocab = 0;  // set from the demo tokenizer
  tt5.dim = 32;
  tt5.dim_attn = 32;
  tt5.dim_ffn = 64;
  tt5.num_heads = 2;
  tt5.num_layers = 2;
  tiny.t5 = tt5.to_json();
  tiny.vae_file = "Wan2.1_VAE.safetensors";
  tiny.t5_file = "models_t5_umt5-xxl-enc-bf16.safetensors";
  v.push_back(tiny);

  // Wan 2.1 VACE (Wan-AI/Wan2.1-VACE-1.3B / -14B; wan/configs: vace-1.3B = t2v_1_3B, vace-14B =
  // t2v_14B; generate.py: 50 steps, shift 5, guide 5, 81 frames; sizes 480*832 / 832*480, and
  // 720*1280 / 1280*720 for 14B): VaceWanModel, the Wan 2.1 VAE (its encoder for the control video).
  Preset vace_small = small;
  vace_small.variant.name = "wan2.1-vace-1.3b";
  vace_small.variant.description =
      "Wan 2.1 VACE 1.3B (Wan-AI/Wan2.1-VACE-1.3B): video from a control video, mask and reference images, 480p";
  vace_small.variant.tasks = {"vace"};
  vace_small.dit = dit_args(tw::DitConfig::vace_1_3b());
  v.push_back(vace_small);
  Preset vace_big = big;
  vace_big.variant.name = "wan2.1-vace-14b";
  vace_big.variant.description =
      "Wan 2.1 VACE 14B (Wan-AI/Wan2.1-VACE-14B): video from a control video, mask and reference images, 720p or 480p";
  vace_big.variant.tasks = {"vace"};
  vace_big.dit = dit_args(tw::DitConfig::vace_14b());
  v.push_back(vace_big);
  Preset tiny_vace = tiny;
  tiny_vace.variant.name = kTinyVaceDemoModel;
  tiny_vace.variant.description = "tiny random-weight Wan 2.1 VACE architecture written by `vidax make-demo`";
  tiny_vace.variant.tasks = {"vace"};
  tiny_vace.variant.defaults.frames = 5;
  tiny_vace.variant.defaults.height = 32;
  tiny_vace.variant.defaults.width = 48;
  tiny_vace.variant.defaults.steps = 4;
  {
    tw::DitConfig c = tdit;
    c.model_type = "vace";
    c.vace_layers = {0, 1};
    c.vace_in_dim = 96;
    tiny_vace.dit = dit_args(c);
  }
  v.push_back(tiny_vace);

  Preset wide = tiny;
  wide.variant.name = kTinyWideDemoModel;
  wide.variant.description =
      "tiny random-weight Wan 2.1 with a 256-wide DiT (`vidax make-demo`): K-quant GGUF and single-file demos";
  {
    tw::DitConfig wdit = tdit;
    wdit.dim = 256;
    wdit.ffn_dim = 256;
    wide.dit = dit_args(wdit);
  }
  v.push_back(wide);

  // Wan 2.2 T2V-A14B (Wan-Video/Wan2.2 wan/configs/wan_t2v_A14B.py, generate.py): two 14B experts
  // of Wan 2.1 14B's architecture, the Wan 2.1 VAE, 40 steps, shift 12, guide_scale (3.0, 4.0)
  // as (low noise, high noise), boundary 0.875; generate.py's default size 1280*720, 81 frames
  // (shared frame_num), 16 fps.
  Preset a14b = big;
  a14b.variant.name = "wan2.2-t2v-a14b";
  a14b.variant.description =
      "Wan 2.2 text-to-video A14B (Wan-AI/Wan2.2-T2V-A14B): high-noise and low-noise 14B experts, 720p or 480p";
  {
    pipeline::Defaults& d2 = a14b.variant.defaults;
    d2.steps = 40;
    d2.shift = 12.0;
    d2.guidance = 4.0;               // shown as the default; the run takes guidance_scales
    d2.guidance_scales = {3.0, 4.0};  // sample_guide_scale: [low noise, high noise]
    d2.height = 720;
    d2.width = 1280;
    d2.frames = 81;
    d2.fps = 16;
  }
  a14b.experts = Preset::Experts{};
  v.push_back(a14b);

  Preset tiny_a14b = tiny;
  tiny_a14b.variant.name = kTinyA14BDemoModel;
  tiny_a14b.variant.description =
      "tiny random-weight Wan 2.2 A14B layout (two experts) written by `vidax make-demo` (noise-like output)";
  tiny_a14b.variant.defaults.guidance = a14b.variant.defaults.guidance;
  tiny_a14b.variant.defaults.guidance_scales = a14b.variant.defaults.guidance_scales;
  tiny_a14b.variant.defaults.shift = a14b.variant.defaults.shift;
  tiny_a14b.experts = Preset::Experts{};
  v.push_back(tiny_a14b);

  // Wan 2.2 TI2V-5B (wan/configs/wan_ti2v_5B.py): the ti2v DiT (dim 3072, 30 layers, 48 latent
  // channels), the Wan 2.2 VAE, 50 steps, shift 5, guide 5, 121 frames at 24 fps; sizes
  // 1280*704 / 704*1280 (SUPPORTED_SIZES['ti2v-5B']; the README's examples use 1280*704).
  Preset ti2v = small;
  ti2v.variant.name = "wan2.2-ti2v-5b";
  ti2v.variant.description = "Wan 2.2 text(-image)-to-video 5B (Wan-AI/Wan2.2-TI2V-5B), 720p (1280x704 or 704x1280)";
  {
    pipeline::Defaults& d2 = ti2v.variant.defaults;
    d2.steps = 50;
    d2.shift = 5.0;
    d2.guidance = 5.0;
    d2.frames = 121;
    d2.height = 704;
    d2.width = 1280;
    d2.fps = 24;
  }
  ti2v.dit = dit_args(tw::DitConfig::ti2v_5b());
  ti2v.vae = Wan22VAEConfig{}.to_json();
  ti2v.vae_version = "wan2.2";
  ti2v.vae_file = "Wan2.2_VAE.pth";
  ti2v.variant.tasks = {"t2v", "ti2v"};  // text-to-video, and image-to-video with --image
  v.push_back(ti2v);

  Preset tiny_ti2v = tiny;
  tiny_ti2v.variant.name = kTinyTI2VDemoModel;
  tiny_ti2v.variant.description =
      "tiny random-weight Wan 2.2 TI2V architecture (48-channel Wan 2.2 VAE) written by `vidax make-demo`";
  tiny_ti2v.variant.defaults.frames = 9;
  tiny_ti2v.variant.defaults.height = 64;
  tiny_ti2v.variant.defaults.width = 96;
  tiny_ti2v.variant.defaults.fps = 24;
  tw::DitConfig tti2v = tdit;
  tti2v.model_type = "ti2v";
  tti2v.in_dim = 48;
  tti2v.out_dim = 48;
  tiny_ti2v.dit = dit_args(tti2v);
  Wan22VAEConfig tvae22;
  tvae22.dim = 4;
  tvae22.dec_dim = 6;
  tiny_ti2v.vae = tvae22.to_json();
  tiny_ti2v.vae_version = "wan2.2";
  tiny_ti2v.vae_file = "Wan2.2_VAE.safetensors";
  tiny_ti2v.variant.tasks = {"t2v", "ti2v"};
  v.push_back(tiny_ti2v);

  // Image-to-video 14B (Wan-AI/Wan2.1-I2V-14B-480P and -720P: one architecture, two trainings).
  // generate.py: 40 steps for i2v; shift 3.0 at 832*480 / 480*832, else 5.0; guide 5.0; 81 frames.
  Preset i2v = big;
  i2v.variant.name = "wan2.1-i2v-14b-480p";
  i2v.variant.description = "Wan 2.1 image-to-video 14B, 480p (Wan-AI/Wan2.1-I2V-14B-480P)";
  i2v.variant.tasks = {"i2v"};
  i2v.variant.defaults.height = 480;
  i2v.variant.defaults.width = 832;
  i2v.variant.defaults.steps = 40;
  i2v.variant.defaults.shift = 3.0;
  i2v.variant.defaults.negative_prompt = wan21_i2v_negative_prompt();
  i2v.dit = dit_args(tw::DitConfig::i2v_14b());
  i2v.clip = ClipVisionConfig::vit_h_14().to_json();
  v.push_back(i2v);
  Preset i2v720 = i2v;
  i2v720.variant.name = "wan2.1-i2v-14b-720p";
  i2v720.variant.description = "Wan 2.1 image-to-video 14B, 720p (Wan-AI/Wan2.1-I2V-14B-720P)";
  i2v720.variant.defaults.height = 720;
  i2v720.variant.defaults.width = 1280;
  i2v720.variant.defaults.shift = 5.0;
  v.push_back(i2v720);
  // First-last-frame 14B (Wan-AI/Wan2.1-FLF2V-14B-720P): 50 steps, shift 16 (generate.py).
  Preset flf = i2v720;
  flf.variant.name = "wan2.1-flf2v-14b-720p";
  flf.variant.description = "Wan 2.1 first-last-frame-to-video 14B, 720p (Wan-AI/Wan2.1-FLF2V-14B-720P)";
  flf.variant.tasks = {"flf2v"};
  flf.variant.defaults.steps = 50;
  flf.variant.defaults.shift = 16.0;
  flf.variant.defaults.negative_prompt = wan21_flf2v_negative_prompt();
  {
    tw::DitConfig c = tw::DitConfig::i2v_14b();
    c.model_type = "flf2v";
    flf.dit = dit_args(c);
  }
  v.push_back(flf);

  // Their tiny demos: the tiny T2V's parts, an I2V DiT (in_dim 16 + 4 mask + 16 image latent
  // channels) and a CLIP of the real width (img_emb takes 1280-wide features: the reference
  // hard-codes it) with 257 tokens (the DiT splits its context at 257) but no blocks.
  Preset tiny_i2v = tiny;
  tiny_i2v.variant.name = kTinyI2VDemoModel;
  tiny_i2v.variant.description = "tiny random-weight Wan 2.1 image-to-video architecture (`vidax make-demo`)";
  tiny_i2v.variant.tasks = {"i2v"};
  tiny_i2v.variant.defaults.frames = 5;
  tiny_i2v.variant.defaults.steps = 4;
  tiny_i2v.variant.defaults.shift = 3.0;
  tiny_i2v.variant.defaults.negative_prompt = wan21_i2v_negative_prompt();
  tdit.model_type = "i2v";
  tdit.in_dim = 36;
  tiny_i2v.dit = dit_args(tdit);
  ClipVisionConfig tclip;
  tclip.image_size = 32;
  tclip.patch_size = 2;
  tclip.vision_heads = 2;
  tclip.vision_layers = 1;  // use_31_block runs all blocks but the last: none
  tclip.embed_dim = 16;
  tiny_i2v.clip = tclip.to_json();
  tiny_i2v.clip_file = "models_clip_open-clip-xlm-roberta-large-vit-huge-14.safetensors";
  v.push_back(tiny_i2v);
  Preset tflf = tiny_i2v;
  tflf.variant.name = kTinyFLF2VDemoModel;
  tflf.variant.description = "tiny random-weight Wan 2.1 first-last-frame architecture (`vidax make-demo`)";
  tflf.variant.tasks = {"flf2v"};
  tflf.variant.defaults.shift = 16.0;
  tflf.variant.defaults.negative_prompt = wan21_flf2v_negative_prompt();
  tdit.model_type = "flf2v";
  tflf.dit = dit_args(tdit);
  v.push_back(tflf);

  // Wan 2.2 I2V-A14B (wan/configs/wan_i2v_A14B.py, generate.py): two i2v experts of the 14B
  // architecture (in_dim 36, no CLIP: clip stays null), the Wan 2.1 VAE, boundary 0.900, 40 steps,
  // shift 5, guide_scale (3.5, 3.5) as (low noise, high noise), the shared negative prompt (the
  // config takes wan_shared_cfg's), 81 frames, 16 fps, generate.py's default size 1280*720.
  Preset i2v_a14b = a14b;
  i2v_a14b.variant.name = "wan2.2-i2v-a14b";
  i2v_a14b.variant.description =
      "Wan 2.2 image-to-video A14B (Wan-AI/Wan2.2-I2V-A14B): high-noise and low-noise 14B experts, 720p or 480p";
  i2v_a14b.variant.tasks = {"i2v"};
  i2v_a14b.variant.defaults.shift = 5.0;
  i2v_a14b.variant.defaults.guidance = 3.5;
  i2v_a14b.variant.defaults.guidance_scales = {3.5, 3.5};
  i2v_a14b.dit = dit_args(tw::DitConfig::i2v_14b());
  i2v_a14b.experts = Preset::Experts{};
  i2v_a14b.experts->boundary = 0.900;
  v.push_back(i2v_a14b);
  Preset tiny_i2v_a14b = tiny_a14b;
  tiny_i2v_a14b.variant.name = kTinyI2VA14BDemoModel;
  tiny_i2v_a14b.variant.description =
      "tiny random-weight Wan 2.2 I2V-A14B layout (two i2v experts, no CLIP) written by `vidax make-demo`";
  tiny_i2v_a14b.variant.tasks = {"i2v"};
  tiny_i2v_a14b.variant.defaults.frames = 5;
  tiny_i2v_a14b.variant.defaults.shift = i2v_a14b.variant.defaults.shift;
  tiny_i2v_a14b.variant.defaults.guidance = i2v_a14b.variant.defaults.guidance;
  tiny_i2v_a14b.variant.defaults.guidance_scales = i2v_a14b.variant.defaults.guidance_scales;
  tdit.model_type = "i2v";
  tiny_i2v_a14b.dit = dit_args(tdit);  // in_dim 36 (set for tiny_i2v above)
  tiny_i2v_a14b.experts = i2v_a14b.experts;
  v.push_back(tiny_i2v_a14b);
  return v;
}

}  // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> p = make_presets();
  return p;
}

const Preset& preset(const std::string& name) {
  std::string known;
  for (const auto& p : presets()) {
    if (p.name() == name) return p;
    known += (known.empty() ? "" : ", ") + p.name();
  }
  throw Error(msg() << "unknown model '" << name << "'; known: " << known);
}

const std::vector<pipeline::SamplingPreset>& sampling_presets() {
  static const std::vector<pipeline::SamplingPreset> p = {
      {"lightx2v-4step", "LightX2V's Wan2.1 StepDistill-CfgDistill models and LoRAs: 4 fixed steps, no CFG",
       "ModelTC/LightX2V configs/distill/wan21/wan_t2v_distill_lora_4step_cfg.json (infer_steps 4, "
       "denoising_step_list [1000, 750, 500, 250], sample_shift 5, enable_cfg false) with "
       "lightx2v/models/schedulers/wan/step_distill/scheduler.py",
       4, 5.0, "lightx2v", 1.0},
  };
  return p;
}

}  // namespace vidax::wan
