// Chat-template lexer: Jinja source → tokens (text runs, tag delimiters, names, literals, operators).
//
// Applies HF's environment first (trim_blocks, lstrip_blocks, drop one trailing newline) and the
// `-` whitespace-control markers, so the parser only sees the text that will actually be emitted.
// Every token remembers its line/column in the ORIGINAL source for error messages.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hfstatic/error.h"

namespace hfs::chat {

enum class TokKind : uint8_t {
  kText,       // literal template text
  kOpenStmt,   // {%
  kCloseStmt,  // %}
  kOpenExpr,   // {{
  kCloseExpr,  // }}
  kName,       // identifier or keyword
  kString,     // quoted literal, escapes resolved
  kInt,
  kFloat,
  kOp,         // punctuation / operator, text holds it
  kEnd,
};

struct Token {
  TokKind kind = TokKind::kEnd;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
  int col = 1;
};

// "line 3 col 7"
std::string where(int line, int col);

[[nodiscard]] Result<std::vector<Token>> tokenize(std::string_view source);

}  // namespace hfs::chat
