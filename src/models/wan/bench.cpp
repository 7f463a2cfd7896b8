// `vidax bench` for Wan 2.1 T2V (pipeline/bench.h has what it measures and
// how): the text encoder, the DiT context and steps with FLOPs and MFU, the VAE
// decode, on random weights of the real shapes.
#include "models/wan/bench.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <vector>

#include "backend/cpu/peak.h"
#include "backend/ops.h"
#include "core/error.h"
#include "dist/mesh.h"
#include "io/quant_policy.h"
#include "models/wan/dit.h"
#include "models/wan/dit_pjrt.h"
#include "models/wan/lora_runtime.h"
#include "models/wan/param_shapes.h"
#include "models/wan/presets.h"
#include "models/wan/vae.h"
#include "models/wan/vae22.h"
#include "nn/params.h"
#include "pipeline/bench_profile.h"
#include "pipeline/memory_plan.h"
#include "models/wan/t2v_load.h"
#include "models/wan/weights.h"
#include "models/wan/family.h"
#include "models/wan/checkpoint_keys.h"
#include "text/umt5_keys.h"
#include "translate/source.h"
#include "io/checkpoint.h"
#include <filesystem>
#include <unistd.h>
#include "text/t5_config.h"
#include "text/t5_encoder.h"

namespace vidax::wan {

using nlohmann::json;
using namespace vidax::pipeline;  // the bench helpers

// ---- FLOPs from the shapes ----------------------------------------------------------------

json dit_step_flops_parts(const DiTConfig& cfg, int64_t tokens) {
  const double L = static_cast<double>(tokens), D = static_cast<double>(cfg.dim),
               F = static_cast<double>(cfg.ffn_dim), Lt = static_cast<double>(cfg.text_len),
               n = static_cast<double>(cfg.num_layers), pv = static_cast<double>(cfg.patch_volume());
  // Per block: self q,k,v,o + cross q,o (4 + 2 projections of D x D) and the FFN (D x F twice).
  const double block_linear = 2 * L * (6 * D * D + 2 * D * F);
  // Patch embedding (in_dim*pv -> D), head (D -> out_dim*pv), and the B=1 time MLPs (negligible).
  const double edge_linear = 2 * L * D * pv * static_cast<double>(cfg.in_dim + cfg.out_dim) +
                             2 * (static_cast<double>(cfg.freq_dim) * D + D * D + D * 6 * D);
  // Attention: q k^T and p v, 2 * Lq * Lk * D each (all heads together).
  const double self_attn = n * 4 * L * L * D;
  const double cross_attn = n * 4 * L * Lt * D;
  json parts{{"linear", n * block_linear + edge_linear}, {"self_attention", self_attn}, {"cross_attention", cross_attn}};
  // I2V / FLF2V: each block also attends to the CLIP tokens (its image K/V are made once per run).
  if (cfg.has_image_input())
    parts["image_cross_attention"] = n * 4 * L * static_cast<double>(cfg.image_tokens * (cfg.model_type == "flf2v" ? 2 : 1)) * D;
  // VACE: each vace block is a block (the same attention and FFN over the latent's tokens) plus
  // after_proj (and before_proj at vace layer 0), D x D each, on the vace context's tokens (as many).
  if (cfg.is_vace()) {
    const double v = static_cast<double>(cfg.vace_layers.size());
    const double projections = v + static_cast<double>(std::count(cfg.vace_layers.begin(), cfg.vace_layers.end(), 0));
    parts["vace_linear"] = v * block_linear + 2 * L * D * D * projections +
                           2 * L * D * pv * static_cast<double>(cfg.vace_in_dim);  // + vace_patch_embedding
    parts["vace_self_attention"] = v * 4 * L * L * D;
    parts["vace_cross_attention"] = v * 4 * L * Lt * D;
  }
  return parts;
}

double dit_step_flops(const DiTConfig& cfg, int64_t tokens) {
  const json parts = dit_step_flops_parts(cfg, tokens);  // named: items() of a temporary would dangle
  double sum = 0;
  for (const auto& [k, v] : parts.items()) sum += v.get<double>();
  return sum;
}

double dit_activation_bytes(const DiTConfig& cfg, int64_t tokens) {
  return 2.0 * 4.0 * static_cast<double>(tokens) * static_cast<double>(cfg.ffn_dim + 8 * cfg.dim);
}

double dit_weight_bytes(const DiTConfig& cfg, DType dtype) {
  double n = 0;
  for (const auto& [name, shape] : wan_dit_param_shapes(cfg.to_json())) n += static_cast<double>(shape_numel(shape));
  return n * static_cast<double>(dtype_size(dtype));
}

// ---- the benchmark ----------------------------------------------------------------------

namespace {

double rel_l2(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_f64_vector(), y = b.to_f64_vector();
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) num += (x[i] - y[i]) * (x[i] - y[i]), den += y[i] * y[i];
  return std::sqrt(num / (den > 0 ? den : 1));
}

// The DiT steps through PJRT (--device pjrt): the first call records, lowers and compiles (or loads
// from the compile cache), timed apart; then opt.steps x opt.repeats steps, each one forward per
// context, timed on the wall clock (the device's own time is not visible to us).
json bench_pjrt(const BenchOptions& opt, const std::shared_ptr<const WanDiT>& dit, const Tensor& x,
                const std::vector<const TextContext*>& contexts, double step_flops,
                const std::function<void(const std::string&)>& log, Tensor* first_output) {
  pjrt::LowerOptions lower;
  lower.highest = opt.pjrt_highest;
  lower.attention_block = opt.pjrt_attention_block;
  PjrtDiT pj(pjrt::Plugin::resolve_path(opt.pjrt_plugin), [&](const std::string& m) { log("warning: " + m); }, lower);
  log("PJRT: " + pj.info().str() + ", dot precision " + (lower.highest ? "HIGHEST" : "DEFAULT") +
      ", attention block " + (lower.attention_block > 0 ? std::to_string(lower.attention_block) + " keys" : "auto") +
      ", compile cache " + (pj.stats_json()["compile_cache"].is_null() ? std::string("off")
                                                                       : pj.stats_json()["compile_cache"].get<std::string>()));
  json out;
  Tensor y;
  // First step: record + lower + compile (or cache load) + run, for every context (one program).
  const Sample first = timed([&] {
    for (const TextContext* c : contexts) y = pj.forward(dit, x, std::vector<double>{999.0}, *c);
  });
  VIDAX_CHECK(ops::all_finite(y), "bench: the PJRT DiT output is not finite");
  *first_output = y;  // t = 999, the last context: compared with the CPU backend's first step
  const pjrt::SessionStats s0 = pj.session_stats();
  out["first_step_seconds"] = first.wall;
  out["compile_seconds"] = s0.compile_s;
  out["compiled"] = s0.compiles;
  out["cache_hit"] = s0.disk_hits > 0;
  out["lower_seconds"] = s0.lower_s;
  out["record_seconds"] = pj.record_s();
  log(std::string("PJRT: first step ") + std::to_string(first.wall) + " s (record " + std::to_string(pj.record_s()) +
      " s, lower " + std::to_string(s0.lower_s) + " s, " + (s0.disk_hits > 0 ? "compile cache hit " : "compile ") +
      std::to_string(s0.compile_s) + " s)");
  std::vector<Sample> steps;
  for (int rep = 0; rep < opt.repeats; ++rep)
    for (int s = 0; s < opt.steps; ++s) {
      const double t = 999.0 * (1.0 - static_cast<double>(s) / std::max(1, opt.steps));
      steps.push_back(timed([&] {
        for (const TextContext* c : contexts) y = pj.forward(dit, x, std::vector<double>{t}, *c);
      }));
      VIDAX_CHECK(ops::all_finite(y), "bench: the PJRT DiT output is not finite");
      log("PJRT DiT step " + std::to_string(steps.size()) + ": " + std::to_string(steps.back().wall) + " s wall");
    }
  if (!steps.empty()) {
    const json st = stats(steps);
    out["dit_step"] = st;
    out["step_seconds_median"] = st["wall_median"];
    out["step_seconds_min"] = st["wall_min"];
    out["achieved_flops_per_second"] = step_flops / st["wall_min"].get<double>();
  }
  out["session"] = pj.stats_json();
  out["attention_block"] = lower.attention_block;
  VIDAX_CHECK(pj.recompilations() == 0, "bench: the PJRT DiT step was compiled again after the first step ("
                                            << pj.recompilations() << " recompilations)");
  return out;
}

// opt.repeats x opt.steps timed steps of `dit` on the CPU backend at t from 999 down, one forward
// per context; each output checked finite and each step logged as "<what> step N: W s wall, C s CPU".
std::vector<Sample> time_cpu_steps(const BenchOptions& opt, const WanDiT& dit, const Tensor& x,
                                   const std::vector<const TextContext*>& contexts, const std::string& what,
                                   const std::function<void(const std::string&)>& log) {
  std::vector<Sample> steps;
  for (int rep = 0; rep < opt.repeats; ++rep)
    for (int s = 0; s < opt.steps; ++s) {
      const double t = 999.0 * (1.0 - static_cast<double>(s) / std::max(1, opt.steps));
      Tensor y;
      steps.push_back(timed([&] {
        for (const TextContext* c : contexts) y = dit.forward(x, std::vector<double>{t}, *c);
      }));
      VIDAX_CHECK(ops::all_finite(y), "bench: the " << what << " output is not finite");
      log(what + " step " + std::to_string(steps.size()) + ": " + std::to_string(steps.back().wall) + " s wall, " +
          std::to_string(steps.back().cpu) + " s CPU");
    }
  return steps;
}

}  // namespace

json run_bench(const BenchOptions& opt, const std::function<void(const std::string&)>& log) {
  const Preset& preset = wan::preset(opt.model);
  // Real weights as single files: each checked to be its part (the check a run makes) and its
  // config taken from the file; the other stages keep random weights of the preset's shapes.
  const json dit_json = opt.diffusion_model_file.empty()
                            ? preset.dit
                            : single_file_config(opt.diffusion_model_file, translate::wan::dit_component(), "--diffusion-model");
  const DiTConfig cfg = wan::DiTConfig::from_json(dit_json);
  VIDAX_CHECK(opt.diffusion_model_file.empty() || opt.weights_dtype.empty(),
              "bench: --weights-dtype with --diffusion-model: the file's own types are computed on (make a file of "
              "another type with `vidax convert --dtype`)");
  VIDAX_CHECK(!opt.offload || opt.weights_dtype.empty(),
              "bench: --offload with --weights-dtype: streaming is timed on float weights (convert a file with "
              "`vidax convert --dtype` and pass it as --diffusion-model)");
  VIDAX_CHECK(!opt.offload || opt.mesh.empty(), "bench: --offload runs on one rank (drop --mesh)");
  VIDAX_CHECK(!opt.offload || opt.device == "cpu", "bench: --offload with --device pjrt: the PJRT path keeps the "
                                                    "DiT's weights resident (drop --offload)");
  // The latent grid from the model's VAE (Wan 2.1: 16 channels, 4x8x8; Wan 2.2, TI2V-5B: 48, 4x16x16).
  const bool vae22 = preset.vae_version == "wan2.2";
  const Geometry geo = geometry_of(preset.dit, preset.vae, preset.vae_version);
  const Precision precision = parse_precision(opt.precision);
  const DType compute = precision == Precision::BF16 ? DType::BF16 : DType::F32;
  VIDAX_CHECK(opt.steps >= 0 && opt.repeats >= 1, "bench: --steps must be >= 0 and --repeats >= 1");
  VIDAX_CHECK(opt.frames >= 1 && (opt.frames - 1) % geo.vae_stride_t == 0,
              "bench: --frames must be 1 + " << geo.vae_stride_t << "k, got " << opt.frames);
  const int64_t sf = geo.vae_stride_s * cfg.patch_size[1];
  VIDAX_CHECK(opt.height % sf == 0 && opt.width % sf == 0,
              "bench: --height and --width must be multiples of " << sf << ", got " << opt.height << "x" << opt.width);

  const int64_t lat_f = (opt.frames - 1) / geo.vae_stride_t + 1;
  const int64_t lat_h = opt.height / geo.vae_stride_s, lat_w = opt.width / geo.vae_stride_s;
  const int64_t tokens = (lat_f / cfg.patch_size[0]) * (lat_h / cfg.patch_size[1]) * (lat_w / cfg.patch_size[2]);
  const double available = opt.memory_limit_bytes > 0 ? opt.memory_limit_bytes
                                                      : static_cast<double>(mem_available_bytes());

  // VACE: a step also runs the vace blocks on a vace context (random, of the real shape); the
  // paths that do not take one are refused rather than mis-timed.
  VIDAX_CHECK(!cfg.is_vace() || (opt.device == "cpu" && opt.loras.empty()),
              "bench: " << opt.model << " is a VACE model: its step (with the vace blocks) is benchmarked on the CPU "
                        "backend without --lora (--device pjrt does not lower VACE; bench's runtime-LoRA pass is "
                        "text-to-video only)");
  json r;
  r["model"] = opt.model;
  r["precision"] = precision_name(precision);
  r["frames"] = opt.frames;
  r["height"] = opt.height;
  r["width"] = opt.width;
  // An I2V / FLF2V DiT takes [x, y] on its channels: x the latent (out_dim), y the mask and the
  // image latent (in_dim - out_dim), made once per run; the CLIP features likewise.
  const bool image = cfg.has_image_input();
  const int64_t x_channels = image ? cfg.out_dim : cfg.in_dim;
  r["latent_shape"] = {x_channels, lat_f, lat_h, lat_w};
  if (image) r["conditioning_shape"] = {cfg.in_dim - cfg.out_dim, lat_f, lat_h, lat_w};
  r["tokens"] = tokens;
  r["threads"] = omp_get_max_threads();
  r["cfg"] = false;
  r["weights"] = "random (real shapes)";
  r["machine"] = machine_json();
  r["cpu_tier"] = r["machine"]["cpu_tier"];
  r["cpu_features"] = r["machine"]["cpu_features"];
  log(r["machine"]["cpu_tier_report"].get<std::string>());
  // CPU time is only the work done when idle OpenMP threads sleep: with the default
  // (active) policy a thread waiting at a barrier for a descheduled team-mate spins, and
  // on a loaded machine that spinning was measured at up to 10x the work (attention, 2 threads).
  const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
  r["omp_wait_policy"] = wait_policy ? wait_policy : "";
  if (omp_get_max_threads() > 1 && !(wait_policy && std::string(wait_policy) == "passive"))
    log("note: OMP_WAIT_POLICY is not 'passive': CPU times include OpenMP spin-waits (inflated on a loaded machine)");
  uint64_t seed = opt.seed;

  // Text encoder (UMT5): published as bf16 weights; runs in bf16.
  if (opt.text_encoder || !opt.text_encoder_file.empty()) {
    const bool t5_file = !opt.text_encoder_file.empty();
    nlohmann::json t5json =
        t5_file ? single_file_config(opt.text_encoder_file, translate::t5::umt5_component(), "--text-encoder") : preset.t5;
    if (t5json.value("vocab", 0) == 0) t5json["vocab"] = 256;  // the tiny demo's vocabulary comes with its tokenizer
    const text::T5EncoderConfig tcfg = text::T5EncoderConfig::from_json(t5json);
    double t5_bytes = 0;
    std::map<std::string, Shape> shapes;
    for (const auto& [name, shape] : umt5_param_shapes(t5json)) {
      shapes[name] = shape;
      t5_bytes += 2.0 * static_cast<double>(shape_numel(shape));
    }
    check_fits("the text encoder (" + std::to_string(static_cast<int64_t>(t5_bytes / 2)) + " parameters, bf16)",
               2.0 * t5_bytes, available);
    std::map<std::string, Tensor> t5_weights;
    if (t5_file) {
      log("text encoder: " + opt.text_encoder_file);
      t5_weights = translate_part(opt.text_encoder_file, translate::t5::umt5_component(), t5json);
    } else {
      log("text encoder: random bf16 weights (" + std::to_string(gb(t5_bytes)) + " GB)");
    }
    const text::T5Encoder enc(tcfg, [&](const std::string& name) {
      if (t5_file) {
        auto w = t5_weights.find(name);
        VIDAX_CHECK(w != t5_weights.end(), opt.text_encoder_file << ": no parameter " << name);
        return w->second.to(DType::BF16);
      }
      auto it = shapes.find(name);
      VIDAX_CHECK(it != shapes.end(), "bench: no shape for text encoder parameter " << name);
      return random_param(name, it->second, DType::BF16, seed);
    });
    const int64_t L = preset.text_len;
    std::vector<int64_t> ids(static_cast<size_t>(L), 0), mask(static_cast<size_t>(L), 0);
    for (int64_t i = 0; i < std::min(opt.prompt_tokens, L); ++i) {
      ids[static_cast<size_t>(i)] = 1 + static_cast<int64_t>(splitmix64(seed + i) % (tcfg.vocab - 1));
      mask[static_cast<size_t>(i)] = 1;
    }
    const Tensor tid = Tensor::from_i64(ids, {1, L}), tmask = Tensor::from_i64(mask, {1, L});
    std::vector<Sample> s;
    for (int r2 = 0; r2 < opt.repeats; ++r2) s.push_back(timed([&] { (void)enc.forward(tid, tmask); }));
    r["text_encoder"] = stats(s);
    r["text_encoder"]["prompt_tokens"] = opt.prompt_tokens;
    r["text_encoder"]["batch_rows"] = L;
    r["text_encoder"]["weights"] = t5_file ? opt.text_encoder_file : "random (real shapes)";
    r["text_encoder_seconds"] = r["text_encoder"]["wall_median"];
    log("text encoder: " + std::to_string(r["text_encoder_seconds"].get<double>()) + " s (wall, median)");
  }

  // DiT steps.
  if (opt.steps > 0) {
    io::QuantTarget wt;
    try {
      wt = io::QuantTarget::parse(opt.weights_dtype);  // a GGUF block type, fp8, fp8_e5m2 or int8
    } catch (const Error& e) {
      throw Error(msg() << "--weights-dtype: " << e.what());
    }
    const QuantType wq = wt.block;
    const bool narrow = !wt.none();  // matrices kept in a storage type, widened per panel
    const std::string wname = wt.is_scaled() ? opt.weights_dtype : wq != QuantType::None ? quant_name(wq) : "";
    // Resident: the weights in the compute dtype, their packed oneDNN copy, and the largest
    // activations (FFN hidden in fp32 and a few [L, dim] fp32 tensors) with a 2x margin. Block-
    // quantized weights stay as they are (a panel of rows is widened per GEMM): no packed copy.
    const double weight_bytes =
        !narrow ? dit_weight_bytes(cfg, compute)
        : wt.is_scaled() ? dit_weight_bytes(cfg, DType::F32) / 4.0
                         : dit_weight_bytes(cfg, DType::F32) / 4.0 * quant_traits(wq).block_bytes / quant_traits(wq).block;
    const double resident_factor = !narrow ? 2.0 : 1.0;
    const double act_bytes = dit_activation_bytes(cfg, tokens);
    r["dit_memory_estimate_bytes"] = resident_factor * weight_bytes + act_bytes;
    r["weights_dtype"] = !narrow ? "fp32 drawn, cast to the precision" : wname;
    // Streamed, two blocks are in memory at once (the one running and the next).
    if (opt.offload)
      check_fits(opt.model + " DiT streamed in " + precision_name(precision),
                 2.0 * resident_factor * weight_bytes / static_cast<double>(cfg.num_layers) + act_bytes, available);
    else
      check_fits(opt.model + " DiT in " + precision_name(precision), resident_factor * weight_bytes + act_bytes, available);

    const bool dit_file = !opt.diffusion_model_file.empty();
    if (!dit_file)
      log("DiT: random weights of " + opt.model + " (" + std::to_string(gb(weight_bytes)) + " GB in " +
          (!narrow ? std::string(precision_name(precision)) : wname) + ")");
    const auto draw = [&](const std::string& name, const Shape& shape) {
      const bool q = narrow && wt.decision(name, shape, DType::F32).quantize;
      if (q && wt.is_scaled())  // drawn in fp32 one matrix at a time, then quantized
        return Tensor::quantize_scaled(random_param(name, shape, DType::F32, seed, QuantType::None), wt.scaled);
      return random_param(name, shape, DType::F32, seed, q ? wq : QuantType::None);
    };
    // Drawn in fp32 like the published 1.3B checkpoint; the model casts what it runs in bf16.
    // Under mpirun with --mesh the DiT is sharded like `vidax generate --mesh`: each rank keeps its shard.
    std::unique_ptr<dist::Mesh> mesh;
    if (!opt.mesh.empty()) mesh = std::make_unique<dist::Mesh>(dist::world(), dist::parse_mesh(opt.mesh));
    VIDAX_CHECK(opt.device == "cpu" || opt.device == "pjrt", "bench: --device " << opt.device << ": cpu | pjrt");
    VIDAX_CHECK(opt.device == "pjrt" || opt.cpu_baseline, "bench: --no-cpu-baseline needs --device pjrt");
    VIDAX_CHECK(opt.device != "pjrt" || !mesh, "bench: --device pjrt with --mesh is not supported (docs/pjrt.md)");
    VIDAX_CHECK(opt.loras.empty() || (!image && !mesh && opt.device == "cpu" && !dit_file && !opt.offload),
                "bench --lora: random text-to-video DiTs on the CPU backend, one rank, resident (runtime LoRAs are not "
                "lowered, sharded or streamed)");
    // --offload streams the blocks from a file: the --diffusion-model file, else the random weights
    // written once into --scratch-dir (in the compute dtype, one tensor in memory at a time) and reused.
    std::string stream_file = opt.diffusion_model_file;
    if (opt.offload && !dit_file) {
      namespace fs = std::filesystem;
      const fs::path dir = opt.scratch_dir.empty() ? fs::temp_directory_path() : fs::path(opt.scratch_dir);
      std::error_code ec;
      VIDAX_CHECK(fs::is_directory(dir, ec), "bench --offload: --scratch-dir " << dir.string() << " is not a folder");
      stream_file = (dir / ("vidax-bench-" + opt.model + "-seed" + std::to_string(seed) + "-" +
                            dtype_name(compute) + ".safetensors"))
                        .string();
      if (!fs::is_regular_file(stream_file, ec)) {
        const double file_bytes = dit_weight_bytes(cfg, compute);
        const auto space = fs::space(dir, ec);
        VIDAX_CHECK(ec || static_cast<double>(space.available) > 1.05 * file_bytes,
                    "bench --offload: " << dir.string() << " has " << gb(static_cast<double>(space.available))
                                        << " GB free, the weights file needs " << gb(file_bytes) << " GB (--scratch-dir)");
        log("DiT: writing random weights for streaming to " + stream_file + " (" + std::to_string(gb(file_bytes)) + " GB)");
        std::vector<io::TensorSpec> specs;
        for (const auto& [name, shape] : wan_dit_param_shapes(cfg.to_json())) specs.push_back({name, compute, shape});
        io::save_safetensors_streamed(
            stream_file, specs, [&](const std::string& name) {
              for (const auto& sp : specs)
                if (sp.name == name) return draw(name, sp.shape).to(compute);
              throw Error(msg() << "bench: no shape for DiT parameter " << name);
            },
            {{"vidax.note", "random bench weights"}});
      } else {
        log("DiT: streaming the random weights written before, " + stream_file);
      }
    }
    std::shared_ptr<const WanDiT> dit_ptr;
    if (opt.offload) {
      log("DiT: blocks streamed from " + stream_file + (opt.prefetch ? " (next block prefetched)" : " (no prefetch)"));
      dit_ptr = std::make_shared<const WanDiT>(load_streamed_dit(stream_file, dit_json, cfg, precision, nullptr, opt.prefetch));
    } else if (dit_file) {
      log("DiT: " + opt.diffusion_model_file);
      nn::ParamSource fsrc = nn::ParamSource::from_map(
          translate_part(opt.diffusion_model_file, translate::wan::dit_component(), dit_json), opt.diffusion_model_file);
      dit_ptr = std::make_shared<const WanDiT>(cfg, fsrc, precision, mesh.get());
      fsrc.expect_all_taken();
    } else {
      nn::ParamSource src = nn::ParamSource::generated(draw, "random weights");
      dit_ptr = std::make_shared<const WanDiT>(cfg, src, precision, mesh.get());
    }
    r["dit_weights"] = dit_file ? opt.diffusion_model_file : "random (real shapes)";
    r["offload"] = opt.offload;
    const WanDiT& dit = *dit_ptr;
    r["mesh"] = mesh ? mesh->shape().str() : dist::MeshShape{}.str();
    // The ledger counts the parameters as the source holds them (fp32 here); the GEMM weights
    // are kept in the compute dtype, so in bf16 about half of that stays resident. Quantized
    // weights are counted as their blocks.
    const double resident = narrow ? static_cast<double>(dit.weight_bytes())
                                                  : static_cast<double>(dit.weight_bytes()) *
                                                        static_cast<double>(dtype_size(compute)) /
                                                        static_cast<double>(dtype_size(DType::F32));
    r["dit_weight_bytes_per_rank"] = dit.weight_bytes();
    r["dit_weight_bytes_unsplit"] = dit.full_weight_bytes();
    r["dit_weight_bytes_per_rank_in_compute_dtype"] = resident;
    if (narrow)
      log("DiT weights on this rank: " + std::to_string(gb(static_cast<double>(dit.weight_bytes()))) + " GB (" +
          wname + " matrices, the rest fp32; mesh " + r["mesh"].get<std::string>() + ")");
    else
      log("DiT weights on this rank: " + std::to_string(gb(static_cast<double>(dit.weight_bytes()))) + " GB of " +
          std::to_string(gb(static_cast<double>(dit.full_weight_bytes()))) + " GB as drawn (fp32), about " +
          std::to_string(gb(resident)) + " GB in " + dtype_name(compute) + " (mesh " + r["mesh"].get<std::string>() +
          ")");

    const Tensor context = random_input({std::min(opt.prompt_tokens, cfg.text_len), cfg.text_dim}, seed + 1);
    TextContext text, tiny_text;
    ImageContext image_context;  // I2V / FLF2V: shared by both CFG branches, as the reference's arg_c / arg_null
    const Sample ctx = timed([&] { text = image ? dit.encode_text(context) : dit.encode_context(context); });
    tiny_text = text;
    if (image) {  // random CLIP features and conditioning latent of the real shapes
      const Tensor clip = random_input({cfg.model_type == "flf2v" ? 2 : 1, cfg.image_tokens, cfg.image_dim}, seed + 4);
      const int64_t yc = cfg.in_dim - cfg.out_dim;
      const Tensor y = random_input({yc, lat_f, lat_h, lat_w}, seed + 5);
      const Sample img = timed([&] { image_context = dit.encode_images(clip, y); });
      text = with_images(text, image_context);
      r["dit_image_context_seconds"] = img.wall;
      tiny_text = with_images(tiny_text, dit.encode_images(clip, random_input({yc, 1, cfg.patch_size[1], cfg.patch_size[2]}, seed + 6)));
    }
    // VACE: a random vace context of the real shape (the control video's latents and the mask:
    // vace_in_dim channels on the latent grid), scale 1, shared by both CFG branches as in the run.
    VaceContext vace_context;
    if (cfg.is_vace()) {
      const Tensor vc = random_input({cfg.vace_in_dim, lat_f, lat_h, lat_w}, seed + 8);
      const Sample vs = timed([&] { vace_context = dit.encode_vace(vc, 1.0); });
      text = with_vace(text, vace_context);
      r["dit_vace_context_seconds"] = vs.wall;
      r["vace_context_shape"] = {cfg.vace_in_dim, lat_f, lat_h, lat_w};
      tiny_text = with_vace(tiny_text, dit.encode_vace(random_input({cfg.vace_in_dim, 1, cfg.patch_size[1],
                                                                     cfg.patch_size[2]}, seed + 9), 1.0));
    }
    r["dit_context_seconds"] = ctx.wall;
    r["dit_context_cpu_seconds"] = ctx.cpu;
    // --cfg: the negative prompt's context too; a step is one forward per context.
    std::vector<const TextContext*> contexts{&text};
    TextContext negative;
    if (opt.cfg) {
      const Tensor neg = random_input({std::min(opt.prompt_tokens, cfg.text_len), cfg.text_dim}, seed + 7);
      negative = image ? with_images(dit.encode_text(neg), image_context) : dit.encode_context(neg);
      if (cfg.is_vace()) negative = with_vace(negative, vace_context);
      contexts.push_back(&negative);
    }
    r["cfg"] = opt.cfg;
    r["forwards_per_step"] = contexts.size();

    const Tensor x = random_input({x_channels, lat_f, lat_h, lat_w}, seed + 3);
    const double flops = dit_step_flops(cfg, tokens) * static_cast<double>(contexts.size());
    r["step_flops"] = flops;
    Tensor pjrt_first;  // the PJRT output of the first step (t = 999, the last context)
    VIDAX_CHECK(opt.device != "pjrt" || !image,
                "bench --device pjrt: image-to-video DiTs are not lowered yet (text-to-video only; docs/pjrt.md)");
    if (opt.device == "pjrt") r["pjrt"] = bench_pjrt(opt, dit_ptr, x, contexts, flops, log, &pjrt_first);
    if (opt.cpu_baseline) {
    // Warm-up on a one-token latent: packs every weight (the pack cache is keyed by the
    // weight, not the activation shape) without paying for a full-size step.
    const Tensor tiny = random_input({x_channels, 1, cfg.patch_size[1], cfg.patch_size[2]}, seed + 2);
    const Sample warm = timed([&] { (void)dit.forward(tiny, std::vector<double>{999.0}, tiny_text); });
    r["dit_warmup_seconds"] = warm.wall;
    log("DiT: warm-up (weight packing) " + std::to_string(warm.wall) + " s");

    // The peak is measured before and after the steps and the higher reading kept: on a shared
    // host the GEMM rate drifts (the AMX rate was seen to halve for minutes at a time), and one
    // low reading would inflate MFU past 100%.
    const GemmPeak peak_before = measure_gemm_peak(compute, 5);
    log("GEMM peak before the steps (" + std::string(dtype_name(compute)) + "): " +
        std::to_string(peak_before.flops_per_cpu_second / 1e9) + " GFLOP per CPU second");

    std::vector<Sample> steps;
    for (int rep = 0; rep < opt.repeats; ++rep) {
      for (int s = 0; s < opt.steps; ++s) {
        const double t = 999.0 * (1.0 - static_cast<double>(s) / std::max(1, opt.steps));
        Tensor y;
        steps.push_back(timed([&] {
          for (const TextContext* c : contexts) y = dit.forward(x, std::vector<double>{t}, *c);
        }));
        VIDAX_CHECK(ops::all_finite(y), "bench: the DiT output is not finite (random weights out of range?)");
        if (rep == 0 && s == 0 && pjrt_first.defined()) {
          // The same step through both: a check of the PJRT program at this size (the CPU backend
          // computes in --precision, the lowering in f32: a bf16 run differs at bf16's level).
          const double e = rel_l2(pjrt_first, y);
          r["pjrt"]["vs_cpu_output_rel_l2"] = e;
          char buf[32];
          std::snprintf(buf, sizeof buf, "%.3g", e);
          log(std::string("PJRT vs CPU backend, the same step's output: rel_l2 ") + buf);
        }
        log("DiT step " + std::to_string(steps.size()) + ": " + std::to_string(steps.back().wall) + " s wall, " +
            std::to_string(steps.back().cpu) + " s CPU, load " + std::to_string(load_average_1min()));
      }
    }
    const GemmPeak peak_after = measure_gemm_peak(compute, 5);
    GemmPeak peak = peak_before;
    peak.flops_per_cpu_second = std::max(peak_before.flops_per_cpu_second, peak_after.flops_per_cpu_second);
    peak.flops_per_wall_second = std::max(peak_before.flops_per_wall_second, peak_after.flops_per_wall_second);
    r["gemm_peak"] = {{"dtype", dtype_name(compute)},
                      {"shape_mkn", {peak.m, peak.k, peak.n}},
                      {"flops_per_cpu_second", peak.flops_per_cpu_second},
                      {"flops_per_wall_second", peak.flops_per_wall_second},
                      {"flops_per_cpu_second_before_steps", peak_before.flops_per_cpu_second},
                      {"flops_per_cpu_second_after_steps", peak_after.flops_per_cpu_second},
                      {"note", "ops::linear (default dispatch), best of 5 before and 5 after the steps, same threads"}};
    log("GEMM peak after the steps: " + std::to_string(peak_after.flops_per_cpu_second / 1e9) +
        " GFLOP per CPU second");

    const json st = stats(steps);
    const int threads = omp_get_max_threads();
    r["dit_step"] = st;
    r["step_seconds_median"] = st["wall_median"];
    r["step_seconds_min"] = st["wall_min"];
    r["step_cpu_seconds_median"] = st["cpu_median"];
    r["step_cpu_seconds_min"] = st["cpu_min"];
    // What the wall time would be if every thread ran all the time (an idle machine).
    r["step_seconds_idle_estimate"] = st["cpu_min"].get<double>() / threads;
    r["step_flops"] = flops;
    r["step_flops_parts"] = dit_step_flops_parts(cfg, tokens);
    const double achieved_cpu = flops / st["cpu_min"].get<double>();  // FLOPs per CPU second
    r["achieved_flops_per_cpu_second"] = achieved_cpu;
    r["achieved_flops_per_second_wall"] = flops / st["wall_min"].get<double>();
    // MFU against the machine's arithmetic peak for the compute dtype (register-only
    // micro-kernel, backend/cpu/peak.h), per CPU second as the achieved rate; the step's
    // share of the engine's own GEMM rate is its own field.
    const cpu::MachinePeak mp = cpu::measure_machine_peak(compute, threads);
    r["machine_peak_flops_per_second"] = mp.flops_per_second;
    r["machine_peak_flops_per_cpu_second"] = mp.flops_per_cpu_second;
    r["machine_peak_method"] = mp.method;
    r["gemm_fraction_of_machine_peak"] = peak.flops_per_cpu_second / mp.flops_per_cpu_second;
    if (peak.flops_per_cpu_second > 1.05 * mp.flops_per_cpu_second)
      r["machine_peak_warning"] = "the GEMM ran faster than the measured machine peak: the peak measurement is wrong";
    r["mfu"] = achieved_cpu / mp.flops_per_cpu_second;
    r["mfu_wall"] = flops / st["wall_min"].get<double>() / mp.flops_per_second;
    r["step_vs_gemm"] = achieved_cpu / peak.flops_per_cpu_second;
    log("machine peak (" + mp.method + "): " + std::to_string(mp.flops_per_cpu_second / 1e9) +
        " GFLOP per CPU second; GEMM at " + std::to_string(100 * peak.flops_per_cpu_second / mp.flops_per_cpu_second) +
        " % of it");

    if (opt.offload) {
      // The run's peak so far: the streamed phase (and the weights file's writing, one tensor at a time).
      r["offload_streamed_peak_rss_bytes"] = peak_rss_bytes();
      // The same steps on the same weights held resident: what streaming costs per step.
      const double resident_need = 2.0 * dit_weight_bytes(cfg, compute) + act_bytes;
      if (image || cfg.is_vace() || resident_need > available) {
        r["offload_resident_baseline"] = image || cfg.is_vace() ? "skipped: text-to-video DiTs only"
                                                                : "skipped: does not fit resident";
        log("offload: no resident baseline (" + r["offload_resident_baseline"].get<std::string>() + ")");
      } else {
        log("offload: the same steps with the weights resident (baseline)");
        nn::ParamSource rsrc = nn::ParamSource::from_map(
            translate_part(stream_file, translate::wan::dit_component(), dit_json), stream_file);
        const WanDiT resident_dit(cfg, rsrc, precision, nullptr);
        rsrc.expect_all_taken();
        const TextContext rtext = resident_dit.encode_context(context);
        (void)resident_dit.forward(tiny, std::vector<double>{999.0}, rtext);  // packs the weights
        // As many forwards per step as the streamed run (the prompt's context for each: the cost is the same).
        const std::vector<Sample> rs =
            time_cpu_steps(opt, resident_dit, x, std::vector<const TextContext*>(contexts.size(), &rtext),
                           "resident DiT", log);
        const json rst = stats(rs);
        r["offload_resident_step"] = rst;
        r["offload_step_ratio"] = st["wall_median"].get<double>() / rst["wall_median"].get<double>();
        r["offload_step_ratio_cpu"] = st["cpu_median"].get<double>() / rst["cpu_median"].get<double>();
        log("offload: streamed / resident step " + std::to_string(r["offload_step_ratio"].get<double>()) +
            " (wall medians), " + std::to_string(r["offload_step_ratio_cpu"].get<double>()) + " (CPU)");
      }
    }

    if (r.contains("pjrt")) {
      const double ratio = r["pjrt"]["step_seconds_median"].get<double>() / st["wall_median"].get<double>();
      r["pjrt"]["vs_cpu_step_ratio"] = ratio;
      log("PJRT step / CPU backend step (wall medians, this run): " + std::to_string(ratio));
    }
    }  // cpu_baseline

    // --lora: the same random DiT again with the LoRAs kept at run time (adapters beside the
    // weights, as --lora-mode runtime), its steps timed as above: the per-step cost of runtime LoRAs.
    if (!opt.loras.empty()) {
      check_fits(opt.model + " DiT twice (with and without the LoRAs)", 2 * resident_factor * weight_bytes + act_bytes,
                 available);
      std::vector<translate::LoraSpec> specs;
      for (const auto& l : opt.loras) specs.push_back(translate::parse_lora_spec(l));
      // Planned against the model's parameter shapes: the weights a LoRA keeps at run time are
      // read for their shape only (Meta placeholders); a full difference on a gain or bias merges
      // at load and costs nothing per step (merged into a throwaway zero here).
      std::map<std::string, Tensor> shapes_only;
      for (const auto& p : translate::wan::dit_params(translate::wan::DitConfig::from_json(preset.dit)).params) {
        const bool linear_weight = p.shape.size() >= 2 && p.name.size() > 7 &&
                                   p.name.compare(p.name.size() - 7, 7, ".weight") == 0;
        shapes_only[p.name] = linear_weight ? Tensor::empty(p.shape, DType::F32, Device::Meta)
                                            : Tensor::zeros(p.shape, DType::F32);
      }
      translate::LoraOptions lopt;
      lopt.mode = translate::LoraMode::Runtime;
      translate::LoraDeltas deltas;
      const auto plans = translate::apply_loras(shapes_only, specs, translate::wan::dit_component(), preset.dit, lopt,
                                                [&](const std::string& m) { log("warning: " + m); }, &deltas);
      shapes_only.clear();
      json files = json::array();
      size_t kept = 0, merged = 0;
      double adapter_params = 0;
      for (size_t i = 0; i < plans.size(); ++i) {
        files.push_back({{"path", specs[i].path}, {"scale", specs[i].scale}, {"kept_runtime", plans[i].kept_runtime},
                         {"merged", plans[i].merged}});
        kept += plans[i].kept_runtime;
        merged += plans[i].merged;
      }
      for (const auto& [name, list] : deltas)
        for (const auto& d : list)
          adapter_params += static_cast<double>(d.up.numel() + (d.down.defined() ? d.down.numel() : 0));
      log("DiT with LoRAs at run time: " + std::to_string(kept) + " target(s) on " + std::to_string(deltas.size()) +
          " weight(s), " + std::to_string(adapter_params / 1e6) + " M fp32 adapter parameters (" +
          std::to_string(merged) + " merged at load, untimed)");
      nn::ParamSource lsrc = nn::ParamSource::generated(draw, "random weights");
      lsrc.attach_adapters(to_adapters(std::move(deltas)));
      const WanDiT ldit(cfg, lsrc, precision);
      TextContext ltext = ldit.encode_context(context), lneg;
      std::vector<const TextContext*> lcontexts{&ltext};
      if (opt.cfg) {
        lneg = ldit.encode_context(random_input({std::min(opt.prompt_tokens, cfg.text_len), cfg.text_dim}, seed + 7));
        lcontexts.push_back(&lneg);
      }
      (void)ldit.forward(random_input({x_channels, 1, cfg.patch_size[1], cfg.patch_size[2]}, seed + 2),
                         std::vector<double>{999.0}, ltext);  // warm-up (packing)
      const std::vector<Sample> lsteps = time_cpu_steps(opt, ldit, x, lcontexts, "DiT with LoRAs", log);
      const json lst = stats(lsteps);
      const double base_med = r["step_seconds_median"].get<double>(), lora_med = lst["wall_median"].get<double>();
      r["lora"] = {{"mode", "runtime"},
                   {"files", files},
                   {"weights_with_adapters", kept},
                   {"adapter_parameters", adapter_params},
                   {"dit_step", lst},
                   {"step_seconds_median", lora_med},
                   {"step_seconds_median_without", base_med},
                   {"step_overhead_fraction", lora_med / base_med - 1.0},
                   {"step_cpu_overhead_fraction",
                    lst["cpu_min"].get<double>() / r["step_cpu_seconds_min"].get<double>() - 1.0}};
      log("runtime LoRA per step: " + std::to_string(lora_med) + " s vs " + std::to_string(base_med) +
          " s without (wall medians; " + std::to_string(100.0 * (lora_med / base_med - 1.0)) + " %)");
    }

    if (opt.profile && opt.cpu_baseline) {
      log("DiT: profiled step");
      OpProfile prof;
      {
        const ScopedOpProfiler scope(prof);
        (void)dit.forward(x, std::vector<double>{500.0}, text);
      }
      r["dit_profile"] = prof.to_json();
    }
  }

  // VAE decode of the video's latent (fp32, the reference's dtype).
  if (opt.vae || !opt.vae_file.empty()) {
    const bool vae_file = !opt.vae_file.empty();
    json vae_json = preset.vae;
    if (vae_file && vae22) {  // the file's stored config, else the preset's; names checked by load_vae22
      if (json c = vae22_file_config(opt.vae_file); !c.is_null()) vae_json = c;
    } else if (vae_file) {
      vae_json = single_file_config(opt.vae_file, translate::wan::vae_component(), "--vae");
    }
    VIDAX_CHECK(opt.vae_tile == 0 || !vae22, "bench: --vae-tile " << opt.vae_tile << ": the Wan 2.2 VAE decodes whole "
                                                                     "frames only (tiling is implemented for the Wan 2.1 VAE)");
    const std::optional<VaeTiling> tiling =
        opt.vae_tile > 0 ? std::optional<VaeTiling>(VaeTiling::for_tile(opt.vae_tile)) : std::nullopt;
    std::map<std::string, Shape> shapes;
    double vae_bytes = 0;
    const ParamShapes all_shapes = vae22 ? Wan22VAE::parameter_shapes(Wan22VAEConfig::from_json(vae_json))
                                         : wan_vae_param_shapes(vae_json);
    for (const auto& [name, shape] : all_shapes) {
      shapes[name] = shape;
      if (name.rfind("decoder.", 0) == 0 || name.rfind("conv2.", 0) == 0)
        vae_bytes += 4.0 * static_cast<double>(shape_numel(shape));
    }
    std::map<std::string, Tensor> vae_weights;
    std::shared_ptr<Wan22VAE> vae22_from_file;
    if (vae_file) {
      log(std::string(vae22 ? "Wan 2.2 VAE" : "VAE") + ": " + opt.vae_file);
      if (vae22) {  // original or diffusers names (load_vae22), the decoder half
        WeightFiles f;
        f.root = f.vae = opt.vae_file;
        f.vae_single = true;
        vae22_from_file = load_vae22(f, Wan22VAEConfig::from_json(vae_json), 0, /*with_encoder=*/false);
      } else {
        vae_weights = translate_part(opt.vae_file, translate::wan::vae_component(), vae_json);
      }
    } else {
      log(std::string(vae22 ? "Wan 2.2 VAE" : "VAE") + ": random fp32 decoder weights (" + std::to_string(gb(vae_bytes)) +
          " GB)");
    }
    const WeightLookup random_vae_param = [&](const std::string& name) {
      if (vae_file) {
        auto w = vae_weights.find(name);
        VIDAX_CHECK(w != vae_weights.end(), opt.vae_file << ": no parameter " << name);
        return w->second.to(DType::F32);
      }
      auto it = shapes.find(name);
      VIDAX_CHECK(it != shapes.end(), "bench: no shape for VAE parameter " << name);
      return random_param(name, it->second, DType::F32, seed);
    };
    std::function<Tensor(const Tensor&)> decode;
    if (vae22) {
      auto v = vae22_from_file ? vae22_from_file
                               : std::make_shared<Wan22VAE>(Wan22VAEConfig::from_json(vae_json), random_vae_param,
                                                            WanVAEParts{false, true}, DType::F32);
      decode = [v](const Tensor& z) { return v->decode(z); };
    } else {
      auto v = std::make_shared<WanVAE>(WanVAEConfig::from_json(vae_json), random_vae_param, WanVAEParts{false, true},
                                        DType::F32);
      if (tiling) decode = [v, t = *tiling](const Tensor& z) { return v->decode_tiled(z, t); };
      else decode = [v](const Tensor& z) { return v->decode(z); };
    }
    const Tensor z = random_input({1, geo.z_dim, lat_f, lat_h, lat_w}, seed + 4);
    vae_weights.clear();  // the model holds what it uses
    const int64_t rss_before = peak_rss_bytes();
    // The decode's own peak: the process's peak reset to the current resident set first (where
    // the kernel allows it), read after the decodes.
    const bool peak_reset = reset_peak_rss();
    const double rss_at_start = pipeline::proc_bytes_field("/proc/self/status", "VmRSS");
    std::vector<Sample> s;
    for (int rep = 0; rep < opt.repeats; ++rep) {
      Tensor video;
      s.push_back(timed([&] { video = decode(z); }));
      VIDAX_CHECK(video.size(2) == opt.frames && video.size(3) == opt.height && video.size(4) == opt.width,
                  "bench: VAE decode gave an unexpected shape");
      log("VAE decode: " + std::to_string(s.back().wall) + " s wall, " + std::to_string(s.back().cpu) + " s CPU");
    }
    r["vae_decode"] = stats(s);
    r["vae_seconds"] = r["vae_decode"]["wall_median"];
    r["vae_cpu_seconds"] = r["vae_decode"]["cpu_median"];
    r["vae_seconds_idle_estimate"] = r["vae_decode"]["cpu_min"].get<double>() / omp_get_max_threads();
    r["vae_peak_rss_before_bytes"] = rss_before;
    r["vae_weights"] = vae_file ? opt.vae_file : "random (real shapes)";
    r["vae_tile"] = opt.vae_tile;
    if (peak_reset) {
      r["vae_decode_peak_rss_bytes"] = peak_rss_bytes();  // the process's peak during the decodes
      r["vae_decode_peak_rss_above_start_bytes"] = std::max(0.0, static_cast<double>(peak_rss_bytes()) - rss_at_start);
    }
    if (opt.profile) {
      log("VAE: profiled decode");
      OpProfile prof;
      {
        const ScopedOpProfiler scope(prof);
        (void)decode(z);
      }
      r["vae_profile"] = prof.to_json();
    }
  }

  r["peak_rss_bytes"] = peak_rss_bytes();
  r["machine"]["load_average_1min_end"] = load_average_1min();
  return r;
}

}  // namespace vidax::wan
