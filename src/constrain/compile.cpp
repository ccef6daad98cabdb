// RuleSet → CompiledGrammar: root and definition checks, the left-recursion check, flattening.
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

Result<CompiledGrammar> compile(const RuleSet& set, const std::string& root, const std::string& what) {
  const std::vector<Rule>& rules = set.rules();
  int32_t root_id = -1;
  for (size_t i = 0; i < rules.size(); ++i)
    if (rules[i].name == root) root_id = static_cast<int32_t>(i);
  if (root_id < 0 || !set.defined(root_id))
    return make_error(ErrorCode::kInvalidArgument, what + ": no rule named \"" + root + "\" (the start rule)");
  for (size_t i = 0; i < rules.size(); ++i)
    if (!set.defined(static_cast<int32_t>(i)))
      return make_error(ErrorCode::kInvalidArgument, what + ": undefined rule \"" + rules[i].name + "\"");

  // Left recursion: r reaches s without consuming input when an alternative of r refers to s after only
  // nullable rules. A cycle in that relation would make the matcher's expansion loop.
  const std::vector<char> nullable = nullable_rules(rules);
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
