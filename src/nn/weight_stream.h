// Weight streaming (DESIGN.md principle 7, `--offload`): a model's weights in groups (a DiT's
// blocks) that are not held between uses. Each group is brought into compute memory just
// before it runs, and the next group's is started on a worker thread while this one computes:
//
//   acquire(i)  waits for group i (prefetched by acquire(i - 1), else loaded now) and starts
//               the prefetch of group i + 1 (wrapping to 0: the next step starts over);
//   release(i)  drops the stream's reference and evicts the group's pages.
//
// What "bring in" means is the owner's `load`: on the CPU, page the group's tensors in from
// the mmap'd checkpoint and widen/cast them into the compute dtype (page_in below); a device
// backend's load would copy them from pinned host memory into a device pool instead, with the
// same acquire/release calls from the model. `evict` returns what the group held: the mapped
// pages (drop_pages below), or the device pool's slots.
#pragma once
#include <cstddef>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>

#include "core/tensor.h"

namespace vidax::nn {

struct WeightStreamStats {
  int64_t loads = 0;             // groups brought in (prefetched or not)
  int64_t prefetch_hits = 0;     // acquires that found their group's prefetch started
  double load_seconds = 0;       // time spent in `load` (on the worker, mostly)
  double wait_seconds = 0;       // time acquire() waited for a load: the streaming the compute saw
  double peak_group_bytes = 0;   // the largest group's tensors (what the compute pool holds, twice with prefetch)
};

class WeightStream {
 public:
  using Group = std::shared_ptr<const void>;
  // load(i): group i's weights ready to run, with `bytes` set to what they hold; called on the worker.
  using Load = std::function<Group(size_t group, double* bytes)>;
  using Evict = std::function<void(size_t group, const Group& g)>;

  WeightStream(size_t groups, Load load, Evict evict, std::string label);
  ~WeightStream();  // waits for a prefetch in flight
  WeightStream(const WeightStream&) = delete;
  WeightStream& operator=(const WeightStream&) = delete;

  size_t groups() const { return groups_; }
  Group acquire(size_t group);
  void release(size_t group, Group g);
  // Turns the prefetch off (acquire loads on the caller's thread): the A/B of the overlap.
  void set_prefetch(bool on) { prefetch_ = on; }
  WeightStreamStats stats() const;
  const std::string& label() const { return label_; }

 private:
  void start_prefetch(size_t group);
  Group run_load(size_t group);

  size_t groups_;
  Load load_;
  Evict evict_;
  std::string label_;
  bool prefetch_ = true;
  mutable std::mutex mu_;
  WeightStreamStats stats_;
  size_t pending_group_ = 0;
  std::future<Group> pending_;  // the prefetch in flight (valid() when one is)
};

// A typed view of a WeightStream whose groups are T (e.g. a DiT block's weights).
template <class T>
class BlockStreamer {
 public:
  using Load = std::function<std::shared_ptr<const T>(size_t block, double* bytes)>;
  using Evict = std::function<void(size_t block, const T& weights)>;
  BlockStreamer(size_t blocks, Load load, Evict evict, std::string label)
      : stream_(
            blocks, [load](size_t i, double* bytes) -> WeightStream::Group { return load(i, bytes); },
            [evict](size_t i, const WeightStream::Group& g) {
              if (evict) evict(i, *static_cast<const T*>(g.get()));
            },
            std::move(label)) {}
  std::shared_ptr<const T> acquire(size_t block) { return std::static_pointer_cast<const T>(stream_.acquire(block)); }
  void release(size_t block, std::shared_ptr<const T> w) { stream_.release(block, std::move(w)); }
  WeightStream& stream() { return stream_; }
  const WeightStream& stream() const { return stream_; }

 private:
  WeightStream stream_;
};

// Host pages of a tensor read from a mapped file: page_in touches each page (and asks the
// kernel to read ahead, MADV_WILLNEED) so that the compute does not fault on them; drop_pages
// gives them back (MADV_DONTNEED: the process's resident set shrinks, the page cache keeps
// them, so a next use is a cheap re-map). Only tensors whose buffer is a read-only file view
// (not owned) are dropped; an owned buffer is left to its owner. Both are no-ops off the CPU.
void page_in(const Tensor& t);
void drop_pages(const Tensor& t);
bool is_file_view(const Tensor& t);  // CPU, buffer not owned (an mmap view)

}  // namespace vidax::nn
