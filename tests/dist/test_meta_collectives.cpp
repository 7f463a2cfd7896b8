// Collectives on Meta tensors are recorded as ops of the step (recording.h), with the
// shapes the real collectives produce, so a lowering replays them.
#include <gtest/gtest.h>

#include "backend/ops.h"
#include "backend/recording.h"
#include "dist/communicator.h"

using namespace vidax;

namespace {
// A group of `n` ranks whose raw collectives must never run (Meta tensors have no bytes).
class NoBytesGroup final : public dist::Communicator {
 public:
  using Communicator::all_gather;
  using Communicator::all_to_all;
  explicit NoBytesGroup(int n) : n_(n) {}
  int rank() const override { return 0; }
  int size() const override { return n_; }
  std::string backend_name() const override { return "no-bytes"; }
  void all_reduce_sum(void*, size_t, DType) override { fail(); }
  void all_gather(const void*, void*, size_t, DType) override { fail(); }
  void all_to_all(const void*, void*, size_t, DType) override { fail(); }
  void broadcast(void*, size_t, DType, int) override { fail(); }
  void barrier() override {}
  std::unique_ptr<Communicator> split(int, int) override { return std::make_unique<NoBytesGroup>(1); }
  [[noreturn]] void abort(const std::string& m) override { throw Error(m); }

 private:
  [[noreturn]] static void fail() { throw Error("NoBytesGroup: a raw collective ran"); }
  int n_;
};
}  // namespace

TEST(MetaCollectives, AreRecordedAsOpsWithTheirShapes) {
  NoBytesGroup group(4);
  const Tensor x = Tensor::empty({2, 8, 6}, DType::BF16, Device::Meta);
  Trace trace;
  Tensor s, g, a, b;
  {
    RecordingScope rec(trace);
    s = ops::silu(x);
    group.all_reduce_sum_inplace(s);  // the handle now shows the reduced value
    g = group.all_gather(s, -1);
    a = group.all_to_all(g, 1, 2);
    b = g;
    group.broadcast_inplace(b, 3);
  }
  EXPECT_EQ(g.shape(), (Shape{2, 8, 24}));
  EXPECT_EQ(a.shape(), (Shape{2, 2, 96}));
  EXPECT_EQ(b.shape(), g.shape());
  const auto coll = trace.of_kind(OpKind::Collective);
  ASSERT_EQ(coll.size(), 4u) << trace.str();
  EXPECT_EQ(coll[0]->str(), "%2 = all_reduce_sum(x=%1, group_size=4) : BF16[2, 8, 6]");
  EXPECT_EQ(coll[1]->str(), "%3 = all_gather(x=%2, group_size=4, dim=2) : BF16[2, 8, 24]");
  EXPECT_EQ(coll[2]->str(), "%4 = all_to_all(x=%3, group_size=4, scatter_dim=1, gather_dim=2) : BF16[2, 2, 96]");
  EXPECT_EQ(coll[3]->str(), "%5 = broadcast(x=%3, group_size=4, root=3) : BF16[2, 8, 24]");
  EXPECT_EQ(trace.meta_ids.at(s.meta_value()), 2);
  EXPECT_THROW(group.all_to_all(Tensor::empty({2, 6}, DType::F32, Device::Meta), 1, 0), Error);  // 6 % 4
}
