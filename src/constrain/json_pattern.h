// constrain/json_pattern.h — a JSON Schema `pattern` as GBNF rules for the inside of a JSON string.
//
// JSON Schema's pattern is an ECMA-262 regex searched for in the decoded string: `abc` means "contains abc",
// `^` and `$` anchor. The regex is compiled with ECMAScript meanings and search semantics (an unanchored side
// becomes "any characters"), then every code-point class is written in JSON's escaped form: characters a JSON
// string cannot hold as they are — `"`, `\` and the controls below U+0020 — are produced as `\"`, `\\`,
// `\b \f \n \r \t` or `\u00XX`, so a class such as [^a] or ["\\] yields valid JSON whose decoded value the
// regex matches. Each code point has one spelling (the escaped form only where JSON needs one), which keeps
// the grammar unambiguous per character; other spellings (`\/`, `\u0041`) are valid JSON the grammar simply
// does not produce.
//
//   auto rules = hfs::json_pattern_rules("^[A-Z]{2}-\\d+$", [&](const std::string& hint) { return unique(hint); });
//   // (*rules)[0].name: the content rule, used as  "\"" content "\""
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "constrain/budget.h"
#include "hfstatic/error.h"

namespace hfs {

struct GbnfRule {
  std::string name, body;
};

// The rules, the content rule first; `name` is called once per rule with a hint ("pattern") and returns a
// name unused elsewhere in the grammar. kInvalidArgument with the regex compiler's message (offset and
// construct: lookaround, backreferences, \b, Unicode properties) for a pattern it cannot compile.
// `budget` bounds the regex as compile_regex does.
[[nodiscard]] Result<std::vector<GbnfRule>> json_pattern_rules(std::string_view pattern,
                                                               const std::function<std::string(const std::string&)>& name,
                                                               const cst::Budget& budget = cst::Budget());

// `s` as a GBNF string literal: quotes, backslashes and control characters escaped, other UTF-8 as it is
// (what the JSON Schema and pattern writers put in their rules).
std::string gbnf_literal(std::string_view s);

}  // namespace hfs
