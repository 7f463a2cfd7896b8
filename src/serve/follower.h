// `vidax serve` under mpirun, on the ranks other than 0 (docs/serve.md, "Under MPI"): no HTTP and
// no job store; a loop that takes each job from rank 0's server (MeshChannel), holds the same
// models as it, and runs the job's generation with this rank's part of the mesh, until rank 0
// says stop.
#pragma once
#include <memory>
#include <vector>

#include "serve/server.h"

namespace vidax::serve {

class Follower {
 public:
  // `opt`: the same options as rank 0's server (lora_dir, memory_budget_bytes and log are used);
  // `models`: the same list, resolved with this rank's mesh. Checks the list against rank 0's and
  // loads what is resident at start, as the server does.
  Follower(ServeOptions opt, std::vector<ServedModel> models, dist::Communicator& world);
  ~Follower();
  // Runs rank 0's jobs until it says stop. A job's error (this rank's or another's) is reported
  // to rank 0 and logged, and the loop goes on.
  void run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vidax::serve
