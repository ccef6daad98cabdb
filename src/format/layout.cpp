#include "format/layout.h"

#include <cstring>

namespace hfs::format {
namespace {

template <typename T>
void put(std::byte* p, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<std::byte>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
}

template <typename T>
T get(const std::byte* p) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return static_cast<T>(v);
}

}  // namespace

void encode_header(const Header& h, std::span<std::byte, kHeaderSize> out) {
  std::byte* p = out.data();
  std::memcpy(p, h.magic, 8);
  put<uint32_t>(p + 8, h.version);
  put<uint32_t>(p + 12, h.header_size);
  put<uint64_t>(p + 16, h.manifest_offset);
  put<uint64_t>(p + 24, h.manifest_size);
  put<uint64_t>(p + 32, h.data_offset);
  put<uint64_t>(p + 40, h.data_size);
  put<uint64_t>(p + 48, h.file_size);
  put<uint32_t>(p + 56, h.flags);
  put<uint32_t>(p + 60, h.reserved);
}

Header decode_header(std::span<const std::byte, kHeaderSize> in) {
  const std::byte* p = in.data();
  Header h{};
  std::memcpy(h.magic, p, 8);
  h.version = get<uint32_t>(p + 8);
  h.header_size = get<uint32_t>(p + 12);
  h.manifest_offset = get<uint64_t>(p + 16);
  h.manifest_size = get<uint64_t>(p + 24);
  h.data_offset = get<uint64_t>(p + 32);
  h.data_size = get<uint64_t>(p + 40);
  h.file_size = get<uint64_t>(p + 48);
  h.flags = get<uint32_t>(p + 56);
  h.reserved = get<uint32_t>(p + 60);
  return h;
}

}  // namespace hfs::format
