// server/logprobs.h — the log probabilities a request asked for ("logprobs"), one entry per generated
// token: the chosen token's and the k most likely alternatives'.
//
// They come from the distribution the token was sampled from, as far as it is a distribution of the model's:
// the step's logits after logit_bias, the presence/frequency and repetition penalties (the Sampler's order)
// and the structured-output mask (disallowed tokens are −inf, so never listed), log-softmaxed — before
// temperature and top-k/top-p/min-p truncation, so that a greedy request (temperature 0) still reports the
// model's confidence rather than a point mass. docs/server.md, "Log probabilities".
//
//   LogprobScratch scratch;
//   TokenLogprobs lp = token_logprobs(logits, history, config.sampling, allowed, token, /*k=*/3, scratch);
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hfstatic/sampler.h"

namespace hfs::server {

struct TokenLogprobs {
  int32_t token = -1;
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;  // the k most likely, descending (ties: lower id first)
};

// Sized to the vocabulary by the first call, reused after.
struct LogprobScratch {
  std::vector<float> work;
  std::vector<int32_t> counts;
  std::vector<uint8_t> seen;
  std::vector<int32_t> order;
};

// `allowed`: the constraint's mask over the vocabulary (1 = allowed), or empty for none.
TokenLogprobs token_logprobs(std::span<const float> logits, std::span<const int32_t> history, const SamplingConfig& config,
                             std::span<const uint8_t> allowed, int32_t token, int32_t k, LogprobScratch& scratch);

// A token's text as OpenAI reports it: its bytes when they are valid UTF-8, else "bytes:\xHH..." (the
// `bytes` field carries the raw bytes either way).
std::string token_text(const std::string& bytes);

}  // namespace hfs::server
