// DraftPolicy's decisions, fed synthetic step times: generation is simulated token by token (a decode step,
// or a verification step of the drafts the policy wants, some of them accepted) and its total time compared
// with plain decode's. The step costs are the two shapes measured with `hfstatic bench --verify`: a
// 260K-parameter model, where each row of a step costs most of a decode step and rows are padded to the
// program's step method (2, 4, 8 or 16 rows), and a 0.5B one, where the rows share one pass over the weights.
#include "llm/draft_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <utility>
#include <vector>

namespace hfs {
namespace {

constexpr double kDecodeMs = 0.2;

// A verification step of k drafts (k + 1 rows, padded to the next power of two): each row beyond the first
// costs 0.7 of a decode step.
double tiny_model_ms(int32_t k) {
  int32_t rows = 1;
  while (rows < k + 1) rows *= 2;
  return kDecodeMs * (1 + 0.7 * (rows - 1));
}
// One pass over the weights for every row; each row adds 15 %.
double large_model_ms(int32_t k) { return kDecodeMs * (1 + 0.15 * k); }

// Deterministic draws: each draft accepted with probability p until the first rejection.
struct Acceptance {
  double p;
  uint64_t state = 12345;
  int32_t operator()(int32_t k) {
    int32_t a = 0;
    while (a < k) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      if (static_cast<double>(state >> 11) / 9007199254740992.0 >= p) break;
      ++a;
    }
    return a;
  }
};

struct Outcome {
  double speedup = 0;  // plain decode's time / the policy's
  int64_t verify_steps = 0;
};

// n tokens as the Runner makes them: drafts capped to the tokens still wanted; `slow_round` (if ≥ 0) is a
// verification step that waited for a core, reported to the policy as 30 times its cost (the speedup leaves
// the wait out: it measures the decisions that followed). The first run of each step method (by its cost)
// takes `cold` times its cost, reported and counted.
Outcome simulate(int32_t max_k, int n, const std::function<double(int32_t)>& step_ms, Acceptance accept,
                 int slow_round = -1, std::vector<int64_t> step_rows = {}, double cold = 1) {
  DraftPolicy p(max_k, std::move(step_rows));
  std::vector<double> ran;  // the costs of the step methods that ran
  double t = 0;
  int made = 0;
  Outcome o;
  while (made < n) {
    const int32_t k = std::min(p.want(), n - made - 1);
    if (k < 1) {
      t += kDecodeMs;
      p.on_decode(kDecodeMs);
      made += 1;
      continue;
    }
    const int32_t a = accept(k);
    double ms = step_ms(k);
    if (std::find(ran.begin(), ran.end(), ms) == ran.end()) {
      ran.push_back(ms);
      ms *= cold;
    }
    t += ms;
    p.on_verify(k, a, ms * (o.verify_steps == slow_round ? 30 : 1));
    made += a + 1;
    ++o.verify_steps;
  }
  o.speedup = n * kDecodeMs / t;
  return o;
}

TEST(DraftPolicy, OpenEndedTextOnATinyModelIsNotSlowerThanPlainDecode) {
  // Drafts accepted a third of the time, steps that cost a decode step per row: drafting never pays.
  const Outcome o = simulate(8, 2000, tiny_model_ms, Acceptance{0.35});
  EXPECT_GE(o.speedup, 0.98);
  // Probing backs off: a handful of verification steps in 2000 tokens.
  EXPECT_LE(o.verify_steps, 40);
}

TEST(DraftPolicy, RepeatedTextOnATinyModelDraftsTheCountsThatPay) {
  // Every draft accepted: 1 draft (2 rows) gains 2 / 1.7, 3 drafts (4 rows) 4 / 3.1; 8 drafts would run 16
  // rows and lose (9 / 11.5).
  const Outcome o = simulate(8, 2000, tiny_model_ms, Acceptance{1.0});
  EXPECT_GE(o.speedup, 1.15);
}

TEST(DraftPolicy, RepeatedTextOnATinyModelFillsItsStepMethods) {
  // The same steps, the policy told the program's step sizes: 2 drafts (3 rows) run the 4-row method, so 3
  // cost the same, and 7 fill the 8-row one (8 / 5.9). Without the sizes the policy measures 2 drafts, finds
  // them worse than 1 and never tries more.
  const std::vector<int64_t> steps = {2, 4, 8, 16};
  const Outcome blind = simulate(8, 2000, tiny_model_ms, Acceptance{1.0});
  const Outcome o = simulate(8, 2000, tiny_model_ms, Acceptance{1.0}, -1, steps);
  EXPECT_GE(o.speedup, 1.3);
  EXPECT_GT(o.speedup, blind.speedup * 1.08);
  // Open-ended text still costs nothing.
  EXPECT_GE(simulate(8, 2000, tiny_model_ms, Acceptance{0.35}, -1, steps).speedup, 0.98);
  std::printf("tiny model, every draft accepted: %.3fx without the step sizes, %.3fx with\n", blind.speedup, o.speedup);
}

TEST(DraftPolicy, AProbeWhoseDraftsAreAllAcceptedRunsItsRounds) {
  // Rows a little dearer (0.75 of a decode step each, as stories260K's steps measure with the host's work):
  // one accepted draft from even odds never looks worth 2 rows (1.71 / 1.75), so a probe judged on its first
  // round pauses every time, though 7 drafts would make 8 tokens for 6.25 decode steps.
  const auto dearer_rows_ms = [](int32_t k) {
    int32_t rows = 1;
    while (rows < k + 1) rows *= 2;
    return kDecodeMs * (1 + 0.75 * (rows - 1));
  };
  const Outcome o = simulate(8, 2000, dearer_rows_ms, Acceptance{1.0}, -1, {2, 4, 8, 16});
  EXPECT_GE(o.speedup, 1.2);
  EXPECT_GE(simulate(8, 2000, dearer_rows_ms, Acceptance{0.35}, -1, {2, 4, 8, 16}).speedup, 0.98);
}

TEST(DraftPolicy, AStepMethodsColdFirstRunIsNotItsCost) {
  // stories260K's first 4-row step took 3.8 decode steps where warm ones take 2.2: recorded as the method's
  // cost, 2 and 3 drafts never looked worth it again and 300 grounded tokens ran on single drafts.
  const std::vector<int64_t> steps = {2, 4, 8, 16};
  const Outcome warm = simulate(8, 2000, tiny_model_ms, Acceptance{1.0}, -1, steps);
  const Outcome cold = simulate(8, 2000, tiny_model_ms, Acceptance{1.0}, -1, steps, 2.5);
  EXPECT_GE(cold.speedup, 0.97 * warm.speedup);
  EXPECT_GE(simulate(8, 2000, tiny_model_ms, Acceptance{0.35}, -1, steps, 2.5).speedup, 0.98);
  std::printf("tiny model, every draft accepted: %.3fx with warm first runs, %.3fx with cold ones\n", warm.speedup,
              cold.speedup);
}

TEST(DraftPolicy, RepeatedTextOnALargeModelDraftsTheMost) {
  const Outcome o = simulate(8, 2000, large_model_ms, Acceptance{1.0});
  EXPECT_GE(o.speedup, 3.5);  // 8 drafts: 9 tokens for 2.2 decode steps, 4.1x
}

TEST(DraftPolicy, HalfAcceptedDraftsOnALargeModelStillPay) {
  const Outcome o = simulate(8, 2000, large_model_ms, Acceptance{0.6});
  EXPECT_GE(o.speedup, 1.2);  // 2-3 drafts: about 1.3x
}

TEST(DraftPolicy, OneStepThatWaitedForACoreDoesNotStopDrafting) {
  const Outcome steady = simulate(8, 2000, large_model_ms, Acceptance{1.0});
  const Outcome o = simulate(8, 2000, large_model_ms, Acceptance{1.0}, /*slow_round=*/5);
  EXPECT_GE(o.speedup, 0.97 * steady.speedup);
}

TEST(DraftPolicy, DraftsOnlyAfterADecodeStepWasTimedAndStartsWithOne) {
  DraftPolicy p(8);
  EXPECT_EQ(p.want(), 0);  // nothing to compare a verification step with yet
  p.on_decode(kDecodeMs);  // the first step after the prompt runs cold: not used
  EXPECT_EQ(p.want(), 0);
  p.on_decode(kDecodeMs);
  EXPECT_EQ(p.want(), 1);
}

TEST(DraftPolicy, PausesThatFollowFailedProbesDouble) {
  DraftPolicy p(8);
  p.on_decode(kDecodeMs);
  p.on_decode(kDecodeMs);
  auto pause_after_rejection = [&] {
    EXPECT_EQ(p.want(), 1);
    p.on_verify(1, 0, tiny_model_ms(1));
    int steps = 0;
    while (p.want() == 0 && steps < 10000) {
      p.on_decode(kDecodeMs);
      ++steps;
    }
    return steps;
  };
  // The method's first run is cold, not a measurement: that probe goes on to a second round.
  EXPECT_EQ(p.want(), 1);
  p.on_verify(1, 0, 3 * tiny_model_ms(1));
  const int first = pause_after_rejection();
  EXPECT_EQ(first, DraftPolicy::kPauseSteps);
  EXPECT_EQ(pause_after_rejection(), 2 * first);
  EXPECT_EQ(pause_after_rejection(), 4 * first);
}

TEST(DraftPolicy, CostsBetweenMeasuredCountsAreInterpolated) {
  DraftPolicy p(8);
  p.on_decode(kDecodeMs);
  p.on_decode(kDecodeMs);
  for (int32_t k : {1, 2, 4}) {
    p.on_verify(k, k, 10 * kDecodeMs);  // the method's first run: cold, not a measurement
    EXPECT_DOUBLE_EQ(p.cost(k), k == 1 ? 1 + 1.0 / 16 : 1.0 + (p.cost(1) - 1.0) * k);
    p.on_verify(k, k, (k + 1) * kDecodeMs);
  }
  EXPECT_DOUBLE_EQ(p.cost(1), 2.0);
  EXPECT_DOUBLE_EQ(p.cost(3), 4.0);  // between 2 (3.0) and 4 (5.0)
  EXPECT_DOUBLE_EQ(p.cost(8), 9.0);  // beyond 4: on the line through a decode step (0 drafts, 1.0) and 4
}

TEST(DraftPolicy, UnmeasuredCountsArePricedAtTheRowsOfTheirStepMethod) {
  DraftPolicy p(8, {2, 4, 8, 16});
  p.on_decode(kDecodeMs);
  p.on_decode(kDecodeMs);
  for (int32_t k : {1, 3}) {
    p.on_verify(k, k, tiny_model_ms(k));  // cold
    p.on_verify(k, k, tiny_model_ms(k));
  }
  EXPECT_DOUBLE_EQ(p.cost(2), p.cost(3));  // one 4-row method
  // 4 to 7 drafts run the 8-row method (7 drafts' worth), 8 the 16-row one (15 drafts' worth), each on the
  // line through a decode step and the 4-row method's 3 drafts: the tiny model's own costs.
  EXPECT_NEAR(p.cost(4), tiny_model_ms(7) / kDecodeMs, 1e-12);
  EXPECT_NEAR(p.cost(7), tiny_model_ms(7) / kDecodeMs, 1e-12);
  EXPECT_NEAR(p.cost(8), tiny_model_ms(8) / kDecodeMs, 1e-12);
}

}  // namespace
}  // namespace hfs
