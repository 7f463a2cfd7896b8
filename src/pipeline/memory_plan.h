// The request check's memory half (DESIGN.md principle 7): what a request
// will hold in memory (weights per part, the denoiser's activations, the VAE
// decode), computed by the family from the architecture before anything is
// allocated, and checked against the machine.
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace vidax::pipeline {

// The parts of a plan as `bench` and `generate --json` report them (docs/generate.md, "Memory").
enum class MemoryKind {
  WeightsResident,  // weights held for the whole phase (text encoder, DiT without --offload, VAE)
  WeightsStreamed,  // the streaming pool: the blocks in compute memory at once (--offload)
  Activations,      // the denoiser's activations
  Vae,              // the VAE decode's activations
};
const char* memory_kind_name(MemoryKind k);  // "weights_resident", "weights_streamed", "activations", "vae"

struct MemoryItem {
  std::string what;  // "DiT weights (bf16)", "DiT activations", ...
  double bytes = 0;
  MemoryKind kind = MemoryKind::WeightsResident;
};

struct MemoryPlan {
  std::vector<MemoryItem> items;
  // Parts that are never resident together (the text encoder is freed before the
  // denoiser runs, see residency.h) count once: the peak is the largest phase.
  std::vector<std::vector<size_t>> phases;  // indices into items; empty = all items at once
  double peak_bytes() const;
  std::string str() const;  // "DiT weights (bf16) 2.8 GB + ... = peak 3.9 GB"
  // {"peak_bytes", "<kind>_bytes" for each kind (the largest phase's sum of that kind: what is
  // held at once), "items": [{what, kind, bytes}]}.
  nlohmann::json to_json() const;
  double kind_peak_bytes(MemoryKind k) const;
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

// A memory size as users write it: "16G", "16GB", "16GiB", "512M", "2.5G", "1048576" (bytes).
// K/M/G/T are powers of 1024 (as `free -h` and the RSS figures count them), with or without
// "B"/"iB". Throws naming `option` on anything else, zero or a negative size.
double parse_memory_size(const std::string& text, const std::string& option = "--max-memory");

// --max-memory: how the request runs within a budget. The first of these that fits `budget`
// wins: as asked; the VAE decode tiled (`auto_tile` pixels); the weights streamed (--offload);
// both. What the user gave explicitly (--offload, --vae-tile) is kept in every candidate.
// Throws naming the budget and the smallest plan when none fits.
struct MemoryChoice {
  bool offload = false;
  int64_t vae_tile = 0;
  MemoryPlan plan;
  std::string reason;  // for the log
};
using PlanFor = std::function<MemoryPlan(bool offload, int64_t vae_tile)>;
MemoryChoice choose_memory(const PlanFor& plan, double budget, const std::string& budget_text, bool offload_asked,
                           int64_t tile_asked, int64_t auto_tile);

}  // namespace vidax::pipeline
