// GPT-2's byte ↔ printable-character table used by ByteLevel pre-tokenizers and decoders.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace hfs::tok {

// byte → its UTF-8 encoded stand-in character.
const std::array<std::string, 256>& byte_to_char();
// stand-in code point → byte, or -1 for a code point that is not a stand-in.
int char_to_byte(uint32_t cp);

}  // namespace hfs::tok
