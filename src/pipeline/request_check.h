// The one request check before any work (DESIGN.md principles 7 and 9): every
// family's request goes through it after its defaults are filled in and before
// any weight is read or any buffer allocated. It checks the size rules of the
// family's geometry, the sampler, guidance and step options, the noise tensor's
// shape (validate_request), and the memory the request will need (the family's
// MemoryPlan against this machine: refused above its total memory, a warning
// above what is free now). The CLI and the server call it, and the option
// checks below, so a bad value is refused the same way on either path.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "pipeline/family.h"

namespace vidax::pipeline {

struct CheckedRequest {
  Geometry geometry;  // the variant's, for latent_shape() and the noise file
  MemoryPlan memory;
};

CheckedRequest check_request(const Family& family, const std::string& variant, const Request& request,
                             const std::string& precision, const std::function<void(const std::string&)>& warn);

// Each of request.key_images' frame (in [0, frames)) and strength (in [0, 1]), in order, with the
// CLI's messages ("--image-frame 9 (image 2): ..."): check_request's check, which `vidax serve`
// runs on its `images` too.
void check_key_images(const Request& request);

// A seed as the user typed it: a decimal integer in [0, 2^64-1], the range of
// torch.manual_seed; a negative integer asks for a random seed (the reference's
// --base_seed -1) and gives nullopt. Anything else (a fraction, text, a value
// past 2^64-1) is refused naming `option`; nothing is clamped or wrapped.
// allow_random = false refuses negatives too (make-demo's weight seed).
std::optional<uint64_t> parse_seed(const std::string& text, const std::string& option = "--seed",
                                   bool allow_random = true);

// The largest --threads accepted: 4x the logical CPUs (more only adds
// scheduling cost; the OpenMP runtime crashes on some huge counts).
int max_threads();
// --threads: 0 = all CPUs, else 1..max_threads(). Throws naming the range.
void check_threads(int64_t threads);

// Frames per second a video container can carry sensibly: 1..240.
constexpr double kMinFps = 1, kMaxFps = 240;
void check_fps(double fps);

}  // namespace vidax::pipeline
