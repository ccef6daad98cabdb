// A pattern's regex rules written back as GBNF text, each code-point class in JSON's escaped form.
#include "constrain/json_pattern.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "constrain/grammar_ir.h"
#include "constrain/regex_compiler.h"

namespace hfs {
namespace {

using cst::CpRange;

bool holds(const std::vector<CpRange>& ranges, uint32_t cp) {
  for (const CpRange& r : ranges)
    if (r.lo <= cp && cp <= r.hi) return true;
  return false;
}

// The code points a JSON string holds as they are: all but the controls below U+0020, '"' and '\'.
std::vector<CpRange> unescaped(const std::vector<CpRange>& ranges) {
  std::vector<CpRange> out;
  for (const CpRange& r : ranges) {
    uint32_t lo = std::max<uint32_t>(r.lo, 0x20);
    for (const uint32_t x : {uint32_t{'"'}, uint32_t{'\\'}}) {
      if (lo > r.hi) break;
      if (x >= lo && x <= r.hi) {
        if (x > lo) out.push_back({lo, x - 1});
        lo = x + 1;
      }
    }
    if (lo <= r.hi) out.push_back({lo, r.hi});
  }
  return out;
}

std::vector<CpRange> complement(const std::vector<CpRange>& ranges) {
  std::vector<CpRange> out;
  uint32_t next = 0;
  for (const CpRange& r : ranges) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= cst::kMaxCodePoint) out.push_back({next, cst::kMaxCodePoint});
  return out;
}

std::string hex_escape(uint32_t cp) {
  char buf[16];
  if (cp < 0x100) std::snprintf(buf, sizeof buf, "\\x%02X", cp);
  else if (cp < 0x10000) std::snprintf(buf, sizeof buf, "\\u%04X", cp);
  else std::snprintf(buf, sizeof buf, "\\U%08X", cp);
  return buf;
}

bool printable_ascii(uint32_t cp) { return cp >= 0x20 && cp < 0x7F; }

// A code point inside a GBNF class: the class's own syntax characters as hex escapes, which llama.cpp reads too.
std::string class_char(uint32_t cp) {
  if (printable_ascii(cp) && !std::strchr("\\\"[]-^", static_cast<int>(cp))) return std::string(1, static_cast<char>(cp));
  return hex_escape(cp);
}

// A GBNF class for non-empty `ranges` (negated when that is shorter), or a literal for one code point.
std::string class_text(const std::vector<CpRange>& ranges) {
  if (ranges.size() == 1 && ranges[0].lo == ranges[0].hi) {
    const uint32_t cp = ranges[0].lo;
    if (cp == '"' || cp == '\\') return gbnf_literal(std::string(1, static_cast<char>(cp)));
    return "\"" + (printable_ascii(cp) ? std::string(1, static_cast<char>(cp)) : hex_escape(cp)) + "\"";
  }
  const std::vector<CpRange> comp = complement(ranges);
  if (comp.empty()) return ".";
  const bool negated = comp.size() < ranges.size();
  std::string out = negated ? "[^" : "[";
  for (const CpRange& r : negated ? comp : ranges) {
    out += class_char(r.lo);
    if (r.hi > r.lo + 1) out += "-";
    if (r.hi > r.lo) out += class_char(r.hi);
  }
  return out + "]";
}

std::vector<CpRange> points(const std::vector<uint32_t>& cps) {
  std::vector<CpRange> out;
  for (const uint32_t cp : cps) {
    if (!out.empty() && out.back().hi + 1 == cp) out.back().hi = cp;
    else out.push_back({cp, cp});
  }
  return out;
}

// The JSON spelling of any code point in `ranges`: as it is where JSON allows that, else its escape.
// Returns whether the expression is an alternation (needs parentheses inside a sequence).
std::string json_class(const std::vector<CpRange>& ranges, bool& alternation) {
  std::vector<std::string> parts;
  if (const std::vector<CpRange> plain = unescaped(ranges); !plain.empty()) parts.push_back(class_text(plain));
  // After the backslash: one of the short escapes, or u00XX for the other controls.
  std::vector<uint32_t> shorts;
  for (const auto& [cp, letter] : std::initializer_list<std::pair<uint32_t, char>>{
           {'"', '"'}, {'\\', '\\'}, {'\b', 'b'}, {'\f', 'f'}, {'\n', 'n'}, {'\r', 'r'}, {'\t', 't'}})
    if (holds(ranges, cp)) shorts.push_back(static_cast<uint8_t>(letter));
  std::sort(shorts.begin(), shorts.end());
  std::vector<std::string> u00;
  for (const uint32_t high : {0u, 1u}) {
    std::vector<uint32_t> digits;
    for (uint32_t low = 0; low < 16; ++low) {
      const uint32_t cp = high * 16 + low;
      if (cp == '\b' || cp == '\f' || cp == '\n' || cp == '\r' || cp == '\t' || !holds(ranges, cp)) continue;
      digits.push_back(static_cast<uint32_t>("0123456789abcdef"[low]));
    }
    if (!digits.empty()) u00.push_back("\"" + std::to_string(high) + "\" " + class_text(points(digits)));
  }
  std::vector<std::string> after;
  if (!shorts.empty()) after.push_back(class_text(points(shorts)));
  if (u00.size() == 1) after.push_back("\"u00\" " + u00[0]);
  if (u00.size() == 2) after.push_back("\"u00\" (" + u00[0] + " | " + u00[1] + ")");
  if (after.size() == 1) parts.push_back("\"\\\\\" " + after[0]);
  if (after.size() == 2) parts.push_back("\"\\\\\" (" + after[0] + " | " + after[1] + ")");
  alternation = parts.size() > 1;
  return parts.size() == 1 ? parts[0] : parts[0] + " | " + parts[1];
}

}  // namespace

std::string gbnf_literal(std::string_view s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') out += '\\', out += ch;
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

Result<std::vector<GbnfRule>> json_pattern_rules(std::string_view pattern,
                                                 const std::function<std::string(const std::string&)>& name,
                                                 const cst::Budget& budget) {
  cst::RuleSet rules;
  HFS_TRY(cst::compile_regex(pattern, rules, cst::RegexOptions{.ecmascript = true, .search = true}, budget));
  const int32_t root = rules.intern("root");
  const size_t n = rules.rules().size();
  std::vector<std::string> names(n);
  names[static_cast<size_t>(root)] = name("pattern");
  for (size_t i = 0; i < n; ++i)
    if (names[i].empty()) names[i] = name("pattern");
  auto sequence = [&](cst::Alternative::const_iterator b, cst::Alternative::const_iterator e) {
    std::string out;
    for (auto it = b; it != e; ++it) {
      if (!out.empty()) out += ' ';
      if (it->is_ref()) {
        out += names[static_cast<size_t>(it->rule)];
        continue;
      }
      bool alternation = false;
      const std::string c = json_class(it->ranges, alternation);
      out += alternation ? "(" + c + ")" : c;
    }
    return out.empty() ? std::string("\"\"") : out;
  };
  std::vector<GbnfRule> out;
  out.reserve(n);
  for (size_t k = 0; k < n; ++k) {
    const size_t i = k == 0 ? static_cast<size_t>(root) : k <= static_cast<size_t>(root) ? k - 1 : k;
    const cst::Rule& r = rules.rules()[i];
    std::string body;
    if (r.loop) {  // {body…, self} | {}: written as a GBNF repetition, which the parser makes a loop again
      const std::string each = sequence(r.alts[0].begin(), r.alts[0].end() - 1);
      body = (r.alts[0].size() == 2 && each.front() == '(' ? each : "(" + each + ")") + "*";
    } else {
      for (const cst::Alternative& a : r.alts) body += (body.empty() ? "" : " | ") + sequence(a.begin(), a.end());
    }
    out.push_back({names[i], std::move(body)});
  }
  return out;
}

}  // namespace hfs
