// server/logprobs: the reported distribution against hand-computed values (log-softmax of three logits,
// with a bias, the penalties and a mask applied as the Sampler applies them).
#include "server/logprobs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace hfs::server {
namespace {

double lse(std::vector<double> v) {
  double s = 0;
  for (double x : v) s += std::exp(x);
  return std::log(s);
}

TEST(TokenLogprobs, PlainLogSoftmaxWithTopK) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f};
  LogprobScratch scratch;
  const TokenLogprobs lp = token_logprobs(logits, {}, SamplingConfig{}, {}, 2, 3, scratch);
  const double z = lse({1, 3, 2, 3});
  EXPECT_NEAR(lp.logprob, 2 - z, 1e-6);
  ASSERT_EQ(lp.top.size(), 3u);
  EXPECT_EQ(lp.top[0].first, 1);  // a tie: the lower id first
  EXPECT_EQ(lp.top[1].first, 3);
  EXPECT_EQ(lp.top[2].first, 2);
  EXPECT_NEAR(lp.top[0].second, 3 - z, 1e-6);
}

TEST(TokenLogprobs, BiasPenaltiesAndMaskBeforeTemperature) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, -1.0f};
  SamplingConfig c;
  c.temperature = 0.5f;  // not applied: the reported distribution is before temperature
  c.logit_bias = {{0, 2.0f}};
  c.presence_penalty = 0.5f;
  c.frequency_penalty = 0.25f;
  c.repetition_penalty = 2.0f;
  const std::vector<int32_t> history = {2, 2, 3};
  const std::vector<uint8_t> allowed = {1, 0, 1, 1};
  LogprobScratch scratch;
  const TokenLogprobs lp = token_logprobs(logits, history, c, allowed, 0, 4, scratch);
  // id 0: 1 + 2 (bias) = 3; id 1: masked; id 2: (2 - 0.5 - 2 × 0.25) / 2 = 0.5; id 3: (-1 - 0.5 - 0.25) × 2 = -3.5.
  const double z = lse({3, 0.5, -3.5});
  EXPECT_NEAR(lp.logprob, 3 - z, 1e-6);
  ASSERT_EQ(lp.top.size(), 3u);  // the masked token is not listed
  EXPECT_EQ(lp.top[1].first, 2);
  EXPECT_NEAR(lp.top[1].second, 0.5 - z, 1e-6);
  EXPECT_EQ(lp.top[2].first, 3);
  EXPECT_NEAR(lp.top[2].second, -3.5 - z, 1e-6);
}

TEST(TokenLogprobs, TokenTextIsUtf8OrItsBytes) {
  EXPECT_EQ(token_text("\xe2\x96\x81the"), "\xe2\x96\x81the");
  EXPECT_EQ(token_text("\xe2\x96"), "bytes:\\xe2\\x96");
  EXPECT_EQ(token_text(""), "");
}

}  // namespace
}  // namespace hfs::server
