// Runs on a GPU machine; skips (with the reason) where there is none.
#include <gtest/gtest.h>

#include "backend/cuda/cuda_device.h"
#include "core/dtype.h"

using namespace vidax;

TEST(Cuda, CastMatchesHostRounding) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  std::vector<float> v;
  for (int i = 0; i < 1000; ++i) v.push_back(static_cast<float>(i) * 1.0009765625f - 300.123f);
  Tensor h = Tensor::from_f32(v, {1000});
  Tensor back = cuda::to_host(cuda::cast(cuda::to_device(h), DType::BF16));
  Tensor expect = h.to(DType::BF16);
  EXPECT_EQ(std::memcmp(back.data_ptr(), expect.data_ptr(), expect.nbytes()), 0);
}
