// Fixed reduction order: the same inputs give bit-identical outputs run to run
// (and, for kernels whose rows are each reduced by one thread, whatever the
// thread count).
#include <gtest/gtest.h>
#include <omp.h>

#include "backend/ops.h"
#include "helpers.h"

using namespace vidax;
using namespace vidax::test;

TEST(Determinism, RunToRunAndAcrossThreadCounts) {
  Tensor q = randn({1, 300, 2, 64}, 1), k = randn({1, 300, 2, 64}, 2), v = randn({1, 300, 2, 64}, 3);
  Tensor x = randn({4, 50, 96}, 4), sh = randn({4, 1, 96}, 5), sc = randn({4, 1, 96}, 6);
  Tensor g = randn({2, 12, 3, 10, 10}, 7);
  ops::AttentionOptions o;
  o.kv_lens = {257};
  auto run = [&] {
    return std::vector<Tensor>{ops::attention(q, k, v, o), ops::layer_norm_modulate(x, sh, sc, 1e-6),
                               ops::rms_norm(x, sc.view({4, 96}).select(0, 1), 1e-6),
                               ops::group_norm(g, 4, std::nullopt, std::nullopt, 1e-5), ops::softmax(x, 1),
                               ops::sum(g, 2), ops::gelu(x, ops::GeluMode::Tanh)};
  };
  const std::vector<Tensor> ref = run();
  for (int rep = 0; rep < 2; ++rep) {
    const std::vector<Tensor> again = run();
    for (size_t i = 0; i < ref.size(); ++i) EXPECT_TRUE(same_bits(again[i], ref[i])) << "op " << i << " rep " << rep;
  }
  ThreadCount one(1);
  const std::vector<Tensor> single = run();
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_TRUE(same_bits(single[i], ref[i])) << "op " << i << " on 1 thread";
}

TEST(Determinism, GemmAndConvRunToRun) {
  Tensor x = randn({2, 8, 5, 17, 19}, 8), w = randn({16, 8, 3, 3, 3}, 9);
  Tensor y = ops::conv3d(x, w, std::nullopt, {1, 1, 1}, {1, 1, 1});
  Tensor a = randn({3, 70, 90}, 10), b = randn({90, 33}, 11);
  Tensor m = ops::matmul(a, b);
  for (int rep = 0; rep < 2; ++rep) {
    EXPECT_TRUE(same_bits(ops::conv3d(x, w, std::nullopt, {1, 1, 1}, {1, 1, 1}), y));
    EXPECT_TRUE(same_bits(ops::matmul(a, b), m));
  }
}
