#include "dist/nccl/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>

#include "core/error.h"

namespace vidax::dist {

namespace {

void check_nccl(ncclResult_t r, const char* what) {
  VIDAX_CHECK(r == ncclSuccess, "NCCL " << what << " failed: " << ncclGetErrorString(r));
}
void check_cuda(cudaError_t r, const char* what) {
  VIDAX_CHECK(r == cudaSuccess, "CUDA " << what << " failed: " << cudaGetErrorString(r));
}

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::F64: return ncclFloat64;
    case DType::F32: return ncclFloat32;
    case DType::F16: return ncclFloat16;
    case DType::BF16: return ncclBfloat16;
    case DType::I64: return ncclInt64;
    case DType::I32: return ncclInt32;
    case DType::U64: return ncclUint64;
    case DType::U32: return ncclUint32;
    case DType::I8: return ncclInt8;
    case DType::U8: case DType::Bool: return ncclUint8;
    default: throw Error(msg() << "NCCL has no type for " << dtype_name(t));
  }
}

class NcclCommunicator final : public Communicator {
 public:
  using Communicator::all_gather;
  using Communicator::all_to_all;

  NcclCommunicator(Communicator& host, int device) : host_(host), device_(device) {
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    ncclUniqueId id;
    if (host.rank() == 0) check_nccl(ncclGetUniqueId(&id), "GetUniqueId");
    host.broadcast(&id, sizeof(id), DType::U8, 0);
    check_nccl(ncclCommInitRank(&comm_, host.size(), id, host.rank()), "CommInitRank");
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    rank_ = host.rank();
    size_ = host.size();
  }
  NcclCommunicator(ncclComm_t comm, Communicator& host, int device) : host_(host), device_(device), comm_(comm) {
    check_nccl(ncclCommUserRank(comm_, &rank_), "CommUserRank");
    check_nccl(ncclCommCount(comm_, &size_), "CommCount");
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~NcclCommunicator() override {
    cudaStreamDestroy(stream_);
    ncclCommDestroy(comm_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend_name() const override { return "nccl"; }

  void all_reduce_sum(void* buf, size_t n, DType dtype) override {
    check_nccl(ncclAllReduce(buf, buf, n, nccl_type(dtype), ncclSum, comm_, stream_), "AllReduce");
    sync();
  }
  void all_gather(const void* in, void* out, size_t n, DType dtype) override {
    check_nccl(ncclAllGather(in, out, n, nccl_type(dtype), comm_, stream_), "AllGather");
    sync();
  }
  // NCCL has no all-to-all primitive: grouped send/recv per peer (as torch does).
  void all_to_all(const void* in, void* out, size_t n, DType dtype) override {
    const size_t bytes = n * dtype_size(dtype);
    check_nccl(ncclGroupStart(), "GroupStart");
    for (int peer = 0; peer < size_; ++peer) {
      check_nccl(ncclSend(static_cast<const char*>(in) + peer * bytes, bytes, ncclUint8, peer, comm_, stream_), "Send");
      check_nccl(ncclRecv(static_cast<char*>(out) + peer * bytes, bytes, ncclUint8, peer, comm_, stream_), "Recv");
    }
    check_nccl(ncclGroupEnd(), "GroupEnd");
    sync();
  }
  void broadcast(void* buf, size_t n, DType dtype, int root) override {
    check_nccl(ncclBroadcast(buf, buf, n * dtype_size(dtype), ncclUint8, root, comm_, stream_), "Broadcast");
    sync();
  }
  void barrier() override {
    sync();
    host_.barrier();
  }
  std::unique_ptr<Communicator> split(int color, int key) override {
    ncclComm_t sub;
    check_nccl(ncclCommSplit(comm_, color, key, &sub, nullptr), "CommSplit");
    return std::make_unique<NcclCommunicator>(sub, host_, device_);
  }
  [[noreturn]] void abort(const std::string& message) override {
    ncclCommAbort(comm_);
    host_.abort(message);
    std::abort();  // host_.abort does not return
  }

 private:
  void sync() { check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }
  Communicator& host_;
  int device_;
  ncclComm_t comm_{};
  cudaStream_t stream_{};
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(Communicator& host, int device) {
  return std::make_unique<NcclCommunicator>(host, device);
}

}  // namespace vidax::dist
