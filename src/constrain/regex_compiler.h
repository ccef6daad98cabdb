// A practical regular-expression subset → RuleSet (rule "root" matches the whole output: anchors implicit).
#pragma once

#include <string_view>

#include "constrain/grammar_ir.h"
#include "hfstatic/error.h"

namespace hfs::cst {

// Supported: literals, escapes (\n \t \r \f \v \0 \xHH \uHHHH \u{H…} and escaped punctuation), \d \w \s
// \D \W \S (ASCII meanings, as Python's re.ASCII and JavaScript), classes [a-z] [^…] with those escapes,
// `.` (any character but \n), groups ( ) (?: ) (?<name> ) (?P<name> ), alternation, * + ? {m} {m,} {m,n}
// (lazy and possessive suffixes accepted: they do not change the set of matching strings), and ^ at the
// start / $ at the end (implied anyway). Anything else — backreferences, lookaround, \b — is
// kInvalidArgument naming the construct and its offset.
[[nodiscard]] Status compile_regex(std::string_view pattern, RuleSet& out);

}  // namespace hfs::cst
