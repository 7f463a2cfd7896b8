// The two fused ops the VAE's memory budget rests on, against the plain ops they replace:
// causal_conv3d (conv over cached frames + chunk without concatenating) and l2_norm_scale_silu
// (RMS_norm + SiLU in one pass, in place when the caller hands over the only reference).
#include <gtest/gtest.h>

#include <random>

#include "backend/ops.h"
#include "backend/recording.h"

namespace {

using vidax::Shape;
using vidax::Tensor;
namespace ops = vidax::ops;

Tensor random_tensor(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(vidax::shape_numel(shape)));
  for (float& x : v) x = u(rng);
  return Tensor::from_f32(v, shape);
}

void expect_bitwise_equal(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  const auto x = a.to_f32_vector(), y = b.to_f32_vector();
  size_t diff = 0;
  for (size_t i = 0; i < x.size(); ++i) diff += x[i] != y[i];
  EXPECT_EQ(diff, 0u) << "of " << x.size();
}

// Segments of 2 + 1 + 3 frames with 0..2 zero frames in front, strides 1 and 2, odd spatial sizes:
// the same values as conv3d over the padded concatenation.
TEST(CausalConv3d, EqualsConvOfPaddedConcatenation) {
  const std::vector<Tensor> xs{random_tensor({2, 5, 2, 7, 9}, 1), random_tensor({2, 5, 1, 7, 9}, 2),
                               random_tensor({2, 5, 3, 7, 9}, 3)};
  const Tensor w = random_tensor({4, 5, 3, 3, 3}, 4), b = random_tensor({4}, 5);
  const Tensor cat = ops::concat(xs, 2);
  for (int64_t front : {0, 1, 2})
    for (int64_t st : {1, 2}) {
      const Tensor padded = front ? ops::pad(cat, {0, 0, 0, 0, front, 0}) : cat;
      const Tensor want = ops::conv3d(padded, w, b, {st, 1, st}, {0, 1, 1});
      const Tensor got = ops::causal_conv3d(xs, w, b, {st, 1, st}, {front, 1, 1});
      SCOPED_TRACE("front " + std::to_string(front) + " stride " + std::to_string(st));
      expect_bitwise_equal(got, want);
    }
}

// The fused residual: the bits of add(conv, residual) (bias first, then the residual).
TEST(CausalConv3d, ResidualIsAddedAfterTheBias) {
  const std::vector<Tensor> xs{random_tensor({1, 6, 1, 5, 8}, 11), random_tensor({1, 6, 1, 5, 8}, 12)};
  const Tensor w = random_tensor({6, 6, 3, 3, 3}, 13), b = random_tensor({6}, 14), r = random_tensor({1, 6, 1, 5, 8}, 15);
  const Tensor want = ops::add(ops::causal_conv3d(xs, w, b, {1, 1, 1}, {1, 1, 1}), r);
  expect_bitwise_equal(ops::causal_conv3d(xs, w, b, {1, 1, 1}, {1, 1, 1}, r), want);
  EXPECT_THROW(ops::causal_conv3d(xs, w, b, {1, 1, 1}, {1, 1, 1}, random_tensor({1, 6, 2, 5, 8}, 16)), vidax::Error);
}

TEST(CausalConv3d, RejectsMismatchedSegmentsAndShortInput) {
  const Tensor w = random_tensor({4, 5, 3, 3, 3}, 4);
  EXPECT_THROW(ops::causal_conv3d({random_tensor({1, 5, 1, 4, 4}, 1), random_tensor({1, 5, 1, 4, 5}, 2)}, w, {},
                                  {1, 1, 1}, {2, 1, 1}),
               vidax::Error);
  // 1 frame + 1 zero frame for a 3-frame kernel.
  EXPECT_THROW(ops::causal_conv3d({random_tensor({1, 5, 1, 4, 4}, 1)}, w, {}, {1, 1, 1}, {1, 1, 1}), vidax::Error);
}

TEST(CausalConv3d, RecordsOnMeta) {
  vidax::Trace trace;
  {
    vidax::RecordingScope rec(trace);
    const Tensor a = Tensor::empty({1, 8, 2, 6, 6}, vidax::DType::F32, vidax::Device::Meta);
    const Tensor b = Tensor::empty({1, 8, 4, 6, 6}, vidax::DType::F32, vidax::Device::Meta);
    const Tensor y = ops::causal_conv3d({a, b}, random_tensor({3, 8, 3, 3, 3}, 1), {}, {1, 1, 1}, {0, 1, 1});
    EXPECT_EQ(y.shape(), (Shape{1, 3, 4, 6, 6}));
  }
  const auto ops = trace.of_kind(vidax::OpKind::Op);
  ASSERT_EQ(ops.size(), 1u) << trace.str();
  EXPECT_EQ(ops[0]->name, "causal_conv3d");
  EXPECT_EQ(ops[0]->inputs.size(), 3u);  // two segments and the weight
}

// Same bits as the four-op chain the VAE used before; in place only for a sole owner.
TEST(L2NormScaleSilu, EqualsTheFourOpsAndWritesInPlaceOnlyForASoleOwner) {
  const Tensor x = random_tensor({2, 24, 1, 5, 67}, 9);  // 335 positions: a partial block and lane tail
  const Tensor gamma = random_tensor({24, 1, 1, 1}, 10);
  const double scale = std::sqrt(24.0);
  const Tensor want = ops::silu(ops::mul(ops::scale(ops::l2_normalize(x, 1, 1e-12), scale), gamma));

  const Tensor shared = ops::l2_norm_scale_silu(x, gamma, scale);  // x keeps its handle
  expect_bitwise_equal(shared, want);
  EXPECT_NE(shared.data_ptr(), x.data_ptr());
  expect_bitwise_equal(x, random_tensor({2, 24, 1, 5, 67}, 9));  // untouched

  Tensor owned = ops::copy(x);
  const void* buf = owned.data_ptr();
  const Tensor in_place = ops::l2_norm_scale_silu(std::move(owned), gamma, scale);
  EXPECT_EQ(in_place.data_ptr(), buf);
  expect_bitwise_equal(in_place, want);

  // A view keeps the buffer shared: no in-place write through it.
  const Tensor base = ops::copy(x);
  const Tensor view = base.slice(0, 0, 1);
  const Tensor from_view = ops::l2_norm_scale_silu(view, gamma, scale);
  EXPECT_NE(from_view.data_ptr(), base.data_ptr());
  expect_bitwise_equal(base, x);
}

}  // namespace
