#include "models/wan/pipeline_parity.h"

#include <filesystem>

#include "core/error.h"
#include "dist/mesh.h"
#include "io/video.h"
#include "models/wan/t2v_load.h"
#include "parity/parity.h"
#include "pipeline/generate.h"
#include "translate/config_fields.h"

namespace vidax::wan {

namespace {

// A golden's conditioning image, in any of the forms a reference script may have stored it:
// input.<name> as the pipeline's tensor ([3, H, W] F32 in [-1, 1]) or as the picture's bytes
// ([H, W, 3] U8, converted as to_tensor().sub_(0.5).div_(0.5)); or config "<name>", an image file
// beside the golden. Undefined when none is there.
Tensor golden_image(const parity::Golden& g, const std::filesystem::path& dir, const std::string& name) {
  if (g.has("input." + name)) {
    const Tensor t = g.input(name).contiguous();
    if (t.dtype() == DType::U8) {
      VIDAX_CHECK(t.dim() == 3 && t.size(2) == 3, g.path << ": input." << name << " " << t.str()
                                                         << ": picture bytes must be [H, W, 3]");
      return io::picture_to_tensor(t);
    }
    VIDAX_CHECK(t.dim() == 3 && t.size(0) == 3, g.path << ": input." << name << " " << t.str()
                                                       << ": expected [3, H, W] in [-1, 1] or [H, W, 3] bytes");
    return t.to(DType::F32);
  }
  if (g.config.contains(name) && g.config[name].is_string())
    return io::read_image((dir / g.config[name].get<std::string>()).string(), g.path + " config " + name);
  return Tensor();
}

// One whole run of a golden's request on its tiny checkpoint (config "weights", relative to the
// golden; "diffusion_model" a DiT file replacing the folder's; "model" optional).
parity::Produced run_pipeline_golden(const parity::Golden& g, const parity::Options& opt, bool images) {
  const nlohmann::json& c = g.config;
  VIDAX_CHECK(c.contains("weights"), g.path << ": config has no \"weights\" (the checkpoint directory)");
  const std::filesystem::path dir = std::filesystem::path(g.path).parent_path();
  pipeline::LoadOptions lo;
  try {
    lo.weights_dir = (dir / translate::required<std::string>(c, "weights")).string();
    lo.model = translate::value_or<std::string>(c, "model", "");
    const std::string dm = translate::value_or<std::string>(c, "diffusion_model", "");
    if (!dm.empty()) lo.files.diffusion_model = (dir / dm).string();
  } catch (const Error& e) {
    throw Error(msg() << g.path << ": __metadata__.config: " << e.what());
  }
  lo.precision = opt.precision;
  // --mesh: the run on the mesh, as `vidax generate --mesh` (every rank ends with the whole latent).
  std::unique_ptr<dist::Mesh> mesh;
  if (!opt.mesh.empty()) mesh = std::make_unique<dist::Mesh>(dist::world(), dist::parse_mesh(opt.mesh));
  lo.mesh = mesh.get();
  LoadedT2V m = load_t2v(lo);
  // The kind names the task the golden ran; the model must be that task's.
  if (g.kind == "wan.pipeline.t2v_a14b")
    VIDAX_CHECK(m.preset.experts, g.path << ": kind " << g.kind << " needs a two-expert model (Wan 2.2 A14B), but "
                                         << lo.weights_dir << " holds " << m.preset.name());
  if (g.kind == "wan.pipeline.ti2v")
    VIDAX_CHECK(m.preset.vae_version == "wan2.2", g.path << ": kind " << g.kind << " needs a Wan 2.2 VAE model "
                                                       "(TI2V-5B), but " << lo.weights_dir << " holds " << m.preset.name());
  if (g.kind == "wan.pipeline.t2v")
    VIDAX_CHECK(!m.preset.experts && m.preset.vae_version == "wan2.1",
                g.path << ": kind " << g.kind << " is the Wan 2.1 T2V run, but " << lo.weights_dir << " holds "
                       << m.preset.name() << " (its kind: " << (m.preset.experts ? "wan.pipeline.t2v_a14b" : "wan.pipeline.ti2v")
                       << ")");

  pipeline::Request r = pipeline::request_from_json(c, m.preset.variant.defaults.negative_prompt);
  // wan.pipeline.ti2v: WanTI2V.generate with img=None (t2v) or with an image (its i2v branch).
  const bool optional_image = g.kind == "wan.pipeline.ti2v";
  if (images || optional_image) {
    r.image = golden_image(g, dir, "image");
    VIDAX_CHECK(r.image.defined() || optional_image,
                g.path << ": wan.pipeline.i2v needs input.image ([3, H, W] in [-1, 1], or the "
                          "picture's [H, W, 3] bytes) or config \"image\" (a file beside the golden)");
    if (images) r.last_image = golden_image(g, dir, "last_image");
  }
  // wan.pipeline.vace: WanVace.generate with the control video, mask video and reference images as
  // prepare_source hands them over (input.control_video / input.mask_video [3, F, H, W] in the
  // VaceVideoProcessor's [-1, 1], input.reference_image.<j> [3, h, w]); config control_fps, control_scale.
  const bool vace = g.kind == "wan.pipeline.vace";
  VIDAX_CHECK(vace == static_cast<bool>(m.parts.condition_on_control),
              g.path << ": kind " << g.kind << (vace ? " needs a VACE model, but " : " is not a VACE run, but ")
                     << lo.weights_dir << " holds " << m.preset.name());
  if (vace) {
    if (g.has("input.control_video")) {
      r.control_video = g.input("control_video").to(DType::F32);
      r.control_fps = c.value("control_fps", 16.0);
    }
    if (g.has("input.mask_video")) r.control_mask = g.input("mask_video").to(DType::F32);
    for (int j = 0; g.has("input.reference_image." + std::to_string(j)); ++j)
      r.reference_images.push_back(golden_image(g, dir, "reference_image." + std::to_string(j)));
    r.control_scale = c.value("control_scale", 1.0);
  }
  pipeline::Result res = pipeline::run_generation(m.parts, r);

  parity::Produced out;
  out["output.latents"] = res.latents;
  out["output.video"] = res.video;
  for (const auto& [k, v] : res.taps) out[k] = v;
  r.height = res.height;
  r.width = res.width;
  // VACE's noise also covers the reference images' leading latent frames: the latent's own shape.
  out["inter.noise"] =
      pipeline::draw_noise(r.seed, vace ? res.latents.shape() : pipeline::latent_shape(m.parts.geometry, r));
  out["inter.timesteps"] = Tensor::from_f64(res.timesteps, {static_cast<int64_t>(res.timesteps.size())});
  if (m.preset.experts) {  // the expert of each step: 1 = high noise, 0 = low noise (kHighNoiseExpert)
    std::vector<double> expert(res.timesteps.size(), -1);
    for (size_t e = 0; e < res.denoiser_steps.size(); ++e)
      for (int s : res.denoiser_steps[e]) expert[static_cast<size_t>(s)] = static_cast<double>(e);
    out["inter.expert"] = Tensor::from_f64(expert, {static_cast<int64_t>(expert.size())});
  }
  return out;
}

}  // namespace

parity::Produced run_t2v_golden(const parity::Golden& g, const parity::Options& opt) {
  return run_pipeline_golden(g, opt, false);
}

parity::Produced run_i2v_golden(const parity::Golden& g, const parity::Options& opt) {
  return run_pipeline_golden(g, opt, true);
}

parity::Produced run_vace_golden(const parity::Golden& g, const parity::Options& opt) {
  return run_pipeline_golden(g, opt, false);
}

}  // namespace vidax::wan
