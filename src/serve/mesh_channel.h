// `vidax serve` under mpirun (docs/serve.md, "Under MPI"): what rank 0, which serves HTTP, says to
// the other ranks, which only compute. Every exchange is a collective over the world, rooted at
// rank 0, made by each rank at the same point of a job:
//
//   check_same           at start: the served models are the same list on every rank
//   send_job / receive   before a job: its spec and the residency decision (or "stop")
//   run_agreed           the job's two phases (the model made ready, the generation), each
//                        ending with agree_errors (Communicator::settle: on a channel of its own,
//                        so a rank that fails inside the model's collectives wakes the others,
//                        and every rank goes on with fresh communicators)
//   agree_cancel         once per denoising step (rank 0's cancel decision)
//
// Rank 0 makes the calls from its worker thread and the followers from their main thread.
// The wait for the next job is Communicator::broadcast_patient on every rank (no spinning).
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "dist/communicator.h"

namespace vidax::serve {

// One job as rank 0 hands it to the others: the spec its worker runs (spec_to_json of the
// VideoSpec, every default filled in, the seed drawn; image paths cleared: the decoded images
// travel instead, so no rank reads rank 0's data folder), and the models to unload before it
// (rank 0's least-recently-used choice under --max-memory; the job's model is then loaded if it
// is not resident).
struct MeshJob {
  std::string id;  // the job's, for the logs
  nlohmann::json spec;
  std::vector<std::string> unload;
  Tensor image, last_image;  // [3, H, W] F32 as pipeline::Request holds them; undefined: none
  std::vector<Tensor> key_images;  // the spec's `images`, in order (their paths cleared)
};

class MeshChannel {
 public:
  explicit MeshChannel(dist::Communicator& world);
  int rank() const { return world_.rank(); }
  int size() const { return world_.size(); }

  // Rank 0.
  void send_job(const MeshJob& job);
  void send_stop();  // the followers' loops end (their processes exit 0)
  // Ranks > 0: the next job, or nullopt for "stop".
  std::optional<MeshJob> receive();

  // Every rank: rank 0's `mine` is returned on every rank (the others' is ignored).
  bool agree_cancel(bool mine);
  // Every rank: `error` is this rank's ("" = none). Returns "" when no rank failed, else the
  // message: the one message when every rank failed with it (a request every rank refuses), else
  // "rank R: ...; rank S: ..." for the ranks that failed (each cut to kMaxMessage bytes).
  std::string agree_errors(const std::string& error);
  // Every rank: runs `f`, then agrees on the outcome. Throws Error(the agreed message) when any
  // rank failed; a pipeline::Cancelled (every rank stops at the same step: agree_cancel) is not a
  // failure and is rethrown after the agreement.
  // A rank that waited in a collective when another failed abandons it (dist::PeerFailed) and
  // continues on fresh communicators (Communicator::settle); abandoned() then says so, for the log.
  void run_agreed(const std::function<void()>& f);
  // Why the last run_agreed abandoned a collective on this rank ("" = it did not).
  const std::string& abandoned() const { return abandoned_; }
  // Every rank: rank 0's `mine` against each rank's; throws on every rank, naming `what` and the
  // ranks, when one differs (the served models must be the same list everywhere).
  void check_same(const std::string& what, const std::string& mine);

  static constexpr size_t kMaxMessage = 2000;

 private:
  dist::Communicator& world_;
  std::string abandoned_;
};

}  // namespace vidax::serve
