// A recursive-descent parser for GBNF: rules `name ::= alternatives`, literals, classes, `.`, groups,
// `| * + ? {m} {m,} {m,n}`, `#` comments. Newlines end a rule's body except inside parentheses, right
// after `::=` or `|`, and before a line that starts with `|`.
#include "constrain/gbnf_parser.h"

#include <cstddef>
#include <unordered_map>

#include "core/utf8.h"

namespace hfs::cst {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string describe(std::string_view s, size_t i) {
  if (i >= s.size()) return "end of input";
  if (s[i] == '\n') return "end of line";
  size_t j = i;
  next_cp(s, j);
  return "'" + std::string(s.substr(i, j - i)) + "'";
}

class Parser {
 public:
  Parser(std::string_view s, RuleSet& out, const Budget& budget) : s_(s), out_(out), budget_(budget) {}

  Status run() {
    for (;;) {
      skip(true);
      if (at_end()) break;
      if (budget_.over_time()) return budget_.time_error(where(i_));
      HFS_TRY(parse_rule());
    }
    for (size_t i = 0; i < out_.rules().size(); ++i) {
      if (out_.defined(static_cast<int32_t>(i))) continue;
      auto it = first_use_.find(static_cast<int32_t>(i));
      const size_t at = it == first_use_.end() ? 0 : it->second;
      return fail_at(at, "undefined rule \"" + out_.rules()[i].name + "\"");
    }
    return Ok{};
  }

 private:
  bool at_end() const { return i_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[i_]; }

  // "grammar line 3, column 12"
  std::string where(size_t at) const {
    size_t line = 1, col = 1;
    for (size_t k = 0; k < at && k < s_.size();) {
      if (s_[k] == '\n') {
        ++line, col = 1, ++k;
      } else {
        next_cp(s_, k);  // columns count characters, not bytes
        ++col;
      }
    }
    return "grammar line " + std::to_string(line) + ", column " + std::to_string(col);
  }
  Error fail_at(size_t at, const std::string& msg) const {
    return make_error(ErrorCode::kInvalidArgument, where(at) + ": " + msg);
  }
  Error expected(const std::string& what) const { return fail_at(i_, "expected " + what + ", got " + describe(s_, i_)); }

  // Spaces, tabs, comments; newlines too when `newlines`.
  void skip(bool newlines) {
    while (!at_end()) {
      const char c = s_[i_];
      if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
        ++i_;
      } else if (c == '#') {
        while (!at_end() && s_[i_] != '\n') ++i_;
      } else {
        break;
      }
    }
  }

  std::string parse_name() {
    const size_t b = i_;
    while (!at_end() && is_name_char(s_[i_])) ++i_;
    return std::string(s_.substr(b, i_ - b));
  }

  Status parse_rule() {
    const size_t name_at = i_;
    if (!is_name_char(peek())) return expected("a rule name");
    const std::string name = parse_name();
    skip(false);
    if (s_.substr(i_, 3) != "::=") return expected("'::=' after rule name \"" + name + "\"");
    i_ += 3;
    const int32_t id = out_.intern(name);
    if (out_.defined(id)) return fail_at(name_at, "rule \"" + name + "\" is defined twice");
    out_.mark_defined(id);
    std::vector<Alternative> alts;
    HFS_TRY(parse_alternates(name, false, alts));
    out_.rule(id).alts = std::move(alts);
    skip(false);
    if (!at_end() && peek() != '\n') return expected("end of line after rule \"" + name + "\"");
    return Ok{};
  }

  Status parse_alternates(const std::string& rule, bool nested, std::vector<Alternative>& alts) {
    skip(true);  // a body may start on the next line
    for (;;) {
      Alternative seq;
      HFS_TRY(parse_sequence(rule, nested, seq));
      alts.push_back(std::move(seq));
      skip(nested);
      if (peek() == '|') {
        ++i_;
        skip(true);
        continue;
      }
      if (!nested && peek() == '\n') {  // a continuation line starting with '|'
        size_t save = i_;
        skip(true);
        if (peek() == '|') {
          ++i_;
          skip(true);
          continue;
        }
        i_ = save;
      }
      return Ok{};
    }
  }

  Status parse_sequence(const std::string& rule, bool nested, Alternative& seq) {
    for (;;) {
      skip(nested);
      const size_t atom_begin = seq.size();
      const char c = peek();
      if (c == '"') {
        HFS_TRY(parse_literal(seq));
      } else if (c == '[') {
        HFS_TRY(parse_class(seq));
      } else if (c == '.') {
        ++i_;
        seq.push_back(RuleSet::chars({{0, kMaxCodePoint}}, false));
      } else if (c == '(') {
        // Groups recurse: the depth is checked before the next level, so no text can exhaust the stack.
        if (budget_.too_deep(++depth_)) return budget_.depth_error(where(i_));
        if (budget_.over_time()) return budget_.time_error(where(i_));
        ++i_;
        std::vector<Alternative> alts;
        HFS_TRY(parse_alternates(rule, true, alts));
        --depth_;
        skip(true);
        if (peek() != ')') return expected("')' to close the group");
        ++i_;
        const int32_t id = out_.fresh(rule);
        out_.rule(id).alts = std::move(alts);
        seq.push_back(RuleSet::ref(id));
      } else if (is_name_char(c)) {
        const size_t at = i_;
        const std::string name = parse_name();
        const int32_t id = out_.intern(name);
        first_use_.emplace(id, at);
        seq.push_back(RuleSet::ref(id));
      } else {
        return Ok{};  // ')' '|' end of line or input: the caller decides whether that fits
      }
      HFS_TRY(parse_repetition(rule, atom_begin, seq));
    }
  }

  Status parse_repetition(const std::string& rule, size_t atom_begin, Alternative& seq) {
    for (;;) {
      int min, max;
      const char c = peek();
      if (c == '*') {
        min = 0, max = -1, ++i_;
      } else if (c == '+') {
        min = 1, max = -1, ++i_;
      } else if (c == '?') {
        min = 0, max = 1, ++i_;
      } else if (c == '{') {
        ++i_;
        skip(false);
        HFS_ASSIGN_OR_RETURN(min, parse_count("a repetition count after '{'"));
        skip(false);
        max = min;
        if (peek() == ',') {
          ++i_;
          skip(false);
          max = -1;
          if (peek() != '}') {
            HFS_ASSIGN_OR_RETURN(max, parse_count("a maximum count or '}'"));
            if (max < min)
              return fail_at(i_, "repetition maximum " + std::to_string(max) + " is below the minimum " + std::to_string(min));
          }
          skip(false);
        }
        if (peek() != '}') return expected("'}' to close the repetition");
        ++i_;
      } else {
        return Ok{};
      }
      Alternative body(seq.begin() + static_cast<ptrdiff_t>(atom_begin), seq.end());
      seq.resize(atom_begin);
      auto rep = out_.repeat(body, min, max, rule);
      if (!rep) return fail_at(i_, rep.error().message());
      seq.push_back(std::move(*rep));
    }
  }

  Result<int> parse_count(const std::string& what) {
    if (peek() < '0' || peek() > '9') return expected(what);
    long v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      ++i_;
      if (v > 100000) return fail_at(i_, "repetition count above 100000");
    }
    return static_cast<int>(v);
  }

  // One character of a literal or class at i_ (an escape or a UTF-8 character).
  Result<uint32_t> parse_char(char closing) {
    if (at_end() || peek() == '\n') return expected(std::string("'") + closing + "'");
    if (peek() != '\\') {
      size_t j = i_;
      const size_t n = utf8_len(static_cast<unsigned char>(s_[i_]));
      if (find_invalid_utf8(s_.substr(i_, n)) != std::string_view::npos) return fail_at(i_, "invalid UTF-8");
      const uint32_t cp = next_cp(s_, j);
      i_ = j;
      return cp;
    }
    const size_t at = i_;
    ++i_;
    const char e = peek();
    ++i_;
    switch (e) {
      case 'n': return uint32_t{'\n'};
      case 't': return uint32_t{'\t'};
      case 'r': return uint32_t{'\r'};
      case '\\': case '"': case '[': case ']': case '-': case '^': case '\'': case '/': return static_cast<uint32_t>(e);
      case 'x': case 'u': case 'U': {
        const int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        uint32_t v = 0;
        for (int k = 0; k < digits; ++k) {
          const int h = hex_value(peek());
          if (h < 0) return expected(std::to_string(digits) + " hex digits after '\\" + e + "'");
          v = v * 16 + static_cast<uint32_t>(h);
          ++i_;
        }
        if (v > kMaxCodePoint) return fail_at(at, "escape beyond U+10FFFF");
        return v;
      }
      default:
        i_ = at;
        return fail_at(at, "unknown escape " + describe(s_, at + 1) +
                               " (known: \\n \\t \\r \\\\ \\\" \\[ \\] \\- \\^ \\xHH \\uHHHH \\UHHHHHHHH)");
    }
  }

  Status parse_literal(Alternative& seq) {
    ++i_;
    while (peek() != '"') {
      HFS_ASSIGN_OR_RETURN(uint32_t cp, parse_char('"'));
      seq.push_back(RuleSet::chars({{cp, cp}}, false));
    }
    ++i_;
    return Ok{};
  }

  Status parse_class(Alternative& seq) {
    ++i_;
    bool negated = false;
    if (peek() == '^') negated = true, ++i_;
    std::vector<CpRange> ranges;
    while (peek() != ']') {
      HFS_ASSIGN_OR_RETURN(uint32_t lo, parse_char(']'));
      uint32_t hi = lo;
      if (peek() == '-' && i_ + 1 < s_.size() && s_[i_ + 1] != ']') {
        ++i_;
        const size_t at = i_;
        HFS_ASSIGN_OR_RETURN(hi, parse_char(']'));
        if (hi < lo) return fail_at(at, "character range end below its start");
      }
      ranges.push_back({lo, hi});
    }
    ++i_;
    seq.push_back(RuleSet::chars(std::move(ranges), negated));
    return Ok{};
  }

  std::string_view s_;
  RuleSet& out_;
  const Budget& budget_;
  int64_t depth_ = 0;  // groups open
  size_t i_ = 0;
  std::unordered_map<int32_t, size_t> first_use_;  // rule → where it is first referred to
};

}  // namespace

Status parse_gbnf(std::string_view text, RuleSet& out, const Budget& budget) {
  out.max_elements = budget.limits().max_elements;
  out.budget = &budget;  // for this call only
  Status st = Parser(text, out, budget).run();
  out.budget = nullptr;
  return st;
}

}  // namespace hfs::cst
