// RuleSet → CompiledGrammar: root and definition checks, the left-recursion check, flattening.
#include <cstddef>
#include <algorithm>
#include <utility>

#include "constrain/compiled_grammar.h"

namespace hfs::cst {
namespace {

// Rules that can match the empty string (least fixpoint).
// Empty when the budget's time ran out (a pass is linear; a long chain of rules defined in reverse
// order needs as many passes as rules).
std::vector<char> nullable_rules(const std::vector<Rule>& rules, const Budget& budget) {
  std::vector<char> nullable(rules.size(), 0);
  for (bool changed = true; changed;) {
    if (budget.over_time()) return {};
    changed = false;
    for (size_t r = 0; r < rules.size(); ++r) {
      if (nullable[r]) continue;
      for (const Alternative& a : rules[r].alts) {
        bool all = true;
        for (const Element& e : a) all = all && e.is_ref() && nullable[static_cast<size_t>(e.rule)];
        if (all) {
          nullable[r] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  return nullable;
}

// A generated helper rule's name ("value#12") shown as the source rule it came from.
std::string shown(const std::string& name) { return name.substr(0, name.find('#')); }

}  // namespace

// ε-elimination for repetition loops: `(a | b?)*` would otherwise loop on "b? matched nothing, repeat".
// ne(r) is a rule matching exactly r's non-empty strings; a loop over a nullable body repeats the body's
// non-empty variants instead. Memoized, so recursive rules terminate.
class EpsilonFree {
 public:
  EpsilonFree(std::vector<Rule>& rules, std::vector<char>& nullable, int64_t max_depth)
      : rules_(rules), nullable_(nullable), ne_(rules.size(), -1), max_depth_(max_depth) {}

  // ne() recurses through chains of nullable rules: past max_depth it stops and this is set.
  bool too_deep() const { return too_deep_; }

  void rewrite_loops() {
    const size_t n = rules_.size();
    for (size_t r = 0; r < n; ++r) {
      if (!rules_[r].loop || rules_[r].alts.size() != 2 || rules_[r].alts[0].empty()) continue;
      Alternative body(rules_[r].alts[0].begin(), rules_[r].alts[0].end() - 1);
      if (!all_nullable(body)) continue;
      std::vector<Alternative> variants;
      non_empty(body, variants);
      for (Alternative& v : variants) v.push_back(RuleSet::ref(static_cast<int32_t>(r)));
      variants.push_back(Alternative{});
      rules_[r].alts = std::move(variants);
    }
  }

 private:
  bool all_nullable(const Alternative& a) const {
    for (const Element& e : a)
      if (!e.is_ref() || !nullable_[static_cast<size_t>(e.rule)]) return false;
    return true;
  }
  // The alternatives matching exactly the non-empty strings of `a`.
  void non_empty(const Alternative& a, std::vector<Alternative>& out) {
    if (a.empty()) return;
    if (!all_nullable(a)) {
      out.push_back(a);
      return;
    }
    for (size_t i = 0; i < a.size(); ++i) {  // the first non-empty element is a[i]
      Alternative v;
      v.push_back(RuleSet::ref(ne(a[i].rule)));
      v.insert(v.end(), a.begin() + static_cast<ptrdiff_t>(i) + 1, a.end());
      out.push_back(std::move(v));
    }
  }
  int32_t ne(int32_t r) {
    if (!nullable_[static_cast<size_t>(r)]) return r;
    if (ne_[static_cast<size_t>(r)] >= 0) return ne_[static_cast<size_t>(r)];
    if (too_deep_ || depth_ >= max_depth_) {
      too_deep_ = true;
      return r;
    }
    struct Level {
      int64_t& d;
      explicit Level(int64_t& depth) : d(++depth) {}
      ~Level() { --d; }
    } level(depth_);
    const int32_t id = static_cast<int32_t>(rules_.size());
    rules_.push_back(Rule{rules_[static_cast<size_t>(r)].name + "#", {}, false});
    nullable_.push_back(0);
    ne_.push_back(-1);
    ne_[static_cast<size_t>(r)] = id;
    const std::vector<Alternative> alts = rules_[static_cast<size_t>(r)].alts;  // a copy: rules_ may grow
    std::vector<Alternative> out;
    for (const Alternative& a : alts) non_empty(a, out);
    rules_[static_cast<size_t>(id)].alts = std::move(out);
    return id;
  }

  std::vector<Rule>& rules_;
  std::vector<char>& nullable_;
  std::vector<int32_t> ne_;
  int64_t max_depth_, depth_ = 0;
  bool too_deep_ = false;
};

Result<CompiledGrammar> compile(const RuleSet& set, const std::string& root, const std::string& what,
                                const Budget& budget) {
  int32_t root_id = -1;
  for (size_t i = 0; i < set.rules().size(); ++i)
    if (set.rules()[i].name == root) root_id = static_cast<int32_t>(i);
  if (root_id < 0 || !set.defined(root_id))
    return make_error(ErrorCode::kInvalidArgument, what + ": no rule named \"" + root + "\" (the start rule)");
  for (size_t i = 0; i < set.rules().size(); ++i)
    if (!set.defined(static_cast<int32_t>(i)))
      return make_error(ErrorCode::kInvalidArgument, what + ": undefined rule \"" + set.rules()[i].name + "\"");

  HFS_TRY(budget.elements(static_cast<int64_t>(set.rules().size()), what));
  std::vector<Rule> rules = set.rules();
  std::vector<char> nullable = nullable_rules(rules, budget);
  if (budget.over_time()) return budget.time_error(what);
  const int64_t max_depth = 64 * static_cast<int64_t>(std::max(budget.limits().max_nesting, 1));
  EpsilonFree eps(rules, nullable, max_depth);
  eps.rewrite_loops();
  if (eps.too_deep())
    return make_error(ErrorCode::kInvalidArgument, what + ": a repetition's body nests more than " + std::to_string(max_depth) +
                                                       " optional rules (64 × ConstraintLimits::max_nesting)");
  if (budget.over_time()) return budget.time_error(what);
  // Left recursion: r reaches s without consuming input when an alternative of r refers to s after only
  // nullable rules. A cycle in that relation would make the matcher's expansion loop.
  // An iterative depth-first walk (a recursive one would itself be a stack a long rule chain exhausts):
  // finds a cycle, and otherwise the deepest chain of rules the matcher's expansion would recurse through.
  // An element i places into an alternative adds i levels (the nullable elements before it end one by one).
  std::vector<std::vector<std::pair<int32_t, int64_t>>> left_at(rules.size());  // (rule, levels before it)
  for (size_t r = 0; r < rules.size(); ++r)
    for (const Alternative& a : rules[r].alts)
      for (size_t i = 0; i < a.size(); ++i) {
        if (!a[i].is_ref()) break;
        left_at[r].emplace_back(a[i].rule, static_cast<int64_t>(i));
        if (!nullable[static_cast<size_t>(a[i].rule)]) break;
      }
  std::vector<uint8_t> color(rules.size(), 0);  // 0 new, 1 on the path, 2 done
  std::vector<int64_t> depth(rules.size(), 1);    // of a done rule: the deepest expansion below it
  struct Frame {
    int32_t rule;
    size_t next;  // the next edge of left_at[rule] to follow
  };
  std::vector<Frame> path;
  for (size_t start = 0; start < rules.size(); ++start) {
    if (color[start] != 0) continue;
    if (budget.over_time()) return budget.time_error(what);
    path.push_back({static_cast<int32_t>(start), 0});
    color[start] = 1;
    while (!path.empty()) {
      Frame& f = path.back();
      const auto& edges = left_at[static_cast<size_t>(f.rule)];
      if (f.next == edges.size()) {
        color[static_cast<size_t>(f.rule)] = 2;
        if (depth[static_cast<size_t>(f.rule)] > max_depth)
          return make_error(ErrorCode::kInvalidArgument,
                            what + ": rule \"" + shown(rules[static_cast<size_t>(f.rule)].name) + "\" starts with a chain of " +
                                std::to_string(depth[static_cast<size_t>(f.rule)]) + " nested rules, more than " +
                                std::to_string(max_depth) + " (64 × ConstraintLimits::max_nesting)");
        path.pop_back();
        continue;
      }
      const auto [s, before] = edges[f.next++];
      if (color[static_cast<size_t>(s)] == 1) {
        std::string cycle;
        size_t k = 0;
        while (path[k].rule != s) ++k;
        const size_t first = k;
        for (; k < path.size(); ++k) {
          if (k - first == 4 && path.size() - k > 4) {  // a long cycle: its ends are enough to find it
            cycle += "… (" + std::to_string(path.size() - k - 3) + " more) → ";
            k = path.size() - 3;
          }
          cycle += "\"" + shown(rules[static_cast<size_t>(path[k].rule)].name) + "\" → ";
        }
        cycle += "\"" + shown(rules[static_cast<size_t>(s)].name) + "\"";
        return make_error(ErrorCode::kInvalidArgument,
                          what + ": left recursion (" + cycle +
                              " without consuming input); rewrite it as repetition, e.g. x ::= y (\"+\" y)*");
      }
      if (color[static_cast<size_t>(s)] == 0) {
        --f.next;  // come back to this edge once s is done
        color[static_cast<size_t>(s)] = 1;
        path.push_back({s, 0});
        continue;
      }
      int64_t& d = depth[static_cast<size_t>(f.rule)];
      d = std::max(d, before + 1 + depth[static_cast<size_t>(s)]);
    }
  }

  int64_t elements = 0;
  for (const Rule& r : rules)
    for (const Alternative& a : r.alts) elements += static_cast<int64_t>(a.size()) + 1;
  HFS_TRY(budget.elements(elements, what));
  CompiledGrammar g;
  g.max_stacks = static_cast<size_t>(std::max(budget.limits().max_states, 1));
  g.root = static_cast<uint32_t>(root_id);
  g.rule_alts.push_back(0);
  for (const Rule& r : rules) {
    g.names.push_back(r.name);
    for (const Alternative& a : r.alts) {
      g.alt_start.push_back(static_cast<uint32_t>(g.elems.size()));
      for (const Element& e : a) {
        if (e.is_ref()) {
          g.elems.push_back(Flat{Flat::kRef, static_cast<uint32_t>(e.rule), 0});
        } else {
          g.elems.push_back(Flat{Flat::kChars, static_cast<uint32_t>(g.ranges.size()), static_cast<uint32_t>(e.ranges.size())});
          g.ranges.insert(g.ranges.end(), e.ranges.begin(), e.ranges.end());
        }
      }
      g.elems.push_back(Flat{Flat::kEnd, 0, 0});
    }
    g.rule_alts.push_back(static_cast<uint32_t>(g.alt_start.size()));
  }
  return g;
}

}  // namespace hfs::cst
