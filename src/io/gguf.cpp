#include "io/gguf.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/mapped_file.h"
#include "io/source.h"
#include "io/temp_file.h"

namespace vidax::io {

namespace {

// ggml_type ids (ggml.h) that are plain element types; the block-quantized types vidax computes
// on come from core/quant.h's table, the other ggml types are named in the refusal.
struct PlainType { uint32_t id; DType dtype; };
constexpr PlainType kPlainTypes[] = {
    {0, DType::F32}, {1, DType::F16}, {24, DType::I8}, {25, DType::I16}, {26, DType::I32},
    {27, DType::I64}, {28, DType::F64}, {30, DType::BF16},
};
struct OtherType { uint32_t id; const char* name; };
constexpr OtherType kOtherTypes[] = {
    {9, "Q8_1"},    {15, "Q8_K"},   {16, "IQ2_XXS"}, {17, "IQ2_XS"}, {18, "IQ3_XXS"}, {19, "IQ1_S"},
    {20, "IQ4_NL"}, {21, "IQ3_S"},  {22, "IQ2_S"},   {23, "IQ4_XS"}, {29, "IQ1_M"},   {34, "TQ1_0"},
    {35, "TQ2_0"},  {39, "MXFP4"},
};

// Metadata value types (gguf_type).
enum : uint32_t { U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7, STRING = 8, ARRAY = 9,
                  U64 = 10, I64 = 11, F64 = 12 };
constexpr int kMaxArrayDepth = 8;
// GGML_MAX_DIMS is 4, but the public Wan and HunyuanVideo GGUFs (city96's fix_5d_tensors.py,
// written by the gguf package, which does not check) hold the 5-D patch embedding as F32.
constexpr uint32_t kMaxDims = 5;

class Cursor {
 public:
  Cursor(const uint8_t* d, size_t n, const std::string& file) : d_(d), n_(n), file_(file) {}
  size_t pos() const { return pos_; }
  size_t left() const { return n_ - pos_; }
  template <class T> T get(const char* what) {
    VIDAX_CHECK(left() >= sizeof(T), file_ << ": GGUF " << what << " at byte " << pos_ << " runs past the end of the file (truncated?)");
    T v;
    std::memcpy(&v, d_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string str(const char* what) {
    const uint64_t len = get<uint64_t>(what);
    VIDAX_CHECK(len <= left(), file_ << ": GGUF " << what << " of " << len << " bytes at byte " << pos_
                                     << " runs past the end of the file (truncated?)");
    std::string s(reinterpret_cast<const char*>(d_ + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return s;
  }

 private:
  const uint8_t* d_;
  size_t n_;
  const std::string& file_;
  size_t pos_ = 0;
};

nlohmann::json read_value(Cursor& c, uint32_t type, const std::string& key, const std::string& file, int depth) {
  switch (type) {
    case U8: return c.get<uint8_t>("value");
    case I8: return c.get<int8_t>("value");
    case U16: return c.get<uint16_t>("value");
    case I16: return c.get<int16_t>("value");
    case U32: return c.get<uint32_t>("value");
    case I32: return c.get<int32_t>("value");
    case U64: return c.get<uint64_t>("value");
    case I64: return c.get<int64_t>("value");
    case F32: return c.get<float>("value");
    case F64: return c.get<double>("value");
    case BOOL: {
      const uint8_t b = c.get<uint8_t>("value");
      VIDAX_CHECK(b <= 1, file << ": GGUF key '" << key << "': bool value " << int(b));
      return b == 1;
    }
    case STRING: return c.str("string value");
    case ARRAY: {
      VIDAX_CHECK(depth < kMaxArrayDepth, file << ": GGUF key '" << key << "': arrays nested too deep");
      const uint32_t elem = c.get<uint32_t>("array type");
      const uint64_t count = c.get<uint64_t>("array length");
      // Every element takes at least one byte: a count beyond the file is a lie.
      VIDAX_CHECK(count <= c.left(), file << ": GGUF key '" << key << "': array of " << count
                                          << " elements cannot fit in the file");
      nlohmann::json arr = nlohmann::json::array();
      for (uint64_t i = 0; i < count; ++i) arr.push_back(read_value(c, elem, key, file, depth + 1));
      return arr;
    }
    default: throw Error(msg() << file << ": GGUF key '" << key << "' has unknown value type " << type);
  }
}

}  // namespace

std::string type_str(const GgufTensor& t) {
  return std::string(t.quant == QuantType::None ? dtype_name(t.dtype) : quant_name(t.quant)) + shape_str(t.shape);
}

GgufHeader parse_gguf_header(const uint8_t* data, size_t size, const std::string& file) {
  Cursor c(data, size, file);
  VIDAX_CHECK(size >= 4 && std::memcmp(data, "GGUF", 4) == 0, file << ": not a GGUF file (no GGUF magic)");
  c.get<uint32_t>("magic");
  GgufHeader h;
  h.version = c.get<uint32_t>("version");
  VIDAX_CHECK(h.version == 2 || h.version == 3,
              file << ": GGUF version " << h.version << " is not supported (2 and 3 are; a big-endian file reads as a huge version)");
  const uint64_t n_tensors = c.get<uint64_t>("tensor count");
  const uint64_t n_kv = c.get<uint64_t>("metadata count");
  VIDAX_CHECK(n_tensors <= c.left() / 24 && n_kv <= c.left() / 12,
              file << ": GGUF header claims " << n_tensors << " tensors and " << n_kv
                   << " metadata entries, more than the file can hold");

  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.str("metadata key");
    const uint32_t type = c.get<uint32_t>("metadata type");
    nlohmann::json v = read_value(c, type, key, file, 0);
    if (key == "general.alignment") {
      VIDAX_CHECK(v.is_number_unsigned() && v.get<uint64_t>() > 0 && v.get<uint64_t>() <= (1u << 20) &&
                      (v.get<uint64_t>() & (v.get<uint64_t>() - 1)) == 0,
                  file << ": GGUF general.alignment " << v.dump() << " is not a power of two");
      h.alignment = v.get<uint64_t>();
    }
    VIDAX_CHECK(h.metadata.emplace(key, v.is_string() ? v.get<std::string>() : v.dump()).second,
                file << ": GGUF metadata key '" << key << "' appears twice");
  }

  std::map<std::string, bool> names;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensor t;
    t.name = c.str("tensor name");
    VIDAX_CHECK(names.emplace(t.name, true).second, file << ": GGUF tensor '" << t.name << "' appears twice");
    const uint32_t n_dims = c.get<uint32_t>("tensor rank");
    VIDAX_CHECK(n_dims <= kMaxDims, file << ": tensor '" << t.name << "' has " << n_dims << " dimensions (GGUF allows 4, "
                                         << kMaxDims << " with the 5-D convention of the public video GGUFs)");
    uint64_t numel = 1;
    std::vector<int64_t> dims;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t n = c.get<uint64_t>("tensor dimension");
      VIDAX_CHECK(n <= uint64_t(INT64_MAX) && !__builtin_mul_overflow(numel, n, &numel),
                  file << ": tensor '" << t.name << "': dimensions overflow");
      dims.push_back(static_cast<int64_t>(n));
    }
    t.shape.assign(dims.rbegin(), dims.rend());
    const uint32_t type = c.get<uint32_t>("tensor type");
    const PlainType* plain = nullptr;
    for (const auto& k : kPlainTypes)
      if (k.id == type) plain = &k;
    if (plain != nullptr) {
      t.dtype = plain->dtype;
      VIDAX_CHECK(!__builtin_mul_overflow(numel, uint64_t(dtype_size(t.dtype)), &t.nbytes),
                  file << ": tensor '" << t.name << "': size overflows");
    } else if (const QuantTraits* q = quant_from_ggml_id(type)) {
      t.dtype = DType::U8;
      t.quant = q->type;
      const uint64_t row = dims.empty() ? 1 : static_cast<uint64_t>(dims[0]);  // GGUF lists the row first
      VIDAX_CHECK(!dims.empty() && row % static_cast<uint64_t>(q->block) == 0,
                  file << ": tensor '" << t.name << "' is " << q->name << " with rows of " << row
                       << " values, not a multiple of its " << q->block << "-value block");
      const uint64_t rows = row == 0 ? 0 : numel / row;
      VIDAX_CHECK(!__builtin_mul_overflow(rows * (row / q->block), uint64_t(q->block_bytes), &t.nbytes),
                  file << ": tensor '" << t.name << "': size overflows");
    } else {
      const char* name = nullptr;
      for (const auto& k : kOtherTypes)
        if (k.id == type) name = k.name;
      VIDAX_CHECK(name != nullptr, file << ": tensor '" << t.name << "' has unknown GGML type " << type);
      throw Error(msg() << file << ": tensor '" << t.name << "' is " << name << "-quantized; vidax reads F32, F16, BF16, F64, "
                        << "integer and the block types " << quant_names_list() << " (not " << name << ")");
    }
    t.offset = c.get<uint64_t>("tensor offset");
    h.tensors.push_back(std::move(t));
  }
  // The data section starts at the next multiple of the alignment.
  const uint64_t pos = c.pos();
  h.data_start = (pos + h.alignment - 1) / h.alignment * h.alignment;
  VIDAX_CHECK(h.data_start <= size, file << ": GGUF data section starts past the end of the file (truncated?)");
  const uint64_t data_size = size - h.data_start;
  for (const auto& t : h.tensors) {
    VIDAX_CHECK(t.offset % h.alignment == 0, file << ": tensor '" << t.name << "' offset " << t.offset
                                                  << " is not a multiple of the alignment " << h.alignment);
    VIDAX_CHECK(t.offset <= data_size && t.nbytes <= data_size - t.offset,
                file << ": tensor '" << t.name << "' (" << type_str(t) << ", " << t.nbytes << " bytes at offset "
                     << t.offset << ") runs past the data section (" << data_size << " bytes): truncated file?");
  }
  std::vector<const GgufTensor*> by_offset;
  for (const auto& t : h.tensors)
    if (t.nbytes > 0) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i)
    VIDAX_CHECK(by_offset[i]->offset >= by_offset[i - 1]->offset + by_offset[i - 1]->nbytes,
                file << ": tensors '" << by_offset[i - 1]->name << "' and '" << by_offset[i]->name << "' overlap: '"
                     << by_offset[i - 1]->name << "' (" << type_str(*by_offset[i - 1]) << ") takes "
                     << by_offset[i - 1]->nbytes << " bytes from offset " << by_offset[i - 1]->offset
                     << ", but the next tensor starts at " << by_offset[i]->offset
                     << " (a byte size that does not match its type and shape?)");
  return h;
}

SourceFile read_gguf_file(const std::string& path) {
  auto file = MappedFile::open(path);
  auto header = std::make_shared<GgufHeader>(parse_gguf_header(file->data(), file->size(), path));
  SourceFile out;
  out.metadata = header->metadata;
  for (size_t i = 0; i < header->tensors.size(); ++i) {
    const GgufTensor& g = header->tensors[i];
    SourceTensor t;
    t.info = TensorInfo{g.name, g.dtype, g.shape, path, g.quant};
    t.load = [file, header, i]() {
      const GgufTensor& g = header->tensors[i];
      auto buf = MappedFile::view(file, static_cast<size_t>(header->data_start + g.offset), static_cast<size_t>(g.nbytes));
      // Blocks are read with memcpy (core/quant.cpp): a quantized view needs no alignment.
      if (g.quant != QuantType::None) return Tensor::quantized(buf, 0, g.shape, g.quant);
      Tensor v = Tensor::from_buffer(buf, 0, g.shape, g.dtype);
      if (reinterpret_cast<uintptr_t>(buf->data()) % dtype_size(g.dtype) != 0) return v.clone();
      return v;
    };
    out.tensors.push_back(std::move(t));
  }
  return out;
}

namespace {

uint32_t gguf_type_id(const GgufWriteTensor& t, const std::string& path) {
  if (t.quant != QuantType::None) return quant_traits(t.quant).ggml_id;
  for (const auto& k : kPlainTypes)
    if (k.dtype == t.dtype) return k.id;
  throw Error(msg() << path << ": tensor '" << t.name << "' is " << dtype_name(t.dtype) << ", which GGUF cannot hold");
}

class Bytes {
 public:
  template <class T> void put(T v) { const auto* p = reinterpret_cast<const char*>(&v); s_.append(p, sizeof(T)); }
  void str(const std::string& v) { put<uint64_t>(v.size()); s_ += v; }
  std::string& data() { return s_; }
 private:
  std::string s_;
};

}  // namespace

void write_gguf(const std::string& path, const std::vector<GgufWriteTensor>& tensors,
                const std::map<std::string, std::string>& metadata) {
  check_output_target(path);
  constexpr uint64_t kAlign = 32;
  Bytes h;
  h.data() = "GGUF";
  h.put<uint32_t>(3);
  h.put<uint64_t>(tensors.size());
  const bool has_alignment = metadata.count("general.alignment") > 0;
  h.put<uint64_t>(metadata.size() + (has_alignment ? 0 : 1));
  if (!has_alignment) {
    h.str("general.alignment");
    h.put<uint32_t>(U32);
    h.put<uint32_t>(static_cast<uint32_t>(kAlign));
  }
  for (const auto& [k, v] : metadata) {
    h.str(k);
    if (k == "general.alignment") {
      VIDAX_CHECK(v == std::to_string(kAlign), path << ": general.alignment " << v << " (the writer aligns to " << kAlign << ")");
      h.put<uint32_t>(U32);
      h.put<uint32_t>(static_cast<uint32_t>(kAlign));
      continue;
    }
    h.put<uint32_t>(STRING);
    h.str(v);
  }
  std::vector<uint64_t> sizes;
  uint64_t offset = 0;
  std::map<std::string, bool> seen;
  for (const auto& t : tensors) {
    VIDAX_CHECK(seen.emplace(t.name, true).second, path << ": tensor '" << t.name << "' given twice");
    VIDAX_CHECK(!t.shape.empty() && t.shape.size() <= kMaxDims,
                path << ": tensor '" << t.name << "' has " << t.shape.size() << " dimensions (GGUF: 1 to " << kMaxDims << ")");
    h.str(t.name);
    h.put<uint32_t>(static_cast<uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) h.put<uint64_t>(static_cast<uint64_t>(*it));
    h.put<uint32_t>(gguf_type_id(t, path));
    h.put<uint64_t>(offset);
    TensorInfo info{t.name, t.quant != QuantType::None ? DType::U8 : t.dtype, t.shape, path, t.quant};
    sizes.push_back(info.nbytes());
    offset += (sizes.back() + kAlign - 1) / kAlign * kAlign;
  }
  h.data().append((kAlign - h.data().size() % kAlign) % kAlign, '\0');

  TempFile tmp;
  tmp.open_next_to(path);
  write_all(tmp.fd, h.data().data(), h.data().size(), path);
  const std::string pad(kAlign, '\0');
  for (size_t i = 0; i < tensors.size(); ++i) {
    const GgufWriteTensor& t = tensors[i];
    Tensor v = t.make();
    VIDAX_CHECK(v.defined() && v.shape() == t.shape && v.quant() == t.quant && (t.quant != QuantType::None || v.dtype() == t.dtype),
                path << ": tensor '" << t.name << "' came out " << v.str() << ", not the declared "
                     << (t.quant != QuantType::None ? quant_name(t.quant) : dtype_name(t.dtype)) << shape_str(t.shape));
    v = v.is_quantized() ? v.to_host() : v.contiguous().to_host();
    VIDAX_CHECK(v.nbytes() == sizes[i], path << ": tensor '" << t.name << "': " << v.nbytes() << " bytes, expected " << sizes[i]);
    if (sizes[i] > 0) write_all(tmp.fd, v.data_ptr(), sizes[i], path);
    write_all(tmp.fd, pad.data(), (kAlign - sizes[i] % kAlign) % kAlign, path);
  }
  tmp.commit(path);
}

void write_gguf(const std::string& path, const std::map<std::string, Tensor>& tensors,
                const std::map<std::string, std::string>& metadata) {
  std::vector<GgufWriteTensor> list;
  for (const auto& [name, t] : tensors) {
    VIDAX_CHECK(t.defined(), path << ": tensor '" << name << "' is undefined");
    list.push_back({name, t.shape(), t.dtype(), t.quant(), [v = t]() { return v; }});
  }
  write_gguf(path, list, metadata);
}

}  // namespace vidax::io
