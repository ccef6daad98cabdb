// GBNF (llama.cpp's grammar syntax) → RuleSet.
#pragma once

#include <string_view>

#include "constrain/budget.h"
#include "constrain/grammar_ir.h"
#include "hfstatic/error.h"

namespace hfs::cst {

// Parses `text` into `out`. Errors are kInvalidArgument with the position and what was expected:
// "grammar line 3, column 12: expected '::=' after rule name \"value\"". Group nesting, repetition
// expansion and time are bounded by `budget` (errors name the limit).
[[nodiscard]] Status parse_gbnf(std::string_view text, RuleSet& out, const Budget& budget);

}  // namespace hfs::cst
