// Where draft tokens come from, behind one interface: the verification loop (draft_verify.h) proposes from
// a DraftSource, verifies in one multi-row step of the target, and brings the source to the committed
// tokens; it never knows which source it drives. Implementations: prompt lookup (NgramSource, no extra
// model) and a draft program (ProgramDraft, src/llm/program_draft.h).
//
// A source holds the sequence's committed tokens (prompt and accepted output). The pending token — the
// last one sampled, committed by the step that verifies the drafts after it — is passed to propose() and
// committed afterwards with the accepted drafts. Rejected drafts are never committed; a source that ran
// ahead on them (a draft program's caches) forgets them lazily, when the committed tokens show where they
// part (counters only, as the target's rows are forgotten).
//
//   NgramSource s(context_length);
//   s.commit(prompt);
//   int32_t drafts[8];
//   auto n = s.propose(pending, 8, drafts);   // Result<size_t>: 0 when it has nothing to propose
//   ... verify; then s.commit({pending, accepted drafts...})
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hfstatic/error.h"
#include "llm/ngram_draft.h"

namespace hfs {

class DraftSource {
 public:
  virtual ~DraftSource() = default;
  // The committed tokens the source holds.
  virtual std::span<const int32_t> tokens() const = 0;
  // Appends committed tokens.
  virtual void commit(std::span<const int32_t> tokens) = 0;
  // Forgets the committed tokens from `length` on (length ≤ tokens().size(); larger does nothing).
  virtual void rollback(int64_t length) = 0;
  // Brings whatever the source computes from its tokens up to date (a draft program's prefill over a new
  // prompt), so the first propose() does not pay for it. Sources without such state do nothing.
  [[nodiscard]] virtual Status catch_up() { return Ok{}; }
  // Up to k drafts continuing the committed tokens followed by `last`; writes them to out[0..n) and
  // returns n (0: nothing to propose, e.g. a draft program at its capacity).
  [[nodiscard]] virtual Result<size_t> propose(int32_t last, size_t k, int32_t* out) = 0;
};

// Makes `source` hold exactly `committed` (a sequence's tokens after a reset, a new prompt, a continued
// chat): the common prefix stays, the rest is rolled back and committed anew.
inline void sync_source(DraftSource& source, std::span<const int32_t> committed) {
  const std::span<const int32_t> held = source.tokens();
  const size_t n = std::min(held.size(), committed.size());
  const size_t common = static_cast<size_t>(std::mismatch(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(n),
                                                          committed.begin()).first - held.begin());
  source.rollback(static_cast<int64_t>(common));
  source.commit(committed.subspan(common));
}

// Prompt lookup (NgramDraft) as a draft source.
class NgramSource final : public DraftSource {
 public:
  explicit NgramSource(int64_t capacity) : draft_(capacity) { scratch_.reserve(static_cast<size_t>(std::max<int64_t>(capacity, 1))); }
  std::span<const int32_t> tokens() const override { return draft_.tokens(); }
  void commit(std::span<const int32_t> tokens) override {
    for (int32_t t : tokens) draft_.push(t);
  }
  // Rare (a new prompt that does not continue the last one): the index is rebuilt from the prefix.
  void rollback(int64_t length) override {
    if (length >= draft_.size()) return;
    scratch_.assign(draft_.tokens().begin(), draft_.tokens().begin() + length);
    draft_.clear();
    for (int32_t t : scratch_) draft_.push(t);
  }
  Result<size_t> propose(int32_t last, size_t k, int32_t* out) override {
    draft_.push(last);
    const size_t n = draft_.propose(k, out);
    draft_.pop();
    return n;
  }

 private:
  NgramDraft draft_;
  std::vector<int32_t> scratch_;
};

}  // namespace hfs
