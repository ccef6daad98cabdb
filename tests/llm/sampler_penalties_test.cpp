// OpenAI's presence/frequency penalties and logit_bias (SamplingConfig), checked against hand-computed
// logits: logit[t] -= presence * (count[t] > 0) + frequency * count[t]; logit[t] += bias[t].
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "hfstatic/sampler.h"

namespace hfs {
namespace {

TEST(SamplerPenalties, PresenceAndFrequencyByHand) {
  std::vector<float> w = {1.0f, 0.9f, 0.5f, 0.0f};
  std::vector<int32_t> history = {0, 0, 1, 9 /* outside the vocabulary: ignored */};
  SamplingConfig c;
  c.presence_penalty = 0.2f;
  c.frequency_penalty = 0.15f;
  std::vector<int32_t> counts(4, 0);
  apply_bias_and_penalties(w, history, c, counts);
  EXPECT_FLOAT_EQ(w[0], 1.0f - 0.2f - 2 * 0.15f);
  EXPECT_FLOAT_EQ(w[1], 0.9f - 0.2f - 0.15f);
  EXPECT_FLOAT_EQ(w[2], 0.5f);
  EXPECT_FLOAT_EQ(w[3], 0.0f);
  EXPECT_EQ(counts, std::vector<int32_t>(4, 0));  // the scratch is clean for the next call
}

TEST(SamplerPenalties, GreedyPicksThePenalizedArgmax) {
  const std::vector<float> logits = {1.0f, 0.9f, 0.5f};
  const std::vector<int32_t> history = {0, 0, 1};
  SamplingConfig c;  // greedy
  EXPECT_EQ(Sampler(c, 3).sample(logits, history), 0);
  c.presence_penalty = 0.2f;  // {0.8, 0.7, 0.5}
  EXPECT_EQ(Sampler(c, 3).sample(logits, history), 0);
  c.frequency_penalty = 0.15f;  // {0.5, 0.55, 0.5}
  Sampler s(c, 3);
  EXPECT_EQ(s.sample(logits, history), 1);
  EXPECT_EQ(s.sample(logits, history), 1);  // the same again: counts do not accumulate across calls
  c.frequency_penalty = -2.0f;  // negative penalties favour repeats: {4.8, 2.7, 0.5}
  EXPECT_EQ(Sampler(c, 3).sample(logits, history), 0);
}

TEST(SamplerPenalties, LogitBiasBansAndForces) {
  const std::vector<float> logits = {1.0f, 0.9f, 0.5f};
  SamplingConfig c;
  c.logit_bias = {{0, -100.0f}};
  EXPECT_EQ(Sampler(c, 3).sample(logits, {}), 1);
  c.logit_bias = {{2, 0.6f}, {7, 50.0f} /* outside the vocabulary: ignored */};
  EXPECT_EQ(Sampler(c, 3).sample(logits, {}), 2);
}

TEST(SamplerPenalties, OutOfRangeValuesAreRejectedByName) {
  SamplingConfig c;
  c.presence_penalty = 2.5f;
  EXPECT_EQ(find_invalid_field(c)->field, "presence_penalty");
  c = {};
  c.frequency_penalty = -3.0f;
  EXPECT_EQ(find_invalid_field(c)->field, "frequency_penalty");
  c = {};
  c.logit_bias = {{-1, 1.0f}};
  EXPECT_EQ(find_invalid_field(c)->field, "logit_bias");
  c.logit_bias = {{1, std::numeric_limits<float>::infinity()}};
  EXPECT_EQ(find_invalid_field(c)->field, "logit_bias");
}

}  // namespace
}  // namespace hfs
