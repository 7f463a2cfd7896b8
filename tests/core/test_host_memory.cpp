#include <gtest/gtest.h>

#include <cstdint>

#include "core/host_memory.h"
#include "core/tensor.h"

namespace vidax {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// A block and its size, as Buffer keeps them.
struct Block {
  void* p = nullptr;
  size_t size = 0;
};
Block take(size_t bytes) {
  Block b;
  b.p = host_memory::allocate(bytes, &b.size);
  return b;
}
void give(const Block& b) { host_memory::release(b.p, b.size); }

// Each test starts from an empty cache with a known limit and restores the limit after.
class HostMemory : public ::testing::Test {
 protected:
  void SetUp() override { host_memory::trim(); }
  host_memory::ScopedLimit limit_{64 * kMiB};
};

TEST_F(HostMemory, FreedLargeBlockIsReusedWithoutAllocating) {
  const Block a = take(8 * kMiB);
  EXPECT_EQ(a.size, 8 * kMiB);
  give(a);
  EXPECT_EQ(host_memory::stats().cached_blocks, 1u);
  const uint64_t hits = host_memory::stats().hits;
  const Block b = take(8 * kMiB);
  EXPECT_EQ(b.p, a.p);
  EXPECT_EQ(host_memory::stats().hits, hits + 1);
  EXPECT_EQ(host_memory::stats().cached_bytes, 0u);
  give(b);
}

TEST_F(HostMemory, ReuseOnlyWithinAQuarterAboveTheRequest) {
  const Block a = take(8 * kMiB);
  give(a);
  // 5 MiB is served by 6 MiB blocks: an 8 MiB block is 33% larger, so it is not taken.
  const uint64_t misses = host_memory::stats().misses;
  const Block b = take(5 * kMiB);
  EXPECT_NE(b.p, a.p);
  EXPECT_EQ(b.size, 6 * kMiB);
  EXPECT_EQ(host_memory::stats().misses, misses + 1);
  // 6.5 MiB rounds to 8 MiB: the cached block itself, handed out with its full size.
  const Block c = take(6 * kMiB + kMiB / 2);
  EXPECT_EQ(c.p, a.p);
  EXPECT_EQ(c.size, 8 * kMiB);
  give(b);
  give(c);
  // Released with its full size, the block serves a full 8 MiB request again.
  const Block d = take(8 * kMiB);
  EXPECT_EQ(d.p, a.p);
  give(d);
}

TEST_F(HostMemory, SmallBlocksAreNotCached) {
  give(take(host_memory::kCachedMin / 2));
  EXPECT_EQ(host_memory::stats().cached_blocks, 0u);
}

TEST_F(HostMemory, Alignment) {
  for (size_t bytes : {size_t{1}, size_t{100}, kMiB + 3, 4 * kMiB, 9 * kMiB + 7}) {
    const Block b = take(bytes);
    EXPECT_GE(b.size, bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.p) % 64, 0u) << bytes;
    if (bytes >= 4 * kMiB) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(b.p) % (2 * kMiB), 0u) << bytes;
    }
    give(b);
  }
}

TEST_F(HostMemory, LimitEvictsTheOldestBlocks) {
  host_memory::set_limit(10 * kMiB);
  Block p[3];
  for (Block& q : p) q = take(4 * kMiB);
  for (const Block& q : p) give(q);
  // 3 x 4 MiB do not fit in 10 MiB: the first freed is gone, the other two stay.
  EXPECT_EQ(host_memory::stats().cached_blocks, 2u);
  EXPECT_EQ(host_memory::stats().cached_bytes, 8 * kMiB);
  const Block a = take(4 * kMiB), b = take(4 * kMiB);
  EXPECT_TRUE((a.p == p[1].p && b.p == p[2].p) || (a.p == p[2].p && b.p == p[1].p));
  give(a);
  give(b);
  // A block larger than the whole limit is never cached.
  give(take(12 * kMiB));
  EXPECT_LE(host_memory::stats().cached_bytes, 10 * kMiB);
}

TEST_F(HostMemory, ScopedLimitTrimsAndRestores) {
  give(take(8 * kMiB));
  {
    host_memory::ScopedLimit off(0);
    EXPECT_EQ(host_memory::stats().cached_bytes, 0u);
    give(take(8 * kMiB));
    EXPECT_EQ(host_memory::stats().cached_bytes, 0u);  // limit 0: freed at once
  }
  EXPECT_EQ(host_memory::limit(), 64 * kMiB);
}

TEST_F(HostMemory, TensorsReuseFreedActivations) {
  void* first = nullptr;
  {
    Tensor t = Tensor::empty({1024, 2048}, DType::F32);  // 8 MiB
    first = t.data_ptr();
  }
  Tensor u = Tensor::empty({2048, 1024}, DType::F32);
  EXPECT_EQ(u.data_ptr(), first);
}

}  // namespace
}  // namespace vidax
