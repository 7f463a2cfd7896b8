// torch.save checkpoints: the zip format (torch >= 1.6: <archive>/data.pkl
// plus one member <archive>/data/<key> per storage, stored uncompressed and
// 64-byte aligned) and the legacy stream (pickles followed by raw storages).
#ifdef VIDAX_HAVE_LIBZIP
#include <zip.h>
#endif

#include <cstring>
#include <mutex>
#include <unordered_map>

#include "core/error.h"
#include "io/mapped_file.h"
#include "io/pickle.h"
#include "io/source.h"
#include "io/zip_layout.h"

namespace vidax::io {

#ifdef VIDAX_HAVE_LIBZIP
namespace {

// Where a storage's bytes are: a range of the mapped file (zero-copy), or a
// compressed zip member inflated on first use.
struct StorageBytes {
  uint64_t nbytes = 0;
  bool in_file = false;
  uint64_t file_offset = 0;  // when in_file
  zip_uint64_t zip_index = 0;  // when compressed
  std::string member;
  std::weak_ptr<Buffer> cache;  // the inflated copy, shared by the tensors alive now
};

// Owns everything the loaders need, shared by their closures.
struct TorchArchive {
  std::shared_ptr<MappedFile> file;
  zip_t* zip = nullptr;
  std::mutex mu;  // libzip archives are not thread-safe
  std::vector<StorageBytes> storages;
  ~TorchArchive() {
    if (zip) zip_discard(zip);
  }

  std::shared_ptr<Buffer> storage_buffer(size_t i) {
    StorageBytes& s = storages[i];
    if (s.in_file) return MappedFile::view(file, static_cast<size_t>(s.file_offset), static_cast<size_t>(s.nbytes));
    std::lock_guard<std::mutex> lock(mu);
    if (auto b = s.cache.lock()) return b;
    auto b = Buffer::allocate_host(static_cast<size_t>(s.nbytes));
    read_member(s.zip_index, s.member, b->data(), s.nbytes);
    s.cache = b;
    return b;
  }

  // Reads a whole member (libzip inflates it and checks its CRC).
  void read_member(zip_uint64_t index, const std::string& name, void* out, uint64_t nbytes) {
    zip_file_t* zf = zip_fopen_index(zip, index, 0);
    VIDAX_CHECK(zf != nullptr, file->path() << ": cannot open zip member '" << name << "': " << zip_strerror(zip));
    uint64_t done = 0;
    while (done < nbytes) {
      zip_int64_t r = zip_fread(zf, static_cast<char*>(out) + done, nbytes - done);
      if (r <= 0) {
        std::string why = r < 0 ? zip_file_strerror(zf) : "unexpected end of data";
        zip_fclose(zf);
        throw Error(msg() << file->path() << ": reading zip member '" << name << "' failed after " << done << " of "
                          << nbytes << " bytes: " << why);
      }
      done += static_cast<uint64_t>(r);
    }
    // One more read reaches the end, where libzip verifies the CRC.
    char extra;
    zip_int64_t r = zip_fread(zf, &extra, 1);
    std::string why = r < 0 ? zip_file_strerror(zf) : "";
    zip_fclose(zf);
    VIDAX_CHECK(r == 0, file->path() << ": zip member '" << name << "' "
                                     << (r > 0 ? "is longer than expected" : "is corrupt: " + why));
  }
};


// Per storage, ", used by tensor 'a.weight' (and N more)" for error messages.
std::vector<std::string> storage_users(const pickle::Unpickled& u,
                                       const std::vector<std::pair<std::string, size_t>>& named) {
  std::vector<std::string> first(u.storages.size());
  std::vector<size_t> count(u.storages.size(), 0);
  for (const auto& [name, ti] : named) {
    const size_t s = u.tensors[ti].storage;
    if (count[s]++ == 0) first[s] = name;
  }
  std::vector<std::string> out(u.storages.size());
  for (size_t s = 0; s < out.size(); ++s) {
    if (count[s] == 0) continue;
    out[s] = ", used by tensor '" + first[s] + "'";
    if (count[s] > 1) out[s] += " and " + std::to_string(count[s] - 1) + " more";
  }
  return out;
}

// The tensors described by an unpickled state dict, with loaders over `archive`.
SourceFile tensors_from_pickle(const pickle::Unpickled& u,
                               const std::vector<std::pair<std::string, size_t>>& named,
                               const std::shared_ptr<TorchArchive>& archive, const std::string& path) {
  SourceFile out;
  for (auto& [name, ti] : named) {
    const pickle::TensorRef& t = u.tensors[ti];
    SourceTensor st;
    st.info = TensorInfo{name, t.dtype, t.shape, path};
    const size_t storage = t.storage;
    const size_t byte_offset = static_cast<size_t>(t.offset) * dtype_size(t.dtype);
    const Shape shape = t.shape;
    const Strides strides = t.strides;
    const DType dtype = t.dtype;
    st.load = [archive, storage, byte_offset, shape, strides, dtype]() {
      Tensor v = Tensor::from_buffer(archive->storage_buffer(storage), byte_offset, shape, dtype, strides);
      // torch aligns storages to 64 bytes; an unaligned one is copied for the kernels' sake.
      if (v.numel() > 0 && reinterpret_cast<uintptr_t>(v.data_ptr()) % dtype_size(dtype) != 0) return v.clone();
      return v;
    };
    out.tensors.push_back(std::move(st));
  }
  return out;
}

// Deflate expands at most ~1032:1; a member claiming more is corrupt, and
// allocating what it claims would be the attack.
bool plausible_size(const zip_stat_t& st) {
  if (st.comp_method == ZIP_CM_STORE) return st.size == st.comp_size;
  return st.size / 1100 <= st.comp_size;
}

SourceFile read_torch_zip(const std::shared_ptr<MappedFile>& file) {
  const std::string& path = file->path();
  auto archive = std::make_shared<TorchArchive>();
  archive->file = file;
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* src = zip_source_buffer_create(file->data(), file->size(), 0, &err);
  VIDAX_CHECK(src != nullptr, path << ": cannot read as zip: " << zip_error_strerror(&err));
  archive->zip = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &err);
  if (!archive->zip) {
    std::string why = zip_error_strerror(&err);
    zip_source_free(src);
    zip_error_fini(&err);
    throw Error(msg() << path << ": not a readable zip archive (truncated or corrupt torch.save file?): " << why);
  }
  zip_error_fini(&err);
  zip_t* za = archive->zip;

  // torch names every member "<archive>/..." after the first member's folder.
  const zip_int64_t count = zip_get_num_entries(za, 0);
  VIDAX_CHECK(count > 0, path << ": empty zip archive");
  const std::string first = zip_get_name(za, 0, ZIP_FL_ENC_RAW);
  const size_t slash = first.find('/');
  VIDAX_CHECK(slash != std::string::npos, path << ": zip member '" << first
                                               << "' is not in an archive folder: not a torch.save file");
  const std::string prefix = first.substr(0, slash + 1);

  auto find = [&](const std::string& name) -> zip_int64_t { return zip_name_locate(za, name.c_str(), ZIP_FL_ENC_RAW); };
  auto stat = [&](zip_int64_t index, const std::string& name) {
    zip_stat_t st;
    VIDAX_CHECK(zip_stat_index(za, static_cast<zip_uint64_t>(index), 0, &st) == 0,
                path << ": cannot stat zip member '" << name << "': " << zip_strerror(za));
    return st;
  };

  // byteorder (torch >= 2.1) must be little: the views are used as-is.
  if (zip_int64_t bo = find(prefix + "byteorder"); bo >= 0) {
    zip_stat_t st = stat(bo, "byteorder");
    VIDAX_CHECK(st.size <= 16, path << ": byteorder member too large");
    std::string order(st.size, '\0');
    archive->read_member(static_cast<zip_uint64_t>(bo), prefix + "byteorder", order.data(), st.size);
    VIDAX_CHECK(order == "little", path << ": saved with byteorder '" << order << "'; only little-endian is supported");
  }

  const std::string pkl_name = prefix + "data.pkl";
  const zip_int64_t pkl = find(pkl_name);
  VIDAX_CHECK(pkl >= 0, path << ": zip member '" << pkl_name << "' is missing: not a torch.save checkpoint");
  zip_stat_t pst = stat(pkl, pkl_name);
  VIDAX_CHECK(pst.size <= (uint64_t(1) << 31) && plausible_size(pst), path << ": '" << pkl_name << "' claims "
                                                                        << pst.size << " bytes from " << pst.comp_size
                                                                        << " compressed: corrupt archive?");
  std::vector<uint8_t> pkl_bytes(pst.size);
  archive->read_member(static_cast<zip_uint64_t>(pkl), pkl_name, pkl_bytes.data(), pst.size);
  const pickle::Unpickled u = pickle::unpickle(pkl_bytes.data(), pkl_bytes.size(), path + ":" + pkl_name);
  const auto named = pickle::flatten_tensors(u, path + ":" + pkl_name);
  const auto users = storage_users(u, named);

  // Locate every storage's member; stored ones become ranges of the mapping.
  std::unordered_map<std::string, ZipMember> layout;
  bool have_layout = false;
  for (size_t si = 0; si < u.storages.size(); ++si) {
    const pickle::StorageRef& s = u.storages[si];
    const std::string member = prefix + "data/" + s.key;
    const zip_int64_t index = find(member);
    VIDAX_CHECK(index >= 0, path << ": storage '" << s.key << "' (" << s.type << ", " << s.nbytes
                                 << " bytes" << users[si] << ") has no zip member '" << member << "'");
    zip_stat_t st = stat(index, member);
    VIDAX_CHECK(st.size == s.nbytes, path << ": zip member '" << member << "' holds " << st.size
                                          << " bytes but the pickle declares storage '" << s.key << "' ("
                                          << s.type << users[si] << ") of " << s.nbytes << " bytes");
    VIDAX_CHECK(plausible_size(st), path << ": zip member '" << member << "' claims " << st.size << " bytes from "
                                         << st.comp_size << " compressed: corrupt archive?");
    StorageBytes b;
    b.nbytes = s.nbytes;
    b.member = member;
    b.zip_index = static_cast<zip_uint64_t>(index);
    if (st.comp_method == ZIP_CM_STORE && st.encryption_method == ZIP_EM_NONE) {
      if (!have_layout) {
        layout = read_zip_central_directory(file->data(), file->size(), path);
        have_layout = true;
      }
      auto it = layout.find(member);
      VIDAX_CHECK(it != layout.end(), path << ": zip member '" << member << "' missing from the central directory");
      VIDAX_CHECK(it->second.compressed_size == st.size, path << ": zip member '" << member << "' size disagrees");
      b.in_file = true;
      b.file_offset = zip_member_data_offset(file->data(), file->size(), member, it->second, path);
    }
    archive->storages.push_back(std::move(b));
  }
  return tensors_from_pickle(u, named, archive, path);
}

// torch.save(..., _use_new_zipfile_serialization=False): five pickles (magic
// number, protocol version, sys info, the object, the storage keys), then each
// storage in key order as <u64 element count><bytes>.
constexpr uint8_t kLegacyMagic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9,
                                    0x20, 0x6a, 0xa8, 0x50, 0x19, 0x2e};

SourceFile read_torch_legacy(const std::shared_ptr<MappedFile>& file) {
  const std::string& path = file->path();
  const uint8_t* d = file->data();
  const size_t n = file->size();
  VIDAX_CHECK(n >= sizeof(kLegacyMagic) && std::memcmp(d, kLegacyMagic, sizeof(kLegacyMagic)) == 0,
              path << ": a pickle stream without torch's legacy magic number: not a torch.save checkpoint");
  size_t pos = sizeof(kLegacyMagic);
  auto next = [&](const char* what) {
    pickle::Unpickled u = pickle::unpickle(d + pos, n - pos, path + " (" + what + ")");
    pos += u.end;
    return u;
  };
  pickle::Unpickled version = next("protocol version");
  VIDAX_CHECK(version.objects[version.root].kind == pickle::Kind::Int && version.objects[version.root].i == 1001,
              path << ": unsupported legacy torch protocol version");
  next("sys info");
  pickle::Unpickled u = next("state dict");
  const auto named = pickle::flatten_tensors(u, path);
  const auto users = storage_users(u, named);
  pickle::Unpickled keys = next("storage keys");
  const pickle::Object& list = keys.objects[keys.root];
  VIDAX_CHECK(list.kind == pickle::Kind::List, path << ": legacy storage key list is not a list");

  auto archive = std::make_shared<TorchArchive>();
  archive->file = file;
  archive->storages.resize(u.storages.size());
  std::vector<bool> placed(u.storages.size(), false);
  std::unordered_map<std::string, size_t> index_of_key;
  for (size_t i = 0; i < u.storages.size(); ++i) index_of_key[u.storages[i].key] = i;
  for (pickle::ObjId k : list.items) {
    const pickle::Object& ko = keys.objects[k];
    VIDAX_CHECK(ko.kind == pickle::Kind::Str, path << ": legacy storage key is not a str");
    auto found = index_of_key.find(ko.s);
    VIDAX_CHECK(found != index_of_key.end(), path << ": legacy storage key '" << ko.s << "' is not used by any tensor");
    const size_t idx = found->second;
    VIDAX_CHECK(!placed[idx], path << ": legacy storage key '" << ko.s << "' is listed twice");
    const pickle::StorageRef& s = u.storages[idx];
    VIDAX_CHECK(n - pos >= 8, path << ": storage '" << s.key << "'" << users[idx] << " is missing (truncated file?)");
    uint64_t numel = 0;
    for (int i = 7; i >= 0; --i) numel = (numel << 8) | d[pos + static_cast<size_t>(i)];
    pos += 8;
    const size_t es = dtype_size(s.dtype);
    VIDAX_CHECK(numel <= UINT64_MAX / es && numel * es == s.nbytes,
                path << ": storage '" << s.key << "' holds " << numel << " elements, the pickle declares "
                     << s.nbytes / es);
    VIDAX_CHECK(s.nbytes <= n - pos, path << ": storage '" << s.key << "'" << users[idx]
                                          << " runs past the end of the file (truncated?)");
    StorageBytes& b = archive->storages[idx];
    b.nbytes = s.nbytes;
    b.in_file = true;
    b.file_offset = pos;
    placed[idx] = true;
    pos += static_cast<size_t>(s.nbytes);
  }
  for (size_t i = 0; i < placed.size(); ++i)
    VIDAX_CHECK(placed[i], path << ": storage '" << u.storages[i].key << "' is not in the legacy key list");
  return tensors_from_pickle(u, named, archive, path);
}

}  // namespace

SourceFile read_torch_file(const std::string& path) {
  auto file = MappedFile::open(path);
  switch (detect_format(file->data(), file->size())) {
    case FileFormat::TorchZip: return read_torch_zip(file);
    case FileFormat::TorchLegacy: return read_torch_legacy(file);
    default:
      throw Error(msg() << path << ": not a torch.save checkpoint (neither a zip archive nor a pickle stream)");
  }
}

#else  // VIDAX_HAVE_LIBZIP: built without libzip (VIDAX_LIBZIP off, VIDAX_MINIMAL)

SourceFile read_torch_file(const std::string& path) {
  throw Error(msg() << path << ": this vidax was built without libzip (VIDAX_LIBZIP=OFF or VIDAX_MINIMAL), so it "
                    << "cannot read .pth checkpoints; rebuild with it, or convert the file to .safetensors");
}

#endif  // VIDAX_HAVE_LIBZIP
}  // namespace vidax::io
