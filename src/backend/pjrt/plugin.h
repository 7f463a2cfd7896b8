// A PJRT plugin loaded at run time (docs/pjrt.md): the C API every XLA device plugin exports
// (`GetPjrtApi`), driven without XLA's C++ headers or protobuf. One header from the pinned
// xla-cpu-pjrt wheel (scripts/fetch-pjrt-plugin.sh) builds against plugins of API 0.81 to 0.115:
// the structs are versioned by size, and a function the plugin's table lacks is an error naming it.
//
//   auto plugin = pjrt::Plugin::load("/path/xla_cpu_pjrt.so");   // dlopen, GetPjrtApi, initialize
//   pjrt::Client client(plugin);                                  // devices
//   pjrt::Executable exe = client.compile(mlir_text, pjrt::CompileOptions{});
//   std::vector<pjrt::Buffer> out = exe.execute({&client.upload(host_tensor)});
//   Tensor y = out[0].to_host();
//
// Every failure is a vidax::Error naming the plugin file and its versions (PluginInfo::str()),
// never an abort from a call we control: compile options are never empty (an empty string aborts
// every CPU plugin), argument counts, shapes and dtypes are checked before Execute.
// Built without the header (VIDAX_PJRT off), Plugin::load throws a clear error instead.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

struct PJRT_Api;
struct PJRT_Client;
struct PJRT_Device;
struct PJRT_Buffer;
struct PJRT_LoadedExecutable;
struct PJRT_Error;

namespace vidax::pjrt {

// True when this build has the PJRT C API header (VIDAX_PJRT).
bool available();
// The header's API version ("0.81"), or "" without it.
std::string header_api_version();

struct PluginInfo {
  std::string path;
  int api_major = -1, api_minor = -1;  // the plugin's PJRT_Api version
  std::string stablehlo_version;        // "1.13.3" (plugin attribute stablehlo_current_version), "" if absent
  std::string stablehlo_minimum;        // oldest StableHLO version it accepts, "" if absent
  std::string xla_version;              // attribute xla_version, "" if absent
  std::string platform;                 // after a client is created: "cpu", "cuda", "tpu"
  std::string platform_version;
  // "plugin /p/xla_cpu_pjrt.so (PJRT API 0.81, StableHLO 1.13.3, platform cpu)"
  std::string str() const;
};

class Plugin {
 public:
  // dlopen(path), GetPjrtApi, version check, PJRT_Plugin_Initialize, attributes. A plugin is
  // loaded once per path per process and never unloaded (XLA plugins are not unload-safe).
  static std::shared_ptr<Plugin> load(const std::string& path);
  // The path of --pjrt-plugin when given, else $VIDAX_PJRT_PLUGIN; an error naming both when neither.
  static std::string resolve_path(const std::string& flag);

  const PluginInfo& info() const { return info_; }
  const PJRT_Api* api() const { return api_; }
  // Throws (with info().str()) when `err` is set; destroys it.
  void check(PJRT_Error* err, const std::string& what) const;
  // Throws naming the function when the plugin's table lacks the field at byte `offset`.
  void require(size_t offset, size_t size, const char* function) const;

 private:
  Plugin() = default;
  friend class Client;
  PluginInfo info_;
  const PJRT_Api* api_ = nullptr;
};

// Serialized xla.CompileOptionsProto, encoded here (no protobuf): never empty.
struct CompileOptions {
  int64_t num_replicas = 1;
  int64_t num_partitions = 1;
  bool spmd = false;  // use_spmd_partitioning (num_partitions > 1)
  std::string serialize() const;
};

class Client;

// A device buffer (owned; destroyed with the handle).
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Client* client, PJRT_Buffer* b, Shape shape, DType dtype);
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  PJRT_Buffer* raw() const { return b_; }
  bool defined() const { return b_ != nullptr; }
  Tensor to_host() const;  // a CPU tensor of shape() and dtype()

 private:
  const Client* client_ = nullptr;
  PJRT_Buffer* b_ = nullptr;
  Shape shape_;
  DType dtype_ = DType::F32;
};

class Executable {
 public:
  Executable() = default;
  Executable(const Client* client, PJRT_LoadedExecutable* e);
  Executable(Executable&& o) noexcept { *this = std::move(o); }
  Executable& operator=(Executable&& o) noexcept;
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;
  ~Executable();

  bool defined() const { return e_ != nullptr; }
  size_t num_outputs() const;
  // Runs on device 0 (or each device of the executable's assignment with args per device):
  // args in parameter order. Outputs in result order, shapes and dtypes as the plugin reports.
  std::vector<Buffer> execute(const std::vector<const Buffer*>& args) const;
  // Runs once per addressable device (an SPMD executable): args[d] the arguments of device d.
  std::vector<std::vector<Buffer>> execute_sharded(const std::vector<std::vector<const Buffer*>>& args) const;
  std::string serialize() const;  // the compile cache's bytes

 private:
  const Client* client_ = nullptr;
  PJRT_LoadedExecutable* e_ = nullptr;
};

class Client {
 public:
  // options: PJRT_Client_Create options (e.g. {"cpu_device_count", 4} for the CPU plugin).
  explicit Client(std::shared_ptr<Plugin> plugin, const std::vector<std::pair<std::string, int64_t>>& options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const Plugin& plugin() const { return *plugin_; }
  const PluginInfo& info() const { return info_; }  // with platform and platform_version
  size_t device_count() const { return devices_.size(); }
  PJRT_Client* raw() const { return c_; }
  PJRT_Device* device(size_t i) const;

  // Compiles StableHLO given as MLIR text. A module the plugin rejects is an Error with the
  // plugin's message.
  Executable compile(const std::string& mlir, const CompileOptions& opt = {}) const;
  Executable deserialize(const std::string& bytes, const CompileOptions& opt = {}) const;
  // Uploads a host tensor (any strides; made contiguous) to device `device`.
  Buffer upload(const Tensor& host, size_t device = 0) const;

  void check(PJRT_Error* err, const std::string& what) const;

 private:
  std::shared_ptr<Plugin> plugin_;
  PluginInfo info_;
  PJRT_Client* c_ = nullptr;
  std::vector<PJRT_Device*> devices_;
};

}  // namespace vidax::pjrt
