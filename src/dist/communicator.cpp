#include "dist/communicator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "backend/recording.h"
#include "core/error.h"
#include "dist/mpi_communicator.h"

namespace vidax::dist {

namespace {
void check_host_contiguous(const Tensor& t, const char* what) {
  VIDAX_CHECK(t.device() == Device::CPU, what << ": tensor " << t.str() << " is on " << device_name(t.device())
                                              << "; this communicator takes host tensors");
  VIDAX_CHECK(t.is_contiguous(), what << ": tensor " << t.str() << " must be contiguous");
}
}  // namespace

// A collective on a Meta tensor is recorded (recording.h): the handle then shows the
// collective's result, a new value (SSA), as the in-place helpers' callers expect.
void Communicator::all_reduce_sum_inplace(Tensor& t) {
  if (t.device() == Device::Meta) {
    t = record_collective("all_reduce_sum", t, t.shape(), {{"group_size", int64_t{size()}}});
    return;
  }
  check_host_contiguous(t, "all_reduce_sum");
  all_reduce_sum(t.data_ptr(), static_cast<size_t>(t.numel()), t.dtype());
}

void Communicator::broadcast_inplace(Tensor& t, int root) {
  if (t.device() == Device::Meta) {
    t = record_collective("broadcast", t, t.shape(), {{"group_size", int64_t{size()}}, {"root", int64_t{root}}});
    return;
  }
  check_host_contiguous(t, "broadcast");
  broadcast(t.data_ptr(), static_cast<size_t>(t.numel()), t.dtype(), root);
}

Tensor Communicator::all_gather(const Tensor& t, int64_t dim) {
  if (t.device() == Device::Meta) {
    if (dim < 0) dim += t.dim();
    VIDAX_CHECK(dim >= 0 && dim < t.dim(), "all_gather: dim out of range for " << t.str());
    Shape out_shape = t.shape();
    out_shape[static_cast<size_t>(dim)] *= size();
    return record_collective("all_gather", t, out_shape, {{"group_size", int64_t{size()}}, {"dim", dim}});
  }
  const Tensor c = t.contiguous();
  check_host_contiguous(c, "all_gather");
  if (dim < 0) dim += c.dim();
  VIDAX_CHECK(dim >= 0 && dim < c.dim(), "all_gather: dim out of range for " << c.str());
  const int n = size();
  // Gather rank-major (a new leading axis), then move that axis next to `dim`.
  Shape stacked = c.shape();
  stacked.insert(stacked.begin(), n);
  Tensor buf = Tensor::empty(stacked, c.dtype());
  all_gather(c.data_ptr(), buf.data_ptr(), static_cast<size_t>(c.numel()), c.dtype());
  std::vector<int64_t> perm;
  for (int64_t i = 1; i <= dim; ++i) perm.push_back(i);
  perm.push_back(0);
  for (int64_t i = dim + 1; i <= c.dim(); ++i) perm.push_back(i);
  Shape out_shape = c.shape();
  out_shape[static_cast<size_t>(dim)] *= n;
  return buf.permute(perm).contiguous().view(out_shape);
}

Tensor Communicator::all_to_all(const Tensor& t, int64_t scatter_dim, int64_t gather_dim) {
  if (t.device() == Device::Meta) {
    const int n = size();
    if (scatter_dim < 0) scatter_dim += t.dim();
    if (gather_dim < 0) gather_dim += t.dim();
    VIDAX_CHECK(scatter_dim >= 0 && scatter_dim < t.dim() && gather_dim >= 0 && gather_dim < t.dim(),
                "all_to_all: dims out of range for " << t.str());
    VIDAX_CHECK(t.size(scatter_dim) % n == 0, "all_to_all: dim " << scatter_dim << " of " << t.str()
                                                                   << " is not divisible by the group size " << n);
    Shape out_shape = t.shape();
    out_shape[static_cast<size_t>(scatter_dim)] /= n;
    out_shape[static_cast<size_t>(gather_dim)] *= n;
    return record_collective("all_to_all", t, out_shape,
                             {{"group_size", int64_t{n}}, {"scatter_dim", scatter_dim}, {"gather_dim", gather_dim}});
  }
  const Tensor c = t.contiguous();
  check_host_contiguous(c, "all_to_all");
  const int n = size();
  if (scatter_dim < 0) scatter_dim += c.dim();
  if (gather_dim < 0) gather_dim += c.dim();
  VIDAX_CHECK(scatter_dim >= 0 && scatter_dim < c.dim() && gather_dim >= 0 && gather_dim < c.dim(),
              "all_to_all: dims out of range for " << c.str());
  VIDAX_CHECK(c.size(scatter_dim) % n == 0, "all_to_all: dim " << scatter_dim << " of " << c.str()
                                                                 << " is not divisible by the group size " << n);
  // Pack: chunk j (along scatter_dim) becomes block j of a contiguous send buffer.
  const int64_t chunk = c.size(scatter_dim) / n;
  Shape piece = c.shape();
  piece[static_cast<size_t>(scatter_dim)] = chunk;
  const size_t piece_numel = static_cast<size_t>(shape_numel(piece));
  Shape packed = piece;
  packed.insert(packed.begin(), n);
  Tensor send = Tensor::empty(packed, c.dtype());
  for (int j = 0; j < n; ++j) {
    Tensor dst = send.select(0, j);
    copy_into(c.slice(scatter_dim, j * chunk, (j + 1) * chunk), dst);
  }
  Tensor recv = Tensor::empty(packed, c.dtype());
  all_to_all(send.data_ptr(), recv.data_ptr(), piece_numel, c.dtype());
  // Unpack: block i (from rank i) goes to position i along gather_dim.
  Shape out_shape = piece;
  out_shape[static_cast<size_t>(gather_dim)] *= n;
  Tensor out = Tensor::empty(out_shape, c.dtype());
  const int64_t g = piece[static_cast<size_t>(gather_dim)];
  for (int i = 0; i < n; ++i) {
    Tensor dst = out.slice(gather_dim, i * g, (i + 1) * g);
    copy_into(recv.select(0, i), dst);
  }
  return out;
}

void LocalCommunicator::all_gather(const void* in, void* out, size_t n, DType dtype) {
  if (in != out) std::memmove(out, in, n * dtype_size(dtype));
}

void LocalCommunicator::all_to_all(const void* in, void* out, size_t n, DType dtype) {
  if (in != out) std::memmove(out, in, n * dtype_size(dtype));
}

void LocalCommunicator::abort(const std::string& message) {
  std::fprintf(stderr, "vidax: error: %s\n", message.c_str());
  std::exit(1);
}

PeerFailed::PeerFailed(int r, const std::string& message)
    : Error(msg() << "rank " << r << " failed while this rank waited in a collective: " << message), rank(r) {}

std::vector<std::string> Communicator::settle(const std::string& error, size_t max_bytes) {
  const size_t slot = max_bytes + 1;  // one message, NUL-ended ("" = no error)
  std::vector<char> mine(slot, '\0'), all(slot * static_cast<size_t>(size()), '\0');
  std::memcpy(mine.data(), error.data(), std::min(error.size(), max_bytes));
  all_gather(mine.data(), all.data(), slot, DType::U8);
  std::vector<std::string> out;
  for (int r = 0; r < size(); ++r) out.emplace_back(all.data() + static_cast<size_t>(r) * slot);
  return out;
}

namespace {
// VIDAX_TEST_FAULT: the rank and step it names (-1: none), and whether the fault is armed or spent.
struct TestFault {
  int rank = -1, step = -1;
  bool armed = false, spent = false;
  std::mutex mu;
};
TestFault& test_fault() {
  static TestFault* f = [] {
    auto* t = new TestFault;
    const char* v = std::getenv("VIDAX_TEST_FAULT");
    if (!v || !*v) return t;
    int rank = -1, step = -1;
    char tail = 0;
    if (std::sscanf(v, "%d:%d%c", &rank, &step, &tail) != 2 || rank < 0 || step < 1) {
      std::fprintf(stderr, "vidax: warning: VIDAX_TEST_FAULT='%s' is not RANK:STEP (e.g. 1:2); ignored\n", v);
      return t;
    }
    t->rank = rank;
    t->step = step;
    return t;
  }();
  return *f;
}
}  // namespace

void mark_denoising_step(int step) {
  TestFault& f = test_fault();
  if (f.rank < 0) return;
  std::lock_guard<std::mutex> lock(f.mu);
  if (!f.spent && step == f.step) f.armed = true;
}

void fire_test_fault(int world_rank) {
  TestFault& f = test_fault();
  if (f.rank < 0) return;
  std::lock_guard<std::mutex> lock(f.mu);
  if (!f.armed || world_rank != f.rank) return;
  f.armed = false;
  f.spent = true;
  throw Error(msg() << "VIDAX_TEST_FAULT: rank " << world_rank << " failed on purpose inside the model's "
                    << "collectives at denoising step " << f.step);
}

bool launched_by_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK");
}

Communicator& world() {
  static std::unique_ptr<Communicator> w = []() -> std::unique_ptr<Communicator> {
#ifdef VIDAX_HAVE_MPI
    if (launched_by_mpi()) return make_mpi_world();
#endif
    return std::make_unique<LocalCommunicator>();
  }();
  return *w;
}

}  // namespace vidax::dist
