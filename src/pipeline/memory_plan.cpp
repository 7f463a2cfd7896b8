#include "pipeline/memory_plan.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace vidax::pipeline {

namespace {

std::string gb(double bytes) {
  std::ostringstream o;
  o.precision(3);
  o << bytes / 1e9 << " GB";
  return o.str();
}


}  // namespace

const char* memory_kind_name(MemoryKind k) {
  switch (k) {
    case MemoryKind::WeightsResident: return "weights_resident";
    case MemoryKind::WeightsStreamed: return "weights_streamed";
    case MemoryKind::Activations: return "activations";
    case MemoryKind::Vae: return "vae";
  }
  return "?";
}

double MemoryPlan::kind_peak_bytes(MemoryKind k) const {
  auto sum = [&](const std::vector<size_t>& ph) {
    double s = 0;
    for (size_t i : ph)
      if (items.at(i).kind == k) s += items.at(i).bytes;
    return s;
  };
  if (phases.empty()) {
    std::vector<size_t> all(items.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    return sum(all);
  }
  double peak = 0;
  for (const auto& ph : phases) peak = std::max(peak, sum(ph));
  return peak;
}

nlohmann::json MemoryPlan::to_json() const {
  nlohmann::json j;
  j["peak_bytes"] = peak_bytes();
  for (MemoryKind k : {MemoryKind::WeightsResident, MemoryKind::WeightsStreamed, MemoryKind::Activations, MemoryKind::Vae})
    j[std::string(memory_kind_name(k)) + "_bytes"] = kind_peak_bytes(k);
  j["items"] = nlohmann::json::array();
  for (const auto& i : items) j["items"].push_back({{"what", i.what}, {"kind", memory_kind_name(i.kind)}, {"bytes", i.bytes}});
  return j;
}

double parse_memory_size(const std::string& text, const std::string& option) {
  const auto bad = [&]() {
    return Error(msg() << option << " " << (text.empty() ? "(empty)" : text)
                       << ": not a memory size (e.g. 16G, 16GB, 512M, 2.5G or a byte count)");
  };
  size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(text, &pos);
  } catch (const std::exception&) {
    throw bad();
  }
  if (pos == 0 || !std::isfinite(v)) throw bad();
  std::string unit = text.substr(pos);
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double scale = 0;
  for (const auto& [names, s] : std::vector<std::pair<std::vector<std::string>, double>>{
           {{"", "B"}, 1.0},
           {{"K", "KB", "KIB"}, 1024.0},
           {{"M", "MB", "MIB"}, 1024.0 * 1024},
           {{"G", "GB", "GIB"}, 1024.0 * 1024 * 1024},
           {{"T", "TB", "TIB"}, 1024.0 * 1024 * 1024 * 1024}})
    for (const auto& n : names)
      if (unit == n) scale = s;
  if (scale == 0) throw bad();
  VIDAX_CHECK(v > 0, option << " " << text << ": the size must be positive");
  return v * scale;
}

MemoryChoice choose_memory(const PlanFor& plan, double budget, const std::string& budget_text, bool offload_asked,
                           int64_t tile_asked, int64_t auto_tile) {
  const int64_t tiled = tile_asked > 0 ? tile_asked : auto_tile;
  const std::vector<std::pair<bool, int64_t>> candidates = {
      {offload_asked, tile_asked}, {offload_asked, tiled}, {true, tile_asked}, {true, tiled}};
  MemoryChoice best;
  bool have = false;
  for (const auto& [off, tile] : candidates) {
    MemoryPlan p = plan(off, tile);
    const bool fits = p.peak_bytes() <= budget;
    if (!have || p.peak_bytes() < best.plan.peak_bytes()) {
      best.offload = off;
      best.vae_tile = tile;
      best.plan = p;
      have = true;
    }
    if (fits) {
      MemoryChoice c{off, tile, p, ""};
      std::string how;
      if (off && !offload_asked) how += "streaming the DiT's weights (--offload)";
      if (tile != tile_asked) how += (how.empty() ? "" : " and ") + std::string("tiling the VAE decode (--vae-tile ") +
                                     std::to_string(tile) + ")";
      c.reason = "planned peak " + gb(p.peak_bytes()) + " within --max-memory " + budget_text +
                 (how.empty() ? std::string() : ", " + how);
      return c;
    }
  }
  throw Error(msg() << "--max-memory " << budget_text << " (" << gb(budget)
                    << ") is below what this request needs even with its weights streamed (--offload) and the VAE "
                       "decode tiled: at least "
                    << best.plan.str() << "; raise the budget, or use a smaller size, fewer frames or a smaller model");
}

double MemoryPlan::peak_bytes() const {
  if (phases.empty()) {
    double s = 0;
    for (const auto& i : items) s += i.bytes;
    return s;
  }
  double peak = 0;
  for (const auto& ph : phases) {
    double s = 0;
    for (size_t i : ph) s += items.at(i).bytes;
    peak = std::max(peak, s);
  }
  return peak;
}

std::string MemoryPlan::str() const {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : ", ") + i.what + " " + gb(i.bytes);
  return s + "; peak " + gb(peak_bytes());
}

int64_t proc_bytes_field(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) {
      std::istringstream ss(line.substr(key.size() + 1));
      int64_t kb = -1;
      ss >> kb;
      return kb < 0 ? -1 : kb * 1024;
    }
  return -1;
}

int64_t mem_available_bytes() { return proc_bytes_field("/proc/meminfo", "MemAvailable"); }
int64_t mem_total_bytes() { return proc_bytes_field("/proc/meminfo", "MemTotal"); }

void check_memory(const MemoryPlan& plan, double available, double total,
                  const std::function<void(const std::string&)>& warn) {
  const double peak = plan.peak_bytes();
  VIDAX_CHECK(total < 0 || peak <= total, "this request needs about " << gb(peak) << " of memory (" << plan.str()
                                                                       << ") but the machine has " << gb(total)
                                                                       << " in all; use a smaller size or model, or stream the weights "
                                                                          "(--offload)");
  if (available >= 0 && peak > available && warn)
    warn("this request needs about " + gb(peak) + " of memory (" + plan.str() + ") but only " + gb(available) +
         " are available now; it may swap or be stopped by the kernel");
}

}  // namespace vidax::pipeline
