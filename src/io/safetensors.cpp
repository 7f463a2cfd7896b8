#include "io/safetensors.h"

#include <functional>
#include "io/output_target.h"
#include "io/temp_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "io/checkpoint.h"

namespace vidax::io {

namespace {

using nlohmann::json;

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Builds the DOM like json::parse, and refuses duplicate keys in the header
// object and in each tensor entry (nlohmann would keep the last one silently;
// a duplicated tensor name means a corrupt header). A SAX wrapper, because
// json::parse with a callback is ~10x slower on headers with many tensors.
class DomWithoutDuplicateKeys : public nlohmann::json_sax<json> {
 public:
  DomWithoutDuplicateKeys(json& root, const std::string& file) : dom_(root, true), file_(file) {}
  bool null() override { return dom_.null(); }
  bool boolean(bool v) override { return dom_.boolean(v); }
  bool number_integer(number_integer_t v) override { return dom_.number_integer(v); }
  bool number_unsigned(number_unsigned_t v) override { return dom_.number_unsigned(v); }
  bool number_float(number_float_t v, const string_t& s) override { return dom_.number_float(v, s); }
  bool string(string_t& v) override { return dom_.string(v); }
  bool binary(binary_t& v) override { return dom_.binary(v); }
  bool start_object(std::size_t n) override {
    if (++depth_ <= 2) keys_[depth_ - 1].clear();  // only the header and its entries are checked
    return dom_.start_object(n);
  }
  bool key(string_t& k) override {
    if (depth_ <= 2)
      VIDAX_CHECK(keys_[depth_ - 1].insert(k).second, file_ << ": safetensors header has the key '" << k << "' twice");
    return dom_.key(k);
  }
  bool end_object() override {
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) override {
    ++depth_;
    return dom_.start_array(n);
  }
  bool end_array() override {
    --depth_;
    return dom_.end_array();
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    throw Error(msg() << file_ << ": safetensors header is not valid JSON: " << e.what());
  }

 private:
  nlohmann::detail::json_sax_dom_parser<json> dom_;
  const std::string& file_;
  size_t depth_ = 0;
  std::set<std::string> keys_[2];
};

json parse_json_no_duplicates(const char* begin, const char* end, const std::string& file) {
  json root;
  DomWithoutDuplicateKeys sax(root, file);
  try {
    json::sax_parse(begin, end, &sax);
  } catch (const json::exception& e) {
    throw Error(msg() << file << ": safetensors header is not valid JSON: " << e.what());
  }
  return root;
}

uint64_t json_u64(const json& v, const std::string& file, const std::string& name, const char* field) {
  VIDAX_CHECK(v.is_number_unsigned(), file << ": tensor '" << name << "': " << field
                                           << " must hold non-negative integers, found " << v.dump());
  return v.get<uint64_t>();
}

SafetensorsEntry parse_entry(const std::string& name, const json& v, const std::string& file) {
  VIDAX_CHECK(v.is_object(), file << ": tensor '" << name << "': entry must be an object, found " << v.type_name());
  SafetensorsEntry e;
  e.name = name;
  auto dt = v.find("dtype");
  VIDAX_CHECK(dt != v.end(), file << ": tensor '" << name << "': missing \"dtype\"");
  VIDAX_CHECK(dt->is_string(), file << ": tensor '" << name << "': \"dtype\" must be a string, found " << dt->dump());
  const std::string& dname = dt->get_ref<const std::string&>();
  VIDAX_CHECK(dtype_from_name(dname, &e.dtype), file << ": tensor '" << name << "': unknown dtype '" << dname << "'");

  auto sh = v.find("shape");
  VIDAX_CHECK(sh != v.end(), file << ": tensor '" << name << "': missing \"shape\"");
  VIDAX_CHECK(sh->is_array(), file << ": tensor '" << name << "': \"shape\" must be an array, found " << sh->dump());
  uint64_t numel = 1;
  for (const json& d : *sh) {
    uint64_t n = json_u64(d, file, name, "\"shape\"");
    VIDAX_CHECK(n <= uint64_t(INT64_MAX) && !__builtin_mul_overflow(numel, n, &numel),
                file << ": tensor '" << name << "': shape " << sh->dump() << " overflows");
    e.shape.push_back(static_cast<int64_t>(n));
  }
  uint64_t nbytes = 0;
  VIDAX_CHECK(numel <= uint64_t(INT64_MAX) && !__builtin_mul_overflow(numel, uint64_t(dtype_size(e.dtype)), &nbytes),
              file << ": tensor '" << name << "': shape " << sh->dump() << " overflows");

  auto off = v.find("data_offsets");
  VIDAX_CHECK(off != v.end(), file << ": tensor '" << name << "': missing \"data_offsets\"");
  VIDAX_CHECK(off->is_array() && off->size() == 2,
              file << ": tensor '" << name << "': \"data_offsets\" must be [begin, end], found " << off->dump());
  e.begin = json_u64((*off)[0], file, name, "\"data_offsets\"");
  e.end = json_u64((*off)[1], file, name, "\"data_offsets\"");
  VIDAX_CHECK(e.begin <= e.end, file << ": tensor '" << name << "': data_offsets [" << e.begin << ", " << e.end
                                     << "] end before they begin");
  VIDAX_CHECK(e.end - e.begin == nbytes, file << ": tensor '" << name << "': " << dname << shape_str(e.shape)
                                              << " needs " << nbytes << " bytes but data_offsets [" << e.begin
                                              << ", " << e.end << "] hold " << (e.end - e.begin));
  return e;
}

}  // namespace

SafetensorsHeader parse_safetensors_header(const uint8_t* data, size_t size, const std::string& file) {
  VIDAX_CHECK(size >= 8, file << ": too short for safetensors (" << size << " bytes, the header length alone is 8)");
  const uint64_t n = read_u64_le(data);
  VIDAX_CHECK(n <= kMaxSafetensorsHeaderBytes, file << ": safetensors header length " << n << " exceeds the "
                                                    << kMaxSafetensorsHeaderBytes << "-byte limit (corrupt file?)");
  VIDAX_CHECK(n <= size - 8, file << ": safetensors header length " << n << " runs past the end of the file ("
                                  << size << " bytes): truncated file?");
  VIDAX_CHECK(n >= 2 && data[8] == '{', file << ": safetensors header does not start with '{'");
  SafetensorsHeader h;
  h.data_start = 8 + n;
  const uint64_t data_size = size - h.data_start;

  const char* text = reinterpret_cast<const char*>(data + 8);
  json root = parse_json_no_duplicates(text, text + n, file);
  VIDAX_CHECK(root.is_object(), file << ": safetensors header must be a JSON object");

  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it.key() == "__metadata__") {
      VIDAX_CHECK(it->is_object(), file << ": \"__metadata__\" must be an object of strings");
      for (auto m = it->begin(); m != it->end(); ++m) {
        VIDAX_CHECK(m->is_string(), file << ": \"__metadata__\" value of '" << m.key()
                                         << "' must be a string, found " << m->dump());
        h.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    SafetensorsEntry e = parse_entry(it.key(), *it, file);
    VIDAX_CHECK(e.end <= data_size, file << ": tensor '" << e.name << "': data_offsets [" << e.begin << ", " << e.end
                                         << "] run past the data section (" << data_size
                                         << " bytes): truncated file?");
    h.entries.push_back(std::move(e));
  }

  // No two tensors may share bytes (empty tensors own no bytes).
  std::vector<const SafetensorsEntry*> by_offset;
  for (const auto& e : h.entries)
    if (e.end > e.begin) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const SafetensorsEntry* a, const SafetensorsEntry* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const SafetensorsEntry& a = *by_offset[i - 1];
    const SafetensorsEntry& b = *by_offset[i];
    VIDAX_CHECK(b.begin >= a.end, file << ": tensors '" << a.name << "' [" << a.begin << ", " << a.end << ") and '"
                                       << b.name << "' [" << b.begin << ", " << b.end << ") overlap");
  }
  return h;
}

Tensor safetensors_tensor(const std::shared_ptr<MappedFile>& file, const SafetensorsHeader& header,
                          const SafetensorsEntry& entry) {
  const size_t offset = static_cast<size_t>(header.data_start + entry.begin);
  const size_t bytes = static_cast<size_t>(entry.end - entry.begin);
  auto buf = MappedFile::view(file, offset, bytes);
  Tensor view = Tensor::from_buffer(buf, 0, entry.shape, entry.dtype);
  // Kernels read typed pointers: a misaligned view (possible when a writer does
  // not pad) is copied into aligned memory instead.
  if (reinterpret_cast<uintptr_t>(buf->data()) % dtype_size(entry.dtype) != 0) return view.clone();
  return view;
}

// ---- writer ------------------------------------------------------------------

namespace {

// The one writer: a header from (name, dtype, shape) in the reference writer's order, then each
// tensor's bytes from `get`, one at a time (a streamed writer holds one tensor at a time).
void write_safetensors(const std::string& path, std::vector<TensorSpec> specs,
                       const std::function<Tensor(const std::string&)>& get,
                       const std::map<std::string, std::string>& metadata) {
  check_output_target(path);  // before any work: -o /dev/null must not be replaced by a file
  // Largest elements first, then by name (the order the reference writer uses):
  // with an 8-aligned data section every tensor is then aligned to its element size.
  std::sort(specs.begin(), specs.end(), [](const TensorSpec& a, const TensorSpec& b) { return a.name < b.name; });
  std::stable_sort(specs.begin(), specs.end(),
                   [](const TensorSpec& a, const TensorSpec& b) { return dtype_size(a.dtype) > dtype_size(b.dtype); });
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& e : specs) {
    VIDAX_CHECK(e.name != "__metadata__", path << ": '__metadata__' is reserved and cannot name a tensor");
    const uint64_t n = static_cast<uint64_t>(shape_numel(e.shape)) * dtype_size(e.dtype);
    header[e.name] = {{"dtype", dtype_name(e.dtype)}, {"shape", e.shape}, {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(uint64_t(text.size()) >> (8 * i));

  TempFile tmp;
  tmp.open_next_to(path);
  write_all(tmp.fd, len, 8, path);
  write_all(tmp.fd, text.data(), text.size(), path);
  for (const auto& e : specs) {
    const Tensor t = get(e.name);
    VIDAX_CHECK(t.defined(), path << ": tensor '" << e.name << "' is undefined");
    VIDAX_CHECK(t.device() == Device::CPU, path << ": tensor '" << e.name << "' is on " << device_name(t.device())
                                                << ", not the CPU");
    VIDAX_CHECK(t.dtype() == e.dtype && t.shape() == e.shape,
                path << ": tensor '" << e.name << "' is " << t.str() << ", the header says " << dtype_name(e.dtype)
                     << shape_str(e.shape));
    VIDAX_CHECK(!t.is_quantized(), path << ": tensor '" << e.name << "' is " << t.str()
                                         << ": safetensors has no block-quantized types (write GGUF)");
    VIDAX_CHECK(!t.is_scaled(), path << ": tensor '" << e.name << "' is " << t.str()
                                     << ": store its values and its scale_weight (io::split_scaled)");
    Tensor c = t.contiguous();
    if (c.nbytes() > 0) write_all(tmp.fd, c.data_ptr(), c.nbytes(), path);
  }
  tmp.commit(path);
}

}  // namespace

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::vector<TensorSpec> specs;
  for (const auto& [n, t] : tensors) {
    VIDAX_CHECK(n != "__metadata__", path << ": '__metadata__' is reserved and cannot name a tensor");
    VIDAX_CHECK(t.defined(), path << ": tensor '" << n << "' is undefined");
    VIDAX_CHECK(t.device() == Device::CPU, path << ": tensor '" << n << "' is on " << device_name(t.device())
                                                << ", not the CPU");
    VIDAX_CHECK(!t.is_quantized(), path << ": tensor '" << n << "' is " << t.str()
                                        << ": safetensors has no block-quantized types (write GGUF)");
    VIDAX_CHECK(!t.is_scaled(), path << ": tensor '" << n << "' is " << t.str()
                                     << ": store its values and its scale_weight (io::split_scaled)");
    specs.push_back({n, t.dtype(), t.shape()});
  }
  write_safetensors(path, std::move(specs), [&](const std::string& n) { return tensors.at(n); }, metadata);
}

void save_safetensors_streamed(const std::string& path, const std::vector<TensorSpec>& tensors,
                               const std::function<Tensor(const std::string& name)>& make,
                               const std::map<std::string, std::string>& metadata) {
  write_safetensors(path, tensors, make, metadata);
}

}  // namespace vidax::io
