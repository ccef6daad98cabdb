// TokenConstraint: the per-step allowed set by a depth-first walk of the vocabulary trie over interned
// matcher states, taking whole subtrees at once where the state takes all their characters alike (see
// mark_uniform), with the masks of recent start states cached.
#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "constrain/match_state.h"
#include "constrain/token_trie.h"
#include "hfstatic/constraint.h"

namespace hfs {

namespace {

uint64_t hash_state(const cst::MatchState& s) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  for (uint32_t v : s.data) mix(v);
  for (uint32_t v : s.ends) mix(v | (1ull << 40));
  mix(static_cast<uint64_t>(s.accept) | (static_cast<uint64_t>(s.need) << 8) | (static_cast<uint64_t>(s.partial) << 16));
  mix(s.partial_min);
  return h;
}

// Cached masks are bitsets (a 151 669-id mask is 19 KB instead of 152 KB: allocated once with the cache,
// without fresh pages to fault in during a step). Mask bytes are 0 or 1; the multiply gathers byte i's low
// bit into bit i of a little-endian word.
static_assert(std::endian::native == std::endian::little, "pack_mask reads eight mask bytes as one word");
void pack_mask(std::span<const uint8_t> bytes, std::span<uint64_t> bits) {  // bits: 64 ids a word, rounded up
  const size_t words = bytes.size() / 64;
  for (size_t w = 0; w < words; ++w) {
    const uint8_t* p = bytes.data() + 64 * w;
    uint64_t word = 0;
#if defined(__SSE2__)
    for (int k = 0; k < 4; ++k) {  // a byte's bit 0 moved to its top bit, then 16 top bits at once
      const __m128i v = _mm_slli_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k)), 7);
      word |= static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(v))) << (16 * k);
    }
#else
    for (int k = 0; k < 8; ++k) {
      uint64_t x;
      std::memcpy(&x, p + 8 * k, 8);
      word |= ((x * 0x0102040810204080ull) >> 56) << (8 * k);
    }
#endif
    bits[w] = word;
  }
  if (words < bits.size()) {
    uint64_t word = 0;
    for (size_t i = 64 * words; i < bytes.size(); ++i) word |= uint64_t{bytes[i] != 0} << (i % 64);
    bits[words] = word;
  }
}

constexpr std::array<uint64_t, 256> kSpread = [] {  // 8 bits → 8 bytes of 0 or 1
  std::array<uint64_t, 256> t{};
  for (uint64_t v = 0; v < 256; ++v)
    for (int b = 0; b < 8; ++b) t[v] |= ((v >> b) & 1) << (8 * b);
  return t;
}();

void unpack_mask(std::span<const uint64_t> bits, std::span<uint8_t> bytes) {  // bytes: at most 64 × bits
  const size_t words = bytes.size() / 64;
  for (size_t w = 0; w < words; ++w) {
    const uint64_t word = bits[w];
    for (int k = 0; k < 8; ++k) {
      const uint64_t x = kSpread[(word >> (8 * k)) & 0xFF];
      std::memcpy(bytes.data() + 64 * w + 8 * k, &x, 8);
    }
  }
  for (size_t i = 64 * words; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>((bits[i / 64] >> (i % 64)) & 1);
}

bool same_state(const cst::MatchState& a, const cst::MatchState& b) {
  return a.accept == b.accept && a.need == b.need && a.partial == b.partial && a.partial_min == b.partial_min &&
         a.ends == b.ends && a.data == b.data;
}

// One step's distinct matcher states and their byte transitions. The walk meets few distinct states
// (inside a JSON string every ordinary byte leads back to the same one), so each trie edge is mostly one
// table lookup instead of a stack rewrite. Bounded: past kMaxStates the walk computes states directly.
// Only a step uses it (it is cleared at the start of each), so every TokenConstraint of a thread shares
// one: a generation after the first finds it allocated and its pages touched, and an engine's sequences
// do not hold a megabyte each.
struct WalkScratch {
  static constexpr int32_t kMaxStates = 1024;
  static constexpr int32_t kUnknown = -1, kDead = -2, kFull = -3;
  std::vector<cst::MatchState> pool = std::vector<cst::MatchState>(kMaxStates);
  std::vector<uint64_t> pool_hash = std::vector<uint64_t>(kMaxStates);
  int32_t pool_n = 0;
  std::vector<int32_t> slots = std::vector<int32_t>(2 * kMaxStates, -1);  // open addressing: hash → pool index
  // [state × 256]: the next state, kUnknown or kDead (intern() fills a state's row). Zeroed when the thread's
  // scratch is made, so that its pages are faulted in then rather than during the first steps.
  std::unique_ptr<int32_t[]> trans{new int32_t[static_cast<size_t>(kMaxStates) * 256]()};
  cst::MatchState scratch;
  std::vector<cst::MatchState> depth;  // depth[d]: the state after the first d bytes of the walked prefix

  // Per pooled state, how it takes whole classes of bytes, filled lazily by uniform_next: the ASCII bytes
  // looked at, those refused, those treated as unknown (their state did not fit in the pool, or in the
  // kGroups groups), the others grouped by the state they lead to; and the state every non-ASCII character
  // leads to, when it is the same for all.
  struct ByteClasses {
    uint64_t known[2], dead[2], mixed[2];
    static constexpr int kGroups = 4;
    int32_t group_next[kGroups];
    uint64_t group[kGroups][2];
    int group_n;
    int32_t non_ascii;  // kUnknown, kDead (no single state), or the state
  };
  std::unique_ptr<ByteClasses[]> classes{new ByteClasses[kMaxStates]()};  // set by intern() like trans
};

WalkScratch& thread_scratch() {
  thread_local WalkScratch s;
  return s;
}

}  // namespace

struct TokenConstraint::Impl {
  std::shared_ptr<const Grammar> grammar;
  std::shared_ptr<const TokenVocabulary> vocab;
  cst::MatchState cur;
  cst::MatchState marked;  // mark() / rewind()
  std::vector<cst::MatchState> spare;  // accept(): a token's bytes, a state per byte
  std::vector<uint32_t> work;
  std::vector<uint8_t> allowed;  // compute_mask's result for mask_logits

  using ByteClasses = WalkScratch::ByteClasses;
  static constexpr int32_t kMaxStates = WalkScratch::kMaxStates;
  static constexpr int32_t kUnknown = WalkScratch::kUnknown, kDead = WalkScratch::kDead, kFull = WalkScratch::kFull;
  WalkScratch* w = nullptr;  // this thread's, set by compute_mask

  // Whole masks by the state they start from: generation often starts step after step from the same state
  // (inside a string, after a digit), and then the mask is a copy. A few entries, replaced in turn.
  struct CachedMask {
    bool used = false;
    uint64_t hash = 0;
    cst::MatchState state;
    std::vector<uint64_t> bits;  // the mask, one bit per id: allocated with the cache, a fraction of the bytes
    size_t allowed = 0;
  };
  static constexpr size_t kCachedMasks = 4;
  std::vector<CachedMask> masks;
  size_t next_mask = 0;

  const cst::CompiledGrammar& g() const { return grammar->impl().g; }

  void clear_pool() {
    std::fill(w->slots.begin(), w->slots.end(), -1);
    w->pool_n = 0;
  }
  // The pool index of a state equal to `s` (added when new), or kFull.
  int32_t intern(const cst::MatchState& s) {
    const uint64_t h = hash_state(s);
    const size_t mask = w->slots.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const int32_t id = w->slots[i];
      if (id < 0) {
        if (w->pool_n == kMaxStates) return kFull;
        const int32_t n = w->pool_n++;
        w->pool[static_cast<size_t>(n)].copy_from(s);
        w->pool_hash[static_cast<size_t>(n)] = h;
        std::fill_n(w->trans.get() + static_cast<ptrdiff_t>(n) * 256, 256, kUnknown);
        ByteClasses& bc = w->classes[static_cast<size_t>(n)];
        bc.known[0] = bc.known[1] = bc.dead[0] = bc.dead[1] = bc.mixed[0] = bc.mixed[1] = 0;
        bc.group_n = 0;
        bc.non_ascii = kUnknown;
        w->slots[i] = n;
        return n;
      }
      if (w->pool_hash[static_cast<size_t>(id)] == h && same_state(w->pool[static_cast<size_t>(id)], s)) return id;
    }
  }

  // The pooled state after `byte` from pooled state `sid`: an index, kDead, or kFull (left unknown).
  int32_t next_state(int32_t sid, uint8_t byte) {
    int32_t& next = w->trans[static_cast<size_t>(sid) * 256 + byte];
    if (next == kUnknown) {
      next = cst::advance_byte(g(), w->pool[static_cast<size_t>(sid)], byte, w->scratch, work) ? intern(w->scratch) : kDead;
      if (next == kFull) {
        next = kUnknown;
        return kFull;
      }
    }
    return next;
  }

  // Whether some top class of `st` holds a code point ≥ U+0080: if none does, every non-ASCII lead byte is
  // refused at once (surrogates included: a lead byte is refused only when no completion is in any class).
  bool takes_non_ascii(const cst::MatchState& st) const {
    for (size_t i = 0; i < st.stack_count(); ++i)
      if (g().intersects(g().elems[st.stack(i).back()], 0x80, cst::kMaxCodePoint)) return true;
    return false;
  }

  // The state every non-ASCII character leads to from `sid` (from the middle of a character: every valid
  // completion of it), or kDead when there is no single one. A character's step depends only on which
  // stacks' classes hold it (each matching stack is expanded the same way whatever the character), so
  // when every top class holds all non-ASCII code points or none of them, one character's successor is
  // every character's. Surrogates are never characters, so classes may differ there.
  int32_t non_ascii_next(int32_t sid) {
    ByteClasses& bc = w->classes[static_cast<size_t>(sid)];
    if (bc.non_ascii != kUnknown) return bc.non_ascii;
    bc.non_ascii = kDead;
    const cst::MatchState& st = w->pool[static_cast<size_t>(sid)];
    const cst::CompiledGrammar& gr = g();
    auto covers = [&gr](const cst::Flat& e, uint32_t lo, uint32_t hi) {
      for (uint32_t i = e.a; i < e.a + e.n; ++i)
        if (gr.ranges[i].lo <= lo && hi <= gr.ranges[i].hi) return true;
      return false;
    };
    for (size_t i = 0; i < st.stack_count(); ++i) {
      const cst::Flat& e = gr.elems[st.stack(i).back()];
      const bool all = covers(e, 0x80, 0xD7FF) && covers(e, 0xE000, cst::kMaxCodePoint);
      const bool none = !gr.intersects(e, 0x80, 0xD7FF) && !gr.intersects(e, 0xE000, cst::kMaxCodePoint);
      if (!all && !none) return kDead;
    }
    // From a boundary, U+0080 (C2 80); in the middle of a character, all 80 or all BF continuation bytes,
    // one of which is in range whatever the lead byte (E0 and F0 need BF, ED and F4 80). classes has a fixed
    // size, so bc still refers to its entry after the lookups.
    const int need = st.need;
    if (need == 0) {
      const int32_t lead = next_state(sid, 0xC2);
      const int32_t next = lead < 0 ? kDead : next_state(lead, 0x80);
      if (next >= 0) bc.non_ascii = next;
      return bc.non_ascii;
    }
    for (const uint8_t cont : {uint8_t{0x80}, uint8_t{0xBF}}) {
      int32_t s = sid;
      for (int k = 0; k < need && s >= 0; ++k) s = next_state(s, cont);
      if (s >= 0) {
        bc.non_ascii = s;
        break;
      }
    }
    return bc.non_ascii;
  }

  static constexpr int32_t kMixed = -1, kAllDead = -2;
  // From the boundary state `sid`, the one state that every character `sum` lists leads to (its ASCII
  // bytes, and any non-ASCII character when it has some); kAllDead when each of them is refused; kMixed
  // otherwise (different states, some refused and some not, or a state the pool has no room for).
  int32_t uniform_next(int32_t sid, const cst::SubtreeSummary& sum) {
    ByteClasses& bc = w->classes[static_cast<size_t>(sid)];
    // Whether the bytes of `want` looked at so far could still all lead to one outcome.
    auto consistent = [&bc](const uint64_t* want) {
      const uint64_t k0 = want[0] & bc.known[0], k1 = want[1] & bc.known[1];
      if ((k0 & bc.mixed[0]) | (k1 & bc.mixed[1])) return false;
      const uint64_t live0 = k0 & ~bc.dead[0], live1 = k1 & ~bc.dead[1];
      if ((live0 | live1) == 0) return true;
      if ((k0 & bc.dead[0]) | (k1 & bc.dead[1])) return false;
      for (int k = 0; k < bc.group_n; ++k)
        if (((live0 & ~bc.group[k][0]) | (live1 & ~bc.group[k][1])) == 0) return true;
      return false;
    };
    // Bytes not looked at yet are stepped one at a time, stopping at the first disagreement: most checks
    // outside strings fail at once, and stepping every byte a subtree holds would cost more than its walk.
    if (!consistent(sum.ascii)) return kMixed;
    for (int w = 0; w < 2; ++w) {
      for (uint64_t todo = sum.ascii[w] & ~bc.known[w]; todo != 0; todo &= todo - 1) {
        const int bit = __builtin_ctzll(todo);
        const uint64_t m = uint64_t{1} << bit;
        bc.known[w] |= m;
        const int32_t next = next_state(sid, static_cast<uint8_t>(w * 64 + bit));
        if (next == kDead) {
          bc.dead[w] |= m;
        } else {
          int k = 0;
          while (k < bc.group_n && bc.group_next[k] != next) ++k;
          if (next < 0 || (k == bc.group_n && k == ByteClasses::kGroups)) {
            bc.mixed[w] |= m;
          } else {
            if (k == bc.group_n) {
              bc.group_next[k] = next;
              bc.group[k][0] = bc.group[k][1] = 0;
              ++bc.group_n;
            }
            bc.group[k][w] |= m;
          }
        }
        if (!consistent(sum.ascii)) return kMixed;
      }
    }
    if ((sum.ascii[0] & bc.mixed[0]) | (sum.ascii[1] & bc.mixed[1])) return kMixed;
    const bool ascii_dead = ((sum.ascii[0] & ~bc.dead[0]) | (sum.ascii[1] & ~bc.dead[1])) == 0;
    if (ascii_dead && !(sum.non_ascii && takes_non_ascii(w->pool[static_cast<size_t>(sid)]))) return kAllDead;
    if ((sum.ascii[0] & bc.dead[0]) | (sum.ascii[1] & bc.dead[1])) return kMixed;
    int32_t next = kMixed;
    if (sum.ascii[0] | sum.ascii[1]) {
      for (int k = 0; k < bc.group_n && next < 0; ++k)
        if (((sum.ascii[0] & ~bc.group[k][0]) | (sum.ascii[1] & ~bc.group[k][1])) == 0) next = bc.group_next[k];
      if (next < 0) return kMixed;
    }
    if (sum.non_ascii) {
      const int32_t na = non_ascii_next(sid);
      if (na < 0 || (next >= 0 && next != na)) return kMixed;
      next = na;
    }
    return next;
  }

  // Marks the tokens below child `ch` (reached in state `sid`) without walking them when their bytes allow
  // it, and returns how many it marked; -1 when the subtree must be walked. Every token there is
  // well-formed UTF-8, and from the end of the current character each of the next characters the
  // subtree can hold leads to one state whatever it is, until a loop (then every token is allowed), the
  // longest token's length (likewise), or a step where all of them are refused (then exactly the tokens
  // that end before that step are allowed: an unfinished last character counts as a step, and its lead
  // byte is allowed wherever the characters are, since some stack takes all of them).
  int64_t mark_uniform(const cst::TrieNode& ch, int32_t sid, std::span<uint8_t> out) {
    const cst::TokenTrie& t = vocab->impl().trie;
    const cst::SubtreeSummary& sum = t.summaries[ch.summary];
    if (!sum.valid) return -1;
    int32_t s = sid;
    if (w->pool[static_cast<size_t>(sid)].need != 0) {  // first the end of the character (continuation bytes only)
      s = non_ascii_next(sid);
      if (s < 0) return -1;
    }
    uint32_t limit = UINT32_MAX;  // the most characters a token may add below ch
    for (uint32_t i = 0; i < sum.max_chars; ++i) {
      const int32_t next = uniform_next(s, sum);
      if (next == kAllDead) {
        limit = i;
        break;
      }
      if (next < 0) return -1;
      if (next == s) break;  // a loop: every later character leads back here as well
      s = next;
    }
    if (limit >= sum.max_chars) {
      for (uint32_t i = ch.id_begin; i < ch.subtree_end; ++i) out[static_cast<size_t>(t.ids[i])] = 1;
      return ch.subtree_end - ch.id_begin;
    }
    const uint32_t max_total = ch.chars + limit;
    int64_t n = 0;
    for (uint32_t i = ch.id_begin; i < ch.subtree_end; ++i) {
      if (t.id_chars[i] > max_total) continue;
      out[static_cast<size_t>(t.ids[i])] = 1;
      ++n;
    }
    return n;
  }

  size_t mark(const cst::TrieNode& ch, std::span<uint8_t> out) {
    const cst::TokenTrie& t = vocab->impl().trie;
    for (uint32_t i = ch.id_begin; i < ch.id_end; ++i) out[static_cast<size_t>(t.ids[i])] = 1;
    return ch.id_end - ch.id_begin;
  }

  // The walk over pooled states; a subtree whose state does not fit in the pool continues in walk_direct.
  size_t walk(uint32_t node, int32_t sid, size_t d, std::span<uint8_t> out) {
    const cst::TokenTrie& t = vocab->impl().trie;
    size_t n = 0;
    const cst::TrieNode& nd = t.nodes[node];
    for (uint32_t c = nd.child_begin; c < nd.child_end; ++c) {
      const cst::TrieNode& ch = t.nodes[c];
      // kFull is left unknown in the table: the pool may have room next time (it does not shrink in a step).
      const int32_t next = next_state(sid, ch.byte);
      if (next == kDead) continue;  // prunes the subtree
      if (next >= 0 && ch.summary != cst::TrieNode::kNoSummary) {
        const int64_t k = mark_uniform(ch, next, out);
        if (k >= 0) {
          n += static_cast<size_t>(k);
          continue;
        }
      }
      n += mark(ch, out);
      if (next == kFull) {
        cst::advance_byte(g(), w->pool[static_cast<size_t>(sid)], ch.byte, w->depth[d + 1], work);
        n += walk_direct(c, d + 1, out);
      } else {
        n += walk(c, next, d + 1, out);
      }
    }
    return n;
  }

  size_t walk_direct(uint32_t node, size_t d, std::span<uint8_t> out) {
    const cst::TokenTrie& t = vocab->impl().trie;
    size_t n = 0;
    const cst::TrieNode& nd = t.nodes[node];
    for (uint32_t c = nd.child_begin; c < nd.child_end; ++c) {
      const cst::TrieNode& ch = t.nodes[c];
      if (!cst::advance_byte(g(), w->depth[d], ch.byte, w->depth[d + 1], work)) continue;  // prunes the subtree
      n += mark(ch, out);
      n += walk_direct(c, d + 1, out);
    }
    return n;
  }
};

TokenConstraint::TokenConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabulary> vocab)
    : impl_(std::make_unique<Impl>()) {
  impl_->grammar = std::move(grammar);
  impl_->vocab = std::move(vocab);
  impl_->spare.resize(2);
  impl_->allowed.assign(static_cast<size_t>(impl_->vocab->size()), 0);
  impl_->masks.resize(Impl::kCachedMasks);
  for (Impl::CachedMask& c : impl_->masks) c.bits.assign((impl_->allowed.size() + 63) / 64, 0);
  thread_scratch();  // allocated here for the usual case, a generation on the thread that starts it
  reset();
}
TokenConstraint::~TokenConstraint() = default;

void TokenConstraint::reset() { cst::initial_state(impl_->g(), impl_->cur, impl_->work); }
bool TokenConstraint::complete() const { return impl_->cur.complete(); }
void TokenConstraint::mark() { impl_->marked.copy_from(impl_->cur); }
void TokenConstraint::rewind() { impl_->cur.copy_from(impl_->marked); }

size_t TokenConstraint::compute_mask(std::span<uint8_t> out) {
  Impl& m = *impl_;
  const uint64_t h = hash_state(m.cur);
  for (const Impl::CachedMask& c : m.masks) {
    if (c.used && c.hash == h && same_state(c.state, m.cur)) {
      const size_t k = std::min(out.size(), m.allowed.size());
      unpack_mask(c.bits, out.first(k));
      std::fill(out.begin() + static_cast<ptrdiff_t>(k), out.end(), uint8_t{0});
      return c.allowed;
    }
  }
  std::fill(out.begin(), out.end(), uint8_t{0});
  m.w = &thread_scratch();
  const size_t depth = m.vocab->impl().trie.max_depth + 1;
  if (m.w->depth.size() < depth) m.w->depth.resize(depth);  // grows to the largest vocabulary's, once
  m.clear_pool();
  const int32_t root = m.intern(m.cur);  // the pool is empty: always fits
  size_t n = m.walk(0, root, 0, out);
  if (m.cur.complete())
    for (int32_t id : m.vocab->impl().end_ids) out[static_cast<size_t>(id)] = 1, ++n;
  Impl::CachedMask& c = m.masks[m.next_mask];
  m.next_mask = (m.next_mask + 1) % m.masks.size();
  c.used = true;
  c.hash = h;
  c.state.copy_from(m.cur);
  pack_mask(out.first(std::min(out.size(), m.allowed.size())), c.bits);
  c.allowed = n;
  return n;
}

void apply_mask(std::span<const uint8_t> allowed, std::span<const float> logits, std::span<float> out) {
  const size_t v = std::min({allowed.size(), logits.size(), out.size()});
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < v; ++i) out[i] = allowed[i] ? logits[i] : kNegInf;
  for (size_t i = v; i < out.size(); ++i) out[i] = kNegInf;
}

namespace {

// apply_mask for a mask with few ids set (most steps outside strings): −inf everywhere, then the allowed
// logits, finding them eight mask bytes at a time. About half the time of the select over a 151 936-entry
// vocabulary when a few percent are allowed, but slower when most are.
void apply_sparse_mask(std::span<const uint8_t> allowed, std::span<const float> logits, std::span<float> out) {
  const size_t v = std::min({allowed.size(), logits.size(), out.size()});
  std::fill(out.begin(), out.end(), -std::numeric_limits<float>::infinity());
  size_t i = 0;
  for (; i + 8 <= v; i += 8) {
    uint64_t word;
    std::memcpy(&word, allowed.data() + i, 8);
    if (word == 0) continue;
    for (size_t k = i; k < i + 8; ++k)
      if (allowed[k]) out[k] = logits[k];
  }
  for (; i < v; ++i)
    if (allowed[i]) out[i] = logits[i];
}

}  // namespace

size_t TokenConstraint::mask_logits(std::span<const float> logits, std::span<float> out) {
  const size_t n = compute_mask(impl_->allowed);
  if (n * 8 < impl_->allowed.size()) {
    apply_sparse_mask(impl_->allowed, logits, out);
  } else {
    apply_mask(impl_->allowed, logits, out);
  }
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
