// The matcher's flat form of a grammar: every alternative's elements in one array, each alternative ended by
// a kEnd element, so a grammar position is one index and a parse stack is a vector of indexes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "constrain/budget.h"
#include "constrain/grammar_ir.h"
#include "hfstatic/constraint.h"
#include "hfstatic/error.h"

namespace hfs::cst {

struct Flat {
  enum Kind : uint8_t { kEnd, kChars, kRef };
  Kind kind;
  uint32_t a;  // kChars: first range in CompiledGrammar::ranges; kRef: the rule
  uint32_t n;  // kChars: number of ranges
};

struct CompiledGrammar {
  std::vector<Flat> elems;
  std::vector<CpRange> ranges;
  std::vector<uint32_t> alt_start;  // rule r's alternatives start at alt_start[rule_alts[r] .. rule_alts[r + 1])
  std::vector<uint32_t> rule_alts;
  std::vector<std::string> names;
  uint32_t root = 0;
  size_t max_stacks = 1024;  // ConstraintLimits::max_states: a matcher step past it refuses the character

  std::span<const uint32_t> alts(uint32_t rule) const {
    return {alt_start.data() + rule_alts[rule], rule_alts[rule + 1] - rule_alts[rule]};
  }
  bool matches(const Flat& e, uint32_t cp) const {
    for (uint32_t i = e.a; i < e.a + e.n; ++i) {
      if (cp < ranges[i].lo) return false;
      if (cp <= ranges[i].hi) return true;
    }
    return false;
  }
  // Whether the class holds any code point in [lo, hi].
  bool intersects(const Flat& e, uint32_t lo, uint32_t hi) const {
    for (uint32_t i = e.a; i < e.a + e.n; ++i)
      if (ranges[i].lo <= hi && lo <= ranges[i].hi) return true;
    return false;
  }
};

// Checks and flattens `rules`: the rule `root` must exist, every rule must be defined (the builders report
// undefined names with their position first), and no rule may be left-recursive (the matcher expands rule
// references eagerly, so a rule that can reach itself without consuming input would never finish).
// `what` prefixes errors ("grammar", "regex").
// `budget` bounds the size, the rule-chain depth and the time (errors name the limit).
[[nodiscard]] Result<CompiledGrammar> compile(const RuleSet& rules, const std::string& root, const std::string& what,
                                              const Budget& budget = Budget());

}  // namespace hfs::cst

namespace hfs {
struct Grammar::Impl {
  cst::CompiledGrammar g;
};
}  // namespace hfs
