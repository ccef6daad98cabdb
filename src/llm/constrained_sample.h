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

// What a constraint that allows nothing before its output is complete means (the grammar needs a character
// no token can produce), after `generated` tokens.
inline std::string no_continuation_message(size_t generated) {
  return "constraint: no token of the vocabulary continues the output after " + std::to_string(generated) +
         " generated tokens (the grammar needs a character no token can produce)";
}

}  // namespace hfs
