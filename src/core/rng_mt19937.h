// The 32-bit Mersenne Twister exactly as PyTorch's CPU generator runs it
// (aten/src/ATen/core/MT19937RNGEngine.h): seeded from the low 32 bits of the
// 64-bit seed, state regenerated lazily on the first draw. Its output equals
// std::mt19937 seeded with (seed & 0xffffffff); kept separate so the state
// layout (left/next) is the one torch serialises.
#pragma once
#include <array>
#include <cstdint>

namespace vidax {

class TorchMt19937 {
 public:
  static constexpr int kN = 624;
  static constexpr int kM = 397;

  explicit TorchMt19937(uint64_t seed = 5489) { seed_with(seed); }

  void seed_with(uint64_t seed) {
    seed_ = seed;
    state_[0] = static_cast<uint32_t>(seed & 0xffffffffu);
    for (int j = 1; j < kN; ++j)
      state_[j] = 1812433253u * (state_[j - 1] ^ (state_[j - 1] >> 30)) + static_cast<uint32_t>(j);
    left_ = 1;  // the first draw regenerates the whole state
    next_ = 0;
  }

  uint64_t seed() const { return seed_; }

  uint32_t operator()() {
    if (--left_ == 0) next_state();
    uint32_t y = state_[next_++];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= (y >> 18);
    return y;
  }

 private:
  static uint32_t twist(uint32_t u, uint32_t v) {
    const uint32_t mixed = (u & 0x80000000u) | (v & 0x7fffffffu);
    return (mixed >> 1) ^ ((v & 1u) ? 0x9908b0dfu : 0u);
  }

  void next_state() {
    left_ = kN;
    next_ = 0;
    for (int j = 0; j < kN - kM; ++j) state_[j] = state_[j + kM] ^ twist(state_[j], state_[j + 1]);
    for (int j = kN - kM; j < kN - 1; ++j)
      state_[j] = state_[j + kM - kN] ^ twist(state_[j], state_[j + 1]);
    state_[kN - 1] = state_[kM - 1] ^ twist(state_[kN - 1], state_[0]);
  }

  uint64_t seed_ = 0;
  std::array<uint32_t, kN> state_{};
  int left_ = 1;
  int next_ = 0;
};

}  // namespace vidax
