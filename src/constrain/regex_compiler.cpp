// Regex → rules: each group and each alternation becomes a rule, each quantifier a repetition rule.
#include "constrain/regex_compiler.h"

#include <cstddef>

#include "core/utf8.h"

namespace hfs::cst {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

const std::vector<CpRange> kDigit = {{'0', '9'}};
const std::vector<CpRange> kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const std::vector<CpRange> kSpace = {{'\t', '\r'}, {' ', ' '}};
// ECMAScript's WhiteSpace and LineTerminator code points (what \s matches in a JavaScript RegExp).
const std::vector<CpRange> kEcmaSpace = {{'\t', '\r'},       {' ', ' '},       {0xA0, 0xA0},     {0x1680, 0x1680},
                                         {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                                         {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};

class RegexParser {
 public:
  RegexParser(std::string_view s, RuleSet& out, const RegexOptions& options, const Budget& budget)
      : s_(s), out_(out), opt_(options), budget_(budget) {}

  Status run() {
    std::vector<Alternative> alts;
    HFS_TRY(parse_alternates(alts, /*top=*/true));
    if (!at_end()) return fail(peek() == ')' ? "unbalanced ')'" : "unexpected character");
    const int32_t root = out_.intern("root");
    out_.mark_defined(root);
    out_.rule(root).alts = std::move(alts);
    return Ok{};
  }

 private:
  bool at_end() const { return i_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[i_]; }
  Error fail(const std::string& msg) const {
    return make_error(ErrorCode::kInvalidArgument, "regex: offset " + std::to_string(i_) + ": " + msg);
  }

  // `top`: the pattern's own alternatives, whose edges may hold the anchors.
  Status parse_alternates(std::vector<Alternative>& alts, bool top) {
    for (;;) {
      Alternative seq;
      bool starts = false, ends = false;
      if (top && peek() == '^' && (opt_.search || i_ == 0)) starts = true, ++i_;
      HFS_TRY(parse_sequence(seq, top, ends));
      if (top && opt_.search) {  // an unanchored side: any characters may come before or after the match
        HFS_ASSIGN_OR_RETURN(const Element any, any_text());
        if (!starts) seq.insert(seq.begin(), any);
        if (!ends) seq.push_back(any);
      }
      alts.push_back(std::move(seq));
      if (peek() != '|') return Ok{};
      ++i_;
    }
  }

  // Any characters: one shared loop rule.
  Result<Element> any_text() {
    if (any_text_ < 0) {
      auto rep = out_.repeat({RuleSet::chars({{0, kMaxCodePoint}}, false)}, 0, -1, "any");
      if (!rep) return fail(rep.error().message());
      any_text_ = rep->rule;
    }
    return RuleSet::ref(any_text_);
  }

  // `ends`: set when the sequence ends in the `$` anchor.
  Status parse_sequence(Alternative& seq, bool top, bool& ends) {
    while (!at_end() && peek() != '|' && peek() != ')') {
      const size_t atom_begin = seq.size();
      const char c = peek();
      const bool edge = i_ + 1 == s_.size() || (top && opt_.search && s_[i_ + 1] == '|');
      if (c == '$' && edge) {  // the end anchor (implied unless searching)
        ++i_;
        ends = true;
        continue;
      }
      if (c == '(') {
        // Groups recurse: the depth is checked before the next level, so no pattern can exhaust the stack.
        if (budget_.too_deep(depth_ + 1)) return budget_.depth_error("regex: offset " + std::to_string(i_));
        if (budget_.over_time()) return budget_.time_error("regex: offset " + std::to_string(i_));
        ++i_;
        if (peek() == '?') {
          const std::string_view rest = s_.substr(i_);
          if (rest.starts_with("?:")) {
            i_ += 2;
          } else if (rest.starts_with("?<") && !rest.starts_with("?<=") && !rest.starts_with("?<!")) {
            i_ = s_.find('>', i_) == std::string_view::npos ? s_.size() : s_.find('>', i_) + 1;
          } else if (rest.starts_with("?P<")) {
            i_ = s_.find('>', i_) == std::string_view::npos ? s_.size() : s_.find('>', i_) + 1;
          } else {
            return fail("group kind '(" + std::string(rest.substr(0, 2)) +
                        "' is not supported (lookaround, flags and conditionals have no grammar form)");
          }
        }
        std::vector<Alternative> alts;
        ++depth_;
        HFS_TRY(parse_alternates(alts, /*top=*/false));
        --depth_;
        if (peek() != ')') return fail("missing ')'");
        ++i_;
        const int32_t id = out_.fresh("group");
        out_.rule(id).alts = std::move(alts);
        seq.push_back(RuleSet::ref(id));
      } else if (c == '[') {
        HFS_TRY(parse_class(seq));
      } else if (c == '.') {
        ++i_;
        if (opt_.ecmascript) seq.push_back(RuleSet::chars({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}, true));
        else seq.push_back(RuleSet::chars({{'\n', '\n'}}, true));
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        return fail(std::string("quantifier '") + c + "' with nothing to repeat");
      } else if (c == '^' || c == '$') {
        return fail(std::string("anchor '") + c + "' inside the pattern (" +
                    (opt_.search ? "anchors are supported at the start and end of the pattern's top-level alternatives only"
                                 : "the whole output must match: anchors are implied") + ")");
      } else if (c == '\\') {
        std::vector<CpRange> ranges;
        bool negated = false;
        HFS_TRY(parse_escape(ranges, negated, /*in_class=*/false));
        seq.push_back(RuleSet::chars(std::move(ranges), negated));
      } else {
        size_t j = i_;
        const size_t n = utf8_len(static_cast<unsigned char>(c));
        if (find_invalid_utf8(s_.substr(i_, n)) != std::string_view::npos) return fail("invalid UTF-8");
        const uint32_t cp = next_cp(s_, j);
        i_ = j;
        seq.push_back(RuleSet::chars({{cp, cp}}, false));
      }
      HFS_TRY(parse_quantifier(atom_begin, seq));
    }
    return Ok{};
  }

  Status parse_quantifier(size_t atom_begin, Alternative& seq) {
    for (;;) {
      int min, max;
      const char c = peek();
      if (c == '*') {
        min = 0, max = -1, ++i_;
      } else if (c == '+') {
        min = 1, max = -1, ++i_;
      } else if (c == '?') {
        min = 0, max = 1, ++i_;
      } else if (c == '{' && i_ + 1 < s_.size() && s_[i_ + 1] >= '0' && s_[i_ + 1] <= '9') {
        ++i_;
        HFS_ASSIGN_OR_RETURN(min, parse_count());
        max = min;
        if (peek() == ',') {
          ++i_;
          max = -1;
          if (peek() != '}') {
            HFS_ASSIGN_OR_RETURN(max, parse_count());
          }
        }
        if (peek() != '}') return fail("expected '}' to close the quantifier");
        ++i_;
        if (max >= 0 && max < min) return fail("quantifier maximum below its minimum");
      } else {
        return Ok{};
      }
      if (peek() == '?' || peek() == '+') ++i_;  // lazy / possessive: same language
      Alternative body(seq.begin() + static_cast<ptrdiff_t>(atom_begin), seq.end());
      seq.resize(atom_begin);
      auto rep = out_.repeat(body, min, max, "repeat");
      if (!rep) return fail(rep.error().message());
      seq.push_back(std::move(*rep));
      const char n = peek();
      if (n == '*' || n == '+' || n == '?' || (n == '{' && i_ + 1 < s_.size() && s_[i_ + 1] >= '0' && s_[i_ + 1] <= '9'))
        return fail("multiple repeat (a quantifier after a quantifier, as Python's re refuses it)");
    }
  }

  Result<int> parse_count() {
    if (peek() < '0' || peek() > '9') return fail("expected a count");
    long v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      ++i_;
      if (v > 100000) return fail("count above 100000");
    }
    return static_cast<int>(v);
  }

  Result<uint32_t> parse_hex(int digits) {
    uint32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      const int h = hex_value(peek());
      if (h < 0) return fail("expected " + std::to_string(digits) + " hex digits");
      v = v * 16 + static_cast<uint32_t>(h);
      ++i_;
    }
    return v;
  }

  // An escape at i_ ('\\'): a class escape fills `ranges` (and `negated`), a character escape one range.
  Status parse_escape(std::vector<CpRange>& ranges, bool& negated, bool in_class) {
    ++i_;
    if (at_end()) return fail("pattern ends in '\\'");
    const char e = peek();
    ++i_;
    auto one = [&](uint32_t cp) {
      ranges.push_back({cp, cp});
      return Status(Ok{});
    };
    switch (e) {
      case 'd': case 'D': ranges.insert(ranges.end(), kDigit.begin(), kDigit.end()); negated = e == 'D'; return Ok{};
      case 'w': case 'W': ranges.insert(ranges.end(), kWord.begin(), kWord.end()); negated = e == 'W'; return Ok{};
      case 's': case 'S': {
        const std::vector<CpRange>& space = opt_.ecmascript ? kEcmaSpace : kSpace;
        ranges.insert(ranges.end(), space.begin(), space.end());
        negated = e == 'S';
        return Ok{};
      }
      case 'n': return one('\n');
      case 't': return one('\t');
      case 'r': return one('\r');
      case 'f': return one('\f');
      case 'v': return one('\v');
      case '0': return one(0);
      case 'x': {
        HFS_ASSIGN_OR_RETURN(uint32_t v, parse_hex(2));
        return one(v);
      }
      case 'u': {
        if (peek() == '{') {
          ++i_;
          uint32_t v = 0;
          int n = 0;
          while (hex_value(peek()) >= 0 && n < 6) v = v * 16 + static_cast<uint32_t>(hex_value(peek())), ++i_, ++n;
          if (n == 0 || peek() != '}' || v > kMaxCodePoint) return fail("expected \\u{hex} up to 10FFFF");
          ++i_;
          return one(v);
        }
        HFS_ASSIGN_OR_RETURN(uint32_t v, parse_hex(4));
        return one(v);
      }
      default:
        if (e == 'b' && in_class) return one('\b');
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '1' && e <= '9')) {
          --i_;
          return fail(std::string("escape '\\") + e + "' is not supported (word boundaries, backreferences and "
                      "Unicode properties have no grammar form)");
        }
        return one(static_cast<unsigned char>(e));  // escaped punctuation stands for itself
    }
  }

  Status parse_class(Alternative& seq) {
    ++i_;
    bool negated = false;
    if (peek() == '^') negated = true, ++i_;
    std::vector<CpRange> ranges;
    if (opt_.ecmascript && peek() == ']') {  // ECMAScript: `[]` is empty, `[^]` any character
      if (!negated) return fail("the empty class '[]' matches nothing");
      ++i_;
      seq.push_back(RuleSet::chars({}, true));
      return Ok{};
    }
    bool first = true;
    while (first || peek() != ']') {
      if (at_end()) return fail("missing ']'");
      first = false;
      uint32_t lo;
      if (peek() == '\\') {
        std::vector<CpRange> r;
        bool neg = false;
        HFS_TRY(parse_escape(r, neg, true));
        if (neg || r.size() != 1 || r[0].lo != r[0].hi) {  // \d \w \s (or their negations) inside a class
          Element el = RuleSet::chars(std::move(r), neg);
          ranges.insert(ranges.end(), el.ranges.begin(), el.ranges.end());
          continue;
        }
        lo = r[0].lo;
      } else {
        size_t j = i_;
        lo = next_cp(s_, j);
        i_ = j;
      }
      uint32_t hi = lo;
      if (peek() == '-' && i_ + 1 < s_.size() && s_[i_ + 1] != ']') {
        ++i_;
        if (peek() == '\\') {
          std::vector<CpRange> r;
          bool neg = false;
          HFS_TRY(parse_escape(r, neg, true));
          if (neg || r.size() != 1 || r[0].lo != r[0].hi) return fail("class range ends in a class escape");
          hi = r[0].lo;
        } else {
          size_t j = i_;
          hi = next_cp(s_, j);
          i_ = j;
        }
        if (hi < lo) return fail("class range end below its start");
      }
      ranges.push_back({lo, hi});
    }
    ++i_;
    seq.push_back(RuleSet::chars(std::move(ranges), negated));
    return Ok{};
  }

  std::string_view s_;
  RuleSet& out_;
  RegexOptions opt_;
  const Budget& budget_;
  int64_t depth_ = 0;  // groups open
  size_t i_ = 0;
  int32_t any_text_ = -1;
};

}  // namespace

Status compile_regex(std::string_view pattern, RuleSet& out, const RegexOptions& options, const Budget& budget) {
  out.max_elements = budget.limits().max_elements;
  out.budget = &budget;  // for this call only
  Status st = RegexParser(pattern, out, options, budget).run();
  out.budget = nullptr;
  return st;
}

}  // namespace hfs::cst
