// One verification step's host side, shared by the Runner and the Engine: drafts proposed after the
// pending token, each row's logits checked against the draft after it (Sampler::verify), and the drafter
// brought up to the committed tokens afterwards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hfstatic/sampler.h"
#include "llm/logits_check.h"
#include "llm/ngram_draft.h"

namespace hfs {

// rows = the pending token `last` and up to k drafts proposed after it (the drafter does not hold `last`
// yet: it is committed only by the step). Returns the drafts' count.
inline size_t propose_rows(NgramDraft& drafter, int32_t last, int64_t k, std::vector<int32_t>& rows) {
  rows.assign(static_cast<size_t>(1 + k), 0);
  rows[0] = last;
  drafter.push(last);
  const size_t drafted = drafter.propose(static_cast<size_t>(k), rows.data() + 1);
  drafter.pop();
  rows.resize(1 + drafted);
  return drafted;
}

struct Verification {
  size_t accepted = 0;
  std::string error;  // unusable logits at row `bad_row` (then `verified` stops before it)
  size_t bad_row = 0;
};

// `all`: the step's logits for the rows, [rows.size(), V] row-major. Fills `verified` with the accepted
// drafts and one more token (the replacement for the first rejected draft, or a bonus token from the last
// row), ending early at a stop token and cut at `budget`. `history` (the sequence's committed tokens, for
// the repetition penalty) gains the pending token and the accepted drafts as they are checked; the caller
// trims it to what it commits.
template <typename IsStop>
Verification verify_rows(Sampler& sampler, std::span<const float> all, size_t V, std::span<const int32_t> rows,
                         std::vector<int32_t>& history, const IsStop& is_stop, int64_t budget,
                         std::vector<int32_t>& verified) {
  Verification out;
  verified.clear();
  history.push_back(rows[0]);
  const size_t drafted = rows.size() - 1;
  for (size_t i = 0; i <= drafted; ++i) {
    const std::span<const float> logits = all.subspan(i * V, V);
    if (std::string why = unusable_logits(logits); !why.empty()) {
      out.error = why;
      out.bad_row = i;
      break;
    }
    if (i == drafted) {  // every draft accepted: the last row gives one more token
      verified.push_back(sampler.sample(logits, history));
      break;
    }
    const Sampler::Verdict v = sampler.verify(logits, history, rows[i + 1]);
    verified.push_back(v.token);
    if (!v.accepted || is_stop(v.token)) break;
    ++out.accepted;
    history.push_back(v.token);
  }
  if (static_cast<int64_t>(verified.size()) > budget) verified.resize(static_cast<size_t>(budget));
  return out;
}

// After the step is cut back to what it commits: the pending token and every verified token but the last.
inline void push_committed(NgramDraft& drafter, int32_t last, const std::vector<int32_t>& verified) {
  drafter.push(last);
  for (size_t i = 0; i + 1 < verified.size(); ++i) drafter.push(verified[i]);
}

}  // namespace hfs
