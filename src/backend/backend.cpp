#include "backend/backend.h"

#include "backend/cpu/cpu_backend.h"
#include "backend/recording.h"

namespace vidax {

Backend& backend_for(Device device) {
  switch (device) {
    case Device::CPU: return cpu::cpu_backend();
    case Device::Meta: return recording_backend();
    case Device::CUDA: break;
  }
  throw Error(msg() << "no backend for device " << device_name(device) << " in this build");
}

}  // namespace vidax
