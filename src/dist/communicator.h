// Collectives over a group of ranks (DESIGN.md §2 "parallel"; principle 6).
// Implementations: LocalCommunicator (one rank, the default), MpiCommunicator
// (host memory, Open MPI), NcclCommunicator (device memory; src/dist/nccl,
// built with CUDA). Model code never calls these directly: nn/ layers do.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"

namespace vidax::dist {

// Thrown by a collective, with failure recovery on (Communicator::enable_failure_recovery), when
// another rank reported a failure (report_failure) while this one waited in it: the collective is
// abandoned. The job's error is the failing rank's, which settle() gathers; this only unwinds.
class PeerFailed : public Error {
 public:
  PeerFailed(int rank, const std::string& message);
  int rank;  // the world rank that reported
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend_name() const = 0;

  // Raw collectives on contiguous buffers of `n` elements of `dtype`.
  virtual void all_reduce_sum(void* buf, size_t n, DType dtype) = 0;
  // in: n elements; out: size()*n elements, rank-major.
  virtual void all_gather(const void* in, void* out, size_t n, DType dtype) = 0;
  // in/out: size()*n elements; block j of `in` goes to rank j, block i of `out` came from rank i.
  virtual void all_to_all(const void* in, void* out, size_t n, DType dtype) = 0;
  virtual void broadcast(void* buf, size_t n, DType dtype, int root) = 0;
  // As broadcast, for a call a rank may wait in for long (a `vidax serve` follower between jobs):
  // it sleeps between looks instead of spinning on a core. Every rank of the call uses this one
  // (under MPI it is a non-blocking broadcast, which does not match a blocking one).
  virtual void broadcast_patient(void* buf, size_t n, DType dtype, int root) { broadcast(buf, n, dtype, root); }
  virtual void barrier() = 0;
  // Ranks with the same color form a new group, ordered by key.
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;
  // Stops every rank of the job with this message (an error on any rank stops all).
  [[noreturn]] virtual void abort(const std::string& message) = 0;

  // --- Failure recovery: one rank failing mid-job (docs/architecture.md, "A rank that fails
  // mid-job"; used by `vidax serve` under mpirun). Called on the world. Without it (and on one
  // rank) the defaults: nothing to watch, settle() is an all-gather on this communicator.
  //
  // Every rank at the same point, before the job collectives: from then on every collective of
  // this world and of its splits (made before or after) waits while also watching a side channel,
  // and throws PeerFailed when a failing rank's report_failure arrives there.
  virtual void enable_failure_recovery() {}
  // This rank failed in the middle of a job: tells every other rank on the side channel (it does
  // not wait). The caller then calls settle() like every rank.
  virtual void report_failure(const std::string& message) { (void)message; }
  // Whether a collective of this rank was abandoned (PeerFailed) since the last settle().
  virtual bool abandoned() const { return false; }
  // Every rank, at the end of a job's phase: every rank's `error` ("" = none; cut to max_bytes),
  // in rank order. It runs on a channel no job collective uses, so it completes whichever
  // collective a rank abandoned. When any rank failed or abandoned one, every communicator of
  // this world then continues on a fresh one (the same groups), and the old ones, with what is
  // pending on them, are left alone. A rank that abandoned without a failure anywhere gets the
  // notice's text as its error.
  virtual std::vector<std::string> settle(const std::string& error, size_t max_bytes);

  // Tensor-level helpers (contiguous host tensors; out-of-place unless *_inplace).
  void all_reduce_sum_inplace(Tensor& t);
  // Concatenates every rank's tensor along `dim` (rank order).
  Tensor all_gather(const Tensor& t, int64_t dim);
  // Splits `t` into size() equal chunks along scatter_dim, sends chunk j to rank j,
  // and concatenates the received chunks along gather_dim (Ulysses' exchange).
  Tensor all_to_all(const Tensor& t, int64_t scatter_dim, int64_t gather_dim);
  void broadcast_inplace(Tensor& t, int root);
};

// One rank: every collective is the identity.
class LocalCommunicator final : public Communicator {
 public:
  using Communicator::all_gather;
  using Communicator::all_to_all;
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend_name() const override { return "local"; }
  void all_reduce_sum(void*, size_t, DType) override {}
  void all_gather(const void* in, void* out, size_t n, DType dtype) override;
  void all_to_all(const void* in, void* out, size_t n, DType dtype) override;
  void broadcast(void*, size_t, DType, int) override {}
  void barrier() override {}
  std::unique_ptr<Communicator> split(int, int) override { return std::make_unique<LocalCommunicator>(); }
  [[noreturn]] void abort(const std::string& message) override;
};

// The job's world: MPI's world when the process was started by mpirun (and MPI
// is built in), else a LocalCommunicator. Initializes MPI on first use.
Communicator& world();
bool launched_by_mpi();

// Test-only fault injection (the environment variable VIDAX_TEST_FAULT="RANK:STEP", read once):
// on world rank RANK, once per process, the first collective of a split communicator (a mesh
// group: the model's) after denoising step STEP (1-based) began throws instead of entering it,
// as an allocation failing on that rank alone would. The generic denoising loop marks each step.
void mark_denoising_step(int step);
// Called by each collective of a split MPI communicator: throws the injected fault when armed.
void fire_test_fault(int world_rank);  // OMPI_COMM_WORLD_SIZE / PMI_SIZE / PMIX_RANK in the environment

}  // namespace vidax::dist
