// A fake device for tests: host memory behind pointers that no host code can
// dereference. Buffer::data() is the real address with bit 62 flipped (a
// non-canonical x86-64 address: any load or store through it faults), so a test
// that runs on it proves that core and the op set reach device memory only
// through the registered DeviceMemory. It is registered as Device::CUDA, which
// test binaries without the CUDA library leave free.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/device_memory.h"

namespace vidax::test {

class FakeDeviceMemory final : public DeviceMemory {
 public:
  static constexpr uintptr_t kPoison = uintptr_t{1} << 62;
  static char* real(const Buffer& b) { return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(b.data()) ^ kPoison); }

  std::shared_ptr<Buffer> allocate(size_t bytes) override {
    std::shared_ptr<void> mem(std::malloc(bytes ? bytes : 1), std::free);
    void* poisoned = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(mem.get()) ^ kPoison);
    ++allocations;
    return Buffer::view(poisoned, bytes, mem, Device::CUDA);
  }
  void copy_from_host(const void* src, const Buffer& dst, size_t dst_offset, size_t bytes) override {
    check(dst, dst_offset, bytes);
    std::memcpy(real(dst) + dst_offset, src, bytes);
    ++uploads;
  }
  void copy_to_host(const Buffer& src, size_t src_offset, void* dst, size_t bytes) override {
    check(src, src_offset, bytes);
    std::memcpy(dst, real(src) + src_offset, bytes);
    ++downloads;
  }
  void copy_on_device(const Buffer& src, size_t src_offset, const Buffer& dst, size_t dst_offset,
                      size_t bytes) override {
    check(src, src_offset, bytes);
    check(dst, dst_offset, bytes);
    std::memmove(real(dst) + dst_offset, real(src) + src_offset, bytes);
    ++device_copies;
  }
  void fill_zero(const Buffer& dst, size_t dst_offset, size_t bytes) override {
    check(dst, dst_offset, bytes);
    std::memset(real(dst) + dst_offset, 0, bytes);
    ++fills;
  }

  int allocations = 0, uploads = 0, downloads = 0, device_copies = 0, fills = 0;

 private:
  static void check(const Buffer& b, size_t offset, size_t bytes) {
    VIDAX_CHECK(b.device() == Device::CUDA && offset + bytes <= b.bytes(),
                "fake device: bytes [" << offset << ", " << offset + bytes << ") outside a " << b.bytes()
                                       << "-byte buffer on " << device_name(b.device()));
  }
};

// Registers a FakeDeviceMemory as Device::CUDA's for the scope.
struct ScopedFakeDevice {
  FakeDeviceMemory memory;
  ScopedFakeDevice() { register_device_memory(Device::CUDA, &memory); }
  ~ScopedFakeDevice() { register_device_memory(Device::CUDA, nullptr); }
  ScopedFakeDevice(const ScopedFakeDevice&) = delete;
  ScopedFakeDevice& operator=(const ScopedFakeDevice&) = delete;
};

// A host tensor's contiguous copy on the fake device.
inline Tensor to_fake_device(const Tensor& host) {
  Tensor d = Tensor::empty(host.shape(), host.dtype(), Device::CUDA);
  copy_into(host, d);
  return d;
}

}  // namespace vidax::test
