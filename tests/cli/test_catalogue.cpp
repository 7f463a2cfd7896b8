// The bad-input catalogue as code (issue 16): every subcommand x its flags' bad
// values x the kinds of file a path can name, run through the built `vidax`
// binary. Each case asserts the exit code (docs/generate.md's table), the key
// words of the message, and what is left on disk (nothing, for a refusal: no
// video, no sidecar, no temporary). Most cases fail before any weight is read
// (asserted: no "loading" line), so the whole table runs in seconds on the tiny
// demo checkpoint.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <filesystem>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_child.h"
#include "io/checkpoint.h"
#include "pipeline/scratch.h"

namespace fs = std::filesystem;
using namespace vidax;
using namespace vidax::test::cli;
using nlohmann::json;

namespace {

const fs::path& root() {
  static fs::path d = vidax::test::scratch_dir("cli_catalogue");
  return d;
}

void write_text(const fs::path& p, const std::string& s) {
  std::ofstream(p) << s;
}

json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

// The fixtures every case may name: the demo checkpoint, broken copies of it,
// and files of every kind. Built once, on first use.
struct Kit {
  fs::path demo;
  std::map<std::string, fs::path> weights;  // {w:NAME}
  std::map<std::string, fs::path> files;    // {f:NAME}

  Kit() {
    demo = root() / "demo";
    const CmdResult r = run({"make-demo", demo.string(), "--tokenizer", tiny_spiece()});
    EXPECT_EQ(r.code, 0) << r.err;
    const fs::path dit_name = "diffusion_pytorch_model.safetensors";
    auto variant = [&](const std::string& name, const std::function<void(const fs::path&)>& edit) {
      const fs::path d = root() / ("w-" + name);
      fs::copy(demo, d, fs::copy_options::recursive);
      edit(d);
      weights[name] = d;
    };
    auto model_json = [&](const std::function<void(json&)>& edit) {
      return [edit](const fs::path& d) {
        json j = read_json(d / "vidax_model.json");
        edit(j);
        write_text(d / "vidax_model.json", j.dump(2));
      };
    };
    variant("layers_float", model_json([](json& j) { j["dit"]["num_layers"] = 2.7; }));
    variant("qk_norm_string", model_json([](json& j) { j["dit"]["qk_norm"] = "yes"; }));
    variant("qk_norm_int", model_json([](json& j) { j["dit"]["qk_norm"] = 1; }));
    variant("patch_float", model_json([](json& j) { j["dit"]["patch_size"] = {1, 2.5, 2}; }));
    variant("eps_string", model_json([](json& j) { j["dit"]["eps"] = "1e-6"; }));
    variant("heads_null_list", model_json([](json& j) { j["dit"]["num_heads"] = json::array(); }));
    variant("model_int", model_json([](json& j) { j["model"] = 5; }));
    variant("model_unknown", model_json([](json& j) { j["model"] = "wan9"; }));
    variant("vae_zdim_float", model_json([](json& j) { j["vae"]["z_dim"] = 16.5; }));
    variant("vae_dim_mult_string", model_json([](json& j) { j["vae"]["dim_mult"] = "1,2,4"; }));
    variant("vae_tds_int", model_json([](json& j) { j["vae"]["temperal_downsample"] = {1, 0}; }));
    variant("t5_vocab_string", model_json([](json& j) { j["t5"]["vocab"] = "500"; }));
    variant("t5_layers_float", model_json([](json& j) { j["t5"]["num_layers"] = 1.5; }));
    variant("json_malformed", [](const fs::path& d) { write_text(d / "vidax_model.json", "{\"model\": "); });
    variant("config_dim_string", [](const fs::path& d) {
      json j = read_json(d / "config.json");
      j["dim"] = "64";
      write_text(d / "config.json", j.dump());
    });
    variant("config_malformed", [](const fs::path& d) { write_text(d / "config.json", "[1, 2"); });
    variant("dit_dir", [&](const fs::path& d) {
      fs::remove(d / dit_name);
      fs::create_directory(d / dit_name);
    });
    variant("dit_fifo", [&](const fs::path& d) {
      fs::remove(d / dit_name);
      ::mkfifo((d / dit_name).c_str(), 0644);
    });
    variant("dit_loop", [&](const fs::path& d) {
      fs::remove(d / dit_name);
      fs::create_symlink(dit_name, d / dit_name);
    });
    variant("dit_devzero", [&](const fs::path& d) {
      fs::remove(d / dit_name);
      fs::create_symlink("/dev/zero", d / dit_name);
    });
    variant("dit_dangling", [&](const fs::path& d) {
      fs::remove(d / dit_name);
      fs::create_symlink("nowhere.safetensors", d / dit_name);
    });
    variant("dit_missing", [&](const fs::path& d) { fs::remove(d / dit_name); });
    variant("dit_empty", [&](const fs::path& d) { write_text(d / dit_name, ""); });
    variant("dit_garbage", [&](const fs::path& d) { write_text(d / dit_name, std::string(64, '\x7f')); });
    variant("dit_truncated", [&](const fs::path& d) { fs::resize_file(d / dit_name, 1000); });
    variant("vae_missing", [](const fs::path& d) { fs::remove(d / "Wan2.1_VAE.safetensors"); });
    variant("vae_fifo", [](const fs::path& d) {
      fs::remove(d / "Wan2.1_VAE.safetensors");
      ::mkfifo((d / "Wan2.1_VAE.safetensors").c_str(), 0644);
    });
    variant("t5_missing", [](const fs::path& d) { fs::remove(d / "models_t5_umt5-xxl-enc-bf16.safetensors"); });
    variant("tokenizer_missing", [](const fs::path& d) { fs::remove_all(d / "google"); });

    const fs::path f = root() / "files";
    fs::create_directories(f);
    auto file = [&](const std::string& name, const fs::path& p) { files[name] = p; };
    ::mkfifo((f / "fifo").c_str(), 0644);
    file("fifo", f / "fifo");
    fs::create_directory(f / "dir");
    file("dir", f / "dir");
    fs::create_directory(f / "dir.mp4");
    file("dir.mp4", f / "dir.mp4");
    fs::create_symlink("loop", f / "loop");
    file("loop", f / "loop");
    fs::create_symlink("nothing-here", f / "dangling");
    file("dangling", f / "dangling");
    write_text(f / "empty", "");
    file("empty", f / "empty");
    write_text(f / "text.txt", "not a checkpoint\n");
    file("text", f / "text.txt");
    write_text(f / "garbage.safetensors", std::string(200, '\xff'));
    file("garbage", f / "garbage.safetensors");
    fs::create_directories(f / "nonempty");
    write_text(f / "nonempty" / "keep.txt", "precious");
    file("nonempty", f / "nonempty");
    file("missing", f / "does-not-exist");
    // Noise for --frames 5 --height 32 --width 48: [16, 2, 4, 6].
    const Shape ns{16, 2, 4, 6};
    std::vector<float> v(16 * 2 * 4 * 6, 0.5f);
    io::save_safetensors((f / "noise.safetensors").string(), {{"noise", Tensor::from_f32(v, ns)}}, {});
    file("noise", f / "noise.safetensors");
    v[5] = std::nanf("");
    io::save_safetensors((f / "noise_nan.safetensors").string(), {{"noise", Tensor::from_f32(v, ns)}}, {});
    file("noise_nan", f / "noise_nan.safetensors");
    v[5] = INFINITY;
    io::save_safetensors((f / "noise_inf.safetensors").string(), {{"noise", Tensor::from_f32(v, ns)}}, {});
    file("noise_inf", f / "noise_inf.safetensors");
    io::save_safetensors((f / "noise_shape.safetensors").string(),
                         {{"noise", Tensor::from_f32(std::vector<float>(16 * 4 * 6, 0.f), {16, 1, 4, 6})}}, {});
    file("noise_shape", f / "noise_shape.safetensors");
    io::save_safetensors((f / "noise_int.safetensors").string(), {{"noise", Tensor::zeros(ns, DType::I64)}}, {});
    file("noise_int", f / "noise_int.safetensors");
    io::save_safetensors((f / "noise_two.safetensors").string(),
                         {{"a", Tensor::zeros(ns, DType::F32)}, {"b", Tensor::zeros(ns, DType::F32)}}, {});
    file("noise_two", f / "noise_two.safetensors");
    const Tensor one = Tensor::zeros({1}, DType::F32);
    io::save_safetensors((f / "golden_weights_int.safetensors").string(), {{"output.x", one}},
                         {{"kind", "wan.pipeline.t2v"}, {"config", R"({"weights": 5})"}});
    file("golden_weights_int", f / "golden_weights_int.safetensors");
    io::save_safetensors((f / "golden_bad_json.safetensors").string(), {{"output.x", one}},
                         {{"kind", "wan.pipeline.t2v"}, {"config", "{weights"}});
    file("golden_bad_json", f / "golden_bad_json.safetensors");
    io::save_safetensors((f / "golden_unknown_kind.safetensors").string(), {{"output.x", one}}, {{"kind", "nope"}});
    file("golden_unknown_kind", f / "golden_unknown_kind.safetensors");
    file("golden_rng", fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "rng_torch_cpu.safetensors");
    // GGUF with block-quantized tensors (tests/io/data), whole and broken (issue 17's bad input).
    const fs::path qg = fs::path(VIDAX_TEST_DATA_DIR) / "io" / "data" / "gguf_quant_fixture.gguf";
    file("gguf_quant", qg);
    std::string qb;
    {
      std::ifstream in(qg, std::ios::binary);
      qb.assign(std::istreambuf_iterator<char>(in), {});
    }
    auto with_type = [&](const std::string& tensor, uint32_t type) {  // the tensor's GGML type replaced
      std::string b = qb;
      size_t p = b.find(tensor) + tensor.size();
      uint32_t n_dims;
      std::memcpy(&n_dims, b.data() + p, 4);
      std::memcpy(b.data() + p + 4 + 8 * n_dims, &type, 4);
      return b;
    };
    write_text(f / "gguf_truncated.gguf", qb.substr(0, qb.size() - 100));
    file("gguf_truncated", f / "gguf_truncated.gguf");
    write_text(f / "gguf_badsize.gguf", with_type("blk.0.lo.weight", 8));  // Q5_0 [2, 64] read as Q8_0
    file("gguf_badsize", f / "gguf_badsize.gguf");
    write_text(f / "gguf_unknown_type.gguf", with_type("blk.0.lo.weight", 77));
    file("gguf_unknown_type", f / "gguf_unknown_type.gguf");
    write_text(f / "gguf_iq_type.gguf", with_type("blk.0.lo.weight", 16));
    file("gguf_iq_type", f / "gguf_iq_type.gguf");
    write_text(f / "gguf_krows.gguf", with_type("blk.0.attn_q.weight", 12));  // Q4_K on rows of 64
    file("gguf_krows", f / "gguf_krows.gguf");
  }
};

Kit& kit() {
  static Kit k;
  return k;
}

enum class Leaves {
  Nothing,  // the case's folder is empty afterwards
  Output,   // {out} and {out}.json exist, nothing else
  Any,      // not checked (the command writes no file, or only elsewhere)
};

struct Case {
  std::string name;
  std::vector<std::string> args;  // {demo} {w:NAME} {f:NAME} {dir} {out}
  int code;
  std::vector<std::string> words;  // each must appear in stderr + stdout
  Leaves leaves = Leaves::Nothing;
  bool before_load = true;  // no "loading" line: refused before any weight was read
};

// gtest names a failing case by this, not its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<std::string> gen(std::vector<std::string> extra, const std::string& weights = "{demo}") {
  std::vector<std::string> a{"generate", "--weights", weights, "--prompt", "a red panda", "--frames", "5", "--height",
                             "32", "--width", "48", "--steps", "1", "--seed", "42"};
  bool has_out = false;
  for (const auto& e : extra) has_out |= e == "-o";
  // Options given in `extra` replace the base's.
  for (size_t i = 0; i + 1 < extra.size(); ++i)
    for (size_t j = 0; j + 1 < a.size(); ++j)
      if (a[j] == extra[i] && extra[i].rfind("--", 0) == 0 && extra[i] != "--weights") {
        a[j + 1] = extra[i + 1];
        extra.erase(extra.begin() + static_cast<long>(i), extra.begin() + static_cast<long>(i) + 2);
        --i;
        break;
      }
  a.insert(a.end(), extra.begin(), extra.end());
  if (!has_out) {
    a.push_back("-o");
    a.push_back("{out}");
  }
  return a;
}

std::vector<Case> cases() {
  std::vector<Case> c;
  auto bad = [&](std::string name, std::vector<std::string> extra, std::vector<std::string> words) {
    c.push_back({std::move(name), gen(std::move(extra)), 1, std::move(words)});
  };
  // ---- generate: every numeric option's bad values ------------------------------------
  bad("frames_zero", {"--frames", "0"}, {"--frames 0", "4k+1"});
  bad("frames_negative", {"--frames", "-3"}, {"--frames -3", "4k+1"});
  bad("frames_not_4k1", {"--frames", "80"}, {"--frames 80", "77 or 81"});
  bad("frames_4", {"--frames", "4"}, {"--frames 4", "4k+1"});
  bad("frames_text", {"--frames", "many"}, {"--frames", "many"});
  bad("frames_fraction", {"--frames", "5.5"}, {"--frames"});
  bad("frames_overflow", {"--frames", "99999999999999999999"}, {"--frames"});
  bad("height_zero", {"--height", "0"}, {"--height 0", "multiple of 16"});
  bad("height_negative", {"--height", "-32"}, {"--height -32", "multiple of 16"});
  bad("height_100", {"--height", "100"}, {"--height 100", "96 or 112"});
  bad("height_text", {"--height", "tall"}, {"--height"});
  bad("width_zero", {"--width", "0"}, {"--width 0", "multiple of 16"});
  bad("width_50", {"--width", "50"}, {"--width 50", "48 or 64"});
  bad("width_text", {"--width", "x"}, {"--width"});
  bad("huge_request_memory", {"--frames", "1001", "--height", "8192", "--width", "8192"},
      {"this request needs about", "GB of memory", "DiT activations", "the machine has"});
  bad("huge_width_memory", {"--height", "16384", "--width", "16384"}, {"needs about", "GB"});
  bad("steps_zero", {"--steps", "0"}, {"--steps 0", "1..1000"});
  bad("steps_negative", {"--steps", "-5"}, {"--steps -5", "1..1000"});
  bad("steps_1001", {"--steps", "1001"}, {"--steps 1001", "1..1000", "training timesteps"});
  bad("steps_2e9", {"--steps", "2000000000"}, {"--steps 2000000000", "1..1000"});
  bad("steps_text", {"--steps", "ten"}, {"--steps"});
  bad("steps_fraction", {"--steps", "1.5"}, {"--steps"});
  bad("seed_2_64", {"--seed", "18446744073709551616"}, {"--seed 18446744073709551616", "too large", "2^64-1"});
  bad("seed_huge", {"--seed", "99999999999999999999999"}, {"too large", "clamped"});
  bad("seed_fraction", {"--seed", "1.5"}, {"--seed 1.5", "not an integer"});
  bad("seed_text", {"--seed", "abc"}, {"--seed abc", "not an integer"});
  bad("seed_exponent", {"--seed", "1e3"}, {"--seed 1e3", "not an integer"});
  bad("seed_empty", {"--seed", ""}, {"--seed", "not an integer"});
  bad("seed_hex", {"--seed", "0x10"}, {"--seed 0x10", "not an integer"});
  bad("guidance_nan", {"--guidance", "nan"}, {"--guidance nan", "finite"});
  bad("guidance_inf", {"--guidance", "inf"}, {"--guidance inf", "finite"});
  bad("guidance_text", {"--guidance", "strong"}, {"--guidance"});
  bad("shift_zero", {"--shift", "0"}, {"--shift 0", "positive"});
  bad("shift_negative", {"--shift", "-1"}, {"--shift -1", "positive"});
  bad("shift_nan", {"--shift", "nan"}, {"--shift nan", "positive"});
  bad("shift_text", {"--shift", "lots"}, {"--shift"});
  bad("sampler_unknown", {"--sampler", "ddim"}, {"--sampler ddim", "unipc, dpm++, euler"});
  bad("sampler_case", {"--sampler", "UNIPC"}, {"--sampler UNIPC", "unipc"});
  bad("precision_fp16", {"--precision", "fp16"}, {"precision", "fp16", "fp32 or bf16"});
  bad("precision_text", {"--precision", "best"}, {"precision", "best"});
  bad("fps_zero", {"--fps", "0"}, {"--fps 0", "1..240"});
  bad("fps_negative", {"--fps", "-24"}, {"--fps -24", "1..240"});
  bad("fps_1e9", {"--fps", "1e9"}, {"--fps 1e+09", "1..240"});
  bad("fps_241", {"--fps", "241"}, {"--fps 241", "1..240"});
  bad("fps_half", {"--fps", "0.5"}, {"--fps 0.5", "1..240"});
  bad("fps_nan", {"--fps", "nan"}, {"--fps nan", "1..240"});
  bad("fps_text", {"--fps", "fast"}, {"--fps"});
  bad("threads_negative", {"--threads", "-1"}, {"--threads -1", "or 0 for all CPUs"});
  bad("threads_100000", {"--threads", "100000"}, {"--threads 100000", "4x the"});
  bad("threads_int_max", {"--threads", "2147483647"}, {"--threads 2147483647", "4x the"});
  bad("threads_text", {"--threads", "all"}, {"--threads"});
  bad("threads_fraction", {"--threads", "1.5"}, {"--threads"});
  bad("mesh_malformed", {"--mesh", "bogus"}, {"--mesh", "bogus", "axis=size"});
  bad("mesh_zero", {"--mesh", "sp=0"}, {"--mesh", "sp must be >= 1"});
  bad("mesh_without_ranks", {"--mesh", "cfg=2"}, {"needs 2 ranks", "has 1"});
  bad("model_unknown", {"--model", "wan9"}, {"unknown model 'wan9'", "wan2.1-tiny-demo"});
  bad("model_mismatch", {"--model", "wan2.1-t2v-14b"}, {"--model wan2.1-t2v-14b but", "vidax_model.json"});
  bad("output_format_unknown", {"--output-format", "gif"}, {"--output-format gif", "mp4, png, y4m, latents"});
  bad("output_format_case", {"--output-format", "MP4"}, {"--output-format MP4", "mp4, png"});
  // ---- generate: output names ---------------------------------------------------------
  bad("out_avi", {"-o", "{dir}/out.avi"}, {"unknown extension .avi", ".mp4", ".y4m", ".safetensors", "PNG"});
  bad("out_gif", {"-o", "{dir}/out.gif"}, {"unknown extension .gif"});
  bad("out_mp4_tmp", {"-o", "{dir}/out.mp4.tmp"}, {"unknown extension .tmp"});
  bad("out_dash", {"-o", "-"}, {"-o -", "stdout is not supported"});
  bad("out_empty", {"-o", ""}, {"the output path is empty"});
  bad("out_no_dir", {"-o", "{dir}/no/such/out.mp4"}, {"output directory", "does not exist"});
  bad("out_in_proc", {"-o", "/proc/vidax-out.mp4"}, {"output directory /proc is not writable"});
  bad("out_under_a_link_loop", {"-o", "{f:loop}/out.mp4"}, {"output directory", "does not exist"});
  bad("out_under_a_file", {"-o", "{f:text}/out.mp4"}, {"output directory", "does not exist"});
  bad("out_fifo", {"-o", "{f:fifo}", "--output-format", "y4m"}, {"exists and is a FIFO"});
  bad("out_dir_as_file", {"-o", "{f:dir.mp4}"}, {"exists and is a directory"});
  bad("out_symlink_loop", {"-o", "{f:loop}", "--output-format", "mp4"}, {"is a symbolic link"});
  bad("out_dangling_link", {"-o", "{f:dangling}", "--output-format", "mp4"}, {"is a symbolic link"});
  bad("out_png_onto_file", {"-o", "{f:text}", "--output-format", "png"}, {"exists and is a regular file"});
  // ---- generate: --weights of every kind ---------------------------------------------
  auto badweights = [&](std::string name, std::string weights, std::vector<std::string> words) {
    c.push_back({std::move(name), gen({}, std::move(weights)), 1, std::move(words)});
  };
  badweights("weights_missing", "{f:missing}", {"weights directory", "does not exist"});
  badweights("weights_a_file", "{f:text}", {"weights directory", "not a directory"});
  badweights("weights_empty_dir", "{f:dir}", {"cannot tell which model", "--model"});
  badweights("weights_fifo", "{f:fifo}", {"weights directory", "not a directory"});
  badweights("weights_loop", "{f:loop}", {"weights directory", "not a directory"});
  auto badw = [&](std::string name, std::string variant, std::vector<std::string> words, bool before_load = true) {
    c.push_back({std::move(name), gen({}, "{w:" + variant + "}"), 1, std::move(words), Leaves::Nothing, before_load});
  };
  badw("config_num_layers_float", "layers_float",
       {"vidax_model.json (\"dit\")", "'num_layers' must be an integer, found 2.7"});
  badw("config_qk_norm_string", "qk_norm_string", {"vidax_model.json (\"dit\")", "'qk_norm' must be true or false"});
  badw("config_qk_norm_int", "qk_norm_int", {"vidax_model.json", "'qk_norm' must be true or false, found 1"});
  badw("config_patch_float", "patch_float", {"vidax_model.json", "'patch_size[1]' must be an integer"});
  badw("config_eps_string", "eps_string", {"vidax_model.json", "'eps' must be a number"});
  badw("config_heads_list", "heads_null_list", {"vidax_model.json", "'num_heads' must be an integer"});
  badw("config_model_int", "model_int", {"vidax_model.json", "'model' must be a string, found 5"});
  badw("config_model_unknown", "model_unknown", {"unknown model 'wan9'"});
  badw("config_vae_zdim_float", "vae_zdim_float", {"vidax_model.json (\"vae\")", "'z_dim' must be an integer"});
  badw("config_vae_dim_mult_string", "vae_dim_mult_string", {"vidax_model.json (\"vae\")", "'dim_mult' must be a list"});
  badw("config_vae_tds_int", "vae_tds_int",
       {"vidax_model.json (\"vae\")", "'temperal_downsample[0]' must be true or false"});
  badw("config_t5_vocab_string", "t5_vocab_string", {"vidax_model.json (\"t5\")", "'vocab' must be an integer"});
  badw("config_t5_layers_float", "t5_layers_float", {"vidax_model.json (\"t5\")", "'num_layers' must be an integer"});
  badw("config_json_malformed", "json_malformed", {"vidax_model.json", "malformed JSON"});
  badw("config_json_dim_string", "config_dim_string", {"config.json", "'dim' must be an integer, found \"64\""});
  badw("config_json_malformed_cfg", "config_malformed", {"config.json", "malformed JSON"});
  badw("dit_is_a_directory", "dit_dir", {"diffusion_pytorch_model.safetensors is a directory, not a weights file"});
  badw("dit_is_a_fifo", "dit_fifo", {"diffusion_pytorch_model.safetensors is a FIFO (named pipe)"});
  badw("dit_is_a_link_loop", "dit_loop", {"cannot be followed", "Too many levels of symbolic links"});
  badw("dit_is_dev_zero", "dit_devzero", {"diffusion_pytorch_model.safetensors is a character device"});
  badw("dit_is_dangling", "dit_dangling", {"a symbolic link to nothing"});
  badw("dit_missing", "dit_missing", {"no DiT", "diffusion_pytorch_model.safetensors"});
  badw("dit_empty", "dit_empty", {"diffusion_pytorch_model.safetensors"}, false);
  badw("dit_garbage", "dit_garbage", {"diffusion_pytorch_model.safetensors"}, false);
  badw("dit_truncated", "dit_truncated", {"diffusion_pytorch_model.safetensors"}, false);
  badw("vae_missing", "vae_missing", {"no VAE found", "Wan2.1_VAE"});
  badw("vae_is_a_fifo", "vae_fifo", {"Wan2.1_VAE.safetensors is a FIFO (named pipe)"});
  badw("t5_missing", "t5_missing", {"no UMT5 text encoder found"});
  badw("tokenizer_missing", "tokenizer_missing", {"no tokenizer directory found"});
  // ---- generate: --noise of every kind -------------------------------------------------
  bad("noise_missing", {"--noise", "{f:missing}"}, {"does-not-exist", "no such file"});
  bad("noise_fifo", {"--noise", "{f:fifo}"}, {"is a FIFO (named pipe), not a checkpoint file"});
  bad("noise_loop", {"--noise", "{f:loop}"}, {"cannot be followed"});
  bad("noise_dev_zero", {"--noise", "/dev/zero"}, {"/dev/zero", "is a character device"});
  bad("noise_text", {"--noise", "{f:text}"}, {"text.txt", "unrecognised checkpoint format"});
  bad("noise_empty_file", {"--noise", "{f:empty}"}, {"empty"});
  bad("noise_garbage", {"--noise", "{f:garbage}"}, {"garbage.safetensors"});
  bad("noise_nan", {"--noise", "{f:noise_nan}"}, {"noise file", "noise_nan.safetensors", "holds NaN or Inf"});
  bad("noise_inf", {"--noise", "{f:noise_inf}"}, {"noise file", "noise_inf.safetensors", "holds NaN or Inf"});
  bad("noise_wrong_shape", {"--noise", "{f:noise_shape}"}, {"has shape [16, 1, 4, 6]", "needs [16, 2, 4, 6]"});
  bad("noise_int_dtype", {"--noise", "{f:noise_int}"}, {"expected a float tensor"});
  bad("noise_two_tensors", {"--noise", "{f:noise_two}"}, {"holds 2 tensors", "'noise' or 'latents'"});
  bad("noise_shape_of_other_size", {"--noise", "{f:noise}", "--width", "64"}, {"needs [16, 2, 4, 8]"});
  // ---- generate: --record and --replay (docs/generate.md, "Record and replay") ----------------
  bad("replay_missing", {"--replay", "{f:missing}"}, {"--replay", "does-not-exist", "no such folder"});
  bad("replay_a_file", {"--replay", "{f:text}"}, {"text.txt", "not a folder; a record is a folder holding record.json"});
  bad("replay_fifo", {"--replay", "{f:fifo}"}, {"not a folder"});
  bad("replay_loop", {"--replay", "{f:loop}"}, {"--replay", "a symbolic link that cannot be followed"});
  bad("replay_empty_dir", {"--replay", "{f:dir}"}, {"no record.json in it; not a record"});
  bad("record_onto_a_file", {"--record", "{f:text}"}, {"--record", "text.txt", "exists and is not a folder"});
  bad("record_onto_a_fifo", {"--record", "{f:fifo}"}, {"--record", "exists and is not a folder"});
  bad("record_and_replay", {"--record", "{dir}/r", "--replay", "{dir}/r"}, {"--record and --replay together"});
  bad("replay_tolerance_negative", {"--replay-tolerance", "-1"}, {"--replay-tolerance needs --replay DIR"});
  // ---- generate: the command line itself ----------------------------------------------
  c.push_back({"unknown_flag", gen({"--bogus"}), 1, {"--bogus"}});
  c.push_back({"missing_prompt", {"generate", "--weights", "{demo}", "-o", "{out}"}, 1, {"--prompt", "required"}});
  c.push_back({"missing_weights", {"generate", "--prompt", "x", "-o", "{out}"}, 1, {"no model given", "--weights", "--diffusion-model"}});
  c.push_back({"extra_positional", gen({"stray"}), 1, {"stray"}});
  c.push_back({"option_without_value", {"generate", "--weights", "{demo}", "--prompt"}, 1, {"--prompt"}});
  c.push_back({"help_per_model_defaults", {"generate", "--help"}, 0, {"default per model", "`vidax models`"},
               Leaves::Any});

  // ---- inspect ----------------------------------------------------------------------------
  auto ins = [&](std::string name, std::vector<std::string> args, int code, std::vector<std::string> words) {
    args.insert(args.begin(), "inspect");
    c.push_back({std::move(name), std::move(args), code, std::move(words), Leaves::Any});
  };
  ins("inspect_missing", {"{f:missing}"}, 1, {"no such file or directory"});
  ins("inspect_fifo", {"{f:fifo}"}, 1, {"a FIFO (named pipe)"});
  ins("inspect_dev_zero", {"/dev/zero"}, 1, {"a character device"});
  ins("inspect_loop", {"{f:loop}"}, 1, {"loop"});
  ins("inspect_empty_file", {"{f:empty}"}, 1, {"empty"});
  ins("inspect_text", {"{f:text}"}, 1, {"text.txt"});
  ins("inspect_garbage", {"{f:garbage}"}, 1, {"garbage.safetensors"});
  ins("inspect_empty_dir", {"{f:dir}"}, 1, {"dir"});
  ins("inspect_fifo_json", {"{f:fifo}", "--json"}, 1, {"a FIFO (named pipe)"});
  ins("inspect_demo_ok", {"{demo}"}, 0, {"OK"});
  ins("inspect_demo_values", {"{demo}", "--check-values"}, 0, {"OK"});
  ins("inspect_truncated_dit", {"{w:dit_truncated}/diffusion_pytorch_model.safetensors"}, 1,
      {"diffusion_pytorch_model.safetensors"});
  ins("inspect_unknown_flag", {"{demo}", "--bogus"}, 1, {"--bogus"});
  ins("inspect_no_path", {}, 1, {"path", "required"});

  // ---- convert ----------------------------------------------------------------------------
  const std::string dit = "{demo}/diffusion_pytorch_model.safetensors";
  auto conv = [&](std::string name, std::vector<std::string> args, int code, std::vector<std::string> words,
                  Leaves leaves = Leaves::Nothing) {
    args.insert(args.begin(), "convert");
    c.push_back({std::move(name), std::move(args), code, std::move(words), leaves});
  };
  conv("convert_missing_input", {"{f:missing}", "{dir}/c.safetensors"}, 1, {"no such file or directory"});
  conv("convert_fifo_input", {"{f:fifo}", "{dir}/c.safetensors"}, 1, {"a FIFO (named pipe)"});
  conv("convert_dev_zero_input", {"/dev/zero", "{dir}/c.safetensors"}, 1, {"a character device"});
  conv("convert_text_input", {"{f:text}", "{dir}/c.safetensors"}, 1, {"unrecognised checkpoint format"});
  conv("convert_out_fifo", {dit, "{f:fifo}"}, 1, {"exists and is a FIFO"}, Leaves::Any);
  conv("convert_out_dir", {dit, "{f:dir}"}, 1, {"directory"}, Leaves::Any);
  conv("convert_out_loop", {dit, "{f:loop}"}, 1, {"symbolic link"}, Leaves::Any);
  conv("convert_out_no_dir", {dit, "{dir}/no/c.safetensors"}, 1,
       {"cannot create a temporary file", "No such file or directory"});
  conv("convert_bad_dtype", {dit, "{dir}/c.safetensors", "--dtype", "f64"}, 1, {"--dtype", "f64"});
  conv("convert_bad_layout", {dit, "{dir}/c.safetensors", "--layout", "comfy"}, 1, {"--layout", "comfy"});
  conv("convert_missing_out", {dit}, 1, {"out", "required"});
  // Block-quantized GGUF input (issue 17): a truncated file, a byte size that does not match the
  // type and shape, an unknown or unsupported type, a K-quant on rows that are not a multiple of
  // 256: each names the file and the tensor.
  ins("inspect_gguf_truncated", {"{f:gguf_truncated}"}, 1, {"gguf_truncated.gguf", "'blk.0.norm.weight'", "truncated"});
  ins("inspect_gguf_bad_size", {"{f:gguf_badsize}"}, 1,
      {"gguf_badsize.gguf", "'blk.0.lo.weight'", "does not match its type and shape"});
  ins("inspect_gguf_unknown_type", {"{f:gguf_unknown_type}"}, 1,
      {"gguf_unknown_type.gguf", "'blk.0.lo.weight'", "unknown GGML type 77"});
  ins("inspect_gguf_iq_type", {"{f:gguf_iq_type}"}, 1, {"gguf_iq_type.gguf", "'blk.0.lo.weight'", "IQ2_XXS"});
  ins("inspect_gguf_krows", {"{f:gguf_krows}"}, 1,
      {"gguf_krows.gguf", "'blk.0.attn_q.weight'", "Q4_K", "256-value block"});
  conv("convert_gguf_truncated", {"{f:gguf_truncated}", "{dir}/c.safetensors", "--dtype", "f32"}, 1,
       {"gguf_truncated.gguf", "truncated"});
  conv("convert_gguf_blocks_to_safetensors", {"{f:gguf_quant}", "{dir}/c.safetensors"}, 1,
       {"'blk.0.attn_q.weight'", "Q8_0", "--dtype"});
  conv("convert_bad_block_type", {dit, "{dir}/c.gguf", "--dtype", "q9_0"}, 1, {"--dtype", "q9_0"});

  // ---- parity -----------------------------------------------------------------------------
  auto par = [&](std::string name, std::vector<std::string> args, int code, std::vector<std::string> words) {
    args.insert(args.begin(), "parity");
    c.push_back({std::move(name), std::move(args), code, std::move(words), Leaves::Any});
  };
  par("parity_missing", {"{f:missing}"}, 1, {"does-not-exist"});
  par("parity_dir", {"{f:dir}"}, 1, {"directory"});
  par("parity_rtol_negative", {"{f:golden_rng}", "--rtol", "-1"}, 1, {"--rtol -1", "positive finite"});
  par("parity_rtol_zero", {"{f:golden_rng}", "--rtol", "0"}, 1, {"--rtol 0", "positive finite"});
  par("parity_rtol_nan", {"{f:golden_rng}", "--rtol", "nan"}, 1, {"--rtol nan", "positive finite"});
  par("parity_rtol_inf", {"{f:golden_rng}", "--rtol", "inf"}, 1, {"--rtol inf", "positive finite"});
  par("parity_quantize_bad_type", {"{f:golden_rng}", "--quantize", "q7_k"}, 1, {"--quantize", "q7_k"});
  par("parity_quantize_no_weights", {"{f:golden_rng}", "--quantize", "q8_0"}, 1, {"--quantize", "rng.torch_cpu"});
  par("parity_rtol_text", {"{f:golden_rng}", "--rtol", "tight"}, 1, {"--rtol"});
  par("parity_mesh_malformed", {"{f:golden_rng}", "--mesh", "bogus"}, 1, {"--mesh", "axis=size"});
  par("parity_mesh_zero", {"{f:golden_rng}", "--mesh", "sp=0"}, 1, {"sp must be >= 1"});
  par("parity_precision_fp16", {"{f:golden_rng}", "--precision", "fp16"}, 1, {"--precision", "fp16"});
  par("parity_not_golden", {dit}, 1, {"not a golden file", "__metadata__.kind"});
  par("parity_unknown_kind", {"{f:golden_unknown_kind}"}, 1, {"unknown golden kind 'nope'"});
  par("parity_config_wrong_type", {"{f:golden_weights_int}"}, 1,
      {"golden_weights_int.safetensors", "__metadata__.config", "'weights' must be a string"});
  par("parity_config_bad_json", {"{f:golden_bad_json}"}, 1, {"golden_bad_json.safetensors", "not valid JSON"});
  par("parity_rng_ok", {"{f:golden_rng}"}, 0, {"PASS"});

  // ---- make-demo --------------------------------------------------------------------------
  auto demo = [&](std::string name, std::vector<std::string> args, int code, std::vector<std::string> words,
                  Leaves leaves = Leaves::Nothing) {
    args.insert(args.begin(), "make-demo");
    c.push_back({std::move(name), std::move(args), code, std::move(words), leaves});
  };
  const std::string tok = tiny_spiece();
  demo("demo_nonempty_dir", {"{f:nonempty}", "--tokenizer", tok}, 1, {"exists and is not empty", "--force"});
  demo("demo_onto_file", {"{f:text}", "--tokenizer", tok}, 1, {"exists and is not a directory"});
  demo("demo_seed_negative", {"{dir}/d", "--seed", "-1", "--tokenizer", tok}, 1, {"--seed -1", "negative"});
  demo("demo_seed_text", {"{dir}/d", "--seed", "abc", "--tokenizer", tok}, 1, {"--seed abc", "not an integer"});
  demo("demo_seed_2_64", {"{dir}/d", "--seed", "18446744073709551616", "--tokenizer", tok}, 1, {"too large"});
  demo("demo_model_unknown", {"{dir}/d", "--model", "wan9", "--tokenizer", tok}, 1, {"wan9"});
  demo("demo_tokenizer_missing", {"{dir}/d", "--tokenizer", "{f:missing}"}, 1, {"does-not-exist"});
  demo("demo_tokenizer_loop", {"{dir}/d", "--tokenizer", "{f:loop}"}, 1, {"loop"});
  demo("demo_tokenizer_fifo", {"{dir}/d", "--tokenizer", "{f:fifo}"}, 1, {"fifo"});
  demo("demo_no_outdir", {}, 1, {"outdir", "required"});

  // ---- the rest of the surface ---------------------------------------------------------------
  auto top = [&](std::string name, std::vector<std::string> args, int code, std::vector<std::string> words) {
    c.push_back({std::move(name), std::move(args), code, std::move(words), Leaves::Any});
  };
  top("no_subcommand", {}, 1, {"subcommand is required"});
  top("unknown_subcommand", {"frobnicate"}, 1, {"unknown command 'frobnicate'", "generate", "make-demo"});
  top("version", {"--version"}, 0, {"vidax"});
  top("help", {"--help"}, 0, {"generate", "inspect", "convert", "parity", "make-demo"});
  top("models_extra_arg", {"models", "--bogus"}, 1, {"--bogus"});
  top("bench_threads_huge", {"bench", "--model", "wan2.1-tiny-demo", "--threads", "100000"}, 1,
      {"--threads 100000", "4x the"});
  top("bench_threads_negative", {"bench", "--model", "wan2.1-tiny-demo", "--threads", "-2"}, 1, {"--threads -2"});
  top("bench_model_unknown", {"bench", "--model", "wan9"}, 1, {"wan9"});
  return c;
}

std::string expand(const std::string& a, const fs::path& dir) {
  Kit& k = kit();
  std::string s = a;
  auto sub = [&](const std::string& key, const std::string& value) {
    for (size_t p; (p = s.find(key)) != std::string::npos;) s.replace(p, key.size(), value);
  };
  sub("{demo}", k.demo.string());
  sub("{dir}", dir.string());
  sub("{out}", (dir / "out.mp4").string());
  for (size_t p; (p = s.find("{w:")) != std::string::npos;) {
    const size_t e = s.find('}', p);
    const std::string name = s.substr(p + 3, e - p - 3);
    EXPECT_TRUE(k.weights.count(name)) << name;
    s.replace(p, e - p + 1, k.weights[name].string());
  }
  for (size_t p; (p = s.find("{f:")) != std::string::npos;) {
    const size_t e = s.find('}', p);
    const std::string name = s.substr(p + 3, e - p - 3);
    EXPECT_TRUE(k.files.count(name)) << name;
    s.replace(p, e - p + 1, k.files[name].string());
  }
  return s;
}

class Catalogue : public ::testing::TestWithParam<Case> {};

TEST_P(Catalogue, ExitCodeWordsAndLeftovers) {
  const Case& c = GetParam();
  const fs::path dir = root() / "cases" / c.name;
  fs::create_directories(dir);
  std::vector<std::string> args;
  for (const auto& a : c.args) args.push_back(expand(a, dir));
  ChildOptions opt;
  opt.capture_stdout = true;
  opt.timeout_s = 60;  // a case that hangs (a FIFO opened, /dev/zero read) fails instead of blocking the suite
  const CmdResult r = run(args, opt);
  const std::string all = r.err + r.out;
  EXPECT_EQ(r.code, c.code) << all;
  for (const auto& w : c.words) EXPECT_NE(all.find(w), std::string::npos) << "missing \"" << w << "\" in:\n" << all;
  EXPECT_EQ(all.find("internal error"), std::string::npos) << all;
  if (c.code != 0 && c.before_load) EXPECT_EQ(r.err.find("loading"), std::string::npos) << "refused late:\n" << r.err;
  if (c.code != 0) EXPECT_EQ(r.err.find(" done in "), std::string::npos) << "a failed run reported done:\n" << r.err;
  if (c.leaves == Leaves::Nothing) {
    std::vector<std::string> left;
    for (auto& e : fs::directory_iterator(dir)) left.push_back(e.path().filename().string());
    EXPECT_TRUE(left.empty()) << "left behind: " << ::testing::PrintToString(left);
  } else if (c.leaves == Leaves::Output) {
    EXPECT_TRUE(fs::exists(dir / "out.mp4"));
    EXPECT_TRUE(fs::exists(dir / "out.mp4.json"));
    EXPECT_FALSE(has_partial(dir));
  }
  // Fixtures are never replaced: the special files stay what they were.
  struct stat st {};
  EXPECT_EQ(::lstat(kit().files["fifo"].c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_TRUE(fs::exists(kit().files["nonempty"] / "keep.txt"));
}

INSTANTIATE_TEST_SUITE_P(Cases, Catalogue, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

}  // namespace
