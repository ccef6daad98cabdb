#include "core/content_hash.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace hfs {
namespace {

constexpr uint64_t kP1 = 0x9E3779B185EBCA87ULL, kP2 = 0xC2B2AE3D27D4EB4FULL, kP3 = 0x165667B19E3779F9ULL,
                   kP4 = 0x85EBCA77C2B2AE63ULL, kP5 = 0x27D4EB2F165667C5ULL;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
uint64_t load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);  // little-endian hosts (the project's targets); the value is only compared, never decoded
  return v;
}
uint64_t round(uint64_t acc, uint64_t in) { return rotl(acc + in * kP2, 31) * kP1; }
uint64_t merge(uint64_t acc, uint64_t v) { return (acc ^ round(0, v)) * kP1 + kP4; }

}  // namespace

ContentHash::ContentHash(uint64_t seed)
    : lanes_{seed + kP1 + kP2, seed + kP2, seed, seed - kP1}, buf_{}, seed_(seed) {}

void ContentHash::stripe(const unsigned char* p) {
  for (int i = 0; i < 4; ++i) lanes_[i] = round(lanes_[i], load64(p + 8 * i));
}

void ContentHash::update(const void* data, size_t n) {
  auto p = static_cast<const unsigned char*>(data);
  total_ += n;
  if (buffered_ > 0) {
    const size_t take = std::min(n, sizeof buf_ - buffered_);
    std::memcpy(buf_ + buffered_, p, take);
    buffered_ += take, p += take, n -= take;
    if (buffered_ < sizeof buf_) return;
    stripe(buf_);
    buffered_ = 0;
  }
  for (; n >= 32; p += 32, n -= 32) stripe(p);
  std::memcpy(buf_, p, n);
  buffered_ = n;
}

uint64_t ContentHash::digest() const {
  uint64_t h = total_ >= 32 ? rotl(lanes_[0], 1) + rotl(lanes_[1], 7) + rotl(lanes_[2], 12) + rotl(lanes_[3], 18)
                            : seed_ + kP5;
  if (total_ >= 32)
    for (uint64_t l : lanes_) h = merge(h, l);
  h += total_;
  const unsigned char* p = buf_;
  size_t n = buffered_;
  for (; n >= 8; p += 8, n -= 8) h = rotl(h ^ round(0, load64(p)), 27) * kP1 + kP4;
  for (; n > 0; ++p, --n) h = rotl(h ^ (*p * kP5), 11) * kP1;
  h ^= h >> 33, h *= kP2, h ^= h >> 29, h *= kP3, h ^= h >> 32;
  return h;
}

Result<uint64_t> file_content_hash(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return make_error(ErrorCode::kIo, "cannot open '" + path + "' to hash it");
  std::vector<unsigned char> buf(size_t{1} << 20);
  ContentHash h;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0) h.update(buf.data(), n);
  if (std::ferror(f.get())) return make_error(ErrorCode::kIo, "reading '" + path + "' to hash it failed");
  return h.digest();
}

std::string hash_hex(uint64_t h) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

}  // namespace hfs
