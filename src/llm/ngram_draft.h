// Prompt-lookup drafts: the tokens that followed the most recent earlier occurrence of the sequence's last
// n tokens (n = max_n down to 1), with no extra model. Input-grounded text (summaries, edits, code, answers
// quoting their sources) repeats spans of its context, and those spans are proposed for one multi-row
// verification step.
//
// Sized once for the context: pushing a token and proposing never allocate.
//
//   NgramDraft d(context_length);
//   for (int32_t t : prompt) d.push(t);
//   int32_t drafts[8];
//   size_t n = d.propose(8, drafts);   // 0 when the last tokens never occurred before
#pragma once

#include <cstddef>
#include <array>
#include <cstdint>
#include <vector>

namespace hfs {

class NgramDraft {
 public:
  static constexpr int kMaxN = 4;  // longest n-gram matched (longer matches predict better; fewer exist)

  explicit NgramDraft(int64_t capacity);
  void clear();
  // Appends a committed token of the sequence (prompt, or generated and accepted), indexing the n-grams it
  // completes. Rejected drafts are never pushed, so nothing is ever taken back.
  void push(int32_t token);
  // Takes back the last push (a token pushed only to propose from it), index entries included. One level:
  // without a push since the last pop (or a push past the capacity, which stored nothing) it does nothing.
  void pop();
  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  // Up to k tokens following the latest earlier occurrence of the last n tokens, for the longest n ≤ kMaxN
  // with an occurrence; 0 when there is none.
  size_t propose(size_t k, int32_t* out) const;

 private:
  // Open-addressing table per n: slot → the position right after an occurrence (−1 empty); the n-gram
  // itself is compared against tokens_, so a hash collision never proposes a wrong continuation.
  uint64_t hash(int64_t end, int n) const;
  bool same(int64_t end_a, int64_t end_b, int n) const;
  void index(int64_t end, int n);
  int64_t find(int64_t end, int n) const;

  std::vector<int32_t> tokens_;
  std::vector<std::vector<int32_t>> tables_;  // [n - 1][slot]
  size_t mask_ = 0;
  // What the last push overwrote, per n: pop() restores it.
  struct Undo {
    size_t slot = 0;
    int32_t old = -1;
  };
  std::array<Undo, kMaxN> undo_{};
  int64_t undo_count_ = 0;
  bool can_pop_ = false;
};

}  // namespace hfs
