#include "dist/mpi_communicator.h"

#ifdef VIDAX_HAVE_MPI
#include <mpi.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/error.h"

namespace vidax::dist {

namespace {

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, buf, &len);
  throw Error(msg() << "MPI " << what << " failed: " << std::string(buf, static_cast<size_t>(len)));
}

// Sum needs the element type; narrow floats are summed through f32.
MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::F64: return MPI_DOUBLE;
    case DType::F32: return MPI_FLOAT;
    case DType::I64: return MPI_INT64_T;
    case DType::I32: return MPI_INT32_T;
    case DType::I16: return MPI_INT16_T;
    case DType::I8: return MPI_INT8_T;
    case DType::U64: return MPI_UINT64_T;
    case DType::U32: return MPI_UINT32_T;
    case DType::U16: return MPI_UINT16_T;
    case DType::U8: case DType::Bool: return MPI_UINT8_T;
    default: return MPI_DATATYPE_NULL;
  }
}

class MpiCommunicator final : public Communicator {
 public:
  using Communicator::all_gather;
  using Communicator::all_to_all;
  MpiCommunicator(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiCommunicator() override {
    if (owned_) MPI_Comm_free(&comm_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend_name() const override { return "mpi"; }

  void all_reduce_sum(void* buf, size_t n, DType dtype) override {
    MPI_Datatype t = mpi_type(dtype);
    if (t != MPI_DATATYPE_NULL) {
      check(MPI_Allreduce(MPI_IN_PLACE, buf, count(n), t, MPI_SUM, comm_), "Allreduce");
      return;
    }
    // bf16/f16/fp8: sum in f32, round once (same as NCCL's bf16 sum up to order).
    std::vector<float> tmp(n);
    convert(buf, dtype, tmp.data(), DType::F32, n);
    check(MPI_Allreduce(MPI_IN_PLACE, tmp.data(), count(n), MPI_FLOAT, MPI_SUM, comm_), "Allreduce");
    convert(tmp.data(), DType::F32, buf, dtype, n);
  }
  void all_gather(const void* in, void* out, size_t n, DType dtype) override {
    const size_t bytes = n * dtype_size(dtype);
    check(MPI_Allgather(in, count(bytes), MPI_BYTE, out, count(bytes), MPI_BYTE, comm_), "Allgather");
  }
  void all_to_all(const void* in, void* out, size_t n, DType dtype) override {
    const size_t bytes = n * dtype_size(dtype);
    check(MPI_Alltoall(in, count(bytes), MPI_BYTE, out, count(bytes), MPI_BYTE, comm_), "Alltoall");
  }
  void broadcast(void* buf, size_t n, DType dtype, int root) override {
    check(MPI_Bcast(buf, count(n * dtype_size(dtype)), MPI_BYTE, root, comm_), "Bcast");
  }
  void broadcast_patient(void* buf, size_t n, DType dtype, int root) override {
    MPI_Request req;
    check(MPI_Ibcast(buf, count(n * dtype_size(dtype)), MPI_BYTE, root, comm_, &req), "Ibcast");
    // Open MPI's blocking calls poll without sleeping: an idle follower would keep a core busy.
    int done = 0;
    for (useconds_t pause = 50;; pause = std::min<useconds_t>(pause * 2, 10000)) {
      check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "Test");
      if (done) return;
      usleep(pause);
    }
  }
  void barrier() override { check(MPI_Barrier(comm_), "Barrier"); }
  std::unique_ptr<Communicator> split(int color, int key) override {
    MPI_Comm sub;
    check(MPI_Comm_split(comm_, color, key, &sub), "Comm_split");
    return std::make_unique<MpiCommunicator>(sub, true);
  }
  [[noreturn]] void abort(const std::string& message) override {
    std::fprintf(stderr, "vidax: error on rank %d: %s\n", rank_, message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::abort();
  }

 private:
  static int count(size_t n) {
    VIDAX_CHECK(n <= static_cast<size_t>(INT32_MAX), "MPI message of " << n << " elements is too large");
    return static_cast<int>(n);
  }
  MPI_Comm comm_;
  bool owned_;
  int rank_ = 0, size_ = 1;
};

void finalize_mpi() {
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) MPI_Finalize();
}

}  // namespace

std::unique_ptr<Communicator> make_mpi_world() {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    // SERIALIZED, not FUNNELED: `vidax serve`'s rank 0 talks to the other ranks from its worker
    // thread (its main thread serves HTTP); one thread at a time makes the calls.
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "Init_thread");
    if (provided < MPI_THREAD_SERIALIZED)  // a warning only: one-thread commands (generate) still run
      std::fprintf(stderr, "vidax: warning: this MPI gives thread level %d, below MPI_THREAD_SERIALIZED, which "
                           "`vidax serve --mesh` needs\n", provided);
    std::atexit(finalize_mpi);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  return std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, false);
}

}  // namespace vidax::dist
#endif
