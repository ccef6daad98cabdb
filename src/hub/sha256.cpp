#include "hub/sha256.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

namespace hfs::hub {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ && EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) {
    EVP_MD_CTX_free(ctx_);
    ctx_ = nullptr;
  }
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

Sha256::Sha256(Sha256&& other) noexcept : ctx_(std::exchange(other.ctx_, nullptr)) {}

Sha256& Sha256::operator=(Sha256&& other) noexcept {
  std::swap(ctx_, other.ctx_);
  return *this;
}

void Sha256::update(const void* data, size_t size) {
  if (ctx_ && EVP_DigestUpdate(ctx_, data, size) != 1) {
    EVP_MD_CTX_free(ctx_);
    ctx_ = nullptr;
  }
}

std::string Sha256::hex_digest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (!ctx_ || EVP_DigestFinal_ex(ctx_, md, &n) != 1) return {};
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) out += kHex[md[i] >> 4], out += kHex[md[i] & 15];
  return out;
}

Status hash_file(const std::string& path, int64_t limit, Sha256* sha) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return make_error(ErrorCode::kIo, "cannot open '" + path + "' to hash it: " + std::strerror(errno));
  std::vector<char> buf(1 << 20);
  int64_t hashed = 0;
  while (limit < 0 || hashed < limit) {
    const size_t want = limit < 0 ? buf.size() : static_cast<size_t>(std::min<int64_t>(limit - hashed, static_cast<int64_t>(buf.size())));
    const size_t n = std::fread(buf.data(), 1, want, f.get());
    if (n == 0) break;
    sha->update(buf.data(), n);
    hashed += static_cast<int64_t>(n);
  }
  if (std::ferror(f.get()) || (limit >= 0 && hashed < limit))
    return make_error(ErrorCode::kIo, "reading '" + path + "' to hash it failed after " + std::to_string(hashed) + " bytes");
  return Ok{};
}

Result<std::string> sha256_file(const std::string& path) {
  Sha256 sha;
  HFS_TRY(hash_file(path, -1, &sha));
  return sha.hex_digest();
}

}  // namespace hfs::hub
