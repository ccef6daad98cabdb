// RuleSet → CompiledGrammar: root and definition checks, the left-recursion check, flattening.
#include <cstddef>
#include <functional>

#include "constrain/compiled_grammar.h"

namespace hfs::cst {
namespace {

// Rules that can match the empty string (least fixpoint).
std::vector<char> nullable_rules(const std::vector<Rule>& rules) {
  std::vector<char> nullable(rules.size(), 0);
  for (bool changed = true; changed;) {
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
  EpsilonFree(std::vector<Rule>& rules, std::vector<char>& nullable)
      : rules_(rules), nullable_(nullable), ne_(rules.size(), -1) {}

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
};

Result<CompiledGrammar> compile(const RuleSet& set, const std::string& root, const std::string& what) {
  int32_t root_id = -1;
  for (size_t i = 0; i < set.rules().size(); ++i)
    if (set.rules()[i].name == root) root_id = static_cast<int32_t>(i);
  if (root_id < 0 || !set.defined(root_id))
    return make_error(ErrorCode::kInvalidArgument, what + ": no rule named \"" + root + "\" (the start rule)");
  for (size_t i = 0; i < set.rules().size(); ++i)
    if (!set.defined(static_cast<int32_t>(i)))
      return make_error(ErrorCode::kInvalidArgument, what + ": undefined rule \"" + set.rules()[i].name + "\"");

  std::vector<Rule> rules = set.rules();
  std::vector<char> nullable = nullable_rules(rules);
  EpsilonFree(rules, nullable).rewrite_loops();
  // Left recursion: r reaches s without consuming input when an alternative of r refers to s after only
  // nullable rules. A cycle in that relation would make the matcher's expansion loop.
  std::vector<std::vector<int32_t>> left(rules.size());
  for (size_t r = 0; r < rules.size(); ++r)
    for (const Alternative& a : rules[r].alts)
      for (const Element& e : a) {
        if (!e.is_ref()) break;
        left[r].push_back(e.rule);
        if (!nullable[static_cast<size_t>(e.rule)]) break;
      }
  std::vector<uint8_t> color(rules.size(), 0);  // 0 new, 1 on the path, 2 done
  std::vector<int32_t> path;
  std::string cycle;
  std::function<bool(int32_t)> dfs = [&](int32_t r) {
    color[static_cast<size_t>(r)] = 1;
    path.push_back(r);
    for (int32_t s : left[static_cast<size_t>(r)]) {
      if (color[static_cast<size_t>(s)] == 1) {
        size_t k = 0;
        while (path[k] != s) ++k;
        for (; k < path.size(); ++k) cycle += "\"" + shown(rules[static_cast<size_t>(path[k])].name) + "\" → ";
        cycle += "\"" + shown(rules[static_cast<size_t>(s)].name) + "\"";
        return true;
      }
      if (color[static_cast<size_t>(s)] == 0 && dfs(s)) return true;
    }
    path.pop_back();
    color[static_cast<size_t>(r)] = 2;
    return false;
  };
  for (size_t r = 0; r < rules.size(); ++r)
    if (color[r] == 0 && dfs(static_cast<int32_t>(r)))
      return make_error(ErrorCode::kInvalidArgument,
                        what + ": left recursion (" + cycle +
                            " without consuming input); rewrite it as repetition, e.g. x ::= y (\"+\" y)*");

  CompiledGrammar g;
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
