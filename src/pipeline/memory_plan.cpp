#include "pipeline/memory_plan.h"

#include <algorithm>
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
                                                                       << " in all; use a smaller size or model");
  if (available >= 0 && peak > available && warn)
    warn("this request needs about " + gb(peak) + " of memory (" + plan.str() + ") but only " + gb(available) +
         " are available now; it may swap or be stopped by the kernel");
}

}  // namespace vidax::pipeline
