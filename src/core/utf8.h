// UTF-8 helpers shared by the tokenizer and the chat templates: decoding/encoding code points,
// validation, the WHATWG decoder (what JS TextDecoder does with invalid bytes) and JS's notion of
// whitespace (String.prototype.trim).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace hfs {

// Length of the UTF-8 sequence that starts with `lead` (1 for a stray continuation byte).
inline size_t utf8_len(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  if ((lead >> 3) == 0x1E) return 4;
  return 1;
}

// Decodes the code point at s[i] (s must be valid UTF-8) and advances i.
inline uint32_t next_cp(std::string_view s, size_t& i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = utf8_len(c);
  if (i + n > s.size()) n = 1;
  uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += n;
  return cp;
}

void append_utf8(std::string& out, uint32_t cp);

// Byte offset of the first invalid sequence, or npos when `s` is valid UTF-8 (no surrogates, <= U+10FFFF).
size_t find_invalid_utf8(std::string_view s);

// Bytes → text the way WHATWG TextDecoder("utf-8", {fatal: false}) does: each maximal invalid subpart
// becomes U+FFFD. `strip_bom` drops a leading EF BB BF (TextDecoder's default ignoreBOM=false).
std::string decode_utf8_lossy(std::string_view bytes, bool strip_bom = false);

// JS WhiteSpace + LineTerminator (what trim() removes; also what `\s` matches in a JS regex).
bool is_js_space(uint32_t cp);
std::string_view js_trim_start(std::string_view s);
std::string_view js_trim_end(std::string_view s);
inline std::string_view js_trim(std::string_view s) { return js_trim_end(js_trim_start(s)); }

// Replaces every occurrence of `from` (non-empty) by `to`.
std::string replace_all(std::string_view s, std::string_view from, std::string_view to);

}  // namespace hfs
