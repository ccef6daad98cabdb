// PCRE2 (UTF + UCP, JIT) regexes for tokenizer patterns, and the translation of HF's Oniguruma-flavoured
// patterns into PCRE2 with the meaning transformers.js gives them (its rewrite_oniguruma_to_js):
// \s = White_Space, \d = \p{Nd}, \w = Alphabetic|M|Nd|Pc, `.` excludes only \n, ^/$ are line anchors,
// (?i:...) folds ASCII letters only, possessive `+` and atomic (?>...) become plain greedy groups.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hfstatic/error.h"

namespace hfs::tok {

using Span = std::pair<size_t, size_t>;  // [begin, end) byte offsets

class Regex {
 public:
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  // `pattern` is PCRE2 syntax; `what` names the config node for error messages.
  [[nodiscard]] static Result<std::shared_ptr<const Regex>> compile(const std::string& pattern, std::string_view what);
  // Appends every match of `text` (valid UTF-8) to `out`, in order, with JS matchAll semantics: after an
  // empty match the search resumes one code point further.
  void find_all(std::string_view text, std::vector<Span>& out) const;
  const std::string& pattern() const { return pattern_; }

 private:
  Regex() = default;
  void* code_ = nullptr;  // pcre2_code_8*
  bool jit_ = false;
  std::string pattern_;
};

// HF tokenizer.json {"Regex": ...} pattern → PCRE2 pattern. Unsupported syntax (class intersections,
// nested classes) → kUnsupported naming `what`.
[[nodiscard]] Result<std::string> translate_hf_regex(std::string_view pattern, std::string_view what);
// {"String": ...} pattern → PCRE2 pattern matching it literally.
std::string escape_literal(std::string_view s);

// PCRE2 class bodies (no brackets) used by the rewrites, also by the built-in ByteLevel regex.
inline constexpr const char* kJsSpaceClass =
    "\\t\\n\\x0B\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";

}  // namespace hfs::tok
