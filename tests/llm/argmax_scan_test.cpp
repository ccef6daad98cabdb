// argmax and unusable_logits read each row's logits in blocks of independent lanes (src/llm/sampler.cpp,
// src/llm/logits_check.h); these compare them with the one-element-at-a-time definitions on lengths around
// the block and lane sizes, ties across blocks, −inf runs, and NaN / +inf at every position class.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "hfstatic/sampler.h"
#include "llm/logits_check.h"

namespace hfs {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// The definition: the first index whose value no earlier value is below (NaN never wins).
int32_t naive_argmax(const std::vector<float>& x) {
  int32_t best = 0;
  for (size_t i = 1; i < x.size(); ++i)
    if (x[i] > x[static_cast<size_t>(best)]) best = static_cast<int32_t>(i);
  return best;
}

const std::vector<size_t> kLengths = {1, 2, 15, 16, 17, 255, 256, 257, 511, 512, 513, 1000, 4096, 49152, 151936};

// A logit uniform in [-9, 9) from the generator's top 24 bits (distinct values, ties rare). Not a
// std:: distribution: those go through generate_canonical's long double arithmetic, software quad
// precision on aarch64, which made this case most of a minute under qemu (scripts/test --arm).
float random_logit(std::mt19937& rng) { return static_cast<float>(rng() >> 8) * (18.0f / 16777216.0f) - 9.0f; }

TEST(Argmax, MatchesTheDefinitionOnRandomLogitsOfEveryLength) {
  std::mt19937 rng(7);
  for (size_t n : kLengths)
    for (int rep = 0; rep < 8; ++rep) {
      std::vector<float> x(n);
      for (float& v : x) v = random_logit(rng);
      EXPECT_EQ(argmax(x), naive_argmax(x)) << "n " << n;
    }
}

TEST(Argmax, TiesGoToTheLowestIdAcrossBlocksLanesAndTheTail) {
  for (size_t n : kLengths) {
    std::vector<float> x(n, -1.0f);
    // The maximum at several places: the earliest must win wherever the others fall.
    for (size_t at : {n - 1, n / 2, n / 3 + 1, size_t{17}, size_t{256}, size_t{0}}) {
      if (at >= n) continue;
      x[at] = 5.0f;
      EXPECT_EQ(argmax(x), naive_argmax(x)) << "n " << n << " max at " << at;
    }
  }
}

TEST(Argmax, MaskedAndNanValuesNeverWin) {
  for (size_t n : kLengths) {
    std::vector<float> x(n, -kInf);
    EXPECT_EQ(argmax(x), 0) << n;  // all masked: id 0, as the definition gives
    if (n < 3) continue;
    x[n - 2] = 0.5f;
    EXPECT_EQ(argmax(x), static_cast<int32_t>(n - 2)) << n;
    x[1] = kNan;  // a NaN in the first lane of the first block must not hide later values
    EXPECT_EQ(argmax(x), naive_argmax(x)) << n;
    x[0] = kNan;  // NaN first: the definition never moves off id 0
    EXPECT_EQ(argmax(x), naive_argmax(x)) << n;
  }
}

// The definition of unusable_logits, element by element.
std::string naive_check(const std::vector<float>& x) {
  bool all = !x.empty();
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) return "logits contain NaN at id " + std::to_string(i);
    if (x[i] == kInf) return "logits contain +inf at id " + std::to_string(i);
    all = all && x[i] == -kInf;
  }
  return all ? "every logit is -inf" : "";
}

TEST(UnusableLogits, MatchesTheDefinitionWhereverTheBadValueFalls) {
  EXPECT_EQ(unusable_logits({}), "");
  for (size_t n : kLengths) {
    std::vector<float> x(n, 0.25f);
    EXPECT_EQ(unusable_logits(x), "") << n;
    for (size_t at : {size_t{0}, n / 2, n - 1, n - n % 16, size_t{15}}) {
      if (at >= n) continue;
      for (float bad : {kNan, kInf}) {
        std::vector<float> y = x;
        y[at] = bad;
        if (at + 1 < n) y[n - 1] = bad == kNan ? kInf : kNan;  // a later bad value of the other kind
        EXPECT_EQ(unusable_logits(y), naive_check(y)) << "n " << n << " at " << at;
        EXPECT_NE(unusable_logits(y), "");
      }
    }
    std::vector<float> masked(n, -kInf);
    EXPECT_EQ(unusable_logits(masked), "every logit is -inf") << n;
    masked[n - 1] = -1e30f;  // one unmasked logit in the tail (or the only one) is enough
    EXPECT_EQ(unusable_logits(masked), "") << n;
  }
}

}  // namespace
}  // namespace hfs
