// A streaming 64-bit content hash (the XXH64 construction: four 64-bit multiply-rotate lanes over 32-byte
// stripes): identifies a program file and checksums a session file (docs/sessions.md). Fast (several GB/s)
// and good at catching corruption; not cryptographic, so it says nothing against deliberate tampering.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "hfstatic/error.h"

namespace hfs {

class ContentHash {
 public:
  explicit ContentHash(uint64_t seed = 0);
  void update(const void* data, size_t n);
  void update(std::span<const std::byte> bytes) { update(bytes.data(), bytes.size()); }
  // The hash of everything updated so far (the stream can continue).
  uint64_t digest() const;

 private:
  void stripe(const unsigned char* p);
  uint64_t lanes_[4];
  unsigned char buf_[32];
  size_t buffered_ = 0;
  uint64_t total_ = 0;
  uint64_t seed_;
};

inline uint64_t content_hash(std::span<const std::byte> bytes) {
  ContentHash h;
  h.update(bytes);
  return h.digest();
}

// The hash of a whole file, read in 1 MiB pieces. kIo naming the file when it cannot be read.
[[nodiscard]] Result<uint64_t> file_content_hash(const std::string& path);

// "%016x" of a hash, as messages and file names show it.
std::string hash_hex(uint64_t h);

}  // namespace hfs
