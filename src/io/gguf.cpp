#include "io/gguf.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/mapped_file.h"
#include "io/source.h"

namespace vidax::io {

namespace {

// ggml_type ids (ggml.h) and what vidax holds them as.
struct GgmlType { uint32_t id; const char* name; bool plain; DType dtype; };
constexpr GgmlType kGgmlTypes[] = {
    {0, "F32", true, DType::F32},      {1, "F16", true, DType::F16},     {2, "Q4_0", false, DType::U8},
    {3, "Q4_1", false, DType::U8},     {6, "Q5_0", false, DType::U8},    {7, "Q5_1", false, DType::U8},
    {8, "Q8_0", false, DType::U8},     {9, "Q8_1", false, DType::U8},    {10, "Q2_K", false, DType::U8},
    {11, "Q3_K", false, DType::U8},    {12, "Q4_K", false, DType::U8},   {13, "Q5_K", false, DType::U8},
    {14, "Q6_K", false, DType::U8},    {15, "Q8_K", false, DType::U8},   {16, "IQ2_XXS", false, DType::U8},
    {17, "IQ2_XS", false, DType::U8},  {18, "IQ3_XXS", false, DType::U8}, {19, "IQ1_S", false, DType::U8},
    {20, "IQ4_NL", false, DType::U8},  {21, "IQ3_S", false, DType::U8},  {22, "IQ2_S", false, DType::U8},
    {23, "IQ4_XS", false, DType::U8},  {24, "I8", true, DType::I8},      {25, "I16", true, DType::I16},
    {26, "I32", true, DType::I32},     {27, "I64", true, DType::I64},    {28, "F64", true, DType::F64},
    {29, "IQ1_M", false, DType::U8},   {30, "BF16", true, DType::BF16},  {34, "TQ1_0", false, DType::U8},
    {35, "TQ2_0", false, DType::U8},   {39, "MXFP4", false, DType::U8},
};

// Metadata value types (gguf_type).
enum : uint32_t { U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7, STRING = 8, ARRAY = 9,
                  U64 = 10, I64 = 11, F64 = 12 };
constexpr int kMaxArrayDepth = 8;
// GGML_MAX_DIMS is 4, but the public Wan GGUFs (city96's, tools/fix_5d_tensors.py of
// ComfyUI-GGUF) store the DiT's 5-D patch embedding [dim, in_dim, 1, 2, 2] as one F32 tensor.
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
    VIDAX_CHECK(n_dims <= kMaxDims, file << ": tensor '" << t.name << "' has " << n_dims << " dimensions (GGUF allows "
                                         << kMaxDims << ")");
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
    const GgmlType* g = nullptr;
    for (const auto& k : kGgmlTypes)
      if (k.id == type) g = &k;
    VIDAX_CHECK(g != nullptr, file << ": tensor '" << t.name << "' has unknown GGML type " << type);
    VIDAX_CHECK(g->plain, file << ": tensor '" << t.name << "' is " << g->name
                               << "-quantized; vidax reads only F32, F16, BF16, F64 and integer GGUF tensors");
    t.dtype = g->dtype;
    VIDAX_CHECK(!__builtin_mul_overflow(numel, uint64_t(dtype_size(t.dtype)), &t.nbytes),
                file << ": tensor '" << t.name << "': size overflows");
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
                file << ": tensor '" << t.name << "' [" << t.offset << ", +" << t.nbytes
                     << ") runs past the data section (" << data_size << " bytes): truncated file?");
  }
  std::vector<const GgufTensor*> by_offset;
  for (const auto& t : h.tensors)
    if (t.nbytes > 0) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i)
    VIDAX_CHECK(by_offset[i]->offset >= by_offset[i - 1]->offset + by_offset[i - 1]->nbytes,
                file << ": tensors '" << by_offset[i - 1]->name << "' and '" << by_offset[i]->name << "' overlap");
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
    t.info = TensorInfo{g.name, g.dtype, g.shape, path};
    t.load = [file, header, i]() {
      const GgufTensor& g = header->tensors[i];
      auto buf = MappedFile::view(file, static_cast<size_t>(header->data_start + g.offset), static_cast<size_t>(g.nbytes));
      Tensor v = Tensor::from_buffer(buf, 0, g.shape, g.dtype);
      if (reinterpret_cast<uintptr_t>(buf->data()) % dtype_size(g.dtype) != 0) return v.clone();
      return v;
    };
    out.tensors.push_back(std::move(t));
  }
  return out;
}

}  // namespace vidax::io
