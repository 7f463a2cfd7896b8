// Fake PJRT plugins for the bad-input tests (tests/pjrt/extra.cmake builds one per mode):
//   FAKE_MODE 1: API version 99.0 (incompatible major)
//   FAKE_MODE 2: a plugin that finds no device (PJRT_Client_Create fails, as the CUDA plugin on a
//                machine without a GPU: "No visible GPU devices")
//   FAKE_MODE 3: a client with zero addressable devices
//   FAKE_MODE 0: no GetPjrtApi at all (not a plugin)
#include <cstring>
#include <string>

#include "xla/pjrt/c/pjrt_c_api.h"

#if FAKE_MODE != 0
struct PJRT_Error {
  std::string message;
};
struct PJRT_Client {
  int unused;
};

namespace {
[[maybe_unused]] PJRT_Client g_client;

void error_destroy(PJRT_Error_Destroy_Args* a) { delete a->error; }
void error_message(PJRT_Error_Message_Args* a) {
  a->message = a->error->message.data();
  a->message_size = a->error->message.size();
}
PJRT_Error* plugin_initialize(PJRT_Plugin_Initialize_Args*) { return nullptr; }
PJRT_Error* plugin_attributes(PJRT_Plugin_Attributes_Args* a) {
  static const int64_t v[3] = {1, 2, 3};
  static PJRT_NamedValue attr;
  attr.struct_size = PJRT_NamedValue_STRUCT_SIZE;
  attr.name = "stablehlo_current_version";
  attr.name_size = std::strlen(attr.name);
  attr.type = PJRT_NamedValue_kInt64List;
  attr.int64_array_value = v;
  attr.value_size = 3;
  a->attributes = &attr;
  a->num_attributes = 1;
  return nullptr;
}
PJRT_Error* client_create(PJRT_Client_Create_Args* a) {
#if FAKE_MODE == 2
  (void)a;
  return new PJRT_Error{"No visible fake devices"};
#else
  a->client = &g_client;
  return nullptr;
#endif
}
PJRT_Error* client_destroy(PJRT_Client_Destroy_Args*) { return nullptr; }
PJRT_Error* platform_name(PJRT_Client_PlatformName_Args* a) {
  a->platform_name = "fake";
  a->platform_name_size = 4;
  return nullptr;
}
PJRT_Error* platform_version(PJRT_Client_PlatformVersion_Args* a) {
  a->platform_version = "fake 0";
  a->platform_version_size = 6;
  return nullptr;
}
PJRT_Error* addressable_devices(PJRT_Client_AddressableDevices_Args* a) {
  a->addressable_devices = nullptr;
  a->num_addressable_devices = 0;
  return nullptr;
}
PJRT_Error* not_here(void*) { return new PJRT_Error{"not implemented by the fake plugin"}; }

PJRT_Api make_api() {
  PJRT_Api api;
  std::memset(&api, 0, sizeof api);
  api.struct_size = PJRT_Api_STRUCT_SIZE;
  api.pjrt_api_version.struct_size = PJRT_Api_Version_STRUCT_SIZE;
  api.pjrt_api_version.major_version = FAKE_MODE == 1 ? 99 : PJRT_API_MAJOR;
  api.pjrt_api_version.minor_version = FAKE_MODE == 1 ? 0 : PJRT_API_MINOR;
  api.PJRT_Error_Destroy = error_destroy;
  api.PJRT_Error_Message = error_message;
  api.PJRT_Plugin_Initialize = plugin_initialize;
  api.PJRT_Plugin_Attributes = plugin_attributes;
  api.PJRT_Client_Create = client_create;
  api.PJRT_Client_Destroy = client_destroy;
  api.PJRT_Client_PlatformName = platform_name;
  api.PJRT_Client_PlatformVersion = platform_version;
  api.PJRT_Client_AddressableDevices = addressable_devices;
  // The rest of what vidax requires: present, each an error.
  api.PJRT_Client_Compile = reinterpret_cast<decltype(api.PJRT_Client_Compile)>(not_here);
  api.PJRT_Client_BufferFromHostBuffer = reinterpret_cast<decltype(api.PJRT_Client_BufferFromHostBuffer)>(not_here);
  api.PJRT_LoadedExecutable_Execute = reinterpret_cast<decltype(api.PJRT_LoadedExecutable_Execute)>(not_here);
  api.PJRT_LoadedExecutable_Destroy = reinterpret_cast<decltype(api.PJRT_LoadedExecutable_Destroy)>(not_here);
  api.PJRT_LoadedExecutable_GetExecutable = reinterpret_cast<decltype(api.PJRT_LoadedExecutable_GetExecutable)>(not_here);
  api.PJRT_Executable_Destroy = reinterpret_cast<decltype(api.PJRT_Executable_Destroy)>(not_here);
  api.PJRT_Executable_NumOutputs = reinterpret_cast<decltype(api.PJRT_Executable_NumOutputs)>(not_here);
  api.PJRT_Buffer_Destroy = reinterpret_cast<decltype(api.PJRT_Buffer_Destroy)>(not_here);
  api.PJRT_Buffer_ToHostBuffer = reinterpret_cast<decltype(api.PJRT_Buffer_ToHostBuffer)>(not_here);
  api.PJRT_Buffer_Dimensions = reinterpret_cast<decltype(api.PJRT_Buffer_Dimensions)>(not_here);
  api.PJRT_Buffer_ElementType = reinterpret_cast<decltype(api.PJRT_Buffer_ElementType)>(not_here);
  api.PJRT_Event_Await = reinterpret_cast<decltype(api.PJRT_Event_Await)>(not_here);
  api.PJRT_Event_Destroy = reinterpret_cast<decltype(api.PJRT_Event_Destroy)>(not_here);
  return api;
}
const PJRT_Api g_api = make_api();
}  // namespace

extern "C" __attribute__((visibility("default"))) const PJRT_Api* GetPjrtApi() { return &g_api; }
#else
extern "C" __attribute__((visibility("default"))) int not_a_pjrt_plugin() { return 42; }
#endif
