#include "backend/backend.h"

#include "backend/cpu/cpu_backend.h"
#include "backend/recording.h"

namespace vidax {

namespace {
Backend* g_cpu_interceptor = nullptr;
}  // namespace

void set_cpu_backend_interceptor(Backend* b) { g_cpu_interceptor = b; }

Backend& backend_for(Device device) {
  switch (device) {
    case Device::CPU: return g_cpu_interceptor ? *g_cpu_interceptor : cpu::cpu_backend();
    case Device::Meta: return recording_backend();
    case Device::CUDA: break;
  }
  throw Error(msg() << "no backend for device " << device_name(device) << " in this build");
}

}  // namespace vidax
