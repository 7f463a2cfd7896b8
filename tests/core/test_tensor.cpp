#include <gtest/gtest.h>

#include "core/tensor.h"

using namespace vidax;

TEST(Tensor, ViewsShareAndCopiesDoNot) {
  Tensor t = Tensor::from_f32({0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor tt = t.transpose(0, 1);
  EXPECT_FALSE(tt.is_contiguous());
  EXPECT_EQ(tt.shape(), (Shape{3, 2}));
  EXPECT_EQ(tt.contiguous().to_f32_vector(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  Tensor s = t.slice(1, 1, 3);
  EXPECT_EQ(s.to_f32_vector(), (std::vector<float>{1, 2, 4, 5}));
  Tensor c = t.clone();
  c.data<float>()[0] = 42;
  EXPECT_EQ(t.data<float>()[0], 0);
  EXPECT_EQ(t.select(0, 1).to_f32_vector(), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(t.view({-1}).shape(), (Shape{6}));
  EXPECT_THROW(tt.view({6}), Error);
}

TEST(Tensor, ConvertsLikeTorch) {
  Tensor t = Tensor::from_f32({1.0f, 1.00390625f, -2.5f}, {3});
  Tensor b = t.to(DType::BF16);
  EXPECT_EQ(b.to_f32_vector(), (std::vector<float>{1.0f, 1.0f, -2.5f}));
}

TEST(Tensor, FromBufferChecksBounds) {
  auto buf = Buffer::allocate_host(16);
  EXPECT_NO_THROW(Tensor::from_buffer(buf, 0, {4}, DType::F32));
  EXPECT_THROW(Tensor::from_buffer(buf, 4, {4}, DType::F32), Error);
}

TEST(Tensor, MetaTensorsHaveNoData) {
  Tensor m = Tensor::empty({2, 3}, DType::BF16, Device::Meta);
  EXPECT_EQ(m.device(), Device::Meta);
  EXPECT_THROW(m.data_ptr(), Error);
}
