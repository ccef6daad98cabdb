#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>

#include <cstring>

#include "core/utf8.h"

namespace hfs::tok {
namespace {

constexpr const char* kWhiteSpace = "\\p{White_Space}";
constexpr const char* kNotWhiteSpace = "\\P{White_Space}";
constexpr const char* kWordInClass = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}";
// Outside a class transformers.js also counts ² ³ ¹ ¼ ½ ¾ as word characters.
const std::string kWordClass = std::string("[") + kWordInClass + "\\x{B2}\\x{B3}\\x{B9}\\x{BC}-\\x{BE}]";
const std::string kNonWordClass = std::string("[^") + kWordInClass + "\\x{B2}\\x{B3}\\x{B9}\\x{BC}-\\x{BE}]";

bool is_ascii_letter(uint32_t c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
bool is_ascii_alnum(uint32_t c) { return is_ascii_letter(c) || (c >= '0' && c <= '9'); }
char flip_case(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : static_cast<char>(c + 32); }

Error unsupported(std::string_view what, std::string_view pattern, std::string_view why) {
  return make_error(ErrorCode::kUnsupported, "tokenizer: " + std::string(what) + ": regex '" + std::string(pattern) +
                                                 "': " + std::string(why));
}

// Parses a braced escape body at s[i] == '{' (returns end index after '}', npos when not braced).
size_t braced_end(std::string_view s, size_t i) {
  if (i >= s.size() || s[i] != '{') return std::string_view::npos;
  size_t j = s.find('}', i);
  return j;
}

std::string hex_atom(std::string_view hex, bool fold) {
  if (fold && hex.size() <= 8) {
    unsigned long cp = std::strtoul(std::string(hex).c_str(), nullptr, 16);
    if (cp < 128 && is_ascii_letter(static_cast<uint32_t>(cp))) {
      char c = static_cast<char>(cp);
      return std::string("[") + c + flip_case(c) + "]";
    }
  }
  return "\\x{" + std::string(hex) + "}";
}

// Translates a character class starting at p[i] == '['; returns the PCRE2 class, sets `end`.
Result<std::string> translate_class(std::string_view p, size_t i, bool fold, size_t& end, std::string_view what) {
  std::string body;
  size_t j = i + 1;
  bool negated = false;
  if (j < p.size() && p[j] == '^') {
    negated = true;
    ++j;
  }
  size_t first = j;
  std::string folded;  // other-case letters to add under (?i:)
  uint32_t prev_literal = 0;
  bool prev_is_literal = false;
  while (j < p.size()) {
    char c = p[j];
    if (c == ']' && j != first) {
      end = j + 1;
      std::string out = "[";
      if (negated) out += "^";
      out += body + folded + "]";
      return out;
    }
    if (c == ']') {
      body += "\\]";
      ++j;
      prev_is_literal = false;
      continue;
    }
    if (c == '[') {
      if (p.substr(j, 2) == "[:") {
        size_t close = p.find(":]", j + 2);
        if (close == std::string_view::npos) return unsupported(what, p, "unterminated POSIX class");
        std::string name(p.substr(j + 2, close - j - 2));
        bool neg = !name.empty() && name[0] == '^';
        if (neg) return unsupported(what, p, "negated POSIX class inside a class");
        const char* frag = name == "alpha"   ? "\\p{Alphabetic}"
                           : name == "alnum" ? "\\p{Alphabetic}\\p{Nd}"
                           : name == "digit" ? "\\p{Nd}"
                           : name == "lower" ? "\\p{Lowercase}"
                           : name == "upper" ? "\\p{Uppercase}"
                           : name == "space" ? kWhiteSpace
                           : name == "blank" ? "\\t\\p{Zs}"
                           : name == "punct" ? "\\p{P}\\p{S}"
                           : name == "cntrl" ? "\\p{Cc}"
                           : name == "word"  ? kWordInClass
                           : name == "xdigit" ? "0-9A-Fa-f"
                                              : nullptr;
        if (!frag) return unsupported(what, p, "POSIX class [:" + name + ":]");
        body += frag;
        j = close + 2;
        prev_is_literal = false;
        continue;
      }
      return unsupported(what, p, "nested character class (not supported by PCRE2)");
    }
    if (c == '&' && p.substr(j, 2) == "&&") return unsupported(what, p, "character-class intersection '&&'");
    if (c == '\\') {
      if (j + 1 >= p.size()) return unsupported(what, p, "unterminated escape");
      char n = p[j + 1];
      if ((n == 'p' || n == 'P' || n == 'x') && braced_end(p, j + 2) != std::string_view::npos) {
        size_t close = braced_end(p, j + 2);
        std::string_view inner = p.substr(j + 3, close - j - 3);
        if (n == 'x') {
          body += "\\x{" + std::string(inner) + "}";
        } else if (inner == "Word") {
          if (n == 'P') return unsupported(what, p, "\\P{Word} inside a class");
          body += kWordInClass;
        } else {
          body += std::string("\\") + n + "{" + std::string(inner) + "}";
        }
        j = close + 1;
        prev_is_literal = false;
        continue;
      }
      j += 2;
      prev_is_literal = false;
      switch (n) {
        case 's': body += kWhiteSpace; break;
        case 'S': body += kNotWhiteSpace; break;
        case 'd': body += "\\p{Nd}"; break;
        case 'D': body += "\\P{Nd}"; break;
        case 'w': body += kWordInClass; break;
        case 'h': body += "0-9A-Fa-f"; break;
        case 'W': case 'H': return unsupported(what, p, std::string("\\") + n + " inside a class");
        case 'a': body += "\\x07"; break;
        case 'e': body += "\\x1B"; break;
        case 'v': body += "\\x0B"; break;
        case 'u':
          if (j + 4 <= p.size()) {
            body += "\\x{" + std::string(p.substr(j, 4)) + "}";
            j += 4;
          }
          break;
        default:
          body += '\\';
          body += n;
          if (n == 'x' || n == 'c') {  // \xHH, \cX: copy the operand
            size_t k = n == 'x' ? 2 : 1;
            body += std::string(p.substr(j, k));
            j += k;
          } else if (!is_ascii_alnum(static_cast<unsigned char>(n))) {
            prev_literal = static_cast<unsigned char>(n);
            prev_is_literal = true;
          }
      }
      continue;
    }
    // A literal (or a range dash). Under (?i:) add the other case of ASCII letters and letter ranges.
    size_t k = j;
    uint32_t cp = next_cp(p, k);
    if (c == '-' && prev_is_literal && k < p.size() && p[k] != ']') {
      size_t m = k;
      uint32_t hi = next_cp(p, m);
      body += "-";
      body.append(p.substr(k, m - k));
      if (fold && is_ascii_letter(prev_literal) && is_ascii_letter(hi) && (prev_literal <= 'Z') == (hi <= 'Z')) {
        folded += flip_case(static_cast<char>(prev_literal));
        folded += '-';
        folded += flip_case(static_cast<char>(hi));
      }
      j = m;
      prev_is_literal = false;
      continue;
    }
    if (c == '^' && j != first) body += "\\^";
    else body.append(p.substr(j, k - j));
    if (fold && is_ascii_letter(cp)) folded += flip_case(static_cast<char>(cp));
    prev_literal = cp;
    prev_is_literal = true;
    j = k;
  }
  return unsupported(what, p, "unterminated character class");
}

}  // namespace

Result<std::string> translate_hf_regex(std::string_view p, std::string_view what) {
  std::string out;
  long atom_start = -1;
  bool last_was_quantifier = false;
  bool fold = false;
  std::vector<std::pair<long, bool>> groups;
  auto emit_atom = [&](const std::string& s) {
    atom_start = static_cast<long>(out.size());
    out += s;
    last_was_quantifier = false;
  };
  for (size_t i = 0; i < p.size();) {
    char c = p[i];
    if (c == '\\') {
      if (i + 1 >= p.size()) {
        out += "\\\\";
        break;
      }
      char n = p[i + 1];
      if ((n == 'p' || n == 'P' || n == 'x') && braced_end(p, i + 2) != std::string_view::npos) {
        size_t close = braced_end(p, i + 2);
        std::string_view inner = p.substr(i + 3, close - i - 3);
        if (n == 'x') emit_atom(hex_atom(inner, fold));
        else if (inner == "Word") emit_atom(n == 'p' ? kWordClass : kNonWordClass);
        else emit_atom(std::string("\\") + n + "{" + std::string(inner) + "}");
        i = close + 1;
        continue;
      }
      if (n == 'x' && i + 4 <= p.size()) {
        emit_atom(hex_atom(p.substr(i + 2, 2), fold));
        i += 4;
        continue;
      }
      if (n == 'u' && i + 6 <= p.size()) {
        emit_atom(hex_atom(p.substr(i + 2, 4), fold));
        i += 6;
        continue;
      }
      if (n == 'c' && i + 3 <= p.size()) {
        emit_atom(std::string(p.substr(i, 3)));
        i += 3;
        continue;
      }
      size_t k = i + 1;
      next_cp(p, k);
      std::string_view next = p.substr(i + 1, k - i - 1);
      i = k;
      switch (n) {
        case 'G': continue;
        case 'A': emit_atom("\\A"); continue;
        case 'z': emit_atom("\\z"); continue;
        case 'Z': emit_atom("\\Z"); continue;
        case 'h': emit_atom("[0-9A-Fa-f]"); continue;
        case 'H': emit_atom("[^0-9A-Fa-f]"); continue;
        case 'w': emit_atom(kWordClass); continue;
        case 'W': emit_atom(kNonWordClass); continue;
        case 'd': emit_atom("\\p{Nd}"); continue;
        case 'D': emit_atom("\\P{Nd}"); continue;
        case 's': emit_atom(kWhiteSpace); continue;
        case 'S': emit_atom(kNotWhiteSpace); continue;
        case 'b': emit_atom("(?:(?<!" + kWordClass + ")(?=" + kWordClass + ")|(?<=" + kWordClass + ")(?!" + kWordClass + "))"); continue;
        case 'B': emit_atom("(?:(?<!" + kWordClass + ")(?!" + kWordClass + ")|(?<=" + kWordClass + ")(?=" + kWordClass + "))"); continue;
        case 'a': emit_atom("\\x07"); continue;
        case 'e': emit_atom("\\x1B"); continue;
        case 'v': emit_atom("\\x0B"); continue;
        default:
          emit_atom(std::string(1, '\\').append(next));
          continue;
      }
    }
    switch (c) {
      case '[': {
        size_t end = 0;
        HFS_ASSIGN_OR_RETURN(auto cls, translate_class(p, i, fold, end, what));
        emit_atom(cls);
        i = end;
        continue;
      }
      case ']': emit_atom("\\]"); ++i; continue;
      case '.': emit_atom("[^\\n]"); ++i; continue;
      case '^': emit_atom("(?:(?<![\\s\\S])|(?<=\\n))"); ++i; continue;
      case '$': emit_atom("(?:(?=\\n)|(?![\\s\\S]))"); ++i; continue;
      case '(': {
        groups.emplace_back(static_cast<long>(out.size()), fold);
        if (p.substr(i, 4) == "(?i:") {
          fold = true;
          out += "(?:";
          i += 4;
        } else if (p.substr(i, 3) == "(?>") {
          out += "(?:";
          i += 3;
        } else if (p.substr(i, 3) == "(?:" || p.substr(i, 3) == "(?=" || p.substr(i, 3) == "(?!") {
          out += std::string(p.substr(i, 3));
          i += 3;
        } else if (p.substr(i, 4) == "(?<=" || p.substr(i, 4) == "(?<!") {
          out += std::string(p.substr(i, 4));
          i += 4;
        } else if (p.substr(i, 3) == "(?<") {
          size_t close = p.find('>', i);
          if (close == std::string_view::npos) return unsupported(what, p, "unterminated group name");
          out += std::string(p.substr(i, close + 1 - i));
          i = close + 1;
        } else if (p.substr(i, 2) == "(?") {
          return unsupported(what, p, "group flags other than (?i:...)");
        } else {
          out += "(";
          ++i;
        }
        last_was_quantifier = false;
        continue;
      }
      case ')': {
        out += ')';
        if (groups.empty()) return unsupported(what, p, "unbalanced ')'");
        atom_start = groups.back().first;
        fold = groups.back().second;
        groups.pop_back();
        last_was_quantifier = false;
        ++i;
        continue;
      }
      case '|': out += '|'; atom_start = -1; last_was_quantifier = false; ++i; continue;
      case '{': {
        size_t close = p.find('}', i);
        std::string_view body = close == std::string_view::npos ? std::string_view{} : p.substr(i + 1, close - i - 1);
        bool ok = !body.empty();
        int commas = 0;
        for (char b : body) {
          if (b == ',') ++commas;
          else if (b < '0' || b > '9') ok = false;
        }
        if (commas > 1 || body == ",") ok = false;
        if (!ok || atom_start < 0) {
          emit_atom("\\{");
          ++i;
          continue;
        }
        std::string q(body);
        if (q[0] == ',') q.insert(q.begin(), '0');
        i = close + 1;
        if (i < p.size() && (p[i] == '+' || p[i] == '*')) {
          // Oniguruma reads `a{n,m}+` as a repeated repetition, not a possessive one.
          out = out.substr(0, static_cast<size_t>(atom_start)) + "(?:" + out.substr(static_cast<size_t>(atom_start)) +
                "{" + q + "})" + p[i];
          ++i;
        } else {
          out += "{" + q + "}";
        }
        last_was_quantifier = true;
        continue;
      }
      case '}': emit_atom("\\}"); ++i; continue;
      case '+':
        if (!last_was_quantifier) {
          out += '+';
          last_was_quantifier = true;
        }
        ++i;
        continue;
      case '*': case '?': out += c; last_was_quantifier = true; ++i; continue;
      default: {
        size_t k = i;
        uint32_t cp = next_cp(p, k);
        if (fold && is_ascii_letter(cp)) emit_atom(std::string("[") + c + flip_case(c) + "]");
        else if (c == '#' || c == ' ') emit_atom(std::string(p.substr(i, k - i)));
        else emit_atom(std::string(p.substr(i, k - i)));
        i = k;
        continue;
      }
    }
  }
  return out;
}

std::string escape_literal(std::string_view s) {
  std::string out;
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x80 && !is_ascii_alnum(u) && c != ' ' && c != '_') out += '\\';
    out += c;
  }
  return out;
}

Regex::~Regex() {
  if (code_) pcre2_code_free(static_cast<pcre2_code*>(code_));
}

Result<std::shared_ptr<const Regex>> Regex::compile(const std::string& pattern, std::string_view what) {
  int err = 0;
  PCRE2_SIZE off = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &off, nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    return make_error(ErrorCode::kTokenizer, "tokenizer: " + std::string(what) + ": regex '" + pattern +
                                                 "' does not compile (PCRE2, at offset " + std::to_string(off) +
                                                 "): " + reinterpret_cast<const char*>(msg));
  }
  std::shared_ptr<Regex> r(new Regex());
  r->code_ = code;
  r->jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  r->pattern_ = pattern;
  return std::shared_ptr<const Regex>(std::move(r));
}

namespace {
struct MatchData {
  pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
  ~MatchData() { pcre2_match_data_free(md); }
};
}  // namespace

void Regex::find_all(std::string_view text, std::vector<Span>& out) const {
  thread_local MatchData data;
  auto* code = static_cast<pcre2_code*>(code_);
  PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data.md);
  size_t pos = 0;
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  while (pos <= text.size()) {
    int rc = jit_ ? pcre2_jit_match(code, subject, text.size(), pos, 0, data.md, nullptr)
                  : pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, data.md, nullptr);
    if (rc < 0) break;  // no match (or a resource limit: stop like a failed match)
    size_t b = ov[0], e = ov[1];
    out.emplace_back(b, e);
    if (e > b) {
      pos = e;
    } else {
      if (e >= text.size()) break;
      pos = e + utf8_len(static_cast<unsigned char>(text[e]));
    }
  }
}

}  // namespace hfs::tok
