// `vidax generate`: text-to-video with any registered family (DESIGN.md §1).
// Parses options, finds the family and variant (--model or the weights),
// fills unset options from the variant's defaults (the official ones),
// validates the request and its memory BEFORE loading weights, loads, runs
// with a progress bar, writes the video (temp file + rename) and a JSON sidecar.
#include <omp.h>

#include <chrono>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <new>
#include <optional>
#include <random>
#include <sstream>

#include "backend/cpu/cpu_tier.h"
#include "commands.h"
#include "part_options.h"
#include "core/error.h"
#include "dist/mesh.h"
#include "engine/families.h"
#include "io/video.h"
#include "pipeline/generate.h"
#include "pipeline/interrupt.h"
#include "pipeline/request_check.h"
#include "pipeline/output.h"
#include "pipeline/progress.h"
#include "pipeline/record.h"
#include "pipeline/sampler.h"
#include "translate/lora.h"

#ifdef VIDAX_HAVE_OPENBLAS
// OpenBLAS keeps its own thread pool beside OpenMP's.
extern "C" void openblas_set_num_threads(int);
#endif

namespace vidax::app {

namespace {

// One --image and what follows it on the command line.
struct ImageArg {
  std::string path;
  std::optional<int64_t> frame;
  std::optional<double> strength;
};

// Pairs each --image-frame / --image-strength with the --image before it (the k-th image's own: at
// most one of each, none before the first --image); throws naming what is wrong.
std::vector<ImageArg> image_args(const std::vector<const CLI::Option*>& order, const CLI::Option* image,
                                 const CLI::Option* frame, const CLI::Option* strength,
                                 const std::vector<std::string>& paths, const std::vector<int64_t>& frames,
                                 const std::vector<double>& strengths) {
  std::vector<ImageArg> out;
  size_t ni = 0, nf = 0, ns = 0;
  for (const CLI::Option* o : order) {
    if (o == image) {
      VIDAX_CHECK(ni < paths.size(), "--image: one file per --image");
      out.push_back({paths[ni++], std::nullopt, std::nullopt});
    } else if (o == frame || o == strength) {
      const bool is_frame = o == frame;
      const std::string opt = is_frame ? "--image-frame" : "--image-strength";
      std::ostringstream v;
      if (is_frame) v << (nf < frames.size() ? frames[nf] : 0);
      else v << (ns < strengths.size() ? strengths[ns] : 0.0);
      VIDAX_CHECK(!out.empty(), opt << " " << v.str()
                                    << " comes before any --image: each --image-frame / --image-strength belongs "
                                       "to the --image it follows (--image FILE [--image-frame N] [--image-strength S])");
      ImageArg& last = out.back();
      VIDAX_CHECK(is_frame ? !last.frame : !last.strength,
                  opt << " " << v.str() << " is the second " << opt << " after --image " << last.path
                      << ": give one per image, after its --image (--image FILE [--image-frame N] [--image-strength S])");
      if (is_frame) last.frame = frames.at(nf++);
      else last.strength = strengths.at(ns++);
    }
  }
  return out;
}

// One reference video of the command line: its file, strength and the option that gave it.
struct ReferenceVideoArg {
  std::string path;
  double strength = 1.0;
  std::string option;
};

// The reference videos (--reference-video FILE, --video-conditioning FILE STRENGTH, --video FILE) in
// command-line order, each with its strength (1 unless --video-conditioning gives one).
std::vector<ReferenceVideoArg> reference_video_args(
    const std::vector<const CLI::Option*>& order, const CLI::Option* reference, const CLI::Option* conditioning,
    const CLI::Option* video, const std::vector<std::string>& references,
    const std::vector<std::pair<std::string, double>>& conditionings, const std::vector<std::string>& videos) {
  std::vector<ReferenceVideoArg> out;
  size_t nr = 0, nc = 0, nv = 0;
  for (const CLI::Option* o : order) {
    if (o == reference && nr < references.size()) out.push_back({references[nr++], 1.0, "--reference-video"});
    else if (o == conditioning && nc < conditionings.size()) {
      out.push_back({conditionings[nc].first, conditionings[nc].second, "--video-conditioning"});
      ++nc;
    } else if (o == video && nv < videos.size())
      out.push_back({videos[nv++], 1.0, "--video"});
  }
  return out;
}

struct GenerateArgs {
  std::string model, weights, prompt, output_format, sampler, precision, noise_file, mesh, last_image;
  // --image FILE, each with the --image-frame N / --image-strength S that follow it (before the next
  // --image): paired by parse order (image_args) from the three options' values.
  std::vector<std::string> image_paths;
  std::vector<int64_t> image_frames;
  std::vector<double> image_strengths;
  std::vector<ImageArg> images;
  std::string control_video, mask_video;        // Wan VACE
  std::vector<std::string> reference_images;    // Wan VACE, any number
  double control_scale = 1.0;                   // VACE context_scale
  // LTX-2 IC-LoRA: --reference-video FILE, --video-conditioning FILE STRENGTH, --video FILE (video-to-
  // video: the same path), paired in command-line order into `reference_videos`.
  std::vector<std::string> reference_video_paths, video_paths;
  std::vector<std::pair<std::string, double>> video_conditionings;
  std::vector<ReferenceVideoArg> reference_videos;
  double conditioning_attention_strength = 1.0;
  bool skip_stage_2 = false;
  std::optional<std::string> negative_prompt, output;
  std::optional<int64_t> frames, height, width, steps;
  std::optional<std::string> seed;  // text: parse_seed takes all of torch's range, 2^64-1 too
  std::optional<double> guidance, shift, fps, cfg_scale;
  int64_t threads = 0;
  std::vector<std::string> loras;  // FILE[:SCALE]
  std::vector<std::string> loras_high_noise, loras_low_noise;  // Wan 2.2 A14B: each expert's own
  std::string lora_mode = "auto";  // merge | runtime | auto (docs/lora.md)
  std::string preset;             // a sampling preset (pipeline/sampler.h)
  bool lora_allow_unmatched = false;
  pipeline::PartFiles files;      // --diffusion-model, --vae, --text-encoder, --tokenizer
  bool offload = false;           // stream the DiT's blocks (docs/generate.md, "Memory")
  std::string max_memory;         // a budget: chooses --offload / --vae-tile when the plan needs them
  int64_t vae_tile = 0;           // spatial VAE tiles of this many pixels (0: whole frames)
  bool json = false;              // print the run's record (the sidecar's JSON) on stdout
  std::string record;             // --record DIR: every noise drawn and each step's latent (pipeline/record.h)
  std::string replay;             // --replay DIR: run a record's request on its noise, compare each step
  std::optional<double> replay_tolerance;  // the bound on a step's relative L2 (default per precision)
  std::string device = "cpu";     // where the DiT's steps run: cpu | pjrt (docs/pjrt.md)
  std::string pjrt_plugin;        // --pjrt-plugin (else $VIDAX_PJRT_PLUGIN)
  bool no_audio = false;          // drop the MP4's audio track (models with audio)
  std::string audio_output;       // --audio-output FILE.wav: the waveform as a WAV file too
  bool two_stage = false;         // --two-stage: the model's two-stage pipeline (LTX-2)
  std::string spatial_upsampler;  // --spatial-upsampler-path FILE (the two-stage pipelines' upsampler)
  std::string distilled_lora;     // --distilled-lora FILE[:S] (the two-stage pipeline's stage-2 LoRA)
};

// The record's key_images: each --image of a variant that takes images at chosen frames, with the
// frame and strength used; empty otherwise.
nlohmann::json key_images_json(const GenerateArgs& a, const pipeline::Request& req) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < req.key_images.size() && i < a.images.size(); ++i)
    out.push_back({{"file", a.images[i].path}, {"frame", req.key_images[i].frame},
                   {"strength", req.key_images[i].strength}});
  return out;
}

// The record's reference_videos: file and strength of each, in the order used.
nlohmann::json reference_videos_json(const GenerateArgs& a) {
  nlohmann::json out = nlohmann::json::array();
  for (const ReferenceVideoArg& r : a.reference_videos) out.push_back({{"file", r.path}, {"strength", r.strength}});
  return out;
}

// What the run is doing now, for an out-of-memory message.
std::string g_phase = "checking the request";
constexpr const char* kOutOfMemoryAdvice =
    "use a smaller size, fewer frames or a smaller model, or --max-memory to plan --offload and --vae-tile for "
    "the memory there is (the request check's estimate is in docs/generate.md)";

bool g_quiet = false;  // ranks other than 0 of a mesh run print nothing
void note(const std::string& s) {
  if (!g_quiet) std::fprintf(stderr, "%s\n", s.c_str());
}

nlohmann::json lora_json(const std::vector<translate::LoraSpec>& loras) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& l : loras) j.push_back({{"path", l.path}, {"scale", l.scale}});
  return j;
}

nlohmann::json part_or_null(const std::string& s) { return s.empty() ? nlohmann::json() : nlohmann::json(s); }

// The VAE tile --max-memory picks when the decode does not fit whole frames: diffusers' default.
constexpr int64_t kAutoVaeTile = 256;

// --vae-tile's check, before anything is loaded (the family's own rule: pixels a multiple of 32).
int64_t vae_tile_check(int64_t t) {
  VIDAX_CHECK(t >= 64 && t % 32 == 0, "--vae-tile " << t << ": the tile must be a multiple of 32 pixels, at least 64 "
                                                          "(e.g. 256, diffusers' default)");
  return t;
}

// The memory record of a run (docs/generate.md, "Memory"): the plan per part, the budget, and
// the peak resident set measured (VmHWM).
nlohmann::json memory_json(const pipeline::MemoryPlan& plan, const std::optional<double>& budget,
                           const pipeline::Request& req) {
  nlohmann::json m = plan.to_json();
  nlohmann::json out{{"peak_rss_bytes", pipeline::proc_bytes_field("/proc/self/status", "VmHWM")},
                     {"planned", m},
                     {"budget_bytes", budget ? nlohmann::json(*budget) : nlohmann::json()},
                     {"offload", req.offload},
                     {"vae_tile", req.vae_tile}};
  return out;
}

// --replay: the record's request, with every option the user also gave checked against it (the
// record is the authority; a differing option would make the comparison meaningless).
template <class T>
void same_as_record(const std::string& option, const std::optional<T>& given, const T& recorded,
                    const std::string& dir) {
  if (!given || *given == recorded) return;
  std::ostringstream g, r;
  g << *given;
  r << recorded;
  throw Error(msg() << option << " " << g.str() << " differs from the record's " << r.str() << " (--replay " << dir
                    << "); drop " << option << " to use the record's");
}

// `given` is the request the command line made; what the record does not hold (the images of an
// image-to-video run) is taken from it.
pipeline::Request replay_request(const GenerateArgs& a, const pipeline::Record& rec, const pipeline::Defaults& d,
                                 const pipeline::Request& given) {
  VIDAX_CHECK(a.preset.empty(), "--preset with --replay: the record holds the sampling settings; drop --preset");
  VIDAX_CHECK(a.noise_file.empty(), "--noise with --replay: the record holds the noise; drop --noise");
  pipeline::Request req = pipeline::record_request(rec, d.negative_prompt);
  req.image = given.image;
  req.last_image = given.last_image;
  req.key_images = given.key_images;
  req.control_video = given.control_video;
  req.control_fps = given.control_fps;
  req.control_mask = given.control_mask;
  req.reference_images = given.reference_images;
  req.control_scale = given.control_scale;
  req.reference_videos = given.reference_videos;
  req.conditioning_attention_strength = given.conditioning_attention_strength;
  req.skip_stage_2 = given.skip_stage_2;
  const std::string& dir = rec.dir;
  same_as_record("--prompt", a.prompt.empty() ? std::nullopt : std::optional<std::string>(a.prompt), req.prompt, dir);
  same_as_record("--negative-prompt", a.negative_prompt, req.negative_prompt, dir);
  same_as_record("--frames", a.frames, req.frames, dir);
  same_as_record("--height", a.height, req.height, dir);
  same_as_record("--width", a.width, req.width, dir);
  same_as_record("--steps", a.steps, req.steps, dir);
  same_as_record("--guidance", a.guidance, req.guidance, dir);
  same_as_record("--cfg-scale", a.cfg_scale, req.cfg_scale, dir);
  same_as_record("--shift", a.shift, req.shift, dir);
  same_as_record("--sampler", a.sampler.empty() ? std::nullopt : std::optional<std::string>(a.sampler), req.sampler,
                 dir);
  same_as_record("--seed", a.seed ? pipeline::parse_seed(*a.seed) : std::nullopt, req.seed, dir);
  return req;
}

void print_replay(const pipeline::ReplayReport& rep, int total) {
  // Several streams (a version-2 record): one line per step and stream, "step 2/4 audio t=...".
  auto stream = [](const pipeline::StepError& e) { return e.stream.empty() ? std::string() : " " + e.stream; };
  for (const auto& e : rep.steps)
    std::printf("step %d/%d%s t=%g max_abs=%.3g mean_abs=%.3g rel_l2=%.3g %s\n", e.step, total, stream(e).c_str(),
                e.timestep, e.max_abs, e.mean_abs, e.rel_l2, e.ok ? "OK" : "FAIL");
  if (!rep.finals.empty())
    for (const auto& f : rep.finals)
      std::printf("final%s max_abs=%.3g mean_abs=%.3g rel_l2=%.3g %s\n", stream(f).c_str(), f.max_abs, f.mean_abs,
                  f.rel_l2, f.ok ? "OK" : "FAIL");
  else if (rep.final)
    std::printf("final max_abs=%.3g mean_abs=%.3g rel_l2=%.3g %s\n", rep.final->max_abs, rep.final->mean_abs,
                rep.final->rel_l2, rep.final->ok ? "OK" : "FAIL");
  const bool ok = rep.diverged_at == 0 && rep.final && rep.final->ok;
  int within = 0;  // the steps whose every stream is within the bound
  for (const auto& e : rep.steps) within = e.step != rep.diverged_at ? std::max(within, e.step) : within;
  std::printf("%s replay: %d/%d steps within rel_l2 <= %g\n", ok ? "PASS" : "FAIL", within, total, rep.tolerance);
  std::fflush(stdout);
}

int run_generate(const GenerateArgs& a) {
  using namespace vidax::pipeline;
  VIDAX_CHECK(!a.prompt.empty() || !a.replay.empty(),
              "--prompt is required (or --replay DIR, which runs the record's prompt)");
  VIDAX_CHECK(a.record.empty() || a.replay.empty(),
              "--record and --replay together: replay the record first, then record a new run");
  VIDAX_CHECK(!a.replay_tolerance || !a.replay.empty(), "--replay-tolerance needs --replay DIR");
  VIDAX_CHECK(!a.replay_tolerance || (std::isfinite(*a.replay_tolerance) && *a.replay_tolerance >= 0),
              "--replay-tolerance " << *a.replay_tolerance << ": must be a finite number >= 0 (a relative L2)");
  std::optional<Record> rec;
  if (!a.replay.empty()) rec = read_record(a.replay);  // a bad record fails before any weight is read
  install_interrupt_handlers();
  check_threads(a.threads);
  if (a.threads > 0) {
    omp_set_num_threads(static_cast<int>(a.threads));
#ifdef VIDAX_HAVE_OPENBLAS
    openblas_set_num_threads(static_cast<int>(a.threads));
#endif
  }
  // A mesh run (mpirun ... --mesh): every rank loads its part and runs; rank 0 alone prints and writes.
  dist::Communicator& world = dist::world();
  VIDAX_CHECK(world.size() == 1 || !a.mesh.empty(),
              "launched with " << world.size() << " ranks but no --mesh (e.g. --mesh cfg=2,sp=" << world.size() / 2
                               << "); without one every rank would write the same file");
  std::unique_ptr<dist::Mesh> mesh;
  if (!a.mesh.empty()) mesh = std::make_unique<dist::Mesh>(world, dist::parse_mesh(a.mesh));
  const bool lead = world.rank() == 0;
  g_quiet = !lead;

  // Model and request, checked before anything heavy happens.
  VIDAX_CHECK(!a.weights.empty() || a.files.any(),
              "no model given: pass --weights DIR, or the parts as files (--diffusion-model FILE --vae FILE "
              "--text-encoder FILE)");
  const engine::Resolved model = engine::resolve(a.weights, a.model, a.files);
  if (rec) {
    VIDAX_CHECK(rec->header.model == model.variant.name,
                "--replay " << rec->dir << ": recorded with model " << rec->header.model << " but the weights are "
                            << model.variant.name << " (give the weights the record was made with)");
    VIDAX_CHECK(rec->header.family.empty() || rec->header.family == model.family->name(),
                "--replay " << rec->dir << ": recorded with family " << rec->header.family << ", the weights are "
                            << model.family->name());
  }
  // A sampling preset replaces the variant's sampling defaults; explicit options still win.
  Defaults d = model.variant.defaults;
  if (!a.preset.empty()) d = with_preset(d, model.family->sampling_preset(a.preset));
  Request req;
  req.prompt = a.prompt;
  req.negative_prompt = a.negative_prompt.value_or("");
  req.default_negative_prompt = d.negative_prompt;
  req.frames = a.frames.value_or(d.frames);
  req.height = a.height.value_or(a.two_stage && d.two_stage_height > 0 ? d.two_stage_height : d.height);
  req.width = a.width.value_or(a.two_stage && d.two_stage_width > 0 ? d.two_stage_width : d.width);
  req.steps = a.steps.value_or(d.steps);
  req.guidance = a.guidance.value_or(d.guidance);
  if (!a.guidance) req.guidance_scales = d.guidance_scales;  // per denoiser (Wan 2.2 A14B); --guidance: one for all
  req.cfg_scale = a.cfg_scale.value_or(1.0);
  req.shift = a.shift.value_or(d.shift);
  req.sampler = a.sampler.empty() ? d.sampler : a.sampler;
  // Image-to-video: the images, decoded now so a bad file fails before any weight is read.
  if (model.variant.key_images) {
    // Images at chosen frames (LTX-2): every --image with its frame (the first's default 0) and
    // strength (default 1).
    for (size_t i = 0; i < a.images.size(); ++i) {
      const ImageArg& im = a.images[i];
      VIDAX_CHECK(i == 0 || im.frame, "--image " << im.path << " (image " << i + 1 << " of " << a.images.size()
                                                 << ") has no --image-frame: only the first --image defaults to "
                                                    "frame 0; give --image-frame N after it");
      KeyImage k;
      k.frame = im.frame.value_or(0);
      k.strength = im.strength.value_or(1.0);
      k.image = io::read_image(im.path, "--image");
      req.key_images.push_back(std::move(k));
    }
  } else if (!a.images.empty()) {
    VIDAX_CHECK(a.images.size() == 1, "--image given " << a.images.size() << " times: " << model.variant.name
                                                       << " takes one first frame (--image FILE); the last frame of "
                                                          "a first-last-frame model is --last-image FILE");
    VIDAX_CHECK(!a.images[0].frame && !a.images[0].strength,
                "--image-frame / --image-strength: " << model.variant.name
                                                     << " conditions on the first frame only (--image FILE); they "
                                                        "are for models that take images at chosen frames (LTX-2)");
    req.image = io::read_image(a.images[0].path, "--image");
  }
  if (!a.last_image.empty()) req.last_image = io::read_image(a.last_image, "--last-image");
  // VACE: the control video, its mask and reference images, decoded now for the same reason.
  VIDAX_CHECK(a.mask_video.empty() || !a.control_video.empty(),
              "--mask-video needs --control-video: the mask marks which pixels of the control video are regenerated");
  if (!a.control_video.empty()) req.control_video = io::read_video_tensor(a.control_video, "--control-video", &req.control_fps);
  if (!a.mask_video.empty()) req.control_mask = io::read_video_tensor(a.mask_video, "--mask-video");
  for (const std::string& r : a.reference_images) req.reference_images.push_back(io::read_image(r, "--reference-image"));
  req.control_scale = a.control_scale;
  // IC-LoRA reference videos (LTX-2), decoded now: a bad file fails before any weight is read.
  for (const ReferenceVideoArg& r : a.reference_videos) {
    ReferenceVideo v;
    v.path = r.path;
    v.strength = r.strength;
    v.video = io::read_video_tensor(r.path, r.option, &v.fps);
    req.reference_videos.push_back(std::move(v));
  }
  req.conditioning_attention_strength = a.conditioning_attention_strength;
  req.skip_stage_2 = a.skip_stage_2;
  // The reference draws a random seed when none is given or it is negative (--base_seed -1);
  // the seed used is recorded either way.
  const std::optional<uint64_t> seed = a.seed ? parse_seed(*a.seed) : std::nullopt;
  req.seed = seed ? *seed : std::random_device{}() % 2147483648u;
  if (rec) req = replay_request(a, *rec, d, req);  // the record's settings; the options checked against them
  world.broadcast(&req.seed, 1, DType::U64, 0);  // one seed: every rank draws the same full noise
  // A replay runs at the record's frame rate (LTX-2 takes it: its positions and audio length).
  const double rec_fps = rec ? rec->header.request.value("fps", 0.0) : 0.0;
  if (rec_fps > 0) same_as_record("--fps", a.fps, rec_fps, rec->dir);
  const double fps = rec_fps > 0 ? rec_fps : a.fps.value_or(d.fps);
  check_fps(fps);
  req.fps = fps;
  req.decode_audio = !(a.no_audio && a.audio_output.empty());  // nothing would take the audio
  req.two_stage = a.two_stage;
  // The compute precision follows the machine unless --precision forces one (cpu_tier.h).
  // A replay runs at the record's precision unless --precision says otherwise.
  const cpu::PrecisionChoice pc =
      !a.precision.empty() ? cpu::PrecisionChoice{a.precision, "--precision " + a.precision}
      : rec               ? cpu::PrecisionChoice{rec->header.precision, "the record's (--replay " + rec->dir + ")"}
                          : cpu::default_compute_precision(d.precision);
  const std::string& precision = pc.precision;
  note("precision " + precision + ": " + pc.reason + "; " + cpu::cpu_tier_report());
  // Memory: --offload and --vae-tile as given; a --max-memory budget adds them when the plan needs them.
  req.offload = a.offload;
  if (a.vae_tile != 0) (void)vae_tile_check(a.vae_tile);
  req.vae_tile = a.vae_tile;
  std::optional<double> budget;
  if (!a.max_memory.empty()) {
    budget = parse_memory_size(a.max_memory, "--max-memory");
    const MemoryChoice mc = choose_memory(
        [&](bool off, int64_t tile) {
          Request r2 = req;
          r2.offload = off;
          r2.vae_tile = tile;
          return model.family->memory_plan(model.variant.name, r2, precision);
        },
        *budget, a.max_memory, a.offload, a.vae_tile, kAutoVaeTile);
    req.offload = mc.offload;
    req.vae_tile = mc.vae_tile;
    note("memory: " + mc.reason);
  }
  const CheckedRequest checked = check_request(*model.family, model.variant.name, req, precision,
                                               [](const std::string& s) { note("warning: " + s); });
  Geometry geom = checked.geometry;
  if (!a.noise_file.empty()) {
    // With images, the video's size comes from them: the noise's shape is checked at the run.
    req.noise = read_noise_file(a.noise_file, req.image.defined() || req.has_control() ? Shape{} : latent_shape(geom, req));
    if (a.seed) note("warning: --seed " + *a.seed + " is unused: the noise comes from " + a.noise_file);
  }

  // The replay's comparison is of latents: it decodes and writes a video only when -o asks.
  const bool write = !rec || a.output.has_value();
  const std::string out_path =
      a.output ? *a.output : model.variant.name + "-seed" + std::to_string(req.seed) + ".mp4";
  const OutputFormat format =
      a.output_format.empty() ? output_format_from_path(out_path) : parse_output_format(a.output_format);
  {
    const auto dir = std::filesystem::path(out_path).parent_path();
    std::error_code ec;
    VIDAX_CHECK(dir.empty() || std::filesystem::is_directory(dir, ec),
                "output directory " << dir.string() << " does not exist (-o " << out_path << ")");
  }
  if (write) check_output_paths(out_path, format);  // a special file or a symlink is refused before any work
  check_audio_options(model.variant.name, model.variant.audio, out_path, format, a.no_audio, a.audio_output);
  // The record's folder is checked (and its hidden partial folder made) before any work too.
  std::unique_ptr<RecordWriter> recorder;
  if (!a.record.empty() && lead) recorder = std::make_unique<RecordWriter>(a.record);
  auto lora_specs = [](const std::vector<std::string>& args, const char* flag) {
    std::vector<translate::LoraSpec> out;
    for (const auto& l : args) {
      out.push_back(translate::parse_lora_spec(l));
      VIDAX_CHECK(std::filesystem::is_regular_file(out.back().path), flag << " " << l << ": no file " << out.back().path);
    }
    return out;
  };
  const std::vector<translate::LoraSpec> loras = lora_specs(a.loras, "--lora");
  const std::vector<translate::LoraSpec> loras_high = lora_specs(a.loras_high_noise, "--lora-high-noise");
  const std::vector<translate::LoraSpec> loras_low = lora_specs(a.loras_low_noise, "--lora-low-noise");
  const translate::LoraMode lora_mode = translate::parse_lora_mode(a.lora_mode);

  // Load. A one-shot run frees the text encoder once the prompts are encoded and the DiT once
  // the steps are done, so the VAE decode has their memory.
  g_phase = "loading the weights";
  auto t0 = std::chrono::steady_clock::now();
  LoadOptions lo;
  lo.weights_dir = a.weights;
  lo.files = a.files;
  lo.offload = req.offload;
  lo.vae_tile = req.vae_tile;
  lo.model = model.variant.name;
  lo.precision = precision;
  lo.on_stage = [](const std::string& s) { note(s); };
  lo.mesh = mesh.get();
  lo.text_encoder = Residency::FreeAfterUse;
  lo.denoiser = Residency::FreeAfterUse;
  lo.loras = loras;
  lo.lora.allow_unmatched = a.lora_allow_unmatched;
  lo.loras_high_noise = loras_high;
  lo.loras_low_noise = loras_low;
  lo.lora.mode = lora_mode;
  lo.device = a.device;
  lo.pjrt_plugin = a.pjrt_plugin;
  lo.spatial_upsampler = a.spatial_upsampler;
  lo.distilled_lora = a.distilled_lora;
  LoadedModel loaded = model.family->load(lo);
  VIDAX_CHECK(loaded.parts.two_stage || (a.spatial_upsampler.empty() && a.distilled_lora.empty()),
              (a.spatial_upsampler.empty() ? "--distilled-lora" : "--spatial-upsampler-path")
                  << ": " << model.variant.name << " has no two-stage pipeline (--two-stage) that would take it");
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  geom = loaded.parts.geometry;
  validate_request(geom, req);  // the loaded configs are the final word
  throw_if_interrupted("loading");

  // Run.
  note("generating " + std::to_string(req.frames) + " frames of " +
       (req.image.defined() ? "the area of " : std::string()) + std::to_string(req.width) + "x" +
       std::to_string(req.height) + (req.image.defined() ? " (the image's aspect ratio decides the size)" : "") + ", " + std::to_string(req.steps) + " " + req.sampler + " steps, " +
       (req.noise.defined() ? "noise from " + a.noise_file : "seed " + std::to_string(req.seed)) +
       (req.reference_videos.empty() ? std::string()
                                     : ", " + std::to_string(req.reference_videos.size()) +
                                           " reference video(s) (the model's pipeline sets the steps and size)"));
  std::optional<Replayer> replayer;
  if (rec) {
    const double tol = a.replay_tolerance.value_or(default_replay_tolerance(rec->header.precision, loaded.precision));
    replayer.emplace(*rec, req, tol);  // req.noise := the recorded noise; the schedule checked
    // Several streams: the run's own draws are compared as it makes them (said after the run).
    note("replaying " + rec->dir + " (" + rec->header.producer.value("name", std::string("?")) + ", " +
         rec->header.precision + "): the recorded noise is injected" +
         (rec->has_streams() ? " (streams " + rec->stream_names() + ")"
                             : std::string("; the seed's own CPU draw ") +
                                   (replayer->report().noise_matches_seed ? "matches it bit for bit" : "differs from it")));
  }
  std::optional<ProgressBar> bar;
  int bar_total = static_cast<int>(req.steps);
  if (lead) bar.emplace("denoising", bar_total);
  Events ev;
  std::optional<ProgressBar> decode_bar;
  ev.on_stage = [&](const std::string& s) {
    g_phase = s;
    if (s == "denoising") return;  // the bar shows it
    if (s == "decoding the video" && bar) bar->finish();  // end the bar's line before the next message
    note(s);
  };
  ev.on_step = [&](int done, int total, double secs) {
    // A run with its own step count (LTX-2's IC-LoRA pipeline: the distilled table) reports it here.
    if (bar && total > 0 && total != bar_total) bar.emplace("denoising", bar_total = total);
    if (bar) bar->update(done, secs);
  };
  ev.on_decode = [&](int done, int total, double secs) {
    if (!lead) return;
    if (!decode_bar) decode_bar.emplace("decoding", total);
    decode_bar->update(done, secs);
  };
  ev.warn = [](const std::string& s) { note("warning: " + s); };
  if (recorder) recorder->attach(ev);
  if (replayer) replayer->attach(ev);
  Result res;
  try {
    res = run_generation(loaded.parts, req, ev, write && lead && format != OutputFormat::Latents);  // decode: rank 0 only
  } catch (const ReplayDiverged&) {
    if (bar) bar->abandon();
    if (lead && !a.json) print_replay(replayer->report(), static_cast<int>(req.steps));
    if (lead && a.json)
      std::printf("%s\n", nlohmann::json{{"replay", replayer->report().to_json()}, {"record", rec->dir}}.dump(2).c_str());
    throw;
  } catch (...) {
    if (bar) bar->abandon();  // no "N/M done" line for a run that failed
    if (decode_bar) decode_bar->abandon();
    throw;
  }
  if (bar) bar->finish();
  if (decode_bar) decode_bar->finish();
  if (loaded.parts.device_report) note(loaded.parts.device_report());
  if (!lead) return 0;
  if (replayer) replayer->finish(res);
  if (replayer && rec->has_streams())
    note(std::string("the seed's own CPU draws ") +
         (replayer->report().noise_matches_seed ? "match the record's bit for bit" : "differ from the record's"));
  g_phase = "writing " + out_path;

  // Write.
  nlohmann::json params{{"vidax_version", VIDAX_VERSION},
                        {"model", loaded.variant.name},
                        {"family", model.family->name()},
                        {"weights", a.weights.empty() ? nlohmann::json() : nlohmann::json(a.weights)},
                        {"files",
                         {{"diffusion_model", part_or_null(a.files.diffusion_model)},
                          {"vae", part_or_null(a.files.vae)},
                          {"text_encoder", part_or_null(a.files.text_encoder)},
                          {"tokenizer", part_or_null(a.files.tokenizer)}}},
                        {"layout", loaded.layout},
                        {"prompt", req.prompt},
                        {"negative_prompt", res.negative_prompt},
                        {"denoiser_calls", res.denoiser_calls},
                        {"seed", req.noise.defined() ? nlohmann::json() : nlohmann::json(req.seed)},
                        {"noise_file", a.noise_file.empty() ? nlohmann::json() : nlohmann::json(a.noise_file)},
                        {"image", a.images.empty() ? nlohmann::json() : nlohmann::json(a.images.front().path)},
                        {"key_images", key_images_json(a, req)},
                        {"last_image", a.last_image.empty() ? nlohmann::json() : nlohmann::json(a.last_image)},
                        {"control_video", a.control_video.empty() ? nlohmann::json() : nlohmann::json(a.control_video)},
                        {"mask_video", a.mask_video.empty() ? nlohmann::json() : nlohmann::json(a.mask_video)},
                        {"reference_images", a.reference_images},
                        {"control_scale", a.control_scale},
                        {"reference_videos", reference_videos_json(a)},
                        {"skip_stage_2", a.skip_stage_2 ? nlohmann::json(true) : nlohmann::json()},
                        {"frames", res.frames ? res.frames : req.frames},
                        {"height", res.height},
                        {"width", res.width},
                        // a run with reference videos takes its pipeline's own steps (LTX-2 IC-LoRA: 8)
                        {"steps", req.reference_videos.empty() ? req.steps : static_cast<int64_t>(res.timesteps.size())},
                        {"sampler", req.sampler},
                        {"shift", req.shift},
                        {"guidance", req.guidance},
                        {"cfg_scale", req.cfg_scale != 1.0 ? nlohmann::json(req.cfg_scale) : nlohmann::json()},
                        // per denoiser when the model has several (Wan 2.2 A14B: [low noise, high noise])
                        {"guidance_scales", req.guidance_scales.empty() ? nlohmann::json() : nlohmann::json(req.guidance_scales)},
                        {"denoiser_steps", res.denoiser_steps.size() > 1 ? nlohmann::json(res.denoiser_steps) : nlohmann::json()},
                        {"precision", loaded.precision},
                        {"loras", lora_json(loras)},
                        {"loras_high_noise", loras_high.empty() ? nlohmann::json() : lora_json(loras_high)},
                        {"loras_low_noise", loras_low.empty() ? nlohmann::json() : lora_json(loras_low)},
                        {"lora_mode", translate::lora_mode_name(lora_mode)},
                        {"preset", a.preset.empty() ? nlohmann::json() : nlohmann::json(a.preset)},
                        {"two_stage", req.two_stage},
                        {"precision_reason", pc.reason},
                        {"cpu_tier", cpu::cpu_tier_name(cpu::cpu_tier())},
                        {"fps", fps},
                        {"seconds",
                         {{"load", load_s},
                          {"text", res.seconds_text},
                          {"denoise", res.seconds_denoise},
                          {"decode", res.seconds_decode}}},
                        {"memory", memory_json(checked.memory, budget, req)},
                        {"device", loaded.parts.device_json ? loaded.parts.device_json() : nlohmann::json{{"device", "cpu"}}}};
  if (recorder) {
    RecordHeader h;
    h.producer = {{"name", "vidax"}, {"version", VIDAX_VERSION}, {"cpu_tier", cpu::cpu_tier_name(cpu::cpu_tier())}};
    h.model = loaded.variant.name;
    h.family = model.family->name();
    h.precision = loaded.precision;
    h.request = request_to_json(req);
    h.noise_from_seed = a.noise_file.empty();
    recorder->commit(h, res);
    params["record"] = recorder->dir();
    note("recorded " + std::to_string(res.timesteps.size()) + " steps into " + recorder->dir());
  }
  if (replayer) {
    params["record"] = rec->dir;
    params["replay"] = replayer->report().to_json();
    params["seed"] = req.seed;
    params["noise_file"] = nullptr;
    if (!a.json) print_replay(replayer->report(), static_cast<int>(req.steps));
  }
  const bool replay_ok = !replayer || (replayer->report().final && replayer->report().final->ok);
  if (!write) {
    if (a.json) std::printf("%s\n", params.dump(2).c_str());
    VIDAX_CHECK(replay_ok, "replay: the final latent differs from the record's beyond --replay-tolerance "
                               << replayer->report().tolerance << " (rel_l2 " << replayer->report().final->rel_l2
                               << ")");
    return 0;
  }
  OutputRequest oreq;
  oreq.path = out_path;
  oreq.format = format;
  oreq.fps = fps;
  oreq.params = params;
  oreq.warn = ev.warn;
  oreq.audio.waveform = res.audio;
  oreq.audio.sample_rate = res.audio_sample_rate;
  oreq.audio.drop = a.no_audio && res.audio.defined();  // a latents run decodes no audio to drop
  oreq.audio.wav_path = a.audio_output;
  const std::string sidecar = write_output(oreq, res.video, res.latents);
  note("wrote " + out_path + " (" + output_format_name(format) + ") and " + sidecar +
       (a.audio_output.empty() ? std::string() : " and " + a.audio_output));
  if (a.json) {  // the sidecar's JSON: the run's record with what the writer added (output_format, audio)
    std::ifstream is(sidecar);
    const nlohmann::json written = nlohmann::json::parse(is, nullptr, /*allow_exceptions=*/false);
    std::printf("%s\n", (written.is_object() ? written : params).dump(2).c_str());
  }
  VIDAX_CHECK(replay_ok, "replay: the final latent differs from the record's beyond --replay-tolerance "
                             << replayer->report().tolerance << " (rel_l2 " << replayer->report().final->rel_l2
                             << ")");
  return 0;
}

}  // namespace

Command add_generate(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* sub = app.add_subcommand("generate", "Generate a video from a text prompt (text-to-video)");
  sub->add_option("--model", a->model,
                  engine::variant_names() + " (default: detected from --weights; `vidax models` lists them)");
  sub->add_option("--weights", a->weights,
                  "Checkpoint directory (original or diffusers layout); or give the parts as files (next options)");
  add_part_options(sub, a->files, PartStyle::Run);
  sub->add_flag("--offload", a->offload,
                "Stream the DiT's blocks from the mapped file, one at a time with the next prefetched "
                "(bounded memory; docs/generate.md)");
  sub->add_option("--max-memory", a->max_memory,
                  "Memory budget, e.g. 16G: adds --offload and --vae-tile when the plan needs them, refuses a "
                  "request that cannot fit");
  sub->add_option("--vae-tile", a->vae_tile,
                  "Decode the video in spatial tiles of this many pixels (a multiple of 32, e.g. 256), blended "
                  "over a quarter-tile overlap");
  sub->add_flag("--json", a->json, "Print the run's record (the sidecar's JSON, with its memory) on stdout");
  sub->add_option("--prompt", a->prompt, "The text prompt (required, except with --replay)");
  sub->add_option("--negative-prompt", a->negative_prompt,
                  "Negative prompt (default: the model config's sample_neg_prompt, as the reference)");
  sub->footer("Unset options take the model's own defaults (the reference's); `vidax models` lists them per model.");
  CLI::Option* image_opt =
      sub->add_option("--image", a->image_paths,
                      "Image-to-video: the first frame (PNG, JPEG, ...); Wan: the video takes its aspect ratio at the "
                      "area of --width x --height, as the reference. LTX-2: repeatable, each optionally followed by "
                      "--image-frame / --image-strength; resized and centre-cropped to --width x --height")
          ->allow_extra_args(false);
  CLI::Option* frame_opt =
      sub->add_option("--image-frame", a->image_frames,
                      "LTX-2: the pixel frame the --image before it conditions (default 0, the first image only)")
          ->allow_extra_args(false);
  CLI::Option* strength_opt =
      sub->add_option("--image-strength", a->image_strengths,
                      "LTX-2: the strength of the --image before it, 0..1 (default 1: kept as given)")
          ->allow_extra_args(false);
  sub->add_option("--last-image", a->last_image, "First-last-frame-to-video: the last frame (needs --image)");
  sub->add_option("--control-video", a->control_video,
                  "VACE: the control video (its frames to keep, or a depth/pose/... video); its aspect ratio and "
                  "length set the video's, at the area of --width x --height, as the reference");
  sub->add_option("--mask-video", a->mask_video,
                  "VACE: the mask, a video of the control video's frames and size: white = regenerate, black = keep "
                  "(needs --control-video)");
  sub->add_option("--reference-image", a->reference_images,
                  "VACE: a reference image (repeatable), pasted on a white canvas of the video's size");
  sub->add_option("--control-scale", a->control_scale, "VACE: the control's strength (context_scale, default 1.0)");
  CLI::Option* reference_opt =
      sub->add_option("--reference-video", a->reference_video_paths,
                      "LTX-2 IC-LoRA: a reference (control) video, strength 1 (repeatable; needs its IC-LoRA with "
                      "--lora and --skip-stage-2); resized and centre-cropped, taken frame by frame")
          ->allow_extra_args(false);
  CLI::Option* conditioning_opt =
      sub->add_option("--video-conditioning", a->video_conditionings,
                      "LTX-2 IC-LoRA: a reference video and its strength 0..1 (the reference CLI's PATH STRENGTH; "
                      "repeatable)")
          ->allow_extra_args(false);
  CLI::Option* video_opt =
      sub->add_option("--video", a->video_paths,
                      "LTX-2 video-to-video: the source video, run as an IC-LoRA reference video (the official "
                      "video-to-video path; = --reference-video FILE)")
          ->allow_extra_args(false);
  sub->add_option("--conditioning-attention-strength", a->conditioning_attention_strength,
                  "LTX-2 IC-LoRA: how strongly the generated tokens attend to the reference videos, 0..1 (default 1)");
  sub->add_flag("--skip-stage-2", a->skip_stage_2,
                "LTX-2 IC-LoRA: stop after stage 1 (the video at half --height and --width, as the reference's "
                "--skip-stage-2); stage 2 is not built, so it is required with reference videos");
  sub->add_option("--frames", a->frames, "Frame count: 4k+1 for Wan (default per model)");
  sub->add_option("--height", a->height, "Height in pixels, a multiple of 16 (default per model)");
  sub->add_option("--width", a->width, "Width in pixels, a multiple of 16 (default per model)");
  sub->add_option("--steps", a->steps, "Sampling steps, 1..1000 (default per model)");
  sub->add_option("--seed", a->seed,
                  "Seed of torch's CPU generator for the noise, 0..2^64-1 (default or negative: random, recorded)");
  sub->add_option("--guidance", a->guidance, "Guidance scale (default per model); 1 skips the unconditional pass");
  sub->add_option("--cfg-scale", a->cfg_scale,
                  "Embedded-guidance models (HunyuanVideo): a classifier-free scale on top of --guidance (the "
                  "embedded one); > 1 adds the negative-prompt pass (default 1: one pass per step)");
  sub->add_option("--shift", a->shift, "Flow-matching sigma shift (default per model)");
  std::string samplers;
  for (const auto& n : pipeline::sampler_names()) samplers += (samplers.empty() ? "" : " | ") + n;
  sub->add_option("--sampler", a->sampler, samplers + " (default per model)");
  sub->add_option("--precision", a->precision, "DiT compute precision: fp32 | bf16 (default per model)");
  sub->add_option("--noise", a->noise_file, "Initial noise from a .safetensors file instead of --seed");
  sub->add_option("-o,--output", a->output,
                  "Output path: .mp4, .y4m, .safetensors (latents) or no extension (a folder of PNG frames); "
                  "default <model>-seed<seed>.mp4");
  sub->add_option("--output-format", a->output_format,
                  "mp4 | png (a directory of frames) | y4m | latents (safetensors); default from -o's extension");
  sub->add_flag("--no-audio", a->no_audio,
                "Models that make audio (LTX-2 audio-video): write the video without its audio track");
  sub->add_option("--audio-output", a->audio_output,
                  "Models that make audio: also write the waveform as FILE.wav (16-bit PCM)");
  sub->add_flag("--two-stage", a->two_stage,
                "LTX-2: the two-stage pipeline (TI2VidTwoStagesPipeline): stage 1 at half the size with the guiders, "
                "the spatial x2 latent upsampler, stage 2 at full size with 3 distilled steps and the distilled LoRA "
                "(sizes multiples of 64; docs/models/ltx2.md \"Two stages\")");
  sub->add_option("--spatial-upsampler-path", a->spatial_upsampler,
                  "The two-stage pipelines' spatial x2 latent upsampler (default: the one in --weights, e.g. "
                  "ltx-2.3-spatial-upscaler-x2-1.1.safetensors)");
  sub->add_option("--distilled-lora", a->distilled_lora,
                  "FILE[:STRENGTH]: the two-stage pipeline's stage-2 LoRA (default: the one in --weights, e.g. "
                  "ltx-2.3-22b-distilled-lora-384-1.1.safetensors, strength 1)");
  sub->add_option("--fps", a->fps, "Frames per second of the video file, 1..240 (default per model)");
  sub->add_option("--threads", a->threads, "CPU threads, 1..4x the logical CPUs (default 0: all)");
  sub->add_option("--lora", a->loras,
                  "FILE[:SCALE]: a LoRA applied to the DiT at load (repeatable; the last :number is the scale, "
                  "default 1; docs/lora.md)");
  sub->add_option("--lora-high-noise", a->loras_high_noise,
                  "FILE[:SCALE]: a LoRA for the high-noise expert only (Wan 2.2 A14B; repeatable)");
  sub->add_option("--lora-low-noise", a->loras_low_noise,
                  "FILE[:SCALE]: a LoRA for the low-noise expert only (Wan 2.2 A14B; repeatable)");
  sub->add_option("--lora-mode", a->lora_mode,
                  "merge (into the weights, fp32 sum cast once) | runtime (kept beside them: each Linear adds "
                  "scale*(alpha/rank)*up@(down@x) in fp32; the weights' bytes untouched) | auto (runtime for "
                  "quantized GGUF/fp8/int8 weights, merge otherwise)")
      ->capture_default_str();
  sub->add_option("--preset", a->preset,
                  "Sampling settings a distilled model's publisher specifies: lightx2v-4step (4 fixed steps, "
                  "shift 5, the lightx2v sampler, guidance 1); explicit options override (docs/lora.md)");
  sub->add_flag("--lora-allow-unmatched", a->lora_allow_unmatched,
                "apply a LoRA even when some of its keys match no parameter (they are printed)");
  sub->add_option("--record", a->record,
                  "Record the run into a new folder DIR: every noise tensor drawn, the latent after each step and "
                  "the final latent, per stream for LTX-2's video and audio (safetensors + record.json; "
                  "docs/generate.md)");
  sub->add_option("--replay", a->replay,
                  "Replay a record (vidax --record, tools/golden/record_reference.py or record_reference_ltx2.py): "
                  "its request on its noise, each step's latent (each stream's) compared; stops at the first step "
                  "beyond --replay-tolerance");
  sub->add_option("--replay-tolerance", a->replay_tolerance,
                  "Bound on each step's latent relative L2 against the record (default 1e-5 at fp32, 1e-2 when "
                  "the record or the replay is bf16)");
  sub->add_option("--device", a->device,
                  "Where the DiT's steps run: cpu (default) or pjrt (compiled once through a PJRT plugin; the text "
                  "encoder and the VAE stay on the CPU; docs/pjrt.md)")
      ->check(CLI::IsMember({"cpu", "pjrt"}));
  sub->add_option("--pjrt-plugin", a->pjrt_plugin, "PJRT plugin .so for --device pjrt (default: $VIDAX_PJRT_PLUGIN)");
  sub->add_option("--mesh", a->mesh, "Device mesh under mpirun, e.g. cfg=2,sp=2 or sp=2,tp=2 (docs/parallelism.md)");
  return {sub, [a, sub, image_opt, frame_opt, strength_opt, reference_opt, conditioning_opt, video_opt]() -> int {
            try {
              const std::vector<CLI::Option*>& order = sub->parse_order();
              a->images = image_args(std::vector<const CLI::Option*>(order.begin(), order.end()), image_opt, frame_opt,
                                     strength_opt, a->image_paths, a->image_frames, a->image_strengths);
              a->reference_videos = reference_video_args(std::vector<const CLI::Option*>(order.begin(), order.end()),
                                                         reference_opt, conditioning_opt, video_opt,
                                                         a->reference_video_paths, a->video_conditionings,
                                                         a->video_paths);
              return run_generate(*a);
            } catch (const pipeline::Interrupted& e) {
              std::fprintf(stderr, "vidax: %s\n", e.what());
              const int sig = pipeline::interrupt_signal();
              return sig > 0 ? 128 + sig : 130;  // as a shell reports the signal (docs/generate.md)
            } catch (const std::bad_alloc&) {
              throw Error(msg() << "out of memory while " << g_phase << "; " << kOutOfMemoryAdvice);
            } catch (const OutOfMemory& e) {  // the engine's own allocator, with the size it asked for
              throw Error(msg() << "out of memory while " << g_phase << " (" << e.what() << "); "
                                << kOutOfMemoryAdvice);
            }
          }};
}

}  // namespace vidax::app
