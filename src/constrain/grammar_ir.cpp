// RuleSet: rule interning, code-point class normalization and repetition expansion.
#include "constrain/grammar_ir.h"

#include "constrain/budget.h"

#include <algorithm>

namespace hfs::cst {

int32_t RuleSet::intern(const std::string& name) {
  auto [it, added] = ids_.emplace(name, static_cast<int32_t>(rules_.size()));
  if (!added) return it->second;
  rules_.push_back(Rule{name, {}, false});
  defined_.push_back(0);
  return static_cast<int32_t>(rules_.size() - 1);
}

int32_t RuleSet::fresh(const std::string& base) {
  // '-' and letters are all a GBNF name may hold; the '#' keeps generated names out of the source's space.
  const int32_t id = intern(base + "#" + std::to_string(rules_.size()));
  mark_defined(id);
  return id;
}

Element RuleSet::chars(std::vector<CpRange> ranges, bool negated) {
  std::sort(ranges.begin(), ranges.end(), [](const CpRange& a, const CpRange& b) { return a.lo < b.lo; });
  std::vector<CpRange> merged;
  for (const CpRange& r : ranges) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  if (negated) {
    std::vector<CpRange> comp;
    uint32_t next = 0;
    for (const CpRange& r : merged) {
      if (r.lo > next) comp.push_back({next, r.lo - 1});
      next = r.hi + 1;
    }
    if (next <= kMaxCodePoint) comp.push_back({next, kMaxCodePoint});
    merged = std::move(comp);
  }
  return Element{std::move(merged), -1};
}

Result<Element> RuleSet::repeat(const Alternative& body, int min, int max, const std::string& base) {
  const int64_t b = static_cast<int64_t>(body.size()) + 1;
  const int64_t cost = b * (static_cast<int64_t>(min) + 1) + (max > min ? b * (static_cast<int64_t>(max) - min) : b);
  if (cost > max_elements - expanded_)
    return make_error(ErrorCode::kInvalidArgument, "repetition {" + std::to_string(min) + "," +
                                                       (max < 0 ? std::string() : std::to_string(max)) +
                                                       "} expands the grammar past " + std::to_string(max_elements) +
                                                       " elements (ConstraintLimits::max_elements)");
  expanded_ += cost;
  // x{m,n} → x…x (m times) then n−m nested optionals "(x (x …)?)?"; x{m,} → x…x then x*: the expansion
  // llama.cpp uses, so no counter ever lives in the matcher's state.
  const int32_t id = fresh(base);
  Alternative seq;
  for (int i = 0; i < min; ++i) seq.insert(seq.end(), body.begin(), body.end());
  if (max < 0) {
    const int32_t star = fresh(base);
    Alternative loop = body;
    loop.push_back(ref(star));
    rule(star).alts = {loop, Alternative{}};
    rule(star).loop = true;
    seq.push_back(ref(star));
  } else if (max > min) {
    int32_t tail = -1;
    for (int i = 0; i < max - min; ++i) {
      if (budget && (i & 1023) == 1023 && budget->over_time()) return budget->time_error("repetition");
      const int32_t opt = fresh(base);
      Alternative one = body;
      if (tail >= 0) one.push_back(ref(tail));
      rule(opt).alts = {one, Alternative{}};
      tail = opt;
    }
    seq.push_back(ref(tail));
  }
  rule(id).alts = {seq};
  return ref(id);
}

}  // namespace hfs::cst
