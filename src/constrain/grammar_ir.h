// The grammar form every constraint source compiles to (GBNF text, regexes, and later JSON Schemas): rules
// of alternatives of elements, each element a code-point class or a reference to a rule. Repetitions are
// already expanded into helper rules by the builders, so the matcher only ever sees classes and references.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "hfstatic/error.h"

namespace hfs::cst {
class Budget;
}

namespace hfs::cst {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// Inclusive code-point range.
struct CpRange {
  uint32_t lo, hi;
  bool operator==(const CpRange&) const = default;
};

// One element of an alternative: a class of code points (sorted, merged, never empty) or a rule reference.
struct Element {
  std::vector<CpRange> ranges;  // empty → rule reference
  int32_t rule = -1;
  bool is_ref() const { return rule >= 0; }
};

using Alternative = std::vector<Element>;  // empty: matches the empty string

struct Rule {
  std::string name;
  std::vector<Alternative> alts;
  // A repetition loop from RuleSet::repeat: alts = {body…, self}, {}. compile() rewrites a loop whose body
  // can match the empty string to repeat only the body's non-empty matches (same language, no ε-cycle).
  bool loop = false;
};

// Rules under construction; a builder (GBNF parser, regex compiler) fills it, then compile() checks it.
class RuleSet {
 public:
  // The id of rule `name`, created without alternatives when new (a reference before the definition).
  int32_t intern(const std::string& name);
  // A new helper rule "<base>_<n>" that no source name can collide with.
  int32_t fresh(const std::string& base);
  Rule& rule(int32_t id) { return rules_[static_cast<size_t>(id)]; }
  const std::vector<Rule>& rules() const { return rules_; }
  bool defined(int32_t id) const { return defined_[static_cast<size_t>(id)] != 0; }
  void mark_defined(int32_t id) { defined_[static_cast<size_t>(id)] = 1; }

  // Element helpers.
  static Element chars(std::vector<CpRange> ranges, bool negated);  // sorted, merged, complemented when negated
  static Element ref(int32_t rule) { return Element{{}, rule}; }
  // x{min,max} (max < 0: unbounded) over the sequence `body`, as a new rule; returns a reference to it.
  // Refused (kInvalidArgument naming the limit, nothing added) when the expansions so far would exceed
  // max_elements: `"abc"{100000}{100000}`-style text must not become gigabytes of rules.
  [[nodiscard]] Result<Element> repeat(const Alternative& body, int min, int max, const std::string& base);

  // The bound repeat() keeps (ConstraintLimits::max_elements); compile() checks the final size too.
  int64_t max_elements = std::numeric_limits<int64_t>::max();
  // When set, repeat() also stops once the budget's time is up (one {0,100000} makes 100 000 rules).
  const Budget* budget = nullptr;

 private:
  std::vector<Rule> rules_;
  std::vector<char> defined_;
  int64_t expanded_ = 0;  // elements repeat() has made
  std::unordered_map<std::string, int32_t> ids_;  // name → id: {0,30000} makes as many helper rules
};

}  // namespace hfs::cst
