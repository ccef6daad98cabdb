#include "tokenizer/byte_level.h"

#include "core/utf8.h"

namespace hfs::tok {
namespace {

struct Tables {
  std::array<std::string, 256> to_char;
  std::array<int, 324> to_byte{};  // stand-ins are < 256 + 68
  Tables() {
    to_byte.fill(-1);
    std::array<uint32_t, 256> cp{};
    std::array<bool, 256> direct{};
    for (int b = '!'; b <= '~'; ++b) direct[b] = true;
    for (int b = 0xA1; b <= 0xAC; ++b) direct[b] = true;
    for (int b = 0xAE; b <= 0xFF; ++b) direct[b] = true;
    uint32_t n = 0;
    for (int b = 0; b < 256; ++b) cp[b] = direct[b] ? static_cast<uint32_t>(b) : 256 + n++;
    for (int b = 0; b < 256; ++b) {
      append_utf8(to_char[b], cp[b]);
      to_byte[cp[b]] = b;
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const std::array<std::string, 256>& byte_to_char() { return tables().to_char; }

int char_to_byte(uint32_t cp) { return cp < 324 ? tables().to_byte[cp] : -1; }

}  // namespace hfs::tok
