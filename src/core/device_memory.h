// Memory of a device other than the host, as core sees it. Core never
// dereferences a non-host pointer: Tensor::empty allocates through the
// device's DeviceMemory, and clone / to / contiguous / copy_into /
// to_f32_vector move bytes through it (staging through host memory where a
// conversion or a strided walk is needed). The backend side registers one per
// Device (the CUDA build registers Device::CUDA; tests register fakes); the
// host (Device::CPU) is built in and Meta has no memory at all.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "core/tensor.h"

namespace vidax {

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // A buffer of `bytes` uninitialised bytes on the device (Buffer::device() is that device).
  virtual std::shared_ptr<Buffer> allocate(size_t bytes) = 0;
  // Byte copies; offsets are in bytes from the buffer's start, ranges lie inside the buffers.
  virtual void copy_from_host(const void* src, const Buffer& dst, size_t dst_offset, size_t bytes) = 0;
  virtual void copy_to_host(const Buffer& src, size_t src_offset, void* dst, size_t bytes) = 0;
  virtual void copy_on_device(const Buffer& src, size_t src_offset, const Buffer& dst, size_t dst_offset,
                              size_t bytes) = 0;
  virtual void fill_zero(const Buffer& dst, size_t dst_offset, size_t bytes) = 0;
};

// Makes `memory` the memory of `device` (nullptr unregisters). CPU and Meta cannot be
// registered. Not thread-safe: register at start-up (or in a test's set-up).
void register_device_memory(Device device, DeviceMemory* memory);
// The registered memory of `device`; throws vidax::Error naming the device and the
// registered ones when there is none.
DeviceMemory& device_memory(Device device);
// "cpu (built in)" plus every registered device, for messages.
std::string registered_device_memories();

}  // namespace vidax
