#include "backend/backend.h"

#include <array>

#include "backend/cpu/cpu_backend.h"
#include "backend/recording.h"

namespace vidax {

namespace {

constexpr size_t kDevices = 3;  // Device::CPU, CUDA, Meta

// Seeded with the backends built into this library; the others register.
std::array<Backend*, kDevices>& table() {
  static std::array<Backend*, kDevices> t = [] {
    std::array<Backend*, kDevices> b{};
    b[static_cast<size_t>(Device::CPU)] = &cpu::cpu_backend();
    b[static_cast<size_t>(Device::Meta)] = &recording_backend();
    return b;
  }();
  return t;
}

Backend* g_cpu_interceptor = nullptr;

}  // namespace

void register_backend(Device device, Backend* backend) {
  VIDAX_CHECK(backend || (device != Device::CPU && device != Device::Meta),
              "register_backend: the " << device_name(device) << " backend is built in and cannot be removed");
  table()[static_cast<size_t>(device)] = backend;
}

std::string registered_backends() {
  std::string s;
  for (size_t i = 0; i < kDevices; ++i)
    if (table()[i]) s += (s.empty() ? "" : ", ") + std::string(device_name(static_cast<Device>(i)));
  return s;
}

void set_cpu_backend_interceptor(Backend* b) { g_cpu_interceptor = b; }

Backend& backend_for(Device device) {
  if (device == Device::CPU && g_cpu_interceptor) return *g_cpu_interceptor;
  Backend* b = table()[static_cast<size_t>(device)];
  VIDAX_CHECK(b != nullptr, "no backend registered for device " << device_name(device) << " (registered: "
                                                                 << registered_backends() << ")");
  return *b;
}

}  // namespace vidax
