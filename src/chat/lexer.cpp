#include "chat/lexer.h"
#include "core/utf8.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace hfs::chat {

std::string where(int line, int col) { return "line " + std::to_string(line) + " col " + std::to_string(col); }

namespace {

// Text after preprocessing, with each byte's offset in the original source.
struct Mapped {
  std::string text;
  std::vector<uint32_t> origin;
  void push(char c, size_t at) {
    text.push_back(c);
    origin.push_back(static_cast<uint32_t>(at));
  }
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// HF renders with trim_blocks + lstrip_blocks, and Jinja drops one trailing newline by default.
// Done in the same order as transformers.js (lstrip, then trim on the result) so edge cases agree.
Mapped preprocess(std::string_view src) {
  if (!src.empty() && src.back() == '\n') src.remove_suffix(1);
  Mapped lstripped;
  lstripped.text.reserve(src.size());
  bool line_start = true;
  for (size_t i = 0; i < src.size();) {
    if (line_start) {
      size_t j = i;
      while (j < src.size() && (src[j] == ' ' || src[j] == '\t')) ++j;
      if (j + 1 < src.size() && src[j] == '{' && (src[j + 1] == '%' || src[j + 1] == '#')) i = j;
      line_start = false;
      continue;
    }
    lstripped.push(src[i], i);
    line_start = src[i] == '\n' || src[i] == '\r';
    ++i;
  }
  Mapped out;
  out.text.reserve(lstripped.text.size());
  const std::string& t = lstripped.text;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '\n' && i >= 2 && t[i - 1] == '}' && (t[i - 2] == '%' || t[i - 2] == '#' || t[i - 2] == '-')) continue;
    out.push(t[i], lstripped.origin[i]);
  }
  return out;
}

class Lexer {
 public:
  Lexer(std::string_view original, Mapped m) : m_(std::move(m)) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < original.size(); ++i)
      if (original[i] == '\n') line_starts_.push_back(i + 1);
    end_offset_ = original.size();
  }

  Result<std::vector<Token>> run() {
    const std::string& s = m_.text;
    while (pos_ < s.size()) {
      // Text up to the next tag.
      size_t start = pos_;
      while (pos_ < s.size() && !(s[pos_] == '{' && pos_ + 1 < s.size() &&
                                  (s[pos_ + 1] == '%' || s[pos_ + 1] == '{' || s[pos_ + 1] == '#')))
        ++pos_;
      if (pos_ > start) push(TokKind::kText, s.substr(start, pos_ - start), start);
      if (pos_ >= s.size()) break;
      if (s[pos_ + 1] == '#') {
        HFS_TRY(comment());
        continue;
      }
      bool stmt = s[pos_ + 1] == '%';
      size_t open_at = pos_;
      pos_ += 2;
      if (pos_ < s.size() && s[pos_] == '-') {
        strip_trailing_text();
        ++pos_;
      }
      push(stmt ? TokKind::kOpenStmt : TokKind::kOpenExpr, stmt ? "{%" : "{{", open_at);
      HFS_TRY(inside_tag(stmt, open_at));
    }
    Token end;
    end.kind = TokKind::kEnd;
    locate(end_offset_, end.line, end.col);
    toks_.push_back(end);
    return std::move(toks_);
  }

 private:
  void locate(size_t original_offset, int& line, int& col) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), original_offset);
    size_t idx = static_cast<size_t>(it - line_starts_.begin()) - 1;
    line = static_cast<int>(idx + 1);
    col = static_cast<int>(original_offset - line_starts_[idx] + 1);
  }
  size_t origin(size_t at) const { return at < m_.origin.size() ? m_.origin[at] : end_offset_; }

  Token& push(TokKind kind, std::string text, size_t at) {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    locate(origin(at), t.line, t.col);
    after_comment_ = false;
    toks_.push_back(std::move(t));
    return toks_.back();
  }

  Error syntax(size_t at, const std::string& what) const {
    int line, col;
    locate(origin(at), line, col);
    return make_error(ErrorCode::kInvalidArgument, "chat template: " + where(line, col) + ": " + what);
  }

  // `{%-` / `{{-` / `{#-`: drop whitespace at the end of the preceding text.
  void strip_trailing_text() {
    if (after_comment_ || toks_.empty() || toks_.back().kind != TokKind::kText) return;
    std::string& t = toks_.back().text;
    while (!t.empty() && is_space(t.back())) t.pop_back();
    if (t.empty()) toks_.pop_back();
  }
  // `-%}` / `-}}` / `-#}`: skip whitespace at the start of the following text.
  void skip_leading_space() {
    while (pos_ < m_.text.size() && is_space(m_.text[pos_])) ++pos_;
  }

  Status comment() {
    const std::string& s = m_.text;
    size_t open_at = pos_;
    pos_ += 2;
    if (pos_ < s.size() && s[pos_] == '-') strip_trailing_text();
    after_comment_ = false;
    size_t close = s.find("#}", pos_);
    if (close == std::string::npos) return syntax(open_at, "comment '{#' is never closed with '#}'");
    bool strip_after = close > pos_ && s[close - 1] == '-';
    pos_ = close + 2;
    if (strip_after) skip_leading_space();
    // A comment ends a text run: a `{%-` right after it strips nothing before the comment.
    after_comment_ = true;
    return Ok{};
  }

  Status inside_tag(bool stmt, size_t open_at) {
    const std::string& s = m_.text;
    int brace_depth = 0;
    for (;;) {
      while (pos_ < s.size() && is_space(s[pos_])) ++pos_;
      if (pos_ >= s.size())
        return syntax(open_at, std::string("tag '") + (stmt ? "{%" : "{{") + "' is never closed with '" +
                                   (stmt ? "%}" : "}}") + "'");
      char c = s[pos_];
      auto at = [&](std::string_view p) { return s.compare(pos_, p.size(), p) == 0; };
      if (stmt && (at("-%}") || at("%}"))) {
        size_t close_at = pos_;
        bool strip = c == '-';
        pos_ += strip ? 3 : 2;
        push(TokKind::kCloseStmt, "%}", close_at);
        if (strip) skip_leading_space();
        return Ok{};
      }
      if (!stmt && brace_depth == 0 && (at("-}}") || at("}}"))) {
        size_t close_at = pos_;
        bool strip = c == '-';
        pos_ += strip ? 3 : 2;
        push(TokKind::kCloseExpr, "}}", close_at);
        if (strip) skip_leading_space();
        return Ok{};
      }
      if (!stmt && at("%}")) return syntax(pos_, "expected '}}' to close '{{', got '%}'");
      if (stmt && brace_depth == 0 && at("}}")) return syntax(pos_, "expected '%}' to close '{%', got '}}'");
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t start = pos_;
        while (pos_ < s.size() && (std::isalnum(static_cast<unsigned char>(s[pos_])) || s[pos_] == '_')) ++pos_;
        push(TokKind::kName, s.substr(start, pos_ - start), start);
        continue;
      }
      if (std::isdigit(static_cast<unsigned char>(c))) {
        HFS_TRY(number());
        continue;
      }
      if (c == '\'' || c == '"') {
        HFS_TRY(string_literal());
        continue;
      }
      static constexpr std::string_view kTwo[] = {"**", "//", "==", "!=", "<=", ">="};
      bool matched = false;
      for (std::string_view op : kTwo) {
        if (at(op)) {
          push(TokKind::kOp, std::string(op), pos_);
          pos_ += 2;
          matched = true;
          break;
        }
      }
      if (matched) continue;
      static constexpr std::string_view kOne = "()[]{},.:|<>+-~*/%=";
      if (kOne.find(c) != std::string_view::npos) {
        if (c == '{') ++brace_depth;
        if (c == '}') --brace_depth;
        push(TokKind::kOp, std::string(1, c), pos_);
        ++pos_;
        continue;
      }
      return syntax(pos_, std::string("unexpected character '") + c + "' inside a tag");
    }
  }

  Status number() {
    const std::string& s = m_.text;
    size_t start = pos_;
    while (pos_ < s.size() && (std::isdigit(static_cast<unsigned char>(s[pos_])) || s[pos_] == '_')) ++pos_;
    bool is_float = false;
    if (pos_ + 1 < s.size() && s[pos_] == '.' && std::isdigit(static_cast<unsigned char>(s[pos_ + 1]))) {
      is_float = true;
      ++pos_;
      while (pos_ < s.size() && std::isdigit(static_cast<unsigned char>(s[pos_]))) ++pos_;
    }
    if (pos_ < s.size() && (s[pos_] == 'e' || s[pos_] == 'E')) {
      size_t save = pos_++;
      if (pos_ < s.size() && (s[pos_] == '+' || s[pos_] == '-')) ++pos_;
      if (pos_ < s.size() && std::isdigit(static_cast<unsigned char>(s[pos_]))) {
        is_float = true;
        while (pos_ < s.size() && std::isdigit(static_cast<unsigned char>(s[pos_]))) ++pos_;
      } else {
        pos_ = save;
      }
    }
    std::string digits;
    for (size_t i = start; i < pos_; ++i)
      if (s[i] != '_') digits.push_back(s[i]);
    Token& t = push(is_float ? TokKind::kFloat : TokKind::kInt, digits, start);
    if (is_float) {
      t.float_value = std::strtod(digits.c_str(), nullptr);
    } else {
      errno = 0;
      char* end = nullptr;
      long long v = std::strtoll(digits.c_str(), &end, 10);
      if (errno == ERANGE) return syntax(start, "integer literal " + digits + " does not fit in 64 bits");
      t.int_value = v;
    }
    return Ok{};
  }

  Status string_literal() {
    const std::string& s = m_.text;
    size_t start = pos_;
    char quote = s[pos_++];
    std::string value;
    for (;;) {
      if (pos_ >= s.size()) return syntax(start, std::string("string literal starting with ") + quote + " is never closed");
      char c = s[pos_++];
      if (c == quote) break;
      if (c != '\\') {
        value.push_back(c);
        continue;
      }
      if (pos_ >= s.size()) return syntax(start, "string literal ends in a lone backslash");
      char e = s[pos_++];
      switch (e) {
        case 'n': value.push_back('\n'); break;
        case 't': value.push_back('\t'); break;
        case 'r': value.push_back('\r'); break;
        case 'b': value.push_back('\b'); break;
        case 'f': value.push_back('\f'); break;
        case 'v': value.push_back('\v'); break;
        case '0': value.push_back('\0'); break;
        case '\'': case '"': case '\\': value.push_back(e); break;
        case '\n': break;  // line continuation
        case 'x': case 'u': case 'U': {
          size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (pos_ + n > s.size()) return syntax(pos_ - 2, std::string("truncated \\") + e + " escape");
          uint32_t cp = 0;
          for (size_t k = 0; k < n; ++k) {
            char h = s[pos_ + k];
            int d = std::isdigit(static_cast<unsigned char>(h)) ? h - '0'
                    : (h >= 'a' && h <= 'f')                   ? h - 'a' + 10
                    : (h >= 'A' && h <= 'F')                   ? h - 'A' + 10
                                                               : -1;
            if (d < 0) return syntax(pos_ + k, std::string("bad hex digit '") + h + "' in \\" + e + " escape");
            cp = cp * 16 + static_cast<uint32_t>(d);
          }
          if (cp > 0x10FFFF) return syntax(pos_ - 2, "escape names a code point above U+10FFFF");
          pos_ += n;
          append_utf8(value, cp);
          break;
        }
        default:
          // Python keeps unknown escapes verbatim ("\d" stays backslash-d).
          value.push_back('\\');
          value.push_back(e);
      }
    }
    push(TokKind::kString, std::move(value), start);
    return Ok{};
  }

  Mapped m_;
  size_t pos_ = 0;
  size_t end_offset_ = 0;
  std::vector<size_t> line_starts_;
  std::vector<Token> toks_;
  bool after_comment_ = false;
};

}  // namespace

Result<std::vector<Token>> tokenize(std::string_view source) {
  Lexer lx(source, preprocess(source));
  return lx.run();
}

}  // namespace hfs::chat
