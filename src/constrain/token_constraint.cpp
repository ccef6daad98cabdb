// TokenConstraint: the per-step allowed set by a depth-first walk of the vocabulary trie, one matcher state
// per depth (reused across steps, so the walk stops allocating once the states have grown).
#include <algorithm>
#include <cstring>
#include <limits>

#include "constrain/match_state.h"
#include "constrain/token_trie.h"
#include "hfstatic/constraint.h"

namespace hfs {

struct TokenConstraint::Impl {
  std::shared_ptr<const Grammar> grammar;
  std::shared_ptr<const TokenVocabulary> vocab;
  cst::MatchState cur;
  std::vector<cst::MatchState> depth;  // depth[d]: the state after the first d bytes of the walked prefix
  std::vector<cst::MatchState> spare;  // accept(): a token's bytes, a state per byte
  std::vector<uint32_t> work;
  std::vector<uint8_t> allowed;  // compute_mask's result for mask_logits

  const cst::CompiledGrammar& g() const { return grammar->impl().g; }

  size_t walk(uint32_t node, size_t d, std::span<uint8_t> out) {
    const cst::TokenTrie& t = vocab->impl().trie;
    size_t n = 0;
    const cst::TrieNode& nd = t.nodes[node];
    for (uint32_t c = nd.child_begin; c < nd.child_end; ++c) {
      const cst::TrieNode& ch = t.nodes[c];
      if (!cst::advance_byte(g(), depth[d], ch.byte, depth[d + 1], work)) continue;  // prunes the subtree
      for (uint32_t i = ch.id_begin; i < ch.id_end; ++i) out[static_cast<size_t>(t.ids[i])] = 1;
      n += ch.id_end - ch.id_begin;
      n += walk(c, d + 1, out);
    }
    return n;
  }
};

TokenConstraint::TokenConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabulary> vocab)
    : impl_(std::make_unique<Impl>()) {
  impl_->grammar = std::move(grammar);
  impl_->vocab = std::move(vocab);
  impl_->depth.resize(impl_->vocab->impl().trie.max_depth + 1);
  impl_->spare.resize(2);
  impl_->allowed.assign(static_cast<size_t>(impl_->vocab->size()), 0);
  reset();
}
TokenConstraint::~TokenConstraint() = default;

void TokenConstraint::reset() { cst::initial_state(impl_->g(), impl_->cur, impl_->work); }
bool TokenConstraint::complete() const { return impl_->cur.complete(); }

size_t TokenConstraint::compute_mask(std::span<uint8_t> out) {
  Impl& m = *impl_;
  std::fill(out.begin(), out.end(), uint8_t{0});
  m.depth[0].copy_from(m.cur);
  size_t n = m.walk(0, 0, out);
  if (m.cur.complete())
    for (int32_t id : m.vocab->impl().end_ids) out[static_cast<size_t>(id)] = 1, ++n;
  return n;
}

size_t TokenConstraint::mask_logits(std::span<const float> logits, std::span<float> out) {
  Impl& m = *impl_;
  const size_t n = compute_mask(m.allowed);
  const size_t v = std::min(m.allowed.size(), logits.size());
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < v; ++i) out[i] = m.allowed[i] ? logits[i] : kNegInf;
  for (size_t i = v; i < out.size(); ++i) out[i] = kNegInf;
  return n;
}

Status TokenConstraint::accept(int32_t id) {
  Impl& m = *impl_;
  const TokenVocabulary& voc = *m.vocab;
  if (id < 0 || id >= voc.size())
    return make_error(ErrorCode::kInvalidArgument, "constraint: token id " + std::to_string(id) +
                                                       " outside the vocabulary [0, " + std::to_string(voc.size()) + ")");
  if (voc.is_end(id)) {
    if (!m.cur.complete())
      return make_error(ErrorCode::kInvalidArgument,
                        "constraint: end token " + std::to_string(id) + " before the grammar is complete");
    return Ok{};
  }
  const std::string_view b = voc.bytes(id);
  bool ok = !b.empty() && voc.impl().trie.nodes.size() > 0;
  const cst::MatchState* in = &m.cur;
  for (size_t i = 0; ok && i < b.size(); ++i) {
    cst::MatchState& out = m.spare[i % 2];
    ok = cst::advance_byte(m.g(), *in, static_cast<uint8_t>(b[i]), out, m.work);
    in = &out;
  }
  // Excluded ids (special tokens) have empty bytes in the vocabulary, so they fail here as well.
  if (!ok)
    return make_error(ErrorCode::kInvalidArgument,
                      "constraint: token " + std::to_string(id) + " does not continue the output as the grammar allows");
  m.cur.copy_from(*in);
  return Ok{};
}

}  // namespace hfs
