#include "nn/weight_stream.h"

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>

#include "core/error.h"

namespace vidax::nn {

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// [first page fully inside, end of the last page fully inside) of a tensor's bytes.
bool inner_pages(const Tensor& t, uintptr_t* begin, uintptr_t* end) {
  if (!t.defined() || t.device() != Device::CPU || t.numel() == 0) return false;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t a = reinterpret_cast<uintptr_t>(t.buffer()->data()) + t.byte_offset();
  const uintptr_t b = a + static_cast<uintptr_t>(t.numel()) * dtype_size(t.dtype());
  *begin = (a + page - 1) / page * page;
  *end = b / page * page;
  return *end > *begin;
}

}  // namespace

WeightStream::WeightStream(size_t groups, Load load, Evict evict, std::string label)
    : groups_(groups), load_(std::move(load)), evict_(std::move(evict)), label_(std::move(label)) {
  VIDAX_CHECK(groups_ > 0 && load_, "WeightStream " << label_ << ": no groups or no load function");
}

WeightStream::~WeightStream() {
  if (pending_.valid()) {
    try {
      (void)pending_.get();
    } catch (...) {
    }
  }
}

WeightStream::Group WeightStream::run_load(size_t group) {
  const double t0 = now_seconds();
  double bytes = 0;
  Group g = load_(group, &bytes);
  VIDAX_CHECK(g, "WeightStream " << label_ << ": loading group " << group << " gave nothing");
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.loads;
  stats_.load_seconds += now_seconds() - t0;
  stats_.peak_group_bytes = std::max(stats_.peak_group_bytes, bytes);
  return g;
}

void WeightStream::start_prefetch(size_t group) {
  if (!prefetch_ || pending_.valid()) return;
  pending_group_ = group;
  pending_ = std::async(std::launch::async, [this, group] { return run_load(group); });
}

WeightStream::Group WeightStream::acquire(size_t group) {
  VIDAX_CHECK(group < groups_, "WeightStream " << label_ << ": group " << group << " of " << groups_);
  Group g;
  const double t0 = now_seconds();
  if (pending_.valid() && pending_group_ == group) {
    g = pending_.get();  // rethrows a failed load here, on the compute thread
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.prefetch_hits;
  } else {
    if (pending_.valid()) (void)pending_.get();  // a prefetch of another group (out-of-order use): dropped
    g = run_load(group);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.wait_seconds += now_seconds() - t0;
  }
  start_prefetch((group + 1) % groups_);
  return g;
}

void WeightStream::release(size_t group, Group g) {
  if (evict_ && g) evict_(group, g);
}

WeightStreamStats WeightStream::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

bool is_file_view(const Tensor& t) {
  return t.defined() && t.device() == Device::CPU && t.buffer() && !t.buffer()->owned();
}

void page_in(const Tensor& t) {
  uintptr_t a = 0, b = 0;
  if (!inner_pages(t, &a, &b)) return;
  ::madvise(reinterpret_cast<void*>(a), b - a, MADV_WILLNEED);
  // Touch one byte a page: the reads fault the pages in here, on the worker, not in the GEMM.
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  volatile unsigned char sink = 0;
  for (uintptr_t p = a; p < b; p += page) sink ^= *reinterpret_cast<const volatile unsigned char*>(p);
  (void)sink;
}

void drop_pages(const Tensor& t) {
  uintptr_t a = 0, b = 0;
  if (!is_file_view(t) || !inner_pages(t, &a, &b)) return;
  ::madvise(reinterpret_cast<void*>(a), b - a, MADV_DONTNEED);
}

}  // namespace vidax::nn
