#include "core/host_memory.h"

#include <sys/mman.h>

#include <cstdlib>
#include <list>
#include <map>
#include <mutex>
#include <string>

#include "core/error.h"

namespace vidax::host_memory {

namespace {

constexpr size_t kHugeMin = size_t{4} << 20;  // huge-page advice from this size
constexpr size_t kHugePage = size_t{2} << 20;

// The size actually allocated for a request: a function of the request only, so
// release() recomputes it.
size_t block_size(size_t bytes) {
  const size_t b = bytes == 0 ? 1 : bytes;
  if (b >= kHugeMin) return (b + kHugePage - 1) / kHugePage * kHugePage;
  if (b >= kCachedMin) return (b + 4095) / 4096 * 4096;
  return (b + 63) / 64 * 64;
}

void* system_allocate(size_t size) {
  const size_t align = size >= kHugeMin ? kHugePage : 64;
  void* p = std::aligned_alloc(align, size);
  if (p != nullptr && size >= kHugeMin) ::madvise(p, size, MADV_HUGEPAGE);  // advice only: errors ignored
  return p;
}

size_t limit_from_env() {
  const char* v = std::getenv("VIDAX_HOST_CACHE_MB");
  if (v == nullptr || *v == '\0') return size_t{1024} << 20;
  char* end = nullptr;
  const unsigned long long mb = std::strtoull(v, &end, 10);
  VIDAX_CHECK(end != v && *end == '\0', "VIDAX_HOST_CACHE_MB must be a whole number of MiB, got '" << v << "'");
  return static_cast<size_t>(mb) << 20;
}

struct Cache {
  std::mutex mu;
  size_t limit = limit_from_env();
  size_t bytes = 0;
  uint64_t hits = 0, misses = 0;
  // Free blocks by size, each with its position in the age list (oldest first).
  std::list<std::pair<size_t, void*>> by_age;
  std::multimap<size_t, std::list<std::pair<size_t, void*>>::iterator> by_size;

  // Removes the entry `it` points to; returns its block.
  void* take(std::multimap<size_t, std::list<std::pair<size_t, void*>>::iterator>::iterator it) {
    void* p = it->second->second;
    bytes -= it->first;
    by_age.erase(it->second);
    by_size.erase(it);
    return p;
  }
  // Frees the oldest blocks until at most `keep` bytes stay cached. Call with mu held.
  void shrink_to(size_t keep) {
    while (bytes > keep && !by_age.empty()) {
      const auto [size, p] = by_age.front();
      auto range = by_size.equal_range(size);
      for (auto it = range.first; it != range.second; ++it)
        if (it->second == by_age.begin()) {
          std::free(take(it));
          break;
        }
    }
  }
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: buffers may be freed during static destruction
  return *c;
}

}  // namespace

void* allocate(size_t bytes, size_t* block_bytes) {
  const size_t size = block_size(bytes);
  if (size >= kCachedMin) {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.by_size.lower_bound(size);
    if (it != c.by_size.end() && it->first <= size + size / 4) {
      ++c.hits;
      *block_bytes = it->first;
      return c.take(it);
    }
    ++c.misses;
  }
  void* p = system_allocate(size);
  if (p == nullptr) throw OutOfMemory(msg() << "out of host memory allocating " << bytes << " bytes");
  *block_bytes = size;
  return p;
}

void release(void* p, size_t size) {
  if (p == nullptr) return;
  if (size >= kCachedMin) {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mu);
    if (size <= c.limit) {
      c.shrink_to(c.limit - size);
      c.by_age.emplace_back(size, p);
      c.by_size.emplace(size, std::prev(c.by_age.end()));
      c.bytes += size;
      return;
    }
  }
  std::free(p);
}

void trim() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.shrink_to(0);
}

size_t limit() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.limit;
}

void set_limit(size_t bytes) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.limit = bytes;
  c.shrink_to(bytes);
}

ScopedLimit::ScopedLimit(size_t bytes) : saved_(limit()) { set_limit(bytes); }
ScopedLimit::~ScopedLimit() { set_limit(saved_); }

Stats stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return Stats{c.bytes, c.by_age.size(), c.hits, c.misses};
}

}  // namespace vidax::host_memory
