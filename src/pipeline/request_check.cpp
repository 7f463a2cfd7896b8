#include "pipeline/request_check.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "core/error.h"

namespace vidax::pipeline {

CheckedRequest check_request(const Family& family, const std::string& variant, const Request& request,
                             const std::string& precision, const std::function<void(const std::string&)>& warn) {
  CheckedRequest c;
  c.geometry = family.geometry(variant);
  validate_request(c.geometry, request);
  c.memory = family.memory_plan(variant, request, precision);
  check_memory(c.memory, static_cast<double>(mem_available_bytes()), static_cast<double>(mem_total_bytes()), warn);
  return c;
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
