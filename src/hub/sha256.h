// SHA-256 for checking downloaded LFS files against their etag (the Hub's etag of an LFS file is the sha256
// of its content). OpenSSL's libcrypto does the hashing: libcurl (OpenSSL flavour) already loads it, and its
// SHA extensions code runs ~10x faster than a portable loop, which matters at several GB per checkpoint.
#pragma once

#include <cstddef>
#include <cstdint>
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

// Feeds `sha` the first `limit` bytes of a file (all of it when limit < 0), read in 1 MiB pieces; kIo naming
// the file if it cannot be read or is shorter than `limit`.
[[nodiscard]] Status hash_file(const std::string& path, int64_t limit, Sha256* sha);

// The sha256 of a whole file (hash_file over all of it).
Result<std::string> sha256_file(const std::string& path);

}  // namespace hfs::hub
