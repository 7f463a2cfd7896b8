#include "pipeline/request_check.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "core/error.h"

namespace vidax::pipeline {

CheckedRequest check_request(const Family& family, const std::string& variant, const Request& request,
                             const std::string& precision, const std::function<void(const std::string&)>& warn) {
  // Images against the variant's tasks (the loaded model checks again: parts.h min/max_images).
  const std::vector<std::string>& tasks = family.variant(variant).tasks;
  auto has = [&](const char* t) { return std::find(tasks.begin(), tasks.end(), t) != tasks.end(); };
  std::string task_list;
  for (const auto& t : tasks) task_list += (task_list.empty() ? "" : ", ") + t;
  VIDAX_CHECK(!request.last_image.defined() || request.image.defined(),
              "--last-image needs --image (the first frame): first-last-frame models take both");
  if (request.image.defined()) {
    const std::string with_image = family.image_variant(variant);
    VIDAX_CHECK(has("i2v") || has("flf2v") || has("ti2v"),
                "--image: " << variant << " takes no image (its tasks: " << task_list << "); "
                            << (with_image.empty() ? std::string("`vidax models` lists the image-to-video variants")
                                                   : "its image-to-video variant is " + with_image + " (--model " +
                                                         with_image + ")"));
  }
  if (!request.key_images.empty())
    VIDAX_CHECK(family.variant(variant).key_images,
                "--image-frame / --image-strength (or --image given more than once): "
                    << variant << " takes no images at chosen frames (its tasks: " << task_list
                    << "); a first frame is --image FILE, a last frame --last-image FILE");
  check_key_images(request);
  if (!request.reference_videos.empty())
    VIDAX_CHECK(family.variant(variant).reference_videos,
                "--reference-video / --video-conditioning / --video: " << variant
                    << " takes no reference videos (its tasks: " << task_list
                    << "); they are for in-context LoRA pipelines (LTX-2's IC-LoRA)");
  for (size_t i = 0; i < request.reference_videos.size(); ++i) {
    const double s = request.reference_videos[i].strength;
    VIDAX_CHECK(std::isfinite(s) && s >= 0.0 && s <= 1.0,
                "--video-conditioning strength " << s << " (reference video " << i + 1
                                                 << "): must be in [0, 1] (1 keeps the reference clean, 0 lets it be "
                                                    "denoised)");
  }
  VIDAX_CHECK(std::isfinite(request.conditioning_attention_strength) && request.conditioning_attention_strength >= 0.0 &&
                  request.conditioning_attention_strength <= 1.0,
              "--conditioning-attention-strength " << request.conditioning_attention_strength
                                                   << ": must be in [0, 1] (0 ignores the reference videos, 1 attends "
                                                      "to them fully)");
  VIDAX_CHECK(request.conditioning_attention_strength == 1.0 || !request.reference_videos.empty(),
              "--conditioning-attention-strength needs a reference video (--reference-video FILE or --video FILE)");
  if (request.last_image.defined())
    VIDAX_CHECK(has("flf2v"), "--last-image: " << variant << " takes no last frame (its tasks: " << task_list
                                               << "); a first-last-frame (flf2v) variant does");
  // Control inputs (VACE): only a control-video variant takes them.
  check_control_inputs(request);
  if (request.has_control())
    VIDAX_CHECK(has("vace"), "--control-video / --mask-video / --reference-image: "
                                 << variant << " takes no control video (its tasks: " << task_list
                                 << "); a VACE variant does (`vidax models`)");
  if (!has("t2v") && !has("ti2v") && !has("vace")) {
    VIDAX_CHECK(request.image.defined(), variant << " generates from an image (its tasks: " << task_list
                                                 << "): give --image FILE, the first frame");
    if (!has("i2v"))
      VIDAX_CHECK(request.last_image.defined(),
                  variant << " generates between a first and a last frame: give --image FILE and --last-image FILE");
  }
  CheckedRequest c;
  c.geometry = family.geometry(variant);
  validate_request(c.geometry, request);
  c.memory = family.memory_plan(variant, request, precision);
  check_memory(c.memory, static_cast<double>(mem_available_bytes()), static_cast<double>(mem_total_bytes()), warn);
  return c;
}

void check_key_images(const Request& request) {
  for (size_t i = 0; i < request.key_images.size(); ++i) {
    const KeyImage& k = request.key_images[i];
    VIDAX_CHECK(k.frame >= 0 && k.frame < request.frames,
                "--image-frame " << k.frame << " (image " << i + 1 << "): outside the video's frames [0, "
                                 << request.frames << ") (--frames " << request.frames << ")");
    VIDAX_CHECK(std::isfinite(k.strength) && k.strength >= 0.0 && k.strength <= 1.0,
                "--image-strength " << k.strength << " (image " << i + 1
                                    << "): must be in [0, 1] (1 keeps the image, 0 lets it be denoised)");
  }
}

std::optional<uint64_t> parse_seed(const std::string& text, const std::string& option, bool allow_random) {
  const std::string range = allow_random ? "an integer in 0..18446744073709551615 (2^64-1, torch.manual_seed's "
                                           "range), or negative for a random seed"
                                         : "an integer in 0..18446744073709551615 (2^64-1)";
  size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (negative || (!text.empty() && text[0] == '+')) i = 1;
  VIDAX_CHECK(i < text.size() && text.find_first_not_of("0123456789", i) == std::string::npos,
              option << " " << text << ": not an integer; expected " << range);
  if (negative) {
    VIDAX_CHECK(allow_random, option << " " << text << ": negative; expected " << range);
    return std::nullopt;
  }
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str() + i, nullptr, 10);
  VIDAX_CHECK(errno != ERANGE, option << " " << text << ": too large; expected " << range
                                      << " (a larger value would be clamped, giving one video for many seeds)");
  return static_cast<uint64_t>(v);
}

int max_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return 4 * static_cast<int>(n == 0 ? 1 : n);
}

void check_threads(int64_t threads) {
  VIDAX_CHECK(threads >= 0 && threads <= max_threads(),
              "--threads " << threads << ": must be 1.." << max_threads() << " (4x the " << max_threads() / 4
                           << " logical CPUs), or 0 for all CPUs");
}

void check_fps(double fps) {
  VIDAX_CHECK(std::isfinite(fps) && fps >= kMinFps && fps <= kMaxFps,
              "--fps " << fps << ": must be " << kMinFps << ".." << kMaxFps
                       << " frames per second (what video containers and players handle)");
}

}  // namespace vidax::pipeline
