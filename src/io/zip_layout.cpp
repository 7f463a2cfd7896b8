#include "io/zip_layout.h"

#include <cstring>

#include "core/error.h"

namespace vidax::io {

namespace {

uint64_t rd(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50,
                   kEnd64LocatorSig = 0x07064b50, kEnd64Sig = 0x06064b50;

}  // namespace

std::unordered_map<std::string, ZipMember> read_zip_central_directory(const uint8_t* data, size_t size,
                                                                      const std::string& file) {
  // End of central directory: 22 bytes plus a comment of at most 65535 bytes.
  VIDAX_CHECK(size >= 22, file << ": too short to be a zip archive");
  size_t eocd = SIZE_MAX;
  const size_t lowest = size > 22 + 65535 ? size - 22 - 65535 : 0;
  for (size_t p = size - 22 + 1; p-- > lowest;) {
    if (rd(data + p, 4) == kEndSig) { eocd = p; break; }
  }
  VIDAX_CHECK(eocd != SIZE_MAX, file << ": zip end-of-central-directory record not found (truncated file?)");
  uint64_t count = rd(data + eocd + 10, 2);
  uint64_t cd_size = rd(data + eocd + 12, 4);
  uint64_t cd_offset = rd(data + eocd + 16, 4);
  if (count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) {
    VIDAX_CHECK(eocd >= 20 && rd(data + eocd - 20, 4) == kEnd64LocatorSig,
                file << ": zip64 end-of-central-directory locator missing");
    uint64_t e64 = rd(data + eocd - 20 + 8, 8);
    VIDAX_CHECK(e64 <= size && size - e64 >= 56 && rd(data + e64, 4) == kEnd64Sig,
                file << ": zip64 end-of-central-directory record missing or out of range");
    count = rd(data + e64 + 32, 8);
    cd_size = rd(data + e64 + 40, 8);
    cd_offset = rd(data + e64 + 48, 8);
  }
  VIDAX_CHECK(cd_offset <= size && cd_size <= size - cd_offset,
              file << ": zip central directory [" << cd_offset << ", +" << cd_size << ") lies outside the file ("
                   << size << " bytes): truncated?");

  std::unordered_map<std::string, ZipMember> members;
  const uint8_t* p = data + cd_offset;
  const uint8_t* end = p + cd_size;
  for (uint64_t i = 0; i < count; ++i) {
    VIDAX_CHECK(end - p >= 46 && rd(p, 4) == kCentralSig, file << ": zip central directory entry " << i << " is corrupt");
    ZipMember m;
    m.method = static_cast<uint16_t>(rd(p + 10, 2));
    m.compressed_size = rd(p + 20, 4);
    uint64_t uncompressed = rd(p + 24, 4);
    const size_t name_len = rd(p + 28, 2), extra_len = rd(p + 30, 2), comment_len = rd(p + 32, 2);
    m.local_header_offset = rd(p + 42, 4);
    VIDAX_CHECK(static_cast<size_t>(end - p) >= 46 + name_len + extra_len + comment_len,
                file << ": zip central directory entry " << i << " runs past the directory");
    std::string name(reinterpret_cast<const char*>(p + 46), name_len);
    // Zip64 extended information: the 64-bit values, in this order, for the
    // fields whose 32-bit slot is saturated.
    const uint8_t* x = p + 46 + name_len;
    const uint8_t* xend = x + extra_len;
    while (xend - x >= 4) {
      const uint64_t id = rd(x, 2), len = rd(x + 2, 2);
      if (static_cast<uint64_t>(xend - x - 4) < len) break;
      if (id == 0x0001) {
        const uint8_t* f = x + 4;
        const uint8_t* fend = f + len;
        auto take = [&](uint64_t& field) {
          if (field != 0xFFFFFFFF) return;
          VIDAX_CHECK(fend - f >= 8, file << ": zip64 field of '" << name << "' is too short");
          field = rd(f, 8);
          f += 8;
        };
        take(uncompressed);
        take(m.compressed_size);
        take(m.local_header_offset);
      }
      x += 4 + len;
    }
    members[name] = m;
    p += 46 + name_len + extra_len + comment_len;
  }
  return members;
}

uint64_t zip_member_data_offset(const uint8_t* data, size_t size, const std::string& name, const ZipMember& m,
                                const std::string& file) {
  const uint64_t h = m.local_header_offset;
  VIDAX_CHECK(h <= size && size - h >= 30 && rd(data + h, 4) == kLocalSig,
              file << ": zip member '" << name << "' has no local header at offset " << h);
  const uint64_t name_len = rd(data + h + 26, 2), extra_len = rd(data + h + 28, 2);
  VIDAX_CHECK(size - h - 30 >= name_len && name_len == name.size() &&
                  std::memcmp(data + h + 30, name.data(), name.size()) == 0,
              file << ": zip member '" << name << "': local header names a different member");
  const uint64_t start = h + 30 + name_len + extra_len;
  VIDAX_CHECK(start <= size && m.compressed_size <= size - start,
              file << ": zip member '" << name << "' (" << m.compressed_size << " bytes at offset " << start
                   << ") runs past the end of the file (" << size << " bytes): truncated?");
  return start;
}

}  // namespace vidax::io
