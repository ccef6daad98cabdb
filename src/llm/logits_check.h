// Why sampling from these logits would be meaningless, shared by the Runner and the Engine.
#pragma once

#include <cmath>
#include <limits>
#include <span>
#include <string>

namespace hfs {

namespace detail {
// Whether every logit is sampleable-looking (no NaN, no +inf) and whether every one is −inf, in one read
// with per-lane flags the compiler keeps in vector registers: this runs for every row of every step, over
// vocabularies of 150k, so a branch per element would cost more than the sampling it guards
// (logits_check.cpp).
void scan_logits(std::span<const float> logits, bool& any_bad, bool& all_masked);
}  // namespace detail

// "" when the logits can be sampled from; else why not: a NaN or +inf (−inf is a masked token, as HF's
// processors write it, and fine while some token is not masked), or every logit −inf. Without this check
// greedy argmax picks id 0 from all-NaN logits and a broken program streams token 0 with no error.
inline std::string unusable_logits(std::span<const float> logits) {
  bool any_bad = false, all_masked = false;
  detail::scan_logits(logits, any_bad, all_masked);
  if (any_bad)
    for (size_t i = 0; i < logits.size(); ++i) {
      const float l = logits[i];
      if (std::isnan(l) || l == std::numeric_limits<float>::infinity())
        return std::string("logits contain ") + (std::isnan(l) ? "NaN" : "+inf") + " at id " + std::to_string(i);
    }
  return all_masked && !logits.empty() ? "every logit is -inf" : "";
}

}  // namespace hfs
