// A practical regular-expression subset → RuleSet (rule "root" matches the whole output: anchors implicit,
// unless `search` asks for JSON Schema's `pattern` semantics).
#pragma once

#include <string_view>

#include "constrain/budget.h"
#include "constrain/grammar_ir.h"
#include "hfstatic/error.h"

namespace hfs::cst {

// Supported: literals, escapes (\n \t \r \f \v \0 \xHH \uHHHH \u{H…} and escaped punctuation), \d \w \s
// \D \W \S (ASCII meanings, as Python's re.ASCII and JavaScript), classes [a-z] [^…] with those escapes,
// `.` (any character but \n), groups ( ) (?: ) (?<name> ) (?P<name> ), alternation, * + ? {m} {m,} {m,n}
// (lazy and possessive suffixes accepted: they do not change the set of matching strings), and ^ at the
// start / $ at the end (implied anyway). Anything else — backreferences, lookaround, \b — is
// kInvalidArgument naming the construct and its offset.
struct RegexOptions {
  // ECMA-262 meanings where they differ from the default (Python-like) ones: `.` excludes every line
  // terminator (\n \r U+2028 U+2029), \s is ECMAScript's Unicode white space (so \S excludes U+00A0 too),
  // `[]` matches nothing (refused) and `[^]` any character. JSON Schema's `pattern` is ECMA-262.
  bool ecmascript = false;
  // The regex may match anywhere in the text, as a regex search does: each top-level alternative without
  // a leading `^` may be preceded, and each one without a trailing `$` followed, by any characters.
  // `^` and `$` are accepted at the edges of every top-level alternative (`^a|b$`), nowhere else.
  bool search = false;
};

// Group nesting, repetition expansion and time are bounded by `budget` (errors name the limit).
[[nodiscard]] Status compile_regex(std::string_view pattern, RuleSet& out, const RegexOptions& options = {},
                                   const Budget& budget = Budget());

}  // namespace hfs::cst
