// The request check's memory half (DESIGN.md principle 7): what a request
// will hold in memory (weights per part, the denoiser's activations, the VAE
// decode), computed by the family from the architecture before anything is
// allocated, and checked against the machine.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace vidax::pipeline {

struct MemoryItem {
  std::string what;  // "DiT weights (bf16)", "DiT activations", ...
  double bytes = 0;
};

struct MemoryPlan {
  std::vector<MemoryItem> items;
  // Parts that are never resident together (the text encoder is freed before the
  // denoiser runs, see residency.h) count once: the peak is the largest phase.
  std::vector<std::vector<size_t>> phases;  // indices into items; empty = all items at once
  double peak_bytes() const;
  std::string str() const;  // "DiT weights (bf16) 2.8 GB + ... = peak 3.9 GB"
};

// A "Key:   123 kB" line of a /proc file (meminfo, self/status) in bytes; -1 when absent.
int64_t proc_bytes_field(const char* file, const std::string& key);
int64_t mem_available_bytes();  // MemAvailable of /proc/meminfo (-1 when unknown)
int64_t mem_total_bytes();      // MemTotal

// Throws when the plan's peak exceeds `total` bytes (it cannot run on this
// machine); calls `warn` when it exceeds `available` (it may swap or be killed).
// total/available < 0: unknown, not checked.
void check_memory(const MemoryPlan& plan, double available, double total,
                  const std::function<void(const std::string&)>& warn);

}  // namespace vidax::pipeline
