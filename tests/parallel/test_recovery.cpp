// Failure recovery of the MPI communicator (docs/architecture.md, "A rank that fails mid-job"):
// under mpirun (tests/parallel/extra.cmake, MpiRecovery.* at -np 2 and 4). With recovery on, the
// collectives give what the blocking ones give; the last rank reports a failure while the others
// wait in collectives it never enters: they abandon them (PeerFailed), settle() gathers the
// message, and the same communicator objects (the world, a split made before and one made after
// the switch) work again on renewed handles, with the same ranks and groups.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "dist/communicator.h"

using namespace vidax;

namespace {

// Each collective on `c` against what it must give; `tag` names the round in failures.
void expect_collectives_work(dist::Communicator& c, const std::string& tag) {
  SCOPED_TRACE(tag);
  const int n = c.size(), r = c.rank();
  std::vector<float> sum = {static_cast<float>(r + 1), 2.f};
  c.all_reduce_sum(sum.data(), 2, DType::F32);
  EXPECT_EQ(sum[0], static_cast<float>(n * (n + 1) / 2));
  EXPECT_EQ(sum[1], 2.f * static_cast<float>(n));
  std::vector<int32_t> mine = {r, 10 * r}, all(2 * static_cast<size_t>(n), -1);
  c.all_gather(mine.data(), all.data(), 2, DType::I32);
  for (int k = 0; k < n; ++k) {
    EXPECT_EQ(all[2 * static_cast<size_t>(k)], k);
    EXPECT_EQ(all[2 * static_cast<size_t>(k) + 1], 10 * k);
  }
  std::vector<int32_t> out(static_cast<size_t>(n), -1), in(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) in[static_cast<size_t>(k)] = 100 * r + k;  // block k goes to rank k
  c.all_to_all(in.data(), out.data(), 1, DType::I32);
  for (int k = 0; k < n; ++k) EXPECT_EQ(out[static_cast<size_t>(k)], 100 * k + r);
  uint64_t b = r == 0 ? 77 : 0;
  c.broadcast(&b, 1, DType::U64, 0);
  EXPECT_EQ(b, 77u);
  uint64_t p = r == n - 1 ? 99 : 0;
  c.broadcast_patient(&p, 1, DType::U64, n - 1);
  EXPECT_EQ(p, 99u);
  c.barrier();
}

}  // namespace

TEST(MpiRecovery, WaitingRanksAbandonTheirCollectivesAndEveryCommunicatorWorksAgain) {
  dist::Communicator& w = dist::world();
  if (w.size() == 1) GTEST_SKIP() << "run under mpirun";
  const int n = w.size(), me = w.rank(), failing = n - 1;
  auto pairs = w.split(me / 2, me % 2);  // made before the switch, as the mesh's groups are
  w.enable_failure_recovery();
  auto halves = w.split(me % 2, me);     // and one after
  const int pair_rank = pairs->rank(), half_rank = halves->rank(), half_size = halves->size();
  expect_collectives_work(w, "world, recovery on");
  expect_collectives_work(*pairs, "pairs, recovery on");
  expect_collectives_work(*halves, "halves, recovery on");
  const std::vector<std::string> quiet = w.settle("", 200);
  EXPECT_EQ(quiet, std::vector<std::string>(static_cast<size_t>(n))) << "no rank failed";

  for (int round = 0; round < 2; ++round) {  // twice: the renewed communicators recover again
    SCOPED_TRACE("round " + std::to_string(round));
    // A phase's end, as in MeshChannel::run_agreed: every rank has left the collectives above (a
    // rank still finishing one when a later failure's notice comes abandons it too).
    EXPECT_EQ(w.settle("", 200), std::vector<std::string>(static_cast<size_t>(n)));
    std::string error;
    if (me == failing) {
      error = "rank " + std::to_string(me) + " failed on purpose (round " + std::to_string(round) + ")";
      w.report_failure(error);
      EXPECT_FALSE(w.abandoned());
    } else {
      // The pair's sum completes where the pair has no failing rank; the world's never does.
      try {
        std::vector<float> v(1000, 1.f);
        pairs->all_reduce_sum(v.data(), v.size(), DType::F32);
        EXPECT_NE(me / 2, failing / 2) << "the failing rank's pair completed without it";
        w.all_reduce_sum(v.data(), v.size(), DType::F32);
        ADD_FAILURE() << "the world's sum completed without rank " << failing;
      } catch (const dist::PeerFailed& e) {
        EXPECT_EQ(e.rank, failing);
        EXPECT_NE(std::string(e.what()).find("failed on purpose (round " + std::to_string(round) + ")"),
                  std::string::npos)
            << e.what();
      }
      EXPECT_TRUE(w.abandoned());
    }
    const std::vector<std::string> all = w.settle(error, 200);
    ASSERT_EQ(all.size(), static_cast<size_t>(n));
    for (int k = 0; k < n; ++k)
      EXPECT_EQ(all[static_cast<size_t>(k)], k == failing ? "rank " + std::to_string(k) + " failed on purpose (round " +
                                                               std::to_string(round) + ")"
                                                         : "");
    EXPECT_FALSE(w.abandoned());
    // The same objects, on fresh handles: the same ranks and groups, every collective again.
    EXPECT_EQ(w.rank(), me);
    EXPECT_EQ(pairs->rank(), pair_rank);
    EXPECT_EQ(halves->rank(), half_rank);
    EXPECT_EQ(halves->size(), half_size);
    expect_collectives_work(w, "world, renewed");
    expect_collectives_work(*pairs, "pairs, renewed");
    expect_collectives_work(*halves, "halves, renewed");
  }
  // Every rank failing alike (no one waits), each reporting as MeshChannel::run_agreed does: each
  // message comes back, and no notice of it is left to trip a later collective.
  EXPECT_EQ(w.settle("", 200), std::vector<std::string>(static_cast<size_t>(n)));
  w.report_failure("same on every rank");
  const std::vector<std::string> alike = w.settle("same on every rank", 200);
  EXPECT_EQ(alike, std::vector<std::string>(static_cast<size_t>(n), "same on every rank"));
  expect_collectives_work(w, "world, after a failure on every rank");
}
