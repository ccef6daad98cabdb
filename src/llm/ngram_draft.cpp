#include "llm/ngram_draft.h"

#include <algorithm>

namespace hfs {

NgramDraft::NgramDraft(int64_t capacity) {
  size_t slots = 16;
  while (slots < static_cast<size_t>(std::max<int64_t>(capacity, 1)) * 2) slots *= 2;  // load ≤ 1/2
  mask_ = slots - 1;
  tokens_.reserve(static_cast<size_t>(std::max<int64_t>(capacity, 1)));
  tables_.assign(kMaxN, std::vector<int32_t>(slots, -1));
}

void NgramDraft::clear() {
  tokens_.clear();
  can_pop_ = false;
  undo_count_ = 0;
  for (auto& t : tables_) std::fill(t.begin(), t.end(), -1);
}

// FNV-1a over the n tokens ending before `end`.
uint64_t NgramDraft::hash(int64_t end, int n) const {
  uint64_t h = 1469598103934665603ull ^ static_cast<uint64_t>(n);
  for (int64_t i = end - n; i < end; ++i) {
    h ^= static_cast<uint32_t>(tokens_[static_cast<size_t>(i)]);
    h *= 1099511628211ull;
  }
  return h;
}

bool NgramDraft::same(int64_t end_a, int64_t end_b, int n) const {
  return std::equal(tokens_.begin() + (end_a - n), tokens_.begin() + end_a, tokens_.begin() + (end_b - n));
}

// Records that the n-gram ending before `end` is followed by tokens_[end] (the latest occurrence wins),
// keeping what the slot held so pop() can put it back.
void NgramDraft::index(int64_t end, int n) {
  std::vector<int32_t>& t = tables_[static_cast<size_t>(n - 1)];
  for (size_t s = hash(end, n) & mask_;; s = (s + 1) & mask_) {
    if (t[s] < 0 || same(t[s], end, n)) {
      undo_[static_cast<size_t>(n - 1)] = {s, t[s]};
      t[s] = static_cast<int32_t>(end);
      return;
    }
  }
}

// The latest indexed occurrence of the n-gram ending before `end`, or -1.
int64_t NgramDraft::find(int64_t end, int n) const {
  const std::vector<int32_t>& t = tables_[static_cast<size_t>(n - 1)];
  for (size_t s = hash(end, n) & mask_;; s = (s + 1) & mask_) {
    if (t[s] < 0) return -1;
    if (same(t[s], end, n)) return t[s];
  }
}

void NgramDraft::push(int32_t token) {
  undo_count_ = 0;
  can_pop_ = false;
  if (tokens_.size() == tokens_.capacity()) return;  // beyond the capacity: nothing more is indexed
  tokens_.push_back(token);
  can_pop_ = true;
  undo_count_ = std::min<int64_t>(kMaxN, static_cast<int64_t>(tokens_.size()) - 1);
  // The n-grams ending before the new token now have a continuation.
  const int64_t end = static_cast<int64_t>(tokens_.size()) - 1;
  for (int n = 1; n <= kMaxN && n <= end; ++n) index(end, n);
}

void NgramDraft::pop() {
  if (!can_pop_) return;
  can_pop_ = false;
  // The slots the last push wrote get their earlier occurrences back.
  for (int64_t n = undo_count_; n >= 1; --n) {
    const Undo& u = undo_[static_cast<size_t>(n - 1)];
    tables_[static_cast<size_t>(n - 1)][u.slot] = u.old;
  }
  undo_count_ = 0;
  tokens_.pop_back();
}

size_t NgramDraft::propose(size_t k, int32_t* out) const {
  const int64_t L = size();
  for (int n = std::min<int64_t>(kMaxN, L); n >= 1; --n) {
    const int64_t at = find(L, n);
    if (at < 0 || at >= L) continue;
    size_t m = 0;
    for (int64_t i = at; i < L && m < k; ++i) out[m++] = tokens_[static_cast<size_t>(i)];
    return m;
  }
  return 0;
}

}  // namespace hfs
