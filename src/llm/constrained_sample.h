// One sampled token under a structured-output constraint, shared by the Runner and the Engine: the logits
// masked to the tokens the grammar allows, sampled with the sequence's own sampler, the matcher advanced.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>

#include "hfstatic/constraint.h"
#include "hfstatic/sampler.h"

namespace hfs {

struct ConstrainedDraw {
  std::optional<int32_t> token;  // nullopt: nothing is allowed (constraint.complete() says if the output ended)
  double constraint_ms = 0;      // the mask and the matcher's step, not the sampling between them
};

// `masked`: scratch of the logits' size.
[[nodiscard]] inline Result<ConstrainedDraw> sample_constrained(TokenConstraint& constraint, Sampler& sampler,
                                                                std::span<const float> logits,
                                                                std::span<const int32_t> history,
                                                                std::span<float> masked) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  ConstrainedDraw out;
  const size_t allowed = constraint.mask_logits(logits, masked);
  const auto t1 = Clock::now();
  out.constraint_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  if (allowed == 0) return out;
  const int32_t tok = sampler.sample(masked, history);
  const auto t2 = Clock::now();
  HFS_TRY(constraint.accept(tok));
  out.constraint_ms += std::chrono::duration<double, std::milli>(Clock::now() - t2).count();
  out.token = tok;
  return out;
}

// Speculative drafts under a constraint (the Runner's and the Engine's verification steps): rows[0] is the
// pending token, rows[1..drafted] the drafts. Row j's mask — the tokens allowed after rows[1..j] — goes to
// masks[j * V, (j + 1) * V); a draft the grammar refuses, or a row after which nothing is allowed, ends the
// drafts. Returns how many drafts stay (rows[1..kept], every row up to kept with a non-empty mask); the
// constraint is left where it was. `masks`: at least (drafted + 1) * V.
[[nodiscard]] inline size_t constrain_drafts(TokenConstraint& constraint, std::span<const int32_t> rows, size_t drafted,
                                             std::span<uint8_t> masks, size_t V) {
  constraint.mark();
  size_t kept = 0;
  for (size_t j = 0; j <= drafted; ++j) {
    const std::span<uint8_t> mask = masks.subspan(j * V, V);
    if (constraint.compute_mask(mask) == 0) {
      kept = j == 0 ? 0 : j - 1;
      break;
    }
    kept = j;
    if (j == drafted) break;
    const int32_t d = rows[j + 1];
    if (d < 0 || static_cast<size_t>(d) >= V || !mask[static_cast<size_t>(d)] || !constraint.accept(d)) break;
  }
  constraint.rewind();
  return kept;
}

// What a constraint that allows nothing before its output is complete means (the grammar needs a character
// no token can produce), after `generated` tokens.
inline std::string no_continuation_message(size_t generated) {
  return "constraint: no token of the vocabulary continues the output after " + std::to_string(generated) +
         " generated tokens (the grammar needs a character no token can produce)";
}

}  // namespace hfs
