#include "backend/pjrt/session.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.h"

namespace vidax::pjrt {

namespace {

uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string hex(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

// A host tensor that a Param record stands for, rebuilt from the trace (its buffer is held).
Tensor host_tensor(const Trace& trace, const OpRecord& r, std::shared_ptr<::vidax::Buffer>* held_out) {
  for (const auto& [key, id] : trace.host_ids) {
    if (id != r.id) continue;
    const auto& [ptr, offset, shape, strides, dtype] = key;
    for (const auto& b : trace.held)
      if (b.get() == ptr) {
        *held_out = b;
        return Tensor::from_buffer(b, offset, shape, dtype, strides);
      }
  }
  throw Error(msg() << "PJRT: the parameter " << r.str()
                    << " has no host values (a shape-only weight cannot run on a device)");
}

}  // namespace

int64_t trace_id(const Trace& trace, const Tensor& t) {
  VIDAX_CHECK(t.device() == Device::Meta, "PJRT: an output " << t.str() << " is not a recorded (Meta) tensor");
  auto it = trace.meta_ids.find(t.meta_value());
  VIDAX_CHECK(it != trace.meta_ids.end(), "PJRT: the tensor " << t.str() << " is not a value of the trace");
  return it->second;
}

std::string Session::default_cache_dir() {
  if (const char* e = std::getenv("VIDAX_PJRT_CACHE"); e && *e) return std::string(e) == "-" ? "" : e;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/vidax/pjrt";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/vidax/pjrt";
  return "";
}

Session& Session::get(const std::string& plugin_path) {
  static std::map<std::string, std::unique_ptr<Session>> sessions;
  auto& s = sessions[plugin_path];
  if (!s) s = std::make_unique<Session>(plugin_path);
  return *s;
}

Session::Session(const std::string& plugin_path, std::string cache_dir)
    : plugin_(Plugin::load(plugin_path)), client_(std::make_unique<Client>(plugin_)), cache_dir_(std::move(cache_dir)) {}

std::string Session::cache_key(const std::string& mlir) const {
  const PluginInfo& i = client_->info();
  std::ostringstream v;
  v << i.platform << '|' << i.platform_version << '|' << i.api_major << '.' << i.api_minor << '|'
    << i.stablehlo_version << '|' << i.xla_version;
  return hex(fnv1a(mlir, fnv1a(v.str()))) + "-" + i.platform + "-api" + std::to_string(i.api_major) + "." +
         std::to_string(i.api_minor);
}

const Executable& Session::executable(const std::string& mlir) {
  const std::string key = cache_key(mlir);
  if (auto it = programs_.find(key); it != programs_.end()) {
    ++stats_.memory_hits;
    return it->second;
  }
  const auto t0 = std::chrono::steady_clock::now();
  Executable exe;
  const std::filesystem::path file = cache_dir_.empty() ? "" : std::filesystem::path(cache_dir_) / (key + ".pjrt");
  if (!file.empty() && std::filesystem::exists(file)) {
    std::ifstream f(file, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    try {
      exe = client_->deserialize(bytes);
      ++stats_.disk_hits;
    } catch (const Error& e) {  // a stale or damaged entry: said, then compiled again and replaced
      std::fprintf(stderr, "warning: PJRT compile cache %s: %s; compiling again\n", file.c_str(), e.what());
    }
  }
  if (!exe.defined()) {
    exe = client_->compile(mlir);
    ++stats_.compiles;
    if (!file.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(file.parent_path(), ec);
      const std::filesystem::path part = file.string() + ".part";
      std::ofstream f(part, std::ios::binary);
      const std::string bytes = exe.serialize();
      f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      f.close();
      if (f) std::filesystem::rename(part, file, ec);
      if (!f || ec)
        std::fprintf(stderr, "warning: PJRT compile cache: could not write %s\n", file.c_str());
    }
  }
  stats_.last_compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stats_.compile_s += stats_.last_compile_s;
  return programs_.emplace(key, std::move(exe)).first->second;
}

const Buffer& Session::resident(const Trace& trace, const OpRecord& r) {
  std::shared_ptr<::vidax::Buffer> held;
  const Tensor host = host_tensor(trace, r, &held);
  const Trace::HostKey key{held.get(), host.byte_offset(), host.shape(), host.strides(), host.dtype()};
  auto it = params_.find(key);
  if (it == params_.end()) {
    Resident res{held, client_->upload(host)};
    ++stats_.uploads;
    it = params_.emplace(key, std::move(res)).first;
  }
  return it->second.device;
}

std::shared_ptr<const Program> Session::prepare(const Trace& trace, const std::vector<Tensor>& outputs,
                                                const std::vector<Tensor>& inputs, const LowerOptions& opt) {
  std::vector<int64_t> out_ids;
  for (const Tensor& t : outputs) out_ids.push_back(trace_id(trace, t));
  auto p = std::make_shared<Program>();
  const auto t0 = std::chrono::steady_clock::now();
  p->lowered = lower_to_stablehlo(trace, out_ids, opt);
  ++stats_.lowerings;
  stats_.lower_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  p->key = cache_key(p->lowered.mlir);
  p->exe = &executable(p->lowered.mlir);
  std::set<int64_t> bound;
  for (const Tensor& m : inputs)
    if (auto it = trace.meta_ids.find(m.meta_value()); it != trace.meta_ids.end()) bound.insert(it->second);
  for (int64_t id : p->lowered.args) {
    const OpRecord& r = trace.ops[static_cast<size_t>(id)];
    const bool input = r.kind == OpKind::Input || (r.kind == OpKind::Param && bound.count(r.id));
    VIDAX_CHECK(!(r.kind == OpKind::Input && !bound.count(r.id)),
                "PJRT: the program's input " << r.str() << " has no host value bound");
    p->resident.push_back(input ? nullptr : &resident(trace, r));
  }
  return p;
}

std::vector<Tensor> Session::run(const Program& program, const Trace& trace,
                                 const std::vector<std::pair<Tensor, Tensor>>& inputs) {
  const Lowered& L = program.lowered;
  std::map<int64_t, const Tensor*> bound;
  for (const auto& [meta, host] : inputs) {
    auto it = trace.meta_ids.find(meta.meta_value());
    if (it != trace.meta_ids.end()) bound[it->second] = &host;
  }
  std::vector<Buffer> staged;  // inputs of this run
  staged.reserve(L.args.size());
  std::vector<const Buffer*> args;
  for (size_t i = 0; i < L.args.size(); ++i) {
    if (program.resident[i]) {
      args.push_back(program.resident[i]);
      continue;
    }
    const OpRecord& r = trace.ops[static_cast<size_t>(L.args[i])];
    auto b = bound.find(r.id);
    VIDAX_CHECK(b != bound.end(), "PJRT: the program's input " << r.str() << " has no host value bound");
    const Tensor& h = *b->second;
    VIDAX_CHECK(h.shape() == r.output.shape && h.dtype() == r.output.dtype,
                "PJRT: the input " << r.str() << " is bound to " << h.str());
    staged.push_back(client_->upload(h));
    args.push_back(&staged.back());
  }
  std::vector<Buffer> res = program.exe->execute(args);
  ++stats_.runs;
  VIDAX_CHECK(res.size() == L.outputs.size(), "PJRT " << client_->info().str() << ": the program returned "
                                                       << res.size() << " results for " << L.outputs.size());
  std::vector<Tensor> host;
  for (size_t i = 0; i < res.size(); ++i) {
    VIDAX_CHECK(res[i].shape() == L.out_descs[i].shape && res[i].dtype() == L.out_descs[i].dtype,
                "PJRT: result " << i << " is " << dtype_name(res[i].dtype()) << shape_str(res[i].shape())
                                << ", expected " << L.out_descs[i].str());
    host.push_back(res[i].to_host());
  }
  return host;
}

std::vector<Tensor> Session::run(const Trace& trace, const std::vector<Tensor>& outputs,
                                 const std::vector<std::pair<Tensor, Tensor>>& inputs, const LowerOptions& opt) {
  std::vector<Tensor> metas;
  for (const auto& [meta, host] : inputs) metas.push_back(meta);
  const auto program = prepare(trace, outputs, metas, opt);
  return run(*program, trace, inputs);
}

}  // namespace vidax::pjrt
