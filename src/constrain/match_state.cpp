// Advancing parse stacks by one byte: UTF-8 assembly, then the code point against every stack's top class,
// each surviving stack expanded until its top is a class again (rule references replaced by their
// alternatives, finished rules popped).
#include "constrain/match_state.h"

#include <algorithm>

namespace hfs::cst {
namespace {

void add_stack(const CompiledGrammar& g, MatchState& out, std::span<const uint32_t> s) {
  // Ambiguous grammars reach the same stack along several paths: keep one copy, or states grow each step.
  for (size_t i = 0; i < out.stack_count(); ++i) {
    std::span<const uint32_t> o = out.stack(i);
    if (o.size() == s.size() && std::equal(o.begin(), o.end(), s.begin())) return;
  }
  if (out.stack_count() >= g.max_stacks) {
    out.overflow = true;
    return;
  }
  out.data.insert(out.data.end(), s.begin(), s.end());
  out.ends.push_back(static_cast<uint32_t>(out.data.size()));
}

// `work`'s top is a position to match next (never kEnd): rewrites it until a class is on top, adding each
// resulting stack to `out`. Terminates because compile() rejects left recursion. `work` is restored.
void expand(const CompiledGrammar& g, std::vector<uint32_t>& work, MatchState& out) {
  if (out.overflow) return;  // the step is refused anyway: stop exploring
  if (work.empty()) {
    out.accept = true;
    return;
  }
  const uint32_t pos = work.back();
  const Flat& e = g.elems[pos];
  if (e.kind == Flat::kChars) {
    add_stack(g, out, work);
    return;
  }
  work.pop_back();
  const bool resume = g.elems[pos + 1].kind != Flat::kEnd;
  if (resume) work.push_back(pos + 1);
  for (uint32_t alt : g.alts(e.a)) {
    if (g.elems[alt].kind == Flat::kEnd) {  // an empty alternative: the rule ends at once
      expand(g, work, out);
    } else {
      work.push_back(alt);
      expand(g, work, out);
      work.pop_back();
    }
  }
  if (resume) work.pop_back();
  work.push_back(pos);
}

// Can some code point in [lo, hi] still be matched by a stack of `s`?
bool feasible(const CompiledGrammar& g, const MatchState& s, uint32_t lo, uint32_t hi) {
  if (lo >= 0xD800 && hi <= 0xDFFF) return false;  // surrogates are not code points
  for (size_t i = 0; i < s.stack_count(); ++i)
    if (g.intersects(g.elems[s.stack(i).back()], lo, hi)) return true;
  return false;
}

}  // namespace

void initial_state(const CompiledGrammar& g, MatchState& out, std::vector<uint32_t>& work) {
  out.clear();
  work.clear();
  for (uint32_t alt : g.alts(g.root)) {
    if (g.elems[alt].kind == Flat::kEnd) {
      out.accept = true;
      continue;
    }
    work.push_back(alt);
    expand(g, work, out);
    work.pop_back();
  }
}

bool advance_byte(const CompiledGrammar& g, const MatchState& in, uint8_t b, MatchState& out,
                  std::vector<uint32_t>& work) {
  out.clear();
  uint32_t cp;
  if (in.need == 0) {
    uint8_t need;
    uint32_t min;
    if (b < 0x80) {
      need = 0, cp = b, min = 0;
    } else if (b >= 0xC2 && b <= 0xDF) {
      need = 1, cp = b & 0x1Fu, min = 0x80;
    } else if (b >= 0xE0 && b <= 0xEF) {
      need = 2, cp = b & 0x0Fu, min = 0x800;
    } else if (b >= 0xF0 && b <= 0xF4) {
      need = 3, cp = b & 0x07u, min = 0x10000;
    } else {
      return false;  // a continuation byte with nothing to continue, or never valid in UTF-8
    }
    if (need > 0) {
      const uint32_t shift = 6u * need;
      const uint32_t lo = std::max(cp << shift, min), hi = std::min((cp << shift) | ((1u << shift) - 1), kMaxCodePoint);
      if (lo > hi || !feasible(g, in, lo, hi)) return false;
      out.data.assign(in.data.begin(), in.data.end());
      out.ends.assign(in.ends.begin(), in.ends.end());
      out.partial = cp, out.need = need, out.partial_min = min;
      return true;
    }
  } else {
    if ((b & 0xC0) != 0x80) return false;
    cp = (in.partial << 6) | (b & 0x3Fu);
    if (in.need > 1) {
      const uint32_t shift = 6u * (in.need - 1u);
      const uint32_t lo = std::max(cp << shift, in.partial_min);
      const uint32_t hi = std::min((cp << shift) | ((1u << shift) - 1), kMaxCodePoint);
      if (lo > hi || !feasible(g, in, lo, hi)) return false;
      out.data.assign(in.data.begin(), in.data.end());
      out.ends.assign(in.ends.begin(), in.ends.end());
      out.partial = cp, out.need = static_cast<uint8_t>(in.need - 1), out.partial_min = in.partial_min;
      return true;
    }
    if (cp < in.partial_min || cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
  }
  for (size_t i = 0; i < in.stack_count(); ++i) {
    std::span<const uint32_t> s = in.stack(i);
    const uint32_t pos = s.back();
    if (!g.matches(g.elems[pos], cp)) continue;
    work.assign(s.begin(), s.end() - 1);
    if (g.elems[pos + 1].kind != Flat::kEnd) {
      work.push_back(pos + 1);
      expand(g, work, out);
    } else if (work.empty()) {
      out.accept = true;
    } else {
      expand(g, work, out);
    }
  }
  return !out.dead() && !out.overflow;
}

}  // namespace hfs::cst
