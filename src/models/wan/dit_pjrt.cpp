#include "models/wan/dit_pjrt.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>

#include "backend/recording.h"
#include "core/error.h"
#include "models/wan/embeddings.h"

namespace vidax::wan {

namespace {
// Recorded programs kept (each holds its trace: the prompt's K/V stay referenced): CFG needs two.
constexpr size_t kKeep = 4;
}  // namespace

struct PjrtDiT::Recorded {
  std::weak_ptr<const WanDiT> dit;
  const void* text_key = nullptr;  // text.embedded's buffer (held by the trace: never reused meanwhile)
  Shape x_shape, t_shape;
  Trace trace;
  Tensor x, t, y;  // the Meta tensors: inputs and output
  std::shared_ptr<const pjrt::Program> program;
};

PjrtDiT::PjrtDiT(const std::string& plugin_path, std::function<void(const std::string&)> warn,
                 pjrt::LowerOptions lower)
    : session_(&pjrt::Session::get(plugin_path)), warn_(std::move(warn)), lower_(lower) {}

PjrtDiT::~PjrtDiT() = default;

Tensor PjrtDiT::forward(const std::shared_ptr<const WanDiT>& dit, const Tensor& x, const std::vector<double>& t,
                        const TextContext& text) {
  VIDAX_CHECK(dit, "PJRT DiT: no DiT");
  VIDAX_CHECK(x.device() == Device::CPU, "PJRT DiT: the latent " << x.str() << " is not a CPU tensor");
  const Tensor ts = timestep_sinusoid(t, dit->config().freq_dim);
  const void* text_key = text.embedded.defined() ? text.embedded.data_ptr() : nullptr;  // view-write-ok: an address as a cache key, no write
  // Entries of a DiT that is gone are stale (its weights were freed or replaced).
  std::erase_if(recorded_, [](const std::unique_ptr<Recorded>& r) { return r->dit.expired(); });
  Recorded* rec = nullptr;
  for (auto& r : recorded_) {
    const auto same_dit = [&](const std::weak_ptr<const WanDiT>& w) { return !w.owner_before(dit) && !dit.owner_before(w); };
    if (same_dit(r->dit) && r->text_key == text_key && r->x_shape == x.shape() && r->t_shape == ts.shape()) rec = r.get();
  }
  if (!rec) {
    auto r = std::make_unique<Recorded>();
    r->dit = dit;
    r->text_key = text_key;
    r->x_shape = x.shape();
    r->t_shape = ts.shape();
    r->x = Tensor::empty(x.shape(), x.dtype(), Device::Meta);
    r->t = Tensor::empty(ts.shape(), ts.dtype(), Device::Meta);
    const auto t0 = std::chrono::steady_clock::now();
    {
      RecordingScope scope(r->trace);
      r->y = dit->forward(r->x, r->t, text);
    }
    record_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const int64_t loads_before = session_->stats().compiles + session_->stats().disk_hits;
    r->program = session_->prepare(r->trace, {r->y}, {r->x, r->t}, lower_);
    ++recordings_;
    const int64_t loads = session_->stats().compiles + session_->stats().disk_hits - loads_before;
    if (loads > 0) {
      auto it = std::find_if(loads_per_shape_.begin(), loads_per_shape_.end(),
                             [&](const auto& p) { return p.first == x.shape(); });
      if (it == loads_per_shape_.end()) {
        loads_per_shape_.emplace_back(x.shape(), loads);
      } else {
        it->second += loads;
        ++recompilations_;
        if (warn_)
          warn_("PJRT: the DiT step for the latent " + shape_str(x.shape()) +
                " was compiled again (recompilation " + std::to_string(recompilations_) +
                "): the recorded program changed between calls; each costs a full compile");
      }
    }
    if (recorded_.size() == kKeep) recorded_.erase(recorded_.begin());
    recorded_.push_back(std::move(r));
    rec = recorded_.back().get();
  }
  return session_->run(*rec->program, rec->trace, {{rec->x, x}, {rec->t, ts}})[0];
}

nlohmann::json PjrtDiT::stats_json() const {
  const pjrt::PluginInfo& i = info();
  const pjrt::SessionStats& s = session_->stats();
  return nlohmann::json{{"device", "pjrt"},
                        {"plugin", i.path},
                        {"platform", i.platform},
                        {"platform_version", i.platform_version},
                        {"pjrt_api", std::to_string(i.api_major) + "." + std::to_string(i.api_minor)},
                        {"stablehlo", i.stablehlo_version},
                        {"compile_cache", session_->cache_dir().empty() ? nlohmann::json() : nlohmann::json(session_->cache_dir())},
                        {"compiles", s.compiles},
                        {"cache_hits", s.disk_hits},
                        {"memory_hits", s.memory_hits},
                        {"recompilations", recompilations_},
                        {"recordings", recordings_},
                        {"runs", s.runs},
                        {"uploads", s.uploads},
                        {"compile_seconds", s.compile_s},
                        {"lower_seconds", s.lower_s},
                        {"record_seconds", record_s_},
                        {"dot_precision", lower_.highest ? "HIGHEST" : "DEFAULT"},
                        {"on_cpu", {"text encoder", "DiT encode_context", "VAE"}}};
}

std::string PjrtDiT::summary() const {
  const pjrt::SessionStats& s = session_->stats();
  std::ostringstream o;
  o.precision(3);
  o << "PJRT (" << info().str() << "): " << s.compiles << " program(s) compiled, " << s.disk_hits
    << " loaded from the compile cache (" << s.compile_s << " s), " << s.runs << " step run(s), "
    << recompilations_ << " recompilation(s), " << s.uploads << " weight upload(s)";
  return o.str();
}

}  // namespace vidax::wan
