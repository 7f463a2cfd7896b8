// vidax bench: times a model's stages with random weights of the real shapes
// (no checkpoint needed; text encoder, each DiT step with FLOPs and MFU against the
// measured peak, VAE decode, peak resident memory) for Wan, LTX-2 and HunyuanVideo
// 1.0 / 1.5. See src/pipeline/bench.h for what is measured and docs/benchmarks.md
// for results.
#include <omp.h>

#include <cstdio>

#include "commands.h"
#include "core/error.h"
#include "part_options.h"
#include "pipeline/request_check.h"
#include "dist/communicator.h"
#include "engine/families.h"
#include "pipeline/bench.h"

namespace vidax::app {

Command add_bench(CLI::App& app) {
  auto* sub = app.add_subcommand("bench", "Time a model's stages on random weights of the real shapes");
  struct Args {
    pipeline::BenchOptions opt;
    bool random_weights = true;
    int threads = 0;
    bool json = false;
    std::string pjrt_dot = "highest";
    bool no_cpu_baseline = false;
    bool no_prefetch = false;
    pipeline::PartFiles files;
  };
  auto a = std::make_shared<Args>();
  CLI::Option* model_opt = nullptr;
  a->opt.model = "wan2.1-t2v-1.3b";  // the model users bench first
  model_opt = sub->add_option("--model", a->opt.model, engine::variant_names() + " (default: the --diffusion-model file's, else the 1.3B)")
                  ->capture_default_str();
  sub->add_flag("--random-weights", a->random_weights,
                "random weights of the model's real shapes (the default and only mode: timings do not depend on "
                "the weight values)");
  sub->add_option("--frames", a->opt.frames, "video frames (1 + 4k; LTX-2: 1 + 8k)")->capture_default_str();
  sub->add_option("--height", a->opt.height, "video height (multiple of 16; LTX-2: 32)")->capture_default_str();
  sub->add_option("--width", a->opt.width, "video width (multiple of 16; LTX-2: 32)")->capture_default_str();
  sub->add_option("--steps", a->opt.steps, "DiT forwards per repeat (0: no DiT)")->capture_default_str();
  sub->add_option("--precision", a->opt.precision, "DiT precision: fp32 | bf16")->capture_default_str();
  sub->add_option("--threads", a->threads, "CPU threads (default: all)");
  sub->add_option("--repeats", a->opt.repeats, "repeats of every timed stage (min and median reported)")
      ->capture_default_str();
  const PartOptions parts = add_part_options(sub, a->files, PartStyle::Bench);
  sub->add_flag("--offload", a->opt.offload,
                "stream the DiT's blocks from a file (--diffusion-model's, else the random weights written once "
                "into --scratch-dir), and time the same steps resident for the ratio");
  sub->add_flag("--no-prefetch", a->no_prefetch, "--offload: no overlap of the next block's page-in with the compute");
  sub->add_option("--scratch-dir", a->opt.scratch_dir,
                  "--offload with random weights: the folder the weights file is written to and reused from "
                  "(default: the temporary folder)");
  sub->add_option("--vae-tile", a->opt.vae_tile,
                  "--vae: decode in spatial tiles of this many pixels (a multiple of 32, at least 64); the "
                  "decode's own peak memory is reported either way")
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--profile", a->opt.profile, "per-op-class time breakdown of one extra DiT step (and, with --vae, one extra VAE decode)");
  sub->add_option("--seed", a->opt.seed, "seed of the random weights")->capture_default_str();
  sub->add_option("--weights-dtype", a->opt.weights_dtype,
                  "make the DiT's random matrices directly in a GGUF block type and compute on them "
                  "(q8_0|q6_k|q5_k|q4_k|q5_0|q5_1|q4_0|q4_1|q3_k|q2_k) or scaled fp8|fp8_e5m2|int8 "
                  "(default: fp32 drawn, cast to --precision)")
      ->check(CLI::IsMember({"fp8", "fp8_e5m2", "int8", "q8_0", "q6_k", "q5_k", "q4_k", "q5_0", "q5_1", "q4_0", "q4_1", "q3_k", "q2_k"}));
  sub->add_option("--device", a->opt.device,
                  "cpu (default), or pjrt: also time the DiT steps through a PJRT plugin (compile apart) and "
                  "report their ratio to the CPU backend's (docs/pjrt.md)")
      ->check(CLI::IsMember({"cpu", "pjrt"}));
  sub->add_option("--pjrt-plugin", a->opt.pjrt_plugin, "PJRT plugin .so for --device pjrt (default: $VIDAX_PJRT_PLUGIN)");
  sub->add_flag("--no-cpu-baseline", a->no_cpu_baseline,
                "with --device pjrt: skip the CPU backend's steps (a size the CPU cannot run in time)");
  sub->add_option("--pjrt-dot-precision", a->pjrt_dot, "highest (default: fp32 dots as validation needs) | default "
                                                       "(the plugin's own, e.g. TF32/bf16 passes on a GPU)")
      ->check(CLI::IsMember({"highest", "default"}));
  sub->add_option("--pjrt-attention-block", a->opt.pjrt_attention_block,
                  "keys per block of the lowered attention's online softmax (default 0: about 256 MiB of fp32 scores)")
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--cfg", a->opt.cfg, "a step is two DiT forwards (prompt and negative prompt), as with guidance != 1");
  sub->add_option("--lora", a->opt.loras,
                  "FILE[:SCALE]: also time the DiT steps with this LoRA kept at run time (repeatable; reports the "
                  "per-step overhead; docs/lora.md)");
  sub->add_flag("--json", a->json, "print the report as JSON on stdout");
  sub->add_option("--mesh", a->opt.mesh, "shard the DiT over the mpirun job, e.g. tp=2 (prints per-rank weight bytes)");
  return {sub, [a, parts, model_opt]() {
            a->opt.vae = parts.vae->count() > 0;
            a->opt.text_encoder = parts.text_encoder->count() > 0;
            a->opt.diffusion_model_file = a->files.diffusion_model;
            a->opt.vae_file = a->files.vae;
            a->opt.text_encoder_file = a->files.text_encoder;
            a->opt.prefetch = !a->no_prefetch;
            VIDAX_CHECK(a->opt.prefetch || a->opt.offload, "bench: --no-prefetch needs --offload");
            if (a->files.any()) {
              // The files checked as a run checks them; the model is the DiT file's unless --model says.
              const engine::PartsResolved pr =
                  engine::check_part_files(model_opt->count() > 0 ? a->opt.model : "", a->files);
              if (model_opt->count() == 0 && !a->files.diffusion_model.empty()) {
                VIDAX_CHECK(!pr.checked.variant.empty(), "bench: --diffusion-model " << a->files.diffusion_model
                                                                                     << ": its shapes match no known "
                                                                                        "model; pass --model");
                a->opt.model = pr.checked.variant;
              }
            }
            pipeline::check_threads(a->threads);  // generate's bound: huge counts crash the OpenMP runtime
            if (a->threads > 0) omp_set_num_threads(a->threads);
            a->opt.pjrt_highest = a->pjrt_dot == "highest";
            a->opt.cpu_baseline = !a->no_cpu_baseline;
            const nlohmann::json r = engine::run_bench(
                a->opt, [](const std::string& line) { std::fprintf(stderr, "[bench] %s\n", line.c_str()); });
            if (a->json && dist::world().rank() == 0) std::printf("%s\n", r.dump(2).c_str());
            else std::fputs(pipeline::bench_report_text(r).c_str(), stdout);
            return 0;
          }};
}

}  // namespace vidax::app
