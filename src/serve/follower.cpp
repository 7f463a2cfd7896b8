#include "serve/follower.h"

#include <unistd.h>

#include "serve/mesh_channel.h"
#include "serve/model_residency.h"

namespace vidax::serve {

struct Follower::Impl {
  ServeOptions opt;
  std::vector<ServedModel> models;
  MeshChannel mesh;

  Impl(ServeOptions o, std::vector<ServedModel> m, dist::Communicator& world)
      : opt(std::move(o)), models(std::move(m)), mesh(world) {}

  void log(const std::string& s) const {
    if (opt.log) opt.log(s);
  }

  const ServedModel& model(const std::string& name) const {
    for (const auto& m : models)
      if (m.name == name) return m;
    throw Error("rank " + std::to_string(mesh.rank()) + " does not serve model " + name);
  }

  void run_job(const MeshJob& job) {
    const std::string& id = job.id;
    std::shared_ptr<pipeline::LoadedModel> loaded;
    pipeline::Request req;
    // The same phases as rank 0's worker (Server::Impl::run_job), each agreed on with the others.
    try {
      mesh.run_agreed([&] {
        const VideoSpec spec = spec_from_json(job.spec);
        const ServedModel& m = model(spec.model);
        for (const std::string& name : job.unload) {
          log("unloading " + name + " (rank 0's choice, to make room for " + m.name + ")");
          model(name).unload();
        }
        req = to_pipeline_request(spec, m.variant().defaults);
        req.image = job.image;
        req.last_image = job.last_image;
        VIDAX_CHECK(req.key_images.size() == job.key_images.size(),
                    "rank 0 sent " << job.key_images.size() << " keyframes for a spec of " << req.key_images.size());
        for (size_t k = 0; k < job.key_images.size(); ++k) req.key_images[k].image = job.key_images[k];
        loaded = ready_for_job(m, spec, opt.lora_dir, opt.log);
      });
    } catch (const std::exception& e) {
      if (!mesh.abandoned().empty()) log("job " + id + ": abandoned a collective: " + mesh.abandoned());
      log("job " + id + ": failed before its run: " + e.what());
      return;
    }
    bool cancel = false;
    pipeline::Events ev;
    ev.on_step = [&](int, int, double) { cancel = mesh.agree_cancel(false); };  // rank 0 decides
    ev.cancelled = [&] { return cancel; };
    ev.warn = [&](const std::string& w) { log("job " + id + ": warning: " + w); };
    log("job " + id + ": running");
    try {
      mesh.run_agreed([&] { (void)pipeline::run_generation(loaded->parts, req, ev, false); });  // rank 0 decodes
      log("job " + id + ": done");
    } catch (const pipeline::Cancelled& e) {
      log("job " + id + ": stopped (" + e.what() + ")");
    } catch (const std::exception& e) {
      if (!mesh.abandoned().empty()) log("job " + id + ": abandoned a collective: " + mesh.abandoned());
      log("job " + id + ": failed: " + e.what());
    }
  }
};

Follower::Follower(ServeOptions opt, std::vector<ServedModel> models, dist::Communicator& world)
    : impl_(std::make_unique<Impl>(std::move(opt), std::move(models), world)) {
  Impl& s = *impl_;
  VIDAX_CHECK(s.mesh.rank() != 0, "rank 0 runs the server, not a follower");
  std::string names;
  for (const auto& m : s.models) names += (names.empty() ? "" : ",") + m.name;
  s.mesh.check_same("the served models", names);
  load_at_start(s.models, s.opt.memory_budget_bytes, s.opt.log);
}

Follower::~Follower() = default;

void Follower::run() {
  Impl& s = *impl_;
  s.log("waiting for rank 0's jobs (pid " + std::to_string(getpid()) + ")");
  while (const std::optional<MeshJob> job = s.mesh.receive()) s.run_job(*job);
  s.log("rank 0 said stop");
}

}  // namespace vidax::serve
