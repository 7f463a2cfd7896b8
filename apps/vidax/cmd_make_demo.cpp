// `vidax make-demo OUTDIR`: writes a tiny random-weight checkpoint of a demo
// variant (default: the Wan 2.1 one, original layout; src/models/wan/demo_weights.h)
// for scripts/demo.sh.
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "core/error.h"
#include "engine/families.h"
#include "pipeline/request_check.h"

namespace vidax::app {

namespace {

// The build trains the demo tokenizer into <build>/demo/spiece.model
// (cmake/TinySentencePiece.cmake); the binary lives in <build>/bin.
std::string default_demo_tokenizer() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  return (exe.parent_path().parent_path() / "demo" / "spiece.model").string();
}

}  // namespace

Command add_make_demo(CLI::App& app) {
  auto opt = std::make_shared<pipeline::DemoOptions>();
  auto model = std::make_shared<std::string>("wan2.1-tiny-demo");
  auto seed = std::make_shared<std::string>("0");
  auto force = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand(
      "make-demo", "Write a tiny random-weight checkpoint (default: Wan 2.1, original layout) for a quick end-to-end run");
  sub->add_option("outdir", opt->out_dir, "Directory to write (created)")->required();
  sub->add_option("--model", *model, "the demo variant to write (`vidax models` marks them)")->capture_default_str();
  sub->add_option("--tokenizer", opt->spiece_model,
                  "SentencePiece model to ship as the tokenizer of a Wan demo (default: <build>/demo/spiece.model)");
  sub->add_option("--seed", *seed, "Seed of the random weights, 0..2^64-1")->capture_default_str();
  sub->add_flag("--force", *force, "write into an existing non-empty directory (replacing its demo files)");
  return {sub, [opt, model, seed, force]() -> int {
            opt->seed = *pipeline::parse_seed(*seed, "make-demo --seed", /*allow_random=*/false);
            {
              // A checkpoint folder of real weights must not be overwritten by a typo.
              namespace fs = std::filesystem;
              std::error_code ec;
              const fs::file_status st = fs::symlink_status(opt->out_dir, ec);
              if (fs::exists(st)) {
                VIDAX_CHECK(fs::is_directory(st), "make-demo: " << opt->out_dir << " exists and is not a directory");
                VIDAX_CHECK(*force || fs::is_empty(opt->out_dir, ec),
                            "make-demo: " << opt->out_dir
                                          << " exists and is not empty; nothing was written (pass --force to "
                                             "write the demo files into it)");
              }
            }
            // Families with a SentencePiece tokenizer (Wan) ship this file and check it is there;
            // others (HunyuanVideo) write their tokenizers themselves.
            if (opt->spiece_model.empty()) opt->spiece_model = default_demo_tokenizer();
            nlohmann::json m = engine::family_of_model(*model).make_demo(*model, *opt);
            if (m.contains("t5"))
              std::fprintf(stderr, "wrote %s: %s, random weights (text vocabulary %lld)\n", opt->out_dir.c_str(),
                           m["model"].get<std::string>().c_str(),
                           static_cast<long long>(m["t5"]["vocab"].get<int64_t>()));
            else
              std::fprintf(stderr, "wrote %s: %s, random weights\n", opt->out_dir.c_str(),
                           m["model"].get<std::string>().c_str());
            return 0;
          }};
}

}  // namespace vidax::app
