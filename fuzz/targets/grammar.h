// fuzz/targets/grammar.h — structured output: hfs::Grammar::from_gbnf / from_regex / from_json_schema on
// arbitrary text, then a GrammarMatcher fed arbitrary bytes.
//
// Input: grammar text, a 0x01 byte, the bytes to feed (every grammar kind gets the same text, amplified
// as common.h's amplify() says, so deep nesting — 100 000 groups, schemas or brackets — is reachable).
// Property: feeding the bytes one at a time and all at once agree (a whole feed succeeds exactly when
// every single byte does, and ends equally complete). ConstraintLimits (nesting, size, compile time,
// stacks per state) and the left-recursion check keep every input finite and the stack shallow.
#pragma once

#include "common.h"
#include "hfstatic/constraint.h"

namespace hfs::fuzz {

inline std::string fuzz_grammar(const uint8_t* data, size_t size) {
  std::string_view in = as_text(data, size);
  const size_t cut = in.find('\x01');
  const std::string text = amplify(in.substr(0, cut));
  const std::string_view feed = cut == std::string_view::npos ? std::string_view() : in.substr(cut + 1);
  for (int kind = 0; kind < 3; ++kind) {
    auto g = kind == 0 ? Grammar::from_gbnf(text) : kind == 1 ? Grammar::from_regex(text) : Grammar::from_json_schema(text);
    if (!g) continue;
    GrammarMatcher bytewise(*g), whole(*g);
    bool all = true;
    for (char c : feed) all = all && bytewise.feed(std::string_view(&c, 1));
    if (whole.feed(feed) != all) return "feeding at once and byte by byte disagree";
    if (all && whole.complete() != bytewise.complete()) return "complete() differs between the two feeds";
  }
  return "";
}

}  // namespace hfs::fuzz
