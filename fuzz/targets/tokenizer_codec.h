// fuzz/targets/tokenizer_codec.h — tokenizer encode/decode with the real stories260K tokenizer (loaded once).
//
// The first byte picks the mode, the rest is the payload:
//   even: payload is text → encode (with and without specials); every id must be in [0, vocab_size)
//         and, for valid UTF-8, decode must succeed on the result.
//   odd:  payload is little-endian int16 ids (so both valid and out-of-range ids occur) → decode
//         (with and without skip_special) and the same ids through a StreamDecoder.
#pragma once

#include <memory>
#include <vector>

#include "common.h"
#include "hfstatic/tokenizer.h"

namespace hfs::fuzz {

inline const Tokenizer* stories_tokenizer() {
  static std::shared_ptr<const Tokenizer> tok = [] {
    std::string dir = stories_dir();
    if (dir.empty()) return std::shared_ptr<const Tokenizer>();
    auto t = Tokenizer::from_dir(dir);
    return t ? *t : std::shared_ptr<const Tokenizer>();
  }();
  return tok.get();
}

inline bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1f) : n == 3 ? (c & 0x0f) : (c & 0x07);
    for (size_t k = 1; k < n; ++k) {
      auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n;
  }
  return true;
}

inline std::string fuzz_tokenizer_codec(const uint8_t* data, size_t size) {
  const Tokenizer* tok = stories_tokenizer();
  if (!tok) return "stories260K tokenizer not found (set HFS_SHARED_DIR)";
  if (size == 0) return "";
  std::string_view payload = as_text(data + 1, size - 1);
  if ((data[0] & 1) == 0) {
    for (bool add_special : {true, false}) {
      auto ids = tok->encode(payload, add_special);
      if (!ids) {
        if (valid_utf8(payload)) return "encode failed on valid UTF-8: " + ids.error().to_string();
        continue;
      }
      for (int32_t id : *ids)
        if (id < 0 || id >= tok->vocab_size()) return "encode returned id " + std::to_string(id) + " outside vocab";
      auto text = tok->decode(*ids, false);
      if (!text) return "decode of encode's ids failed: " + text.error().to_string();
    }
    return "";
  }
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 1 < payload.size(); i += 2)
    ids.push_back(static_cast<int16_t>(static_cast<uint8_t>(payload[i]) | (static_cast<uint8_t>(payload[i + 1]) << 8)));
  for (bool skip : {false, true}) {
    auto text = tok->decode(ids, skip);
    if (text && !valid_utf8(*text)) return "decode produced invalid UTF-8";
    StreamDecoder stream(*tok, skip);
    for (int32_t id : ids) {
      auto piece = stream.feed(id);
      if (piece && !valid_utf8(*piece)) return "StreamDecoder::feed produced invalid UTF-8";
    }
    auto tail = stream.flush();
    if (tail && !valid_utf8(*tail)) return "StreamDecoder::flush produced invalid UTF-8";
  }
  return "";
}

}  // namespace hfs::fuzz
