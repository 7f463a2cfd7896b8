// io::resize_bicubic_antialias_u8 against torch's own uint8 antialiased bicubic interpolate
// (tools/golden/wan_vace_resize.py: F.interpolate(x, size, mode='bicubic', antialias=True) on
// random uint8 planes; the script checks that torch's channels-last (AVX) and channels-first
// paths agree on every case), byte for byte: both passes, one pass alone, up- and downscaling,
// extreme ratios, 1 to 4 planes.
#include <gtest/gtest.h>

#include <string>

#include "io/checkpoint.h"
#include "io/image_resize.h"

using namespace vidax;

namespace {
const std::string kGolden = std::string(VIDAX_TEST_DATA_DIR) + "/golden/wan/vace_resize.safetensors";
}  // namespace

TEST(ResizeBicubicAntialiasU8, EqualsTorchByteForByte) {
  const io::Checkpoint g = io::Checkpoint::open(kGolden);
  int cases = 0;
  for (int j = 0; g.contains("interp." + std::to_string(j) + ".input"); ++j, ++cases) {
    const Tensor x = g.get("interp." + std::to_string(j) + ".input");
    const Tensor want = g.get("interp." + std::to_string(j) + ".output");
    const Tensor got = io::resize_bicubic_antialias_u8(x, want.size(1), want.size(2));
    ASSERT_EQ(got.shape(), want.shape()) << j;
    const uint8_t* a = got.data<uint8_t>();
    const uint8_t* b = want.data<uint8_t>();
    int64_t differ = 0;
    for (int64_t i = 0; i < want.numel(); ++i) differ += a[i] != b[i];
    EXPECT_EQ(differ, 0) << "case " << j << ": " << x.str() << " -> " << want.str();
  }
  EXPECT_EQ(cases, 7);
}

// The filter is the antialiased one (a 2x reduction of one-pixel stripes is averaged, not
// sampled); a pass whose size is unchanged copies; bad input is refused.
TEST(ResizeBicubicAntialiasU8, IsTheFixedPointAntialiasedFilter) {
  Tensor stripes = Tensor::empty({1, 4, 16}, DType::U8);
  uint8_t* s = stripes.data<uint8_t>();
  for (int64_t i = 0; i < 64; ++i) s[i] = (i % 16) % 2 ? 255 : 0;
  const Tensor half = io::resize_bicubic_antialias_u8(stripes, 4, 8);
  for (int64_t i = 0; i < 32; ++i) {
    const int v = half.data<uint8_t>()[i];
    EXPECT_GT(v, 64) << i;  // sampling would give 0 or 255; the widened filter averages
    EXPECT_LT(v, 192) << i;
  }
  const Tensor same = io::resize_bicubic_antialias_u8(stripes, 4, 16);
  for (int64_t i = 0; i < 64; ++i) EXPECT_EQ(same.data<uint8_t>()[i], s[i]);
  EXPECT_THROW((void)io::resize_bicubic_antialias_u8(stripes.to(DType::F32), 4, 8), std::exception);
  EXPECT_THROW((void)io::resize_bicubic_antialias_u8(stripes, 0, 8), std::exception);
}
