#include "io/checkpoint.h"
#include "io/output_target.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "io/mapped_file.h"
#include "io/quant_policy.h"
#include "io/safetensors.h"
#include "io/source.h"

namespace vidax::io {

namespace fs = std::filesystem;

struct Checkpoint::Impl {
  struct Entry {
    TensorInfo info;
    std::function<Tensor()> load;
  };
  std::map<std::string, Entry> entries;
  std::map<std::string, std::string> metadata;

  void add(SourceFile&& f) {
    for (auto& t : f.tensors) {
      auto [it, fresh] = entries.try_emplace(t.info.name, Entry{t.info, std::move(t.load)});
      VIDAX_CHECK(fresh, "tensor '" << t.info.name << "' appears in both " << it->second.info.file << " and "
                                    << t.info.file << " (open one of them, or the index that lists the shards)");
    }
    for (auto& [k, v] : f.metadata) metadata.try_emplace(k, v);  // the first file's value wins
  }
};

FileFormat detect_format(const uint8_t* d, size_t n) {
  if (n >= 4 && std::memcmp(d, "PK\x03\x04", 4) == 0) return FileFormat::TorchZip;
  if (n >= 4 && std::memcmp(d, "GGUF", 4) == 0) return FileFormat::GGUF;
  // safetensors before the pickle test: its little-endian header length can itself begin 0x80 0x02..0x05
  // (a 640, 896, 1152 or 1408 byte header). The length's high four bytes are zero (headers < 4 GiB);
  // in a torch legacy file they are the magic number's, and a pickle's byte 8 is no '{'.
  if (n >= 9 && d[8] == '{' && d[4] == 0 && d[5] == 0 && d[6] == 0 && d[7] == 0) return FileFormat::Safetensors;
  if (n >= 2 && d[0] == 0x80 && d[1] >= 2 && d[1] <= 5) return FileFormat::TorchLegacy;
  return FileFormat::Unknown;
}

const char* format_name(FileFormat f) {
  switch (f) {
    case FileFormat::Safetensors: return "safetensors";
    case FileFormat::TorchZip: return "torch zip";
    case FileFormat::TorchLegacy: return "torch legacy";
    case FileFormat::GGUF: return "gguf";
    case FileFormat::Unknown: return "unknown";
  }
  return "?";
}

SourceFile read_safetensors_file(const std::string& path) {
  auto file = MappedFile::open(path);
  auto header = std::make_shared<SafetensorsHeader>(parse_safetensors_header(file->data(), file->size(), path));
  SourceFile out;
  out.metadata = header->metadata;
  for (size_t i = 0; i < header->entries.size(); ++i) {
    const SafetensorsEntry& e = header->entries[i];
    SourceTensor t;
    t.info = TensorInfo{e.name, e.dtype, e.shape, path};
    t.load = [file, header, i]() { return safetensors_tensor(file, *header, header->entries[i]); };
    out.tensors.push_back(std::move(t));
  }
  return out;
}

std::string scale_name_for(const std::string& weight_name) {
  static const std::string kSuffix = ".weight";
  if (!weight_name.ends_with(kSuffix)) return "";
  return weight_name.substr(0, weight_name.size() - kSuffix.size()) + ".scale_weight";
}

void split_scaled(const std::string& name, const Tensor& t, std::map<std::string, Tensor>& out) {
  if (!t.is_scaled()) {
    out.emplace(name, t);
    return;
  }
  const std::string sn = scale_name_for(name);
  VIDAX_CHECK(!sn.empty(), "tensor '" << name << "' is scaled (" << t.str()
                                      << ") but its name does not end in '.weight', so its scale has no name");
  out.emplace(name, t.unscaled());
  out.emplace(sn, t.weight_scale());
}

namespace {

bool is_scaled_weight_dtype(DType d) { return d == DType::F8_E4M3 || d == DType::F8_E5M2 || d == DType::I8; }

// Folds `<p>.scale_weight` into `<p>.weight` (Tensor::scaled) and drops the `scaled_fp8` marker
// and `<p>.scale_input`: the model then sees one weight under its usual name.
void fold_weight_scales(SourceFile& f, const std::string& path) {
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < f.tensors.size(); ++i) at[f.tensors[i].info.name] = i;
  std::vector<bool> drop(f.tensors.size(), false);
  bool any = false;
  for (size_t i = 0; i < f.tensors.size(); ++i) {
    const TensorInfo& si = f.tensors[i].info;
    const std::string& n = si.name;
    if (n == "scaled_fp8" || n.ends_with(".scaled_fp8") || n.ends_with(".scale_input")) {
      drop[i] = true;
      continue;
    }
    if (!n.ends_with(".scale_weight")) continue;
    const std::string wn = n.substr(0, n.size() - std::string(".scale_weight").size()) + ".weight";
    auto it = at.find(wn);
    VIDAX_CHECK(it != at.end(), path << ": tensor '" << n << "' scales '" << wn << "', which the file does not hold");
    SourceTensor& w = f.tensors[it->second];
    VIDAX_CHECK(is_scaled_weight_dtype(w.info.dtype) && w.info.quant == QuantType::None,
                path << ": tensor '" << n << "' scales '" << wn << "', which is " << w.info.type_name()
                     << "; only F8_E4M3, F8_E5M2 and I8 weights carry a scale_weight");
    VIDAX_CHECK(dtype_is_float(si.dtype), path << ": tensor '" << n << "' is " << dtype_name(si.dtype)
                                               << ", expected a float scale");
    const int64_t rows = w.info.shape.empty() ? 1 : w.info.shape[0];
    const bool per_tensor = shape_numel(si.shape) == 1 && si.shape.size() <= 1;
    const bool per_row = w.info.shape.size() == 2 && si.shape == Shape{rows};
    VIDAX_CHECK(per_tensor || per_row,
                path << ": tensor '" << n << "' has shape " << shape_str(si.shape) << ", which does not fit '" << wn
                     << "' " << dtype_name(w.info.dtype) << shape_str(w.info.shape)
                     << " (expected [] or [1]: one scale for the tensor, or [" << rows << "]: one per row)");
    w.load = [values = w.load, scale = f.tensors[i].load, path, wn]() {
      try {
        return Tensor::scaled(values(), scale());
      } catch (const Error& e) {
        throw Error(msg() << path << ": tensor '" << wn << "': " << e.what());
      }
    };
    w.info.scaled = true;
    drop[i] = true;
    any = true;
  }
  if (!any && std::none_of(drop.begin(), drop.end(), [](bool b) { return b; })) return;
  std::vector<SourceTensor> kept;
  for (size_t i = 0; i < f.tensors.size(); ++i)
    if (!drop[i]) kept.push_back(std::move(f.tensors[i]));
  f.tensors = std::move(kept);
}

SourceFile read_any_file_unfolded(const std::string& path);

SourceFile read_any_file(const std::string& path) {
  SourceFile f = read_any_file_unfolded(path);
  fold_weight_scales(f, path);
  return f;
}

SourceFile read_any_file_unfolded(const std::string& path) {
  std::ifstream probe(path, std::ios::binary);
  VIDAX_CHECK(probe.good(), path << ": cannot open: " << std::strerror(errno));
  uint8_t head[16] = {};
  probe.read(reinterpret_cast<char*>(head), sizeof head);
  const FileFormat f = detect_format(head, static_cast<size_t>(probe.gcount()));
  switch (f) {
    case FileFormat::Safetensors: return read_safetensors_file(path);
    case FileFormat::TorchZip:
    case FileFormat::TorchLegacy: return read_torch_file(path);
    case FileFormat::GGUF: return read_gguf_file(path);
    case FileFormat::Unknown: break;
  }
  // Name the format the extension promised, so a broken file gets a useful message.
  if (path.size() >= 12 && path.ends_with(".safetensors")) return read_safetensors_file(path);
  throw Error(msg() << path << ": unrecognised checkpoint format (expected safetensors, a torch.save zip or pickle, GGUF)");
}

bool is_checkpoint_name(const std::string& name) {
  if (name.ends_with(".safetensors.index.json")) return false;
  return name.ends_with(".safetensors") || name.ends_with(".pth") || name.ends_with(".pt") || name.ends_with(".bin") ||
         name.ends_with(".gguf");
}

// {"metadata": {...}, "weight_map": {"name": "shard.safetensors", ...}}
void open_index(Checkpoint::Impl& impl, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  VIDAX_CHECK(in.good(), path << ": cannot open: " << std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json index;
  try {
    index = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(msg() << path << ": index is not valid JSON: " << e.what());
  }
  VIDAX_CHECK(index.is_object() && index.contains("weight_map") && index["weight_map"].is_object(),
              path << ": index has no \"weight_map\" object");
  std::map<std::string, std::vector<std::string>> by_file;  // shard -> names the index puts there
  for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
    VIDAX_CHECK(it->is_string(), path << ": weight_map entry '" << it.key() << "' is not a file name");
    const std::string shard = it->get<std::string>();
    VIDAX_CHECK(!shard.empty() && shard.find('/') == std::string::npos && shard != "." && shard != "..",
                path << ": weight_map entry '" << it.key() << "' names '" << shard << "', not a file beside the index");
    by_file[shard].push_back(it.key());
  }
  const fs::path dir = fs::path(path).parent_path();
  for (auto& [shard, names] : by_file) {
    const std::string shard_path = (dir / shard).string();
    SourceFile f = read_any_file(shard_path);
    std::sort(names.begin(), names.end());
    std::vector<std::string> have;
    for (const auto& t : f.tensors) have.push_back(t.info.name);
    std::sort(have.begin(), have.end());
    for (const auto& n : names)
      VIDAX_CHECK(std::binary_search(have.begin(), have.end(), n),
                  path << ": index puts tensor '" << n << "' in " << shard_path << ", which does not hold it");
    for (const auto& n : have)
      VIDAX_CHECK(std::binary_search(names.begin(), names.end(), n),
                  path << ": shard " << shard_path << " holds tensor '" << n << "', which the index does not list");
    impl.add(std::move(f));
  }
}

}  // namespace

Checkpoint Checkpoint::open(const std::string& path) {
  Checkpoint c;
  c.impl_ = std::make_shared<Impl>();
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (const std::string p = input_file_problem(path); !p.empty() && !fs::is_directory(st))
    throw Error(msg() << path << ": is " << p << ", not a checkpoint file");  // before open(2): a FIFO blocks there
  VIDAX_CHECK(!ec && fs::exists(st), path << ": no such file or directory");
  if (fs::is_directory(st)) {
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(path)) {
      const std::string name = e.path().filename().string();
      if (e.is_regular_file() && is_checkpoint_name(name)) files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    VIDAX_CHECK(!files.empty(), path << ": directory holds no *.safetensors, *.pth, *.pt, *.bin or *.gguf file");
    for (const auto& f : files) c.impl_->add(read_any_file(f));
  } else if (path.ends_with(".index.json")) {
    open_index(*c.impl_, path);
  } else {
    c.impl_->add(read_any_file(path));
  }
  return c;
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> v;
  v.reserve(impl_->entries.size());
  for (const auto& kv : impl_->entries) v.push_back(kv.first);
  return v;
}

bool Checkpoint::contains(const std::string& name) const { return impl_->entries.count(name) > 0; }

const TensorInfo& Checkpoint::info(const std::string& name) const {
  auto it = impl_->entries.find(name);
  VIDAX_CHECK(it != impl_->entries.end(), "checkpoint has no tensor '" << name << "'");
  return it->second.info;
}

Tensor Checkpoint::get(const std::string& name) const {
  auto it = impl_->entries.find(name);
  VIDAX_CHECK(it != impl_->entries.end(), "checkpoint has no tensor '" << name << "'");
  return it->second.load();
}

size_t Checkpoint::size() const { return impl_->entries.size(); }

const std::map<std::string, std::string>& Checkpoint::metadata() const { return impl_->metadata; }

Checkpoint Checkpoint::quantized(QuantType type, const std::function<bool(const std::string&)>& keep,
                                 std::vector<std::string>* quantized_names) const {
  Checkpoint c;
  c.impl_ = std::make_shared<Impl>(*impl_);
  for (auto& [name, e] : c.impl_->entries) {
    if (keep && keep(name)) continue;
    if (e.info.quant != QuantType::None || !quant_decision(name, e.info.shape, e.info.dtype, type).quantize) continue;
    e.load = [load = e.load, type]() { return Tensor::quantize(load(), type); };
    e.info.dtype = DType::U8;
    e.info.quant = type;
    if (quantized_names) quantized_names->push_back(name);
  }
  return c;
}

Checkpoint Checkpoint::scaled(DType type, const std::function<bool(const std::string&)>& keep,
                              std::vector<std::string>* quantized_names) const {
  Checkpoint c;
  c.impl_ = std::make_shared<Impl>(*impl_);
  for (auto& [name, e] : c.impl_->entries) {
    if (keep && keep(name)) continue;
    if (e.info.quant != QuantType::None || e.info.scaled ||
        !quant_decision(name, e.info.shape, e.info.dtype, type).quantize)
      continue;
    e.load = [load = e.load, type]() { return Tensor::quantize_scaled(load(), type); };
    e.info.dtype = type;
    e.info.scaled = true;
    if (quantized_names) quantized_names->push_back(name);
  }
  return c;
}

}  // namespace vidax::io
