// Where each member's bytes start inside a zip file. libzip reads and
// inflates members but does not expose their offsets; zero-copy views of
// uncompressed (stored) members need them, so this reads the central
// directory (zip64 included: multi-GB torch checkpoints use it) and then each
// member's local header.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>

namespace vidax::io {

struct ZipMember {
  uint64_t local_header_offset = 0;
  uint64_t compressed_size = 0;
  uint16_t method = 0;  // 0 = stored
};

// Name -> member, from the central directory. Throws vidax::Error naming `file`.
std::unordered_map<std::string, ZipMember> read_zip_central_directory(const uint8_t* data, size_t size,
                                                                      const std::string& file);

// File offset of a stored member's first data byte, checked against its local
// header (signature, name) and the file's size.
uint64_t zip_member_data_offset(const uint8_t* data, size_t size, const std::string& name, const ZipMember& m,
                                const std::string& file);

}  // namespace vidax::io
