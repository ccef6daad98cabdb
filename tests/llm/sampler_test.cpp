#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "hfstatic/sampler.h"

namespace hfs {
namespace {

TEST(Sampler, GreedyIsArgmaxLowestIdOnTies) {
  SamplingConfig c;  // temperature 0
  Sampler s(c, 5);
  std::vector<float> l = {0.1f, 2.0f, -1.0f, 2.0f, 0.0f};
  EXPECT_EQ(s.sample(l, {}), 1);
  EXPECT_EQ(argmax(l), 1);
}

TEST(Sampler, RepetitionPenaltyFollowsHfSemantics) {
  // HF: positive logits are divided by the penalty, negative ones multiplied.
  // logits {3, 2.5, -1}, penalty 2, history {0, 0, 2}: {1.5, 2.5, -2} → argmax 1.
  SamplingConfig c;
  c.repetition_penalty = 2.0f;
  Sampler s(c, 3);
  std::vector<float> l = {3.0f, 2.5f, -1.0f};
  std::vector<int32_t> hist = {0, 0, 2};
  EXPECT_EQ(s.sample(l, hist), 1);
  // Without history the penalty changes nothing.
  EXPECT_EQ(s.sample(l, {}), 0);
}

TEST(Sampler, TopKOneIsGreedy) {
  SamplingConfig c;
  c.temperature = 1.5f;
  c.top_k = 1;
  Sampler s(c, 4);
  std::vector<float> l = {0.0f, 0.5f, 3.0f, 2.9f};
  for (int i = 0; i < 20; ++i) EXPECT_EQ(s.sample(l, {}), 2);
}

TEST(Sampler, SameSeedSameTokens) {
  SamplingConfig c;
  c.temperature = 1.0f;
  c.seed = 1234;
  std::vector<float> l = {0.0f, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f};
  Sampler a(c, 6), b(c, 6);
  std::vector<int32_t> ta, tb;
  for (int i = 0; i < 50; ++i) {
    ta.push_back(a.sample(l, {}));
    tb.push_back(b.sample(l, {}));
  }
  EXPECT_EQ(ta, tb);
  // And the draws are not constant (the test could fail if sampling ignored the distribution).
  EXPECT_NE(std::count(ta.begin(), ta.end(), ta[0]), 50);
}

TEST(Sampler, TemperatureDistributionMatchesSoftmax) {
  // p = softmax(l / T) with l = {0, ln 3}, T = 1 → {0.25, 0.75}.
  SamplingConfig c;
  c.temperature = 1.0f;
  c.top_k = 0;
  c.top_p = 1.0f;
  c.seed = 7;
  Sampler s(c, 2);
  std::vector<float> l = {0.0f, std::log(3.0f)};
  int ones = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) ones += s.sample(l, {}) == 1;
  EXPECT_NEAR(ones / double(n), 0.75, 0.015);
}

TEST(Sampler, TopPKeepsSmallestPrefixReachingMass) {
  // probs {0.5, 0.3, 0.2}: top_p 0.6 keeps {0, 1} (0.5 < 0.6 ≤ 0.8); token 2 never drawn.
  SamplingConfig c;
  c.temperature = 1.0f;
  c.top_p = 0.6f;
  c.seed = 3;
  Sampler s(c, 3);
  std::vector<float> l = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  std::map<int, int> count;
  for (int i = 0; i < 5000; ++i) count[s.sample(l, {})]++;
  EXPECT_EQ(count[2], 0);
  EXPECT_NEAR(count[0] / 5000.0, 0.5 / 0.8, 0.03);
}

TEST(Sampler, MinPDropsTokensBelowFractionOfMax) {
  // probs {0.6, 0.3, 0.1}; min_p 0.25 → floor 0.15 drops token 2.
  SamplingConfig c;
  c.temperature = 1.0f;
  c.min_p = 0.25f;
  c.seed = 11;
  Sampler s(c, 3);
  std::vector<float> l = {std::log(0.6f), std::log(0.3f), std::log(0.1f)};
  for (int i = 0; i < 3000; ++i) EXPECT_NE(s.sample(l, {}), 2);
}

// validate(): every field's accepted range, boundaries included, and NaN/infinities outside all of them.
TEST(SamplingValidation, AcceptsTheBoundaries) {
  EXPECT_TRUE(validate(SamplingConfig{}).ok());
  SamplingConfig c;
  c.temperature = 0.0f;
  c.top_k = 0;
  c.top_p = 1.0f;
  c.min_p = 0.0f;
  c.repetition_penalty = 1e-30f;
  c.seed = UINT64_MAX;
  EXPECT_TRUE(validate(c).ok());
  c.temperature = std::numeric_limits<float>::max();
  c.top_k = INT32_MAX;
  c.top_p = std::numeric_limits<float>::denorm_min();
  c.min_p = 1.0f;
  c.repetition_penalty = std::numeric_limits<float>::max();
  EXPECT_TRUE(validate(c).ok());
}

// A config with one field changed from the defaults.
template <typename T>
SamplingConfig with(T SamplingConfig::*field, T value) {
  SamplingConfig c;
  c.*field = value;
  return c;
}

void expect_rejected(const SamplingConfig& c, const std::string& message) {
  Status st = validate(c);
  ASSERT_FALSE(st.ok()) << message;
  EXPECT_EQ(st.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(st.error().message(), "sampling: " + message);
  // find_invalid_field says the same, in parts.
  auto bad = find_invalid_field(c);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(message.rfind(std::string(bad->field) + ": expected " + std::string(bad->expected) + ", got ", 0), 0u)
      << message;
}

TEST(SamplingValidation, RejectsEachFieldOutsideItsRangeNamingItAndTheValue) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  using C = SamplingConfig;
  const std::string temperature = "temperature: expected a finite number >= 0 (0 = greedy), got ";
  expect_rejected(with(&C::temperature, -0.5f), temperature + "-0.5");
  expect_rejected(with(&C::temperature, nan), temperature + "nan");
  expect_rejected(with(&C::temperature, inf), temperature + "inf");
  expect_rejected(with(&C::top_k, -1), "top_k: expected an integer >= 0 (0 = off), got -1");
  const std::string top_p = "top_p: expected a number in (0, 1] (1 = off), got ";
  expect_rejected(with(&C::top_p, 0.0f), top_p + "0");
  expect_rejected(with(&C::top_p, 2.0f), top_p + "2");
  expect_rejected(with(&C::top_p, 1.0000001f), top_p + "1.0000001");
  expect_rejected(with(&C::top_p, nan), top_p + "nan");
  const std::string min_p = "min_p: expected a number in [0, 1] (0 = off), got ";
  expect_rejected(with(&C::min_p, -0.01f), min_p + "-0.01");
  expect_rejected(with(&C::min_p, 1.5f), min_p + "1.5");
  expect_rejected(with(&C::min_p, nan), min_p + "nan");
  const std::string penalty = "repetition_penalty: expected a finite number > 0 (1 = off), got ";
  expect_rejected(with(&C::repetition_penalty, 0.0f), penalty + "0");
  expect_rejected(with(&C::repetition_penalty, -1.0f), penalty + "-1");
  expect_rejected(with(&C::repetition_penalty, inf), penalty + "inf");
  expect_rejected(with(&C::repetition_penalty, nan), penalty + "nan");
}

}  // namespace
}  // namespace hfs
