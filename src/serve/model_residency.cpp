#include "serve/model_residency.h"

#include <algorithm>
#include <cstdio>

namespace vidax::serve {

namespace {
void say(const LogFn& log, const std::string& s) {
  if (log) log(s);
}
}  // namespace

std::string gb_text(double b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GB", b / 1e9);
  return buf;
}

void load_at_start(const std::vector<ServedModel>& models, double budget, const LogFn& log) {
  VIDAX_CHECK(budget >= 0, "--max-memory must not be negative (0: no budget)");
  double held = 0;
  for (const auto& m : models) {
    if (budget > 0) {
      VIDAX_CHECK(m.weight_bytes() <= budget, "model " << m.name << ": its weights (" << gb_text(m.weight_bytes())
                                                       << ") exceed --max-memory " << gb_text(budget)
                                                       << ": it could never be loaded");
      if (held + m.weight_bytes() > budget) {
        if (m.resident()) m.unload();
        say(log, "model " + m.name + " (" + gb_text(m.weight_bytes()) +
                     ") stays unloaded until a job needs it (--max-memory " + gb_text(budget) + ")");
        continue;
      }
    }
    if (!m.resident()) {
      say(log, "loading " + m.name + " from " + m.weights);
      m.load();
    }
    held += m.weight_bytes();
  }
}

std::vector<const ServedModel*> lru_evictions(const std::vector<ServedModel>& models, const ServedModel& m,
                                              double budget) {
  std::vector<const ServedModel*> out;
  if (budget <= 0 || m.resident()) return out;
  double held = 0;
  for (const auto& o : models)
    if (o.resident()) held += o.weight_bytes();
  while (held + m.weight_bytes() > budget) {
    const ServedModel* lru = nullptr;
    for (const auto& o : models)
      if (o.resident() && o.residence != m.residence && std::find(out.begin(), out.end(), &o) == out.end() &&
          (!lru || o.residence->last_used < lru->residence->last_used))
        lru = &o;
    if (!lru) break;  // nothing left to unload (the start-up check keeps every model within the budget)
    out.push_back(lru);
    held -= lru->weight_bytes();
  }
  return out;
}

std::shared_ptr<pipeline::LoadedModel> ready_for_job(const ServedModel& m, const VideoSpec& spec,
                                                     const std::string& lora_dir, const LogFn& log) {
  std::shared_ptr<pipeline::LoadedModel> loaded = m.loaded();
  if (!loaded) {
    say(log, "loading " + m.name + " from " + m.weights);
    loaded = m.load();
    say(log, "loaded " + m.name + " (" + loaded->precision + ")");
  }
  // This job's LoRAs, none included: each job sets its own, so none outlives its job.
  const auto loras = lora_specs(spec, lora_dir);
  if (loaded->parts.use_loras)
    loaded->parts.use_loras(loras);
  else if (!loras.empty())
    throw Error("model " + spec.model + " cannot switch LoRAs");
  return loaded;
}

}  // namespace vidax::serve
