#include "backend/pjrt/plugin.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>

#include "core/error.h"

#if VIDAX_HAVE_PJRT
#include <dlfcn.h>
#include <sys/stat.h>

#include <xla/pjrt/c/pjrt_c_api.h>  // external: the pinned wheel's header (.deps/pjrt)
#endif

namespace vidax::pjrt {

std::string PluginInfo::str() const {
  std::ostringstream o;
  o << "plugin " << path << " (PJRT API ";
  if (api_major < 0) o << "unknown";
  else o << api_major << '.' << api_minor;
  o << ", StableHLO " << (stablehlo_version.empty() ? "unknown" : stablehlo_version);
  if (!platform.empty()) o << ", platform " << platform;
  o << ')';
  return o.str();
}

std::string Plugin::resolve_path(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("VIDAX_PJRT_PLUGIN");
  if (env && *env) return env;
  throw Error("--device pjrt needs a plugin: pass --pjrt-plugin FILE or set VIDAX_PJRT_PLUGIN "
              "(a PJRT plugin .so, e.g. .deps/pjrt/xla_cpu_pjrt.so from scripts/fetch-pjrt-plugin.sh)");
}

std::string CompileOptions::serialize() const {
  VIDAX_CHECK(num_replicas >= 1 && num_partitions >= 1,
              "PJRT compile options: num_replicas " << num_replicas << " and num_partitions " << num_partitions
                                                    << " must be >= 1");
  // xla.CompileOptionsProto { executable_build_options (3) { num_replicas (4), num_partitions (5),
  // use_spmd_partitioning (6) } }, protobuf wire format: tag = field << 3 | wire type.
  auto varint = [](std::string& s, uint64_t v) {
    do {
      uint8_t b = v & 0x7f;
      v >>= 7;
      s.push_back(static_cast<char>(b | (v ? 0x80 : 0)));
    } while (v);
  };
  std::string build;
  build.push_back(0x20), varint(build, static_cast<uint64_t>(num_replicas));
  build.push_back(0x28), varint(build, static_cast<uint64_t>(num_partitions));
  if (spmd) build.push_back(0x30), varint(build, 1);
  std::string out;
  out.push_back(0x1a), varint(out, build.size());
  return out + build;  // the smallest: 1a 04 20 01 28 01
}

#if !VIDAX_HAVE_PJRT

namespace {
[[noreturn]] void no_pjrt() {
  throw Error("this vidax was built without PJRT (the header xla/pjrt/c/pjrt_c_api.h was not found): run "
              "scripts/fetch-pjrt-plugin.sh, then configure again (option VIDAX_PJRT)");
}
}  // namespace
bool available() { return false; }
std::string header_api_version() { return ""; }
std::shared_ptr<Plugin> Plugin::load(const std::string&) { no_pjrt(); }
void Plugin::check(PJRT_Error*, const std::string&) const { no_pjrt(); }
void Plugin::require(size_t, size_t, const char*) const { no_pjrt(); }
Buffer::Buffer(const Client*, PJRT_Buffer*, Shape, DType) { no_pjrt(); }
Buffer& Buffer::operator=(Buffer&&) noexcept { return *this; }
Buffer::~Buffer() = default;
Tensor Buffer::to_host() const { no_pjrt(); }
Executable::Executable(const Client*, PJRT_LoadedExecutable*) { no_pjrt(); }
Executable& Executable::operator=(Executable&&) noexcept { return *this; }
Executable::~Executable() = default;
size_t Executable::num_outputs() const { no_pjrt(); }
std::vector<Buffer> Executable::execute(const std::vector<const Buffer*>&) const { no_pjrt(); }
std::vector<std::vector<Buffer>> Executable::execute_sharded(const std::vector<std::vector<const Buffer*>>&) const {
  no_pjrt();
}
std::string Executable::serialize() const { no_pjrt(); }
Client::Client(std::shared_ptr<Plugin>, const std::vector<std::pair<std::string, int64_t>>&) { no_pjrt(); }
Client::~Client() = default;
PJRT_Device* Client::device(size_t) const { no_pjrt(); }
Executable Client::compile(const std::string&, const CompileOptions&) const { no_pjrt(); }
Executable Client::deserialize(const std::string&, const CompileOptions&) const { no_pjrt(); }
Buffer Client::upload(const Tensor&, size_t) const { no_pjrt(); }
void Client::check(PJRT_Error*, const std::string&) const { no_pjrt(); }

#else

bool available() { return true; }
std::string header_api_version() { return std::to_string(PJRT_API_MAJOR) + "." + std::to_string(PJRT_API_MINOR); }

namespace {

// The oldest minor version whose table has every function used here (PJRT_Executable_* through
// PJRT_Executable_OutputDimensions); the table is checked field by field too (Plugin::require).
constexpr int kMinMinor = 40;

#define VIDAX_PJRT_REQUIRE(plugin, field) \
  (plugin).require(offsetof(PJRT_Api, field), sizeof(((PJRT_Api*)0)->field), #field)

std::string error_message(const PJRT_Api* api, PJRT_Error* err) {
  PJRT_Error_Message_Args m{};
  m.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE;
  m.error = err;
  api->PJRT_Error_Message(&m);
  std::string s(m.message, m.message_size);
  PJRT_Error_Destroy_Args d{};
  d.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE;
  d.error = err;
  api->PJRT_Error_Destroy(&d);
  return s;
}

std::string version_of(const PJRT_NamedValue& v) {
  if (v.type == PJRT_NamedValue_kInt64List) {
    std::string s;
    for (size_t i = 0; i < v.value_size; ++i) s += (i ? "." : "") + std::to_string(v.int64_array_value[i]);
    return s;
  }
  if (v.type == PJRT_NamedValue_kString) return std::string(v.string_value, v.value_size);
  if (v.type == PJRT_NamedValue_kInt64) return std::to_string(v.int64_value);
  return "";
}

PJRT_Buffer_Type buffer_type(DType t, const std::string& who) {
  switch (t) {
    case DType::F32: return PJRT_Buffer_Type_F32;
    case DType::F64: return PJRT_Buffer_Type_F64;
    case DType::BF16: return PJRT_Buffer_Type_BF16;
    case DType::F16: return PJRT_Buffer_Type_F16;
    case DType::I64: return PJRT_Buffer_Type_S64;
    case DType::I32: return PJRT_Buffer_Type_S32;
    case DType::I8: return PJRT_Buffer_Type_S8;
    case DType::U8: return PJRT_Buffer_Type_U8;
    case DType::Bool: return PJRT_Buffer_Type_PRED;
    default: throw Error(msg() << who << ": dtype " << dtype_name(t) << " has no PJRT buffer type here");
  }
}

DType dtype_of(PJRT_Buffer_Type t, const std::string& who) {
  switch (t) {
    case PJRT_Buffer_Type_F32: return DType::F32;
    case PJRT_Buffer_Type_F64: return DType::F64;
    case PJRT_Buffer_Type_BF16: return DType::BF16;
    case PJRT_Buffer_Type_F16: return DType::F16;
    case PJRT_Buffer_Type_S64: return DType::I64;
    case PJRT_Buffer_Type_S32: return DType::I32;
    case PJRT_Buffer_Type_S8: return DType::I8;
    case PJRT_Buffer_Type_U8: return DType::U8;
    case PJRT_Buffer_Type_PRED: return DType::Bool;
    default: throw Error(msg() << who << ": a PJRT buffer of element type " << int(t) << " is not supported");
  }
}

void await_event(const Client& c, PJRT_Event* ev, const std::string& what) {
  if (!ev) return;
  const PJRT_Api* api = c.plugin().api();
  PJRT_Event_Await_Args a{};
  a.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE;
  a.event = ev;
  PJRT_Error* err = api->PJRT_Event_Await(&a);
  PJRT_Event_Destroy_Args d{};
  d.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE;
  d.event = ev;
  api->PJRT_Event_Destroy(&d);
  c.check(err, what);
}

}  // namespace

void Plugin::check(PJRT_Error* err, const std::string& what) const {
  if (!err) return;
  throw Error(msg() << "PJRT " << info_.str() << ": " << what << ": " << error_message(api_, err));
}

void Plugin::require(size_t offset, size_t size, const char* function) const {
  if (offset + size > api_->struct_size || !*reinterpret_cast<void* const*>(reinterpret_cast<const char*>(api_) + offset))
    throw Error(msg() << "PJRT " << info_.str() << " does not provide " << function
                      << " (its function table is " << api_->struct_size << " bytes); vidax needs PJRT API 0."
                      << kMinMinor << " or newer with it");
}

std::shared_ptr<Plugin> Plugin::load(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<Plugin>> loaded;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = loaded.find(path); it != loaded.end()) return it->second;

  std::shared_ptr<Plugin> p(new Plugin);
  p->info_.path = path;
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0)
    throw Error(msg() << "PJRT plugin " << path << ": no such file (--pjrt-plugin / VIDAX_PJRT_PLUGIN)");
  if (!S_ISREG(st.st_mode)) throw Error(msg() << "PJRT plugin " << path << ": not a regular file");
  // RTLD_LOCAL: the plugin's own LLVM / protobuf stay out of our symbol namespace.
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = ::dlerror();
    throw Error(msg() << "PJRT plugin " << path << ": not a loadable shared library (" << (e ? e : "dlopen failed")
                      << ")");
  }
  using GetApi = const PJRT_Api* (*)();
  auto get = reinterpret_cast<GetApi>(::dlsym(h, "GetPjrtApi"));
  if (!get) {
    ::dlclose(h);
    throw Error(msg() << "PJRT plugin " << path << ": not a PJRT plugin (it exports no GetPjrtApi)");
  }
  const PJRT_Api* api = get();
  if (!api) throw Error(msg() << "PJRT plugin " << path << ": GetPjrtApi returned no function table");
  p->api_ = api;
  p->info_.api_major = api->pjrt_api_version.major_version;
  p->info_.api_minor = api->pjrt_api_version.minor_version;
  if (p->info_.api_major != PJRT_API_MAJOR || p->info_.api_minor < kMinMinor ||
      api->struct_size < offsetof(PJRT_Api, PJRT_Plugin_Attributes) + sizeof(api->PJRT_Plugin_Attributes))
    throw Error(msg() << "PJRT " << p->info_.str() << ": incompatible PJRT API version "
                      << p->info_.api_major << '.' << p->info_.api_minor << "; vidax (built with the header of API "
                      << header_api_version() << ") runs plugins of API " << PJRT_API_MAJOR << ".x with x >= "
                      << kMinMinor);
  VIDAX_PJRT_REQUIRE(*p, PJRT_Error_Destroy);
  VIDAX_PJRT_REQUIRE(*p, PJRT_Error_Message);
  VIDAX_PJRT_REQUIRE(*p, PJRT_Plugin_Initialize);

  if (api->PJRT_Plugin_Attributes) {
    PJRT_Plugin_Attributes_Args a{};
    a.struct_size = PJRT_Plugin_Attributes_Args_STRUCT_SIZE;
    p->check(api->PJRT_Plugin_Attributes(&a), "PJRT_Plugin_Attributes");
    for (size_t i = 0; i < a.num_attributes; ++i) {
      const PJRT_NamedValue& v = a.attributes[i];
      const std::string name(v.name, v.name_size);
      if (name == "stablehlo_current_version") p->info_.stablehlo_version = version_of(v);
      if (name == "stablehlo_minimum_version") p->info_.stablehlo_minimum = version_of(v);
      if (name == "xla_version") p->info_.xla_version = version_of(v);
    }
  }
  PJRT_Plugin_Initialize_Args ini{};
  ini.struct_size = PJRT_Plugin_Initialize_Args_STRUCT_SIZE;
  p->check(api->PJRT_Plugin_Initialize(&ini), "PJRT_Plugin_Initialize");
  loaded[path] = p;
  return p;
}

// ---- Client ---------------------------------------------------------------------------------

Client::Client(std::shared_ptr<Plugin> plugin, const std::vector<std::pair<std::string, int64_t>>& options)
    : plugin_(std::move(plugin)), info_(plugin_->info()) {
  const PJRT_Api* api = plugin_->api();
  VIDAX_PJRT_REQUIRE(*plugin_, PJRT_Client_Create);
  VIDAX_PJRT_REQUIRE(*plugin_, PJRT_Client_Destroy);
  VIDAX_PJRT_REQUIRE(*plugin_, PJRT_Client_PlatformName);
  VIDAX_PJRT_REQUIRE(*plugin_, PJRT_Client_PlatformVersion);
  VIDAX_PJRT_REQUIRE(*plugin_, PJRT_Client_AddressableDevices);
  VIDAX_PJRT_REQUIRE(*plugin_, PJRT_Client_Compile);
  VIDAX_PJRT_REQUIRE(*plugin_, PJRT_Client_BufferFromHostBuffer);
  VIDAX_PJRT_REQUIRE(*plugin_, PJRT_LoadedExecutable_Execute);
  VIDAX_PJRT_REQUIRE(*plugin_, PJRT_LoadedExecutable_Destroy);
  VIDAX_PJRT_REQUIRE(*plugin_, PJRT_LoadedExecutable_GetExecutable);
  VIDAX_PJRT_REQUIRE(*plugin_, PJRT_Executable_Destroy);
  VIDAX_PJRT_REQUIRE(*plugin_, PJRT_Executable_NumOutputs);
  VIDAX_PJRT_REQUIRE(*plugin_, PJRT_Buffer_Destroy);
  VIDAX_PJRT_REQUIRE(*plugin_, PJRT_Buffer_ToHostBuffer);
  VIDAX_PJRT_REQUIRE(*plugin_, PJRT_Buffer_Dimensions);
  VIDAX_PJRT_REQUIRE(*plugin_, PJRT_Buffer_ElementType);
  VIDAX_PJRT_REQUIRE(*plugin_, PJRT_Event_Await);
  VIDAX_PJRT_REQUIRE(*plugin_, PJRT_Event_Destroy);
  std::vector<PJRT_NamedValue> opts(options.size());
  for (size_t i = 0; i < options.size(); ++i) {
    PJRT_NamedValue& v = opts[i];
    v.struct_size = PJRT_NamedValue_STRUCT_SIZE;
    v.name = options[i].first.c_str();
    v.name_size = options[i].first.size();
    v.type = PJRT_NamedValue_kInt64;
    v.int64_value = options[i].second;
    v.value_size = 1;
  }
  PJRT_Client_Create_Args a{};
  a.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE;
  a.create_options = opts.data();
  a.num_options = opts.size();
  plugin_->check(api->PJRT_Client_Create(&a), "creating a client (does this machine have the plugin's device?)");
  c_ = a.client;
  try {
    PJRT_Client_PlatformName_Args pn{};
    pn.struct_size = PJRT_Client_PlatformName_Args_STRUCT_SIZE;
    pn.client = c_;
    check(api->PJRT_Client_PlatformName(&pn), "PJRT_Client_PlatformName");
    info_.platform.assign(pn.platform_name, pn.platform_name_size);
    PJRT_Client_PlatformVersion_Args pv{};
    pv.struct_size = PJRT_Client_PlatformVersion_Args_STRUCT_SIZE;
    pv.client = c_;
    check(api->PJRT_Client_PlatformVersion(&pv), "PJRT_Client_PlatformVersion");
    info_.platform_version.assign(pv.platform_version, pv.platform_version_size);
    PJRT_Client_AddressableDevices_Args d{};
    d.struct_size = PJRT_Client_AddressableDevices_Args_STRUCT_SIZE;
    d.client = c_;
    check(api->PJRT_Client_AddressableDevices(&d), "PJRT_Client_AddressableDevices");
    devices_.assign(d.addressable_devices, d.addressable_devices + d.num_addressable_devices);
    if (devices_.empty())
      throw Error(msg() << "PJRT " << info_.str() << ": the client has no addressable device");
  } catch (...) {
    PJRT_Client_Destroy_Args x{};
    x.struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE;
    x.client = c_;
    if (api->PJRT_Client_Destroy) api->PJRT_Client_Destroy(&x);
    throw;
  }
}

Client::~Client() {
  if (!c_) return;
  PJRT_Client_Destroy_Args x{};
  x.struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE;
  x.client = c_;
  PJRT_Error* err = plugin_->api()->PJRT_Client_Destroy(&x);
  if (err) error_message(plugin_->api(), err);  // nothing to do with it in a destructor
}

void Client::check(PJRT_Error* err, const std::string& what) const {
  if (!err) return;
  throw Error(msg() << "PJRT " << info_.str() << ": " << what << ": " << error_message(plugin_->api(), err));
}

PJRT_Device* Client::device(size_t i) const {
  VIDAX_CHECK(i < devices_.size(), "PJRT " << info_.str() << ": device " << i << " of " << devices_.size());
  return devices_[i];
}

Executable Client::compile(const std::string& mlir, const CompileOptions& opt) const {
  VIDAX_CHECK(!mlir.empty(), "PJRT " << info_.str() << ": an empty module to compile");
  const std::string options = opt.serialize();  // never empty: an empty string aborts the plugins
  PJRT_Program prog{};
  prog.struct_size = PJRT_Program_STRUCT_SIZE;
  prog.code = const_cast<char*>(mlir.data());
  prog.code_size = mlir.size();
  static const char kFormat[] = "mlir";
  prog.format = kFormat;
  prog.format_size = sizeof(kFormat) - 1;
  PJRT_Client_Compile_Args a{};
  a.struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE;
  a.client = c_;
  a.program = &prog;
  a.compile_options = options.data();
  a.compile_options_size = options.size();
  check(plugin_->api()->PJRT_Client_Compile(&a), "compiling the StableHLO module (the plugin rejected it)");
  return Executable(this, a.executable);
}

Executable Client::deserialize(const std::string& bytes, const CompileOptions& opt) const {
  VIDAX_PJRT_REQUIRE(*plugin_, PJRT_Executable_DeserializeAndLoad);
  const std::string options = opt.serialize();
  PJRT_Executable_DeserializeAndLoad_Args a{};
  a.struct_size = PJRT_Executable_DeserializeAndLoad_Args_STRUCT_SIZE;
  a.client = c_;
  a.serialized_executable = bytes.data();
  a.serialized_executable_size = bytes.size();
  a.overridden_serialized_compile_options = options.data();
  a.overridden_serialized_compile_options_size = options.size();
  check(plugin_->api()->PJRT_Executable_DeserializeAndLoad(&a), "loading a cached executable");
  return Executable(this, a.loaded_executable);
}

Buffer Client::upload(const Tensor& host_in, size_t dev) const {
  VIDAX_CHECK(host_in.device() == Device::CPU,
              "PJRT " << info_.str() << ": upload of " << host_in.str() << ": not a host tensor");
  const Tensor host = host_in.is_contiguous() ? host_in : host_in.contiguous();
  PJRT_Client_BufferFromHostBuffer_Args a{};
  a.struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE;
  a.client = c_;
  a.data = host.data_ptr();
  a.type = buffer_type(host.dtype(), "PJRT " + info_.str() + ": upload");
  a.dims = host.shape().data();
  a.num_dims = host.shape().size();
  a.host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes;
  a.device = device(dev);
  check(plugin_->api()->PJRT_Client_BufferFromHostBuffer(&a), "uploading " + host.str());
  Buffer b(this, a.buffer, host.shape(), host.dtype());
  await_event(*this, a.done_with_host_buffer, "uploading " + host.str());  // host may be freed after this
  return b;
}

// ---- Buffer -----------------------------------------------------------------------------------

Buffer::Buffer(const Client* client, PJRT_Buffer* b, Shape shape, DType dtype)
    : client_(client), b_(b), shape_(std::move(shape)), dtype_(dtype) {}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    this->~Buffer();
    client_ = o.client_, b_ = o.b_, shape_ = std::move(o.shape_), dtype_ = o.dtype_;
    o.b_ = nullptr;
  }
  return *this;
}

Buffer::~Buffer() {
  if (!b_) return;
  PJRT_Buffer_Destroy_Args d{};
  d.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE;
  d.buffer = b_;
  PJRT_Error* err = client_->plugin().api()->PJRT_Buffer_Destroy(&d);
  if (err) error_message(client_->plugin().api(), err);
  b_ = nullptr;
}

Tensor Buffer::to_host() const {
  VIDAX_CHECK(b_, "PJRT: reading back an empty buffer");
  Tensor out = Tensor::empty(shape_, dtype_);
  PJRT_Buffer_ToHostBuffer_Args a{};
  a.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE;
  a.src = b_;
  a.dst = out.data_ptr();
  a.dst_size = out.nbytes();
  client_->check(client_->plugin().api()->PJRT_Buffer_ToHostBuffer(&a), "reading back " + out.str());
  await_event(*client_, a.event, "reading back " + out.str());
  return out;
}

// ---- Executable -------------------------------------------------------------------------------

Executable::Executable(const Client* client, PJRT_LoadedExecutable* e) : client_(client), e_(e) {}

Executable& Executable::operator=(Executable&& o) noexcept {
  if (this != &o) {
    this->~Executable();
    client_ = o.client_, e_ = o.e_;
    o.e_ = nullptr;
  }
  return *this;
}

Executable::~Executable() {
  if (!e_) return;
  PJRT_LoadedExecutable_Destroy_Args d{};
  d.struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE;
  d.executable = e_;
  PJRT_Error* err = client_->plugin().api()->PJRT_LoadedExecutable_Destroy(&d);
  if (err) error_message(client_->plugin().api(), err);
  e_ = nullptr;
}

namespace {
struct ExecutableView {  // PJRT_Executable of a loaded one (destroyed after use)
  const Client& c;
  PJRT_Executable* e = nullptr;
  ExecutableView(const Client& client, PJRT_LoadedExecutable* le) : c(client) {
    PJRT_LoadedExecutable_GetExecutable_Args g{};
    g.struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE;
    g.loaded_executable = le;
    c.check(c.plugin().api()->PJRT_LoadedExecutable_GetExecutable(&g), "PJRT_LoadedExecutable_GetExecutable");
    e = g.executable;
  }
  ~ExecutableView() {
    PJRT_Executable_Destroy_Args d{};
    d.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE;
    d.executable = e;
    PJRT_Error* err = c.plugin().api()->PJRT_Executable_Destroy(&d);
    if (err) error_message(c.plugin().api(), err);
  }
};
}  // namespace

size_t Executable::num_outputs() const {
  ExecutableView v(*client_, e_);
  PJRT_Executable_NumOutputs_Args n{};
  n.struct_size = PJRT_Executable_NumOutputs_Args_STRUCT_SIZE;
  n.executable = v.e;
  client_->check(client_->plugin().api()->PJRT_Executable_NumOutputs(&n), "PJRT_Executable_NumOutputs");
  return n.num_outputs;
}

std::string Executable::serialize() const {
  VIDAX_PJRT_REQUIRE(client_->plugin(), PJRT_Executable_Serialize);
  ExecutableView v(*client_, e_);
  PJRT_Executable_Serialize_Args a{};
  a.struct_size = PJRT_Executable_Serialize_Args_STRUCT_SIZE;
  a.executable = v.e;
  client_->check(client_->plugin().api()->PJRT_Executable_Serialize(&a), "serializing the executable");
  std::string bytes(a.serialized_bytes, a.serialized_bytes_size);
  if (a.serialized_executable_deleter) a.serialized_executable_deleter(a.serialized_executable);
  return bytes;
}

std::vector<Buffer> Executable::execute(const std::vector<const Buffer*>& args) const {
  auto r = execute_sharded({args});
  return std::move(r[0]);
}

std::vector<std::vector<Buffer>> Executable::execute_sharded(const std::vector<std::vector<const Buffer*>>& args) const {
  VIDAX_CHECK(e_, "PJRT: executing an empty executable");
  const PJRT_Api* api = client_->plugin().api();
  const size_t n_dev = args.size(), n_out = num_outputs();
  VIDAX_CHECK(n_dev >= 1 && n_dev <= client_->device_count(),
              "PJRT " << client_->info().str() << ": " << n_dev << " argument lists for " << client_->device_count()
                      << " devices");
  std::vector<std::vector<PJRT_Buffer*>> in(n_dev);
  for (size_t d = 0; d < n_dev; ++d) {
    VIDAX_CHECK(args[d].size() == args[0].size(), "PJRT: argument lists of different lengths");
    for (const Buffer* b : args[d]) {
      VIDAX_CHECK(b && b->defined(), "PJRT " << client_->info().str() << ": an undefined argument buffer");
      in[d].push_back(b->raw());
    }
  }
  std::vector<PJRT_Buffer* const*> in_lists(n_dev);
  std::vector<std::vector<PJRT_Buffer*>> out(n_dev, std::vector<PJRT_Buffer*>(n_out, nullptr));
  std::vector<PJRT_Buffer**> out_lists(n_dev);
  std::vector<PJRT_Event*> done(n_dev, nullptr);
  for (size_t d = 0; d < n_dev; ++d) in_lists[d] = in[d].data(), out_lists[d] = out[d].data();
  PJRT_ExecuteOptions opt{};
  opt.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE;
  PJRT_LoadedExecutable_Execute_Args a{};
  a.struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE;
  a.executable = e_;
  a.options = &opt;
  a.argument_lists = in_lists.data();
  a.num_devices = n_dev;
  a.num_args = args[0].size();
  a.output_lists = out_lists.data();
  a.device_complete_events = done.data();
  client_->check(api->PJRT_LoadedExecutable_Execute(&a), "executing");
  std::vector<std::vector<Buffer>> result(n_dev);
  for (size_t d = 0; d < n_dev; ++d) {
    for (size_t i = 0; i < n_out; ++i) {
      PJRT_Buffer_Dimensions_Args dims{};
      dims.struct_size = PJRT_Buffer_Dimensions_Args_STRUCT_SIZE;
      dims.buffer = out[d][i];
      client_->check(api->PJRT_Buffer_Dimensions(&dims), "PJRT_Buffer_Dimensions");
      PJRT_Buffer_ElementType_Args et{};
      et.struct_size = PJRT_Buffer_ElementType_Args_STRUCT_SIZE;
      et.buffer = out[d][i];
      client_->check(api->PJRT_Buffer_ElementType(&et), "PJRT_Buffer_ElementType");
      result[d].emplace_back(client_, out[d][i], Shape(dims.dims, dims.dims + dims.num_dims),
                             dtype_of(et.type, "PJRT " + client_->info().str()));
    }
  }
  for (size_t d = 0; d < n_dev; ++d) await_event(*client_, done[d], "executing");
  return result;
}

#endif  // VIDAX_HAVE_PJRT

}  // namespace vidax::pjrt
