// Host memory for tensors: 64-byte aligned blocks, with a cache of large freed
// blocks for reuse.
//
// Why: a DiT step frees and re-allocates the same large activations in every
// block (at 7800 tokens the FFN's hidden state alone is 140 MB, twice per
// block). glibc serves requests above 32 MB with a fresh mmap each time, and
// the first write to each 4 KiB page then faults and zeroes it: measured here
// at 70 ms per 140 MB, several CPU seconds per step. Reusing a freed block
// costs no fault at all. Blocks of 4 MiB and more are also 2 MiB aligned and
// advised for transparent huge pages (first touch 70 -> 24 ms per 140 MB).
//
// The cache holds at most limit() bytes (VIDAX_HOST_CACHE_MB, default 1024;
// 0 turns it off); a freed block that does not fit evicts the oldest ones.
// A request reuses the smallest cached block at least as large and at most
// 25% larger. Contents of a reused block are unspecified, as with malloc.
#pragma once
#include <cstddef>
#include <cstdint>

namespace vidax::host_memory {

// Blocks below this size go straight to aligned_alloc / free.
constexpr size_t kCachedMin = size_t{1} << 20;

// 64-byte aligned, never null (throws when out of memory). *block_bytes receives the
// size of the block handed out (>= bytes; a cached block may be up to 25% larger),
// which release() takes back.
void* allocate(size_t bytes, size_t* block_bytes);
void release(void* p, size_t block_bytes);

// Frees every cached block (memory returns to the system).
void trim();

size_t limit();
void set_limit(size_t bytes);  // trims down to the new limit

// Lowers the limit for a scope (e.g. a decode that must stay under a memory
// budget), trimming on entry, and restores it on exit.
class ScopedLimit {
 public:
  explicit ScopedLimit(size_t bytes);
  ~ScopedLimit();
  ScopedLimit(const ScopedLimit&) = delete;
  ScopedLimit& operator=(const ScopedLimit&) = delete;

 private:
  size_t saved_;
};

struct Stats {
  size_t cached_bytes = 0;  // held by the cache now
  size_t cached_blocks = 0;
  uint64_t hits = 0;        // requests served from the cache
  uint64_t misses = 0;      // cacheable requests that allocated
};
Stats stats();

}  // namespace vidax::host_memory
