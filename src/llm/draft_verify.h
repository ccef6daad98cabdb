// One verification step's host side, shared by the Runner and the Engine: drafts proposed after the
// pending token by any DraftSource, each row's logits checked against the draft after it (Sampler::verify),
// and the source brought up to the committed tokens afterwards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hfstatic/sampler.h"
#include "llm/logits_check.h"
#include "llm/draft_source.h"

namespace hfs {

// rows = the pending token `last` and up to k drafts proposed after it (the source does not hold `last`
// yet: it is committed only by the step). Returns the drafts' count (rows is then just `last` on error).
inline Result<size_t> propose_rows(DraftSource& source, int32_t last, int64_t k, std::vector<int32_t>& rows) {
  rows.assign(static_cast<size_t>(1 + k), 0);
  rows[0] = last;
  auto drafted = source.propose(last, static_cast<size_t>(k), rows.data() + 1);
  rows.resize(1 + (drafted ? std::min(*drafted, static_cast<size_t>(k)) : 0));
  return drafted ? Result<size_t>(rows.size() - 1) : drafted;
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
// (A source that ran ahead on the drafts keeps what matches and forgets the rest: DraftSource.)
inline void push_committed(DraftSource& source, int32_t last, const std::vector<int32_t>& verified) {
  source.commit(std::span<const int32_t>(&last, 1));
  if (verified.size() > 1) source.commit(std::span<const int32_t>(verified.data(), verified.size() - 1));
}

}  // namespace hfs
