// SHA-256 for checking downloaded LFS files against their etag (the Hub's etag of an LFS file is the sha256
// of its content). OpenSSL's libcrypto does the hashing: libcurl (OpenSSL flavour) already loads it, and its
// SHA extensions code runs ~10x faster than a portable loop, which matters at several GB per checkpoint.
#pragma once

#include <cstddef>
#include <string>

#include "hfstatic/error.h"

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX, kept out of this header

namespace hfs::hub {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&& other) noexcept;
  Sha256& operator=(Sha256&& other) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t size);
  // The digest as 64 lower-case hex digits ("" if OpenSSL failed, which no etag matches). Spent afterwards.
  std::string hex_digest();

 private:
  evp_md_ctx_st* ctx_;
};

// The sha256 of a whole file, read in 1 MiB pieces; kIo naming the file if it cannot be read.
Result<std::string> sha256_file(const std::string& path);

}  // namespace hfs::hub
