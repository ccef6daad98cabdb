// fuzz/targets/grammar.h — structured output: hfs::Grammar::from_gbnf / from_regex on arbitrary text, then
// a GrammarMatcher fed arbitrary bytes.
//
// Input: grammar text, a 0x01 byte, the bytes to feed (both grammar kinds get the same text). Property:
// feeding the bytes one at a time and all at once agree (a whole feed succeeds exactly when every single
// byte does, and ends equally complete). The matcher's bounds (1024 stacks per state, left recursion
// refused) keep every input finite.
#pragma once

#include "common.h"
#include "hfstatic/constraint.h"

namespace hfs::fuzz {

inline std::string fuzz_grammar(const uint8_t* data, size_t size) {
  std::string_view in = as_text(data, size);
  const size_t cut = in.find('\x01');
  const std::string_view text = in.substr(0, cut);
  const std::string_view feed = cut == std::string_view::npos ? std::string_view() : in.substr(cut + 1);
  for (int regex = 0; regex < 2; ++regex) {
    auto g = regex ? Grammar::from_regex(text) : Grammar::from_gbnf(text);
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
