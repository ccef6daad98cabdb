// Why sampling from these logits would be meaningless, shared by the Runner and the Engine.
#pragma once

#include <cmath>
#include <limits>
#include <span>
#include <string>

namespace hfs {

// "" when the logits can be sampled from; else why not: a NaN or +inf (−inf is a masked token, as HF's
// processors write it, and fine while some token is not masked), or every logit −inf. Without this check
// greedy argmax picks id 0 from all-NaN logits and a broken program streams token 0 with no error.
inline std::string unusable_logits(std::span<const float> logits) {
  bool all_masked = !logits.empty();
  for (size_t i = 0; i < logits.size(); ++i) {
    const float l = logits[i];
    if (std::isnan(l) || l == std::numeric_limits<float>::infinity())
      return std::string("logits contain ") + (std::isnan(l) ? "NaN" : "+inf") + " at id " + std::to_string(i);
    all_masked = all_masked && l == -std::numeric_limits<float>::infinity();
  }
  return all_masked ? "every logit is -inf" : "";
}

}  // namespace hfs
