// Which served models are loaded (ServeOptions::memory_budget_bytes, `--max-memory`), and a model
// made ready for one job. Rank 0's server and, under mpirun, the other ranks' followers make the
// same choices through these functions, so every rank holds the same models.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "serve/video_request.h"

namespace vidax::serve {

using LogFn = std::function<void(const std::string&)>;

// At start: every model without a budget (budget 0); with one, those that fit, in the order given,
// the others unloaded. Throws naming a model whose weights alone exceed the budget.
void load_at_start(const std::vector<ServedModel>& models, double budget, const LogFn& log);

// Before a job for `m`: the resident models to unload, least recently used first, until `m` fits
// the budget (none when `m` is resident or there is no budget). Decides only; unloads nothing.
std::vector<const ServedModel*> lru_evictions(const std::vector<ServedModel>& models, const ServedModel& m,
                                              double budget);

// `m` loaded (when it is not resident) and switched to the job's LoRAs (none included: each job
// sets its own). Returns the parts, to be held to the job's end.
std::shared_ptr<pipeline::LoadedModel> ready_for_job(const ServedModel& m, const VideoSpec& spec,
                                                     const std::string& lora_dir, const LogFn& log);

std::string gb_text(double bytes);  // "1.23 GB"

}  // namespace vidax::serve
