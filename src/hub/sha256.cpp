#include "hub/sha256.h"

#include <openssl/evp.h>

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

Result<std::string> sha256_file(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return make_error(ErrorCode::kIo, "cannot open '" + path + "' to check its sha256: " + std::strerror(errno));
  Sha256 sha;
  std::vector<char> buf(1 << 20);
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0) sha.update(buf.data(), n);
  if (std::ferror(f.get())) return make_error(ErrorCode::kIo, "reading '" + path + "' to check its sha256 failed");
  return sha.hex_digest();
}

}  // namespace hfs::hub
