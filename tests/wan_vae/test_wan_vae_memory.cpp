// Wan 2.1 VAE decode memory, measured: the published channel counts on random weights decode a
// 5-frame latent while the process's peak resident set is tracked (VmHWM, reset just before the
// decode). The bound is derived from the shapes: what the reference's causal cache must hold plus a
// few frames of the widest activation, far below what holding whole chunks costs.
#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "backend/cpu/kernels.h"
#include "models/wan/vae.h"
#include "models/wan/checkpoint_keys.h"

namespace {

using vidax::Shape;
using vidax::Tensor;
using vidax::wan::WanVAE;
using vidax::wan::WanVAEConfig;

// "VmHWM" or "VmRSS" of this process, in bytes (-1 when /proc is unavailable).
int64_t proc_status_bytes(const std::string& key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1)) * 1024;
  return -1;
}

// Resets VmHWM to the current VmRSS (Linux: "5" to clear_refs); false when not permitted.
bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return f.good() && proc_status_bytes("VmHWM") <= proc_status_bytes("VmRSS") + (int64_t(1) << 20);
}

// Uniform in [-amplitude, amplitude) from a 64-bit LCG (fast enough for the 73M decoder weights).
Tensor random_tensor(const Shape& shape, uint64_t& state, float amplitude) {
  std::vector<float> v(static_cast<size_t>(vidax::shape_numel(shape)));
  for (float& x : v) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    x = amplitude * (static_cast<float>(state >> 40) * (2.0f / 16777216.0f) - 1.0f);
  }
  return Tensor::from_f32(v, shape);
}

TEST(WanVAEMemory, DecodePeakStaysWithinTheCacheAndAFewFrames) {
  // Buffers above 64 KiB are mmapped and unmapped on release, so the resident set follows the live
  // tensors instead of the allocator's free lists; 2 MiB of im2col columns per GEMM.
  ASSERT_EQ(mallopt(M_MMAP_THRESHOLD, 64 * 1024), 1);
  const int64_t columns = int64_t(2) << 20;
  vidax::cpu::set_conv_column_budget(columns);

  const WanVAEConfig config;  // the published 96-channel decoder
  std::map<std::string, Shape> shapes;
  for (const auto& p : vidax::translate::wan::vae_params({}).params) shapes[p.name] = p.shape;
  uint64_t rng = 7;
  const WanVAE vae(
      config,
      [&](const std::string& n) {
        const Shape& s = shapes.at(n);
        const bool gamma = n.find("gamma") != std::string::npos;
        return random_tensor(s, rng, gamma ? 1.0f : 0.05f);
      },
      {.encoder = false, .decoder = true});

  // Warm-up (thread pool, GEMM kernels), then the measured 5-frame decode at 48x64.
  (void)vae.decode(random_tensor({1, 16, 1, 2, 2}, rng, 1.0f));
  const int64_t H = 48, W = 64;
  const Tensor z = random_tensor({1, 16, 2, H / 8, W / 8}, rng, 1.0f);
  if (!reset_peak_rss()) GTEST_SKIP() << "cannot reset VmHWM through /proc/self/clear_refs";
  const int64_t before = proc_status_bytes("VmRSS");
  const Tensor video = vae.decode(z);
  const int64_t peak = proc_status_bytes("VmHWM") - before;
  ASSERT_EQ(video.shape(), (Shape{1, 3, 5, H, W}));

  // One frame of the widest full-resolution activation (dim channels, fp32), and of each level.
  const double frame = 4.0 * static_cast<double>(config.dim * H * W);
  // The causal cache after the first (1-frame) chunk: one frame per cached conv. Per level from the
  // output up: (num_res_blocks + 1) residual blocks x 2 convs, at 2x the channels and 1/4 the pixels
  // of the level below (1/2 the bytes), plus the head's conv: below 2 x the last level's.
  const double convs_per_level = 2.0 * static_cast<double>(config.num_res_blocks + 1);
  const double cache = (2.0 * convs_per_level + 1.0) * frame;
  // Working set of the last level's residual block on the 4-frame chunk: the chunk (4 frames, kept
  // for the residual) + conv window and outputs (5) + one norm temporary; the nearest upsample
  // before it holds a 2x-channel frame (2).
  const double working = 12.0 * frame;
  // Plus the conv's im2col columns.
  const double bound = cache + working + static_cast<double>(columns);
  std::printf("  decode peak %.1f MB above the weights; bound %.1f MB (cache %.1f + working %.1f + columns %.1f; "
              "frame %.2f MB)\n",
              peak / 1e6, bound / 1e6, cache / 1e6, working / 1e6, columns / 1e6, frame / 1e6);
  EXPECT_LE(static_cast<double>(peak), bound);
  vidax::cpu::set_conv_column_budget(int64_t(8) << 20);
}

}  // namespace
