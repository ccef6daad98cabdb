// The matcher's state and its byte step. A state is a set of parse stacks (llama.cpp's scheme): each stack
// holds grammar positions, the top one a code-point class still to match, the ones below where to resume
// when the rule above ends. An empty stack means the root rule has ended (`accept`). Stacks are stored
// flat in one vector so that a state reused across steps stops allocating once it has grown.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "constrain/compiled_grammar.h"

namespace hfs::cst {

struct MatchState {
  std::vector<uint32_t> data;  // the stacks, bottom to top, one after another
  std::vector<uint32_t> ends;  // end of each stack in `data`
  bool accept = false;         // the root rule can end here
  // A code point split across feeds: the bits read so far, the continuation bytes still due and the
  // smallest code point its length may encode (overlong forms are invalid UTF-8).
  uint32_t partial = 0;
  uint8_t need = 0;
  uint32_t partial_min = 0;
  // Set when a step produced more than the grammar's max_stacks (ConstraintLimits::max_states) distinct
  // stacks: the step is refused (advance_byte returns false), which bounds memory and time for
  // pathologically ambiguous grammars like ((a+)+)+.
  bool overflow = false;

  size_t stack_count() const { return ends.size(); }
  std::span<const uint32_t> stack(size_t i) const {
    const uint32_t b = i == 0 ? 0 : ends[i - 1];
    return {data.data() + b, ends[i] - b};
  }
  bool dead() const { return ends.empty() && !accept; }
  bool complete() const { return accept && need == 0; }
  void clear() {
    data.clear();
    ends.clear();
    accept = false;
    partial = 0;
    need = 0;
    partial_min = 0;
    overflow = false;
  }
  void copy_from(const MatchState& o) {  // assign() keeps the capacity: no allocation once grown
    data.assign(o.data.begin(), o.data.end());
    ends.assign(o.ends.begin(), o.ends.end());
    accept = o.accept;
    partial = o.partial;
    need = o.need;
    partial_min = o.partial_min;
    overflow = o.overflow;
  }
};

// The state before any input. `work` is scratch.
void initial_state(const CompiledGrammar& g, MatchState& out, std::vector<uint32_t>& work);
// `in` followed by one byte of UTF-8 into `out` (which must not be `in`). Returns false when no input
// starting with the bytes so far can match (out is then dead): a byte that is not valid UTF-8 here, a code
// point no stack accepts, or an incomplete code point no completion of which any stack accepts.
bool advance_byte(const CompiledGrammar& g, const MatchState& in, uint8_t byte, MatchState& out,
                  std::vector<uint32_t>& work);

}  // namespace hfs::cst
