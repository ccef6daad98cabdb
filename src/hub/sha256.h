// SHA-256 (FIPS 180-4), for checking downloaded LFS files against their etag (the Hub's etag of an LFS
// file is the sha256 of its content). Small and self-contained so the hub layer needs no crypto library.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "hfstatic/error.h"

namespace hfs::hub {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  // The digest as 64 lower-case hex digits. The object is spent afterwards.
  std::string hex_digest();

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t buffered_ = 0;
  uint64_t length_ = 0;
};

// The sha256 of a whole file, read in 1 MiB pieces; kIo naming the file if it cannot be read.
Result<std::string> sha256_file(const std::string& path);

}  // namespace hfs::hub
