// OpenAI's presence/frequency penalties and logit_bias (SamplingConfig), checked against hand-computed
// logits: logit[t] -= presence * (count[t] > 0) + frequency * count[t]; logit[t] += bias[t].
#include <gtest/gtest.h>

#include <limits>
#include <random>
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

// Greedy with only a logit_bias takes the argmax without a biased copy of the logits: the same token as the
// definition (copy, add each bias in the list's order, first index of the largest), which this computes by
// hand. Random logits with repeated values (ties), −inf entries, biased ids at the ends, next to each other,
// repeated in the list, past the vocabulary, and biases that make a biased id tie an unbiased maximum.
TEST(SamplerPenalties, GreedyWithLogitBiasIsTheArgmaxOfTheBiasedLogits) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t V = 1 + static_cast<int64_t>(rng() % 700);
    std::vector<float> logits(static_cast<size_t>(V));
    for (float& l : logits) {
      const uint32_t r = rng() % 20;
      l = r == 0 ? -std::numeric_limits<float>::infinity() : static_cast<float>(static_cast<int>(rng() % 9)) * 0.5f;
    }
    SamplingConfig c;  // greedy
    const int n_bias = 1 + static_cast<int>(rng() % 6);
    for (int i = 0; i < n_bias; ++i) {
      const uint32_t kind = rng() % 6;
      const int32_t id = kind == 0 ? 0 : kind == 1 ? static_cast<int32_t>(V - 1) : kind == 2 ? static_cast<int32_t>(V + 3)
                         : kind == 3 && !c.logit_bias.empty() ? c.logit_bias.back().first  // repeated
                                                               : static_cast<int32_t>(rng() % static_cast<uint32_t>(V));
      const float bias = static_cast<float>(static_cast<int>(rng() % 9) - 4) * 0.5f + (rng() % 4 == 0 ? 100.0f : 0.0f);
      c.logit_bias.push_back({id, rng() % 5 == 0 ? -100.0f : bias});
    }
    std::vector<float> biased = logits;
    for (const auto& [id, b] : c.logit_bias)
      if (id < V) biased[static_cast<size_t>(id)] += b;
    int32_t want = 0;
    for (int64_t i = 1; i < V; ++i)
      if (biased[static_cast<size_t>(i)] > biased[static_cast<size_t>(want)]) want = static_cast<int32_t>(i);
    ASSERT_EQ(Sampler(c, V).sample(logits, {}), want) << "trial " << trial << ", V " << V;
  }
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
