#include "core/utf8.h"

namespace hfs {

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// One WHATWG UTF-8 decoder pass. With `out` == nullptr it only reports the first error offset.
static size_t whatwg_decode(std::string_view bytes, std::string* out) {
  int needed = 0, seen = 0;
  uint32_t cp = 0;
  unsigned lower = 0x80, upper = 0xBF;
  size_t start = 0;
  for (size_t i = 0; i < bytes.size();) {
    unsigned b = static_cast<unsigned char>(bytes[i]);
    if (needed == 0) {
      start = i;
      ++i;
      if (b <= 0x7F) {
        if (out) out->push_back(static_cast<char>(b));
      } else if (b >= 0xC2 && b <= 0xDF) {
        needed = 1;
        cp = b & 0x1F;
      } else if (b >= 0xE0 && b <= 0xEF) {
        if (b == 0xE0) lower = 0xA0;
        if (b == 0xED) upper = 0x9F;
        needed = 2;
        cp = b & 0xF;
      } else if (b >= 0xF0 && b <= 0xF4) {
        if (b == 0xF0) lower = 0x90;
        if (b == 0xF4) upper = 0x8F;
        needed = 3;
        cp = b & 0x7;
      } else {
        if (!out) return start;
        append_utf8(*out, 0xFFFD);
      }
      continue;
    }
    if (b < lower || b > upper) {
      // The bad byte is not consumed: it starts the next sequence.
      needed = seen = 0;
      cp = 0;
      lower = 0x80;
      upper = 0xBF;
      if (!out) return start;
      append_utf8(*out, 0xFFFD);
      continue;
    }
    ++i;
    lower = 0x80;
    upper = 0xBF;
    cp = (cp << 6) | (b & 0x3F);
    if (++seen == needed) {
      if (out) append_utf8(*out, cp);
      needed = seen = 0;
      cp = 0;
    }
  }
  if (needed != 0) {
    if (!out) return start;
    append_utf8(*out, 0xFFFD);
  }
  return std::string_view::npos;
}

size_t find_invalid_utf8(std::string_view s) { return whatwg_decode(s, nullptr); }

std::string decode_utf8_lossy(std::string_view bytes, bool strip_bom) {
  if (strip_bom && bytes.size() >= 3 && bytes.substr(0, 3) == "\xEF\xBB\xBF") bytes.remove_prefix(3);
  std::string out;
  out.reserve(bytes.size());
  whatwg_decode(bytes, &out);
  return out;
}

bool is_js_space(uint32_t cp) {
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0xA0: case 0x1680:
    case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000: case 0xFEFF:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

std::string_view js_trim_start(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    if (!is_js_space(next_cp(s, j))) break;
    i = j;
  }
  return s.substr(i);
}

std::string_view js_trim_end(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    size_t j = start;
    if (!is_js_space(next_cp(s, j))) break;
    end = start;
  }
  return s.substr(0, end);
}

std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  size_t size = s.size();
  if (!from.empty() && to.size() > from.size()) {  // exact size up front: growing by doubling would peak at 3x a huge text
    for (size_t hit = s.find(from); hit != std::string_view::npos; hit = s.find(from, hit + from.size()))
      size += to.size() - from.size();
  }
  out.reserve(size);
  size_t pos = 0;
  while (true) {
    size_t hit = s.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(s.substr(pos));
  return out;
}

}  // namespace hfs
