#include "tokenizer/json_scan.h"

#include <cstring>

#include "core/utf8.h"

namespace hfs::tok {

Error JsonCursor::error(std::string_view where, std::string_view expected) const {
  std::string got = "end of file";
  if (pos_ < doc_.size()) {
    got.assign(1, '\'');
    got.append(doc_.substr(pos_, 20));
    got.push_back('\'');
  }
  return make_error(ErrorCode::kTokenizer, "tokenizer: " + name_ + ": " + std::string(where) + ": expected " +
                                               std::string(expected) + " at byte " + std::to_string(pos_) + ", got " + got);
}

Status JsonCursor::expect(char c, std::string_view where) {
  if (!eat(c)) return error(where, std::string("'") + c + "'");
  return Ok{};
}

static int hexv(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Result<std::string_view> JsonCursor::string(std::string& scratch, std::string_view where) {
  ws();
  if (pos_ >= doc_.size() || doc_[pos_] != '"') return error(where, "a string");
  size_t start = ++pos_;
  // Fast path: find the closing quote; no backslash before it means no escapes.
  const char* base = doc_.data();
  const char* q = static_cast<const char*>(std::memchr(base + pos_, '"', doc_.size() - pos_));
  if (!q) return error(where, "a closing '\"'");
  const char* bs = static_cast<const char*>(std::memchr(base + pos_, '\\', static_cast<size_t>(q - (base + pos_))));
  if (!bs) {
    pos_ = static_cast<size_t>(q - base) + 1;
    return doc_.substr(start, pos_ - 1 - start);
  }
  scratch.clear();
  while (true) {
    if (pos_ >= doc_.size()) return error(where, "a closing '\"'");
    char c = doc_[pos_];
    if (c == '"') {
      ++pos_;
      return std::string_view(scratch);
    }
    if (c != '\\') {
      scratch.push_back(c);
      ++pos_;
      continue;
    }
    if (pos_ + 1 >= doc_.size()) return error(where, "an escape");
    char e = doc_[pos_ + 1];
    pos_ += 2;
    switch (e) {
      case '"': scratch.push_back('"'); break;
      case '\\': scratch.push_back('\\'); break;
      case '/': scratch.push_back('/'); break;
      case 'b': scratch.push_back('\b'); break;
      case 'f': scratch.push_back('\f'); break;
      case 'n': scratch.push_back('\n'); break;
      case 'r': scratch.push_back('\r'); break;
      case 't': scratch.push_back('\t'); break;
      case 'u': {
        auto read4 = [&](uint32_t& v) {
          if (pos_ + 4 > doc_.size()) return false;
          v = 0;
          for (int k = 0; k < 4; ++k) {
            int h = hexv(doc_[pos_ + static_cast<size_t>(k)]);
            if (h < 0) return false;
            v = v * 16 + static_cast<uint32_t>(h);
          }
          pos_ += 4;
          return true;
        };
        uint32_t cp;
        if (!read4(cp)) return error(where, "4 hex digits after \\u");
        if (cp >= 0xD800 && cp <= 0xDBFF && pos_ + 6 <= doc_.size() && doc_[pos_] == '\\' && doc_[pos_ + 1] == 'u') {
          size_t save = pos_;
          pos_ += 2;
          uint32_t lo;
          if (read4(lo) && lo >= 0xDC00 && lo <= 0xDFFF) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          else pos_ = save;
        }
        if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;  // a lone surrogate has no UTF-8 form
        append_utf8(scratch, cp);
        break;
      }
      default:
        pos_ -= 2;
        return error(where, "a valid escape");
    }
  }
}

Result<int64_t> JsonCursor::integer(std::string_view where) {
  ws();
  size_t start = pos_;
  bool neg = pos_ < doc_.size() && doc_[pos_] == '-';
  if (neg) ++pos_;
  int64_t v = 0;
  size_t digits = 0;
  while (pos_ < doc_.size() && doc_[pos_] >= '0' && doc_[pos_] <= '9') {
    if (v > (INT64_MAX - 9) / 10) {
      pos_ = start;
      return error(where, "an integer in range");
    }
    v = v * 10 + (doc_[pos_++] - '0');
    ++digits;
  }
  if (digits == 0 || (pos_ < doc_.size() && (doc_[pos_] == '.' || doc_[pos_] == 'e' || doc_[pos_] == 'E'))) {
    pos_ = start;
    return error(where, "an integer");
  }
  return neg ? -v : v;
}

Result<std::string_view> JsonCursor::skip_value(std::string_view where) {
  ws();
  size_t start = pos_;
  int depth = 0;
  std::string scratch;
  do {
    ws();
    if (pos_ >= doc_.size()) return error(where, "a value");
    char c = doc_[pos_];
    if (c == '"') {
      HFS_TRY(string(scratch, where));
    } else if (c == '{' || c == '[') {
      ++depth;
      ++pos_;
    } else if (c == '}' || c == ']') {
      if (depth == 0) return error(where, "a value");
      --depth;
      ++pos_;
    } else if (c == ',' || c == ':') {
      if (depth == 0) return error(where, "a value");
      ++pos_;
    } else {
      // literal or number
      size_t b = pos_;
      while (pos_ < doc_.size() && std::strchr(",:]} \t\r\n", doc_[pos_]) == nullptr) ++pos_;
      if (pos_ == b) return error(where, "a value");
    }
  } while (depth > 0);
  return doc_.substr(start, pos_ - start);
}

}  // namespace hfs::tok
