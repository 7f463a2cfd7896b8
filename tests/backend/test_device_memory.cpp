// Tensors on a device whose memory the host cannot read (fake_device.h): every
// Tensor method that moves values goes through the registered DeviceMemory;
// Meta tensors have no values; the registries name what is registered.
#include <gtest/gtest.h>

#include "backend/backend.h"
#include "backend/fake_device.h"
#include "helpers.h"
#include "pipeline/error_of.h"

using namespace vidax;
using namespace vidax::test;

TEST(DeviceMemory, EmptyAllocatesThroughTheRegisteredMemory) {
  ScopedFakeDevice fake;
  const Tensor d = Tensor::empty({2, 3}, DType::BF16, Device::CUDA);
  EXPECT_EQ(d.device(), Device::CUDA);
  EXPECT_EQ(fake.memory.allocations, 1);
  EXPECT_GE(d.buffer()->bytes(), 12u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(d.data_ptr()) & FakeDeviceMemory::kPoison, FakeDeviceMemory::kPoison);
  const Tensor z = Tensor::zeros({5}, DType::F32, Device::CUDA);
  EXPECT_EQ(fake.memory.fills, 1);
  EXPECT_EQ(z.to_f32_vector(), std::vector<float>(5, 0.0f));
}

TEST(DeviceMemory, ValuesRoundTripThroughEveryTensorMethod) {
  ScopedFakeDevice fake;
  const Tensor h = randn({3, 4, 5}, 7);
  const Tensor d = to_fake_device(h);
  EXPECT_EQ(fake.memory.uploads, 1);
  EXPECT_EQ(d.to_f32_vector(), h.to_f32_vector());
  EXPECT_EQ(d.to_f64_vector(), h.to_f64_vector());
  EXPECT_EQ(d.to_host().device(), Device::CPU);

  const Tensor c = d.clone();  // contiguous, same dtype: one device-to-device copy
  EXPECT_EQ(c.device(), Device::CUDA);
  EXPECT_EQ(fake.memory.device_copies, 1);
  EXPECT_EQ(c.to_f32_vector(), h.to_f32_vector());

  const Tensor b = d.to(DType::BF16);  // converted on the host, uploaded
  EXPECT_EQ(b.device(), Device::CUDA);
  EXPECT_EQ(b.dtype(), DType::BF16);
  EXPECT_EQ(b.to_f32_vector(), h.to(DType::BF16).to_f32_vector());

  // Strided views: read through the device memory, walked on the host.
  EXPECT_EQ(d.permute({2, 0, 1}).contiguous().to_f32_vector(), h.permute({2, 0, 1}).contiguous().to_f32_vector());
  EXPECT_EQ(d.permute({2, 0, 1}).contiguous().device(), Device::CUDA);
  EXPECT_EQ(d.slice(1, 1, 4, 2).to_f32_vector(), h.slice(1, 1, 4, 2).to_f32_vector());
  EXPECT_EQ(d.select(2, 3).reshape({12}).to_f32_vector(), h.select(2, 3).reshape({12}).to_f32_vector());
  EXPECT_EQ(d.str(), "F32[3, 4, 5]");
}

TEST(DeviceMemory, CopyIntoAStridedDeviceViewWritesOnlyItsElements) {
  ScopedFakeDevice fake;
  Tensor dst = Tensor::zeros({4, 6}, DType::F32, Device::CUDA);
  Tensor every_other = dst.slice(1, 0, 6, 2);  // [4, 3], stride 2
  copy_into(Tensor::from_f32({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {4, 3}, DType::BF16), every_other);
  const std::vector<float> want = {1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8, 0, 9, 0, 10, 0, 11, 0, 12, 0};
  EXPECT_EQ(dst.to_f32_vector(), want);
  // Device to host, strided on both sides.
  Tensor host = Tensor::zeros({3, 4}, DType::F32);
  Tensor host_t = host.transpose(0, 1);
  copy_into(every_other, host_t);
  EXPECT_EQ(host.transpose(0, 1).contiguous().to_f32_vector(), every_other.to_f32_vector());
}

TEST(DeviceMemory, MetaTensorsHaveNoValues) {
  const Tensor m = Tensor::empty({2, 2}, DType::F32, Device::Meta);
  EXPECT_NE(error_of([&] { m.to_f32_vector(); }).find("Meta tensor"), std::string::npos);
  EXPECT_THROW(m.to_host(), Error);
  Tensor h = Tensor::zeros({2, 2}, DType::F32);
  EXPECT_THROW(copy_into(m, h), Error);
  Tensor m2 = m;
  EXPECT_THROW(copy_into(h, m2), Error);
  EXPECT_THROW(Tensor::zeros({2}, DType::F32, Device::Meta), Error);
  // A Meta clone is a new value; a copy of the handle is the same value.
  EXPECT_NE(m.clone().meta_value(), m.meta_value());
  EXPECT_EQ(Tensor(m).meta_value(), m.meta_value());
  EXPECT_NE(m.meta_value(), 0u);
}

TEST(DeviceMemory, WithoutRegisteredMemoryEmptyNamesTheDeviceAndTheRegisteredOnes) {
  const std::string e = error_of([] { Tensor::empty({2}, DType::F32, Device::CUDA); });
  EXPECT_NE(e.find("no device memory registered for cuda"), std::string::npos) << e;
  EXPECT_NE(e.find("registered: cpu (built in)"), std::string::npos) << e;
  EXPECT_THROW(register_device_memory(Device::CPU, nullptr), Error);
}

namespace {
// Counts the ops it sees and runs them on the CPU backend (through host copies).
class CountingBackend final : public Backend {
 public:
  const char* name() const override { return "counting"; }
#define VIDAX_NOT_USED(...) \
  { throw Error("not used by this test"); }
  void copy(const Tensor&, Tensor&) override VIDAX_NOT_USED()
  void cast(const Tensor&, Tensor&) override VIDAX_NOT_USED()
  void concat(const std::vector<Tensor>&, int64_t, Tensor&) override VIDAX_NOT_USED()
  void pad(const Tensor&, const std::vector<int64_t>&, ops::PadMode, Tensor&) override VIDAX_NOT_USED()
  void embedding(const Tensor&, const Tensor&, Tensor&) override VIDAX_NOT_USED()
  void add(const Tensor& a, const Tensor& b, Tensor& o) override {
    ++adds;
    Tensor h = Tensor::empty(o.shape(), o.dtype());
    backend_for(Device::CPU).add(a.to_host(), b.to_host(), h);
    copy_into(h, o);
  }
  void sub(const Tensor&, const Tensor&, Tensor&) override VIDAX_NOT_USED()
  void mul(const Tensor&, const Tensor&, Tensor&) override VIDAX_NOT_USED()
  void div(const Tensor&, const Tensor&, Tensor&) override VIDAX_NOT_USED()
  void scale(const Tensor&, double, Tensor&) override VIDAX_NOT_USED()
  void add_scalar(const Tensor&, double, Tensor&) override VIDAX_NOT_USED()
  void clamp(const Tensor&, double, double, Tensor&) override VIDAX_NOT_USED()
  void gelu(const Tensor&, ops::GeluMode, Tensor&) override VIDAX_NOT_USED()
  void silu(const Tensor&, Tensor&) override VIDAX_NOT_USED()
  void sigmoid(const Tensor&, Tensor&) override VIDAX_NOT_USED()
  void tanh(const Tensor&, Tensor&) override VIDAX_NOT_USED()
  void sin(const Tensor&, Tensor&) override VIDAX_NOT_USED()
  void exp(const Tensor&, Tensor&) override VIDAX_NOT_USED()
  void sqrt(const Tensor&, Tensor&) override VIDAX_NOT_USED()
  void log(const Tensor&, Tensor&) override VIDAX_NOT_USED()
  void relu(const Tensor&, Tensor&) override VIDAX_NOT_USED()
  void layer_norm(const Tensor&, const std::optional<Tensor>&, const std::optional<Tensor>&, double,
                  Tensor&) override VIDAX_NOT_USED()
  void rms_norm_with_sum_sq(const Tensor&, const Tensor&, int64_t, const std::optional<Tensor>&, double,
                            Tensor&) override VIDAX_NOT_USED()
  void l2_normalize(const Tensor&, int64_t, double, Tensor&) override VIDAX_NOT_USED()
  void group_norm(const Tensor&, int64_t, const std::optional<Tensor>&, const std::optional<Tensor>&, double,
                  Tensor&) override VIDAX_NOT_USED()
  void softmax(const Tensor&, int64_t, Tensor&) override VIDAX_NOT_USED()
  void sum(const Tensor&, int64_t, Tensor&) override VIDAX_NOT_USED()
  void mean(const Tensor&, int64_t, Tensor&) override VIDAX_NOT_USED()
  bool all_finite(const Tensor&) override VIDAX_NOT_USED()
  void linear(const Tensor&, const Tensor&, const std::optional<Tensor>&, Tensor&) override VIDAX_NOT_USED()
  void matmul(const Tensor&, const Tensor&, Tensor&) override VIDAX_NOT_USED()
  void attention(const Tensor&, const Tensor&, const Tensor&, const ops::AttentionOptions&, Tensor&) override
      VIDAX_NOT_USED()
  void rope(const Tensor&, const Tensor&, const Tensor&, ops::RopeMode, Tensor&) override VIDAX_NOT_USED()
  void conv3d(const Tensor&, const Tensor&, const std::optional<Tensor>&, std::array<int64_t, 3>,
              std::array<int64_t, 3>, Tensor&) override VIDAX_NOT_USED()
  void conv2d(const Tensor&, const Tensor&, const std::optional<Tensor>&, std::array<int64_t, 2>,
              std::array<int64_t, 2>, Tensor&) override VIDAX_NOT_USED()
  void upsample_nearest(const Tensor&, const std::vector<int64_t>&, Tensor&) override VIDAX_NOT_USED()
#undef VIDAX_NOT_USED
  int adds = 0;
};
}  // namespace

TEST(BackendRegistry, ABackendPlugsInForItsDevice) {
  const std::string e = error_of([] { backend_for(Device::CUDA); });
  EXPECT_NE(e.find("no backend registered for device cuda"), std::string::npos) << e;
  EXPECT_NE(e.find("registered: cpu, meta"), std::string::npos) << e;
  EXPECT_STREQ(backend_for(Device::CPU).name(), "cpu");
  EXPECT_STREQ(backend_for(Device::Meta).name(), "meta");
  EXPECT_THROW(register_backend(Device::CPU, nullptr), Error);

  ScopedFakeDevice fake;
  CountingBackend counting;
  register_backend(Device::CUDA, &counting);
  EXPECT_EQ(registered_backends(), "cpu, cuda, meta");
  const Tensor a = randn({4, 3}, 1), b = randn({3}, 2);
  const Tensor y = ops::add(to_fake_device(a), to_fake_device(b));  // output allocated on the device
  register_backend(Device::CUDA, nullptr);
  EXPECT_EQ(counting.adds, 1);
  EXPECT_EQ(y.device(), Device::CUDA);
  EXPECT_EQ(y.to_f32_vector(), ops::add(a, b).to_f32_vector());
  EXPECT_THROW(backend_for(Device::CUDA), Error);
}
