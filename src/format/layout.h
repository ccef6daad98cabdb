// src/format/layout.h — the fixed header of a program file (format version 1), shared by reader and writer.
//
// All integers are little-endian. The full layout is specified in docs/program-format.md:
//
//   [0, 64)                         header (this struct, encoded field by field)
//   [manifest_offset, +size)        UTF-8 JSON manifest
//   [data_offset, +data_size)       data section; data_offset is a multiple of 64, tensors at 64-aligned offsets
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace hfs::format {

inline constexpr uint64_t kHeaderSize = 64;

struct Header {
  char magic[8];             // "HFSTATIC"
  uint32_t version;          // 1
  uint32_t header_size;      // ≥ 64; v1 readers ignore bytes [64, header_size)
  uint64_t manifest_offset;  // ≥ header_size
  uint64_t manifest_size;
  uint64_t data_offset;      // multiple of 64, ≥ manifest_offset + manifest_size
  uint64_t data_size;
  uint64_t file_size;        // == data_offset + data_size == the file's size
  uint32_t flags;            // 0 in v1
  uint32_t reserved;         // 0 in v1
};

// Encodes into exactly kHeaderSize bytes.
void encode_header(const Header& h, std::span<std::byte, kHeaderSize> out);
// Decodes the first kHeaderSize bytes (the caller checked the size); no validation.
Header decode_header(std::span<const std::byte, kHeaderSize> in);

inline uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace hfs::format
