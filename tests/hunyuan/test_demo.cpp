// `vidax make-demo --model hunyuanvideo-t2v-tiny-demo` and `vidax generate` on it, as a user runs
// them (the built binary as a child process): the whole HunyuanVideo pipeline from a prompt (both
// demo tokenizers, both text encoders, the DiT, the tiled VAE decode) to an mp4, reproducible by
// seed, and the prompt reaching the latents.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "cli_child.h"
#include "io/checkpoint.h"
#include "io/video.h"
#include "models/hunyuan/demo.h"
#include "models/hunyuan/prompt_encoder.h"
#include "models/hunyuan/text_encoder.h"
#include "pipeline/scratch.h"
#include "text/bpe_tokenizer.h"
#include "text/clip_tokenizer.h"

namespace fs = std::filesystem;
using namespace vidax;

namespace {

Tensor latents_of(const std::string& path) {
  const io::Checkpoint ck = io::Checkpoint::open(path);
  EXPECT_FALSE(ck.names().empty()) << path;
  return ck.get(ck.names().front()).contiguous();
}

}  // namespace

// The demo tokenizers read back with the engine's loaders: Llama-3's format keeps the video
// template's words whole (the official crop_start, 95 ids before the prompt, is what they make);
// CLIP's is one symbol per byte, the last with </w>.
TEST(HunyuanDemo, TokenizersAreTheFormatsTheLoaderReads) {
  const fs::path d = test::scratch_dir("hunyuan_demo_tok");
  const int64_t n = hunyuan::write_demo_llm_tokenizer((d / "tokenizer").string());
  const text::ByteLevelBpeTokenizer llm = text::ByteLevelBpeTokenizer::from_dir((d / "tokenizer").string());
  EXPECT_EQ(llm.vocab_size(), n);
  EXPECT_LE(n, 1024);  // the demo LLM's rows
  ASSERT_TRUE(llm.pad_id().has_value());
  const hunyuan::PromptTemplate& video = hunyuan::prompt_template("dit-llm-encode-video");
  const std::vector<int64_t> prompt_ids = llm.encode("a cat", false);
  const std::vector<int64_t> ids = llm.encode(hunyuan::apply_template(video.text, "a cat"));
  const std::vector<int64_t> tmpl_ids = llm.encode(hunyuan::apply_template(video.text, ""));
  std::printf("  demo LLM tokenizer: %lld ids; the video template %zu ids with the prompt \"a cat\", %zu without\n",
              static_cast<long long>(n), ids.size(), tmpl_ids.size());
  EXPECT_EQ(ids.front(), *llm.token_id("<|begin_of_text|>"));
  EXPECT_EQ(ids.back(), *llm.token_id("<|eot_id|>"));
  // The template before the prompt: crop_start ids, so the crop keeps exactly the prompt.
  const size_t before = tmpl_ids.size() - 1;  // all but the final <|eot_id|>
  EXPECT_EQ(static_cast<int64_t>(before), video.crop_start);
  EXPECT_EQ(ids.size(), tmpl_ids.size() + prompt_ids.size());  // the prompt's ids between the template's
  EXPECT_GE(prompt_ids.size(), 2u);
  const text::TokenizedBatch b = hunyuan::tokenize_llm(llm, {"a cat"}, video, 32);
  EXPECT_EQ(b.ids.size(1), 32 + video.crop_start);

  const int64_t m = hunyuan::write_demo_clip_tokenizer((d / "tokenizer_2").string());
  EXPECT_EQ(m, 514);
  const text::ClipBpeTokenizer clip = text::ClipBpeTokenizer::from_dir((d / "tokenizer_2").string());
  EXPECT_EQ(clip.encode("A Cat"), (std::vector<int64_t>{512, 256 + 'a', 'c', 'a', 256 + 't', 513}));
  EXPECT_EQ(clip.eos_id(), 513);
}

TEST(HunyuanDemo, MakeDemoThenGenerateFromAPrompt) {
  namespace cli = vidax::test::cli;
  const fs::path d = test::scratch_dir("hunyuan_demo_cli");
  const std::string demo = (d / "demo").string();
  {
    const auto r = cli::run({"make-demo", demo, "--model", "hunyuanvideo-t2v-tiny-demo"}, {.timeout_s = 120});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("hunyuanvideo-t2v-tiny-demo"), std::string::npos) << r.err;
  }
  for (const char* f : {"model_index.json", "transformer/config.json", "transformer/diffusion_pytorch_model.safetensors",
                        "vae/diffusion_pytorch_model.safetensors", "text_encoder/model.safetensors",
                        "text_encoder_2/model.safetensors", "tokenizer/tokenizer.json", "tokenizer_2/vocab.json",
                        "tokenizer_2/merges.txt", "vidax_model.json"})
    EXPECT_TRUE(fs::is_regular_file(fs::path(demo) / f)) << f;

  const std::vector<std::string> base{"generate", "--weights", demo,     "--frames", "5",    "--height", "32",
                                      "--width",  "32",        "--steps", "2",       "--seed", "1",     "--threads", "2"};
  auto gen = [&](const std::string& prompt, std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), {"--prompt", prompt});
    a.insert(a.end(), extra.begin(), extra.end());
    return cli::run(a, {.timeout_s = 300});
  };
  const std::string mp4 = (d / "out.mp4").string();
  {
    const auto r = gen("a cat", {"-o", mp4});
    ASSERT_EQ(r.code, 0) << r.err;
    ASSERT_TRUE(fs::is_regular_file(mp4));
    EXPECT_GT(fs::file_size(mp4), 100u);
    const io::VideoFileInfo info = io::read_video(mp4);
    EXPECT_EQ(info.frames, 5);
    EXPECT_EQ(info.width, 32);
    EXPECT_EQ(info.height, 32);
  }
  const std::string l1 = (d / "l1.safetensors").string(), l2 = (d / "l2.safetensors").string(),
                    l3 = (d / "l3.safetensors").string();
  for (const auto& [prompt, out] : std::vector<std::pair<std::string, std::string>>{
           {"a cat", l1}, {"a cat", l2}, {"a red panda in the snow", l3}}) {
    const auto r = gen(prompt, {"--output-format", "latents", "-o", out});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  const Tensor a = latents_of(l1), b = latents_of(l2), c = latents_of(l3);
  EXPECT_EQ(a.shape(), Shape({16, 2, 4, 4}));
  EXPECT_EQ(a.to_f64_vector(), b.to_f64_vector());  // the same seed: identical latents
  double moved = 0;
  const auto av = a.to_f64_vector(), cv = c.to_f64_vector();
  for (size_t i = 0; i < av.size(); ++i) moved = std::max(moved, std::abs(av[i] - cv[i]));
  EXPECT_GT(moved, 1e-4);  // the prompt reaches the DiT through both text encoders
}
