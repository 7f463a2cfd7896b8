// Collectives over a group of ranks (DESIGN.md §2 "parallel"; principle 6).
// Implementations: LocalCommunicator (one rank, the default), MpiCommunicator
// (host memory, Open MPI), NcclCommunicator (device memory; src/dist/nccl,
// built with CUDA). Model code never calls these directly: nn/ layers do.
#pragma once
#include <memory>
#include <string>

#include "core/tensor.h"

namespace vidax::dist {

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
bool launched_by_mpi();  // OMPI_COMM_WORLD_SIZE / PMI_SIZE / PMIX_RANK in the environment

}  // namespace vidax::dist
