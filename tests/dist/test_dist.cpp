// Collectives and mesh: run single-process by plain ctest, and under
// `mpirun -np 2` / `-np 4` by the MpiRanks* entries of extra.cmake.
#include <gtest/gtest.h>

#include <numeric>

#include "dist/communicator.h"
#include "dist/mesh.h"

using namespace vidax;
using namespace vidax::dist;

namespace {
// A tensor whose values say which rank made it and where: v = rank*1000 + index.
Tensor rank_tensor(int rank, const Shape& shape) {
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(rank * 1000 + static_cast<int>(i));
  return Tensor::from_f32(v, shape);
}
}  // namespace

TEST(Mesh, ParsesSpecs) {
  MeshShape m = parse_mesh("sp=2,tp=2");
  EXPECT_EQ(m.cfg, 1);
  EXPECT_EQ(m.sp, 2);
  EXPECT_EQ(m.tp, 2);
  EXPECT_EQ(m.world(), 4);
  EXPECT_EQ(parse_mesh("").world(), 1);
  EXPECT_THROW(parse_mesh("dp=2"), Error);
  EXPECT_THROW(parse_mesh("sp=x"), Error);
  EXPECT_THROW(parse_mesh("sp=0"), Error);
  EXPECT_THROW(parse_mesh("cfg=3"), Error);
}

TEST(Mesh, LocalWorldRejectsLargerMesh) {
  LocalCommunicator local;
  EXPECT_THROW(Mesh(local, parse_mesh("sp=2")), Error);
  Mesh m(local, parse_mesh(""));
  EXPECT_EQ(m.tp().size(), 1);
}

TEST(Local, CollectivesAreIdentity) {
  LocalCommunicator c;
  Tensor t = rank_tensor(0, {2, 3});
  EXPECT_EQ(c.all_gather(t, 1).to_f32_vector(), t.to_f32_vector());
  EXPECT_EQ(c.all_to_all(t, 0, 1).to_f32_vector(), t.to_f32_vector());
}

// ---- under mpirun -------------------------------------------------------------
TEST(MpiRanks, AllReduceGatherToAll) {
  Communicator& w = world();
  const int n = w.size(), r = w.rank();
  if (n == 1) GTEST_SKIP() << "run under mpirun";
  Tensor t = rank_tensor(r, {2, 3});
  w.all_reduce_sum_inplace(t);
  std::vector<float> got = t.to_f32_vector();
  for (size_t i = 0; i < got.size(); ++i) {
    float expect = 0;
    for (int k = 0; k < n; ++k) expect += static_cast<float>(k * 1000 + static_cast<int>(i));
    EXPECT_EQ(got[i], expect);
  }
  // all_gather along dim 1: [2, 3] -> [2, 3n], rank k's block at columns 3k..3k+2.
  Tensor g = w.all_gather(rank_tensor(r, {2, 3}), 1);
  ASSERT_EQ(g.shape(), (Shape{2, 3 * n}));
  std::vector<float> gv = g.to_f32_vector();
  for (int row = 0; row < 2; ++row)
    for (int k = 0; k < n; ++k)
      for (int c = 0; c < 3; ++c)
        EXPECT_EQ(gv[static_cast<size_t>(row * 3 * n + k * 3 + c)], static_cast<float>(k * 1000 + row * 3 + c));
  // Ulysses exchange: [L/n... ] here t [n*2, 5] scattered on dim 0, gathered on dim 1.
  Tensor a = rank_tensor(r, {2 * n, 5});
  Tensor b = w.all_to_all(a, 0, 1);
  ASSERT_EQ(b.shape(), (Shape{2, 5 * n}));
  std::vector<float> bv = b.to_f32_vector();
  for (int row = 0; row < 2; ++row)
    for (int k = 0; k < n; ++k)
      for (int c = 0; c < 5; ++c)  // rank k's rows 2r..2r+1
        EXPECT_EQ(bv[static_cast<size_t>(row * 5 * n + k * 5 + c)],
                  static_cast<float>(k * 1000 + (2 * r + row) * 5 + c));
  // all_to_all then its inverse gives back the input.
  EXPECT_EQ(w.all_to_all(b, 1, 0).to_f32_vector(), a.to_f32_vector());
  Tensor bc = rank_tensor(r, {4});
  w.broadcast_inplace(bc, n - 1);
  EXPECT_EQ(bc.to_f32_vector(), rank_tensor(n - 1, {4}).to_f32_vector());
}

TEST(MpiRanks, MeshGroupsFollowTpInnermost) {
  Communicator& w = world();
  if (w.size() != 4) GTEST_SKIP() << "needs 4 ranks";
  for (const char* spec : {"sp=2,tp=2", "cfg=2,sp=2", "cfg=2,tp=2", "tp=4", "sp=4"}) {
    Mesh m(w, parse_mesh(spec));
    const MeshShape& s = m.shape();
    EXPECT_EQ(m.tp_rank(), w.rank() % s.tp) << spec;
    EXPECT_EQ(m.sp_rank(), (w.rank() / s.tp) % s.sp) << spec;
    EXPECT_EQ(m.cfg_rank(), w.rank() / (s.tp * s.sp)) << spec;
    EXPECT_EQ(m.tp().size(), s.tp);
    EXPECT_EQ(m.sp().size(), s.sp);
    EXPECT_EQ(m.cfg().size(), s.cfg);
    EXPECT_EQ(m.tp().rank(), m.tp_rank());
    // Summing world ranks over the tp group gives the ranks of that group.
    Tensor t = Tensor::from_f32({static_cast<float>(w.rank())}, {1});
    m.tp().all_reduce_sum_inplace(t);
    const int base = w.rank() - m.tp_rank();
    float expect = 0;
    for (int k = 0; k < s.tp; ++k) expect += static_cast<float>(base + k);
    EXPECT_EQ(t.to_f32_vector()[0], expect) << spec;
  }
}
