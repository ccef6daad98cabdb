// Speculative decoding: drafts verified several per step never change the output. Greedy: the same tokens
// as decoding without drafts (on a real model and on random-weight llama and sliding-window programs, to
// the end of the context). Sampling: the acceptance rule leaves each token distributed exactly as plain
// sampling draws it (a chi-square test that a wrong rule fails).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "hfstatic/export.h"
#include "hfstatic/llm_runner.h"
#include "hfstatic/program.h"
#include "hfstatic/sampler.h"
#include "hfstatic/tokenizer.h"
#include "llm/ngram_draft.h"
#include "support/fixtures.h"
#include "support/hf_static_fixture.h"
#include "support/require_fixture.h"
#include "support/random_floats.h"

namespace hfs {
namespace {

GenerationConfig greedy(int n, DraftKind draft) {
  GenerationConfig g;
  g.max_new_tokens = n;
  g.ignore_eos = true;
  g.draft.kind = draft;
  g.draft.max_tokens = 7;
  return g;
}

using test::Outcome;

// Greedy with n-gram drafts gives the tokens greedy without gives, and drafts were verified.
void expect_same_greedy(const std::string& program, std::span<const int32_t> prompt, int n, bool expect_accepted) {
  const Outcome plain = test::generate_fresh(program, prompt, greedy(n, DraftKind::kNone));
  const Outcome spec = test::generate_fresh(program, prompt, greedy(n, DraftKind::kNgram));
  EXPECT_EQ(spec.out.tokens, plain.out.tokens);
  EXPECT_EQ(spec.out.stop, plain.out.stop);
  EXPECT_GT(spec.stats.verify_steps, 0);
  if (expect_accepted) {
    EXPECT_GT(spec.stats.draft_accepted, 0);
  }
  EXPECT_EQ(plain.stats.verify_steps, 0);
}

// A prompt whose second half repeats its first: prompt lookup has drafts from the first step on.
std::vector<int32_t> repeating_prompt(int half, uint64_t seed) {
  auto p = test::random_tokens(half, 512, seed);
  std::vector<int32_t> twice = p;
  twice.insert(twice.end(), p.begin(), p.end());
  return twice;
}

TEST(Speculative, GreedyWithDraftsEqualsGreedyOnStories260K) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  const std::string dir = test::stories_dir();
  ASSERT_TRUE(test::fixture_exists(dir + "/config.json")) << test::missing(dir);
  ExportOptions opt;
  opt.context = 512;
  opt.step_sizes = std::vector<int64_t>{4, 8, 16};
  opt.progress = false;
  const std::string path = test::temp_dir() + "/stories_steps.hfs";
  ASSERT_TRUE(export_checkpoint(dir, path, opt));
  auto program = Program::load(path);
  ASSERT_TRUE(program.ok());
  auto tok = Tokenizer::from_program(**program);
  ASSERT_TRUE(tok.ok()) << tok.error().to_string();
  auto ids = (*tok)->encode("Once upon a time, there was a little girl named Lily.");
  ASSERT_TRUE(ids.ok());
  // A story opening, and the same opening twice: whether drafts are accepted after the first probe depends
  // on measured step times (a verification step costs several decode steps on this model, and the policy
  // pauses drafting), so only the tokens are compared.
  std::vector<int32_t> prompt = *ids;
  expect_same_greedy(path, prompt, 250, /*expect_accepted=*/false);
  std::vector<int32_t> twice = prompt;
  twice.insert(twice.end(), prompt.begin() + 1, prompt.end());
  expect_same_greedy(path, twice, 250, false);
  // The model's own greedy text up to where it repeats one sentence, which it goes on repeating: the first
  // probe's draft is accepted whatever the timings.
  auto looping = (*tok)->encode(
      "Lily and Ben went to the park. They saw a big box with a big box. They wanted to play with it. They wanted "
      "to play with the box. They wanted to play with the box.\n\"Look, Ben, I found a box. It is a big box.\" "
      "Lily said.\n\"OK, it is not a box. It is a box. It is a box. It is not a box. It is not a box. It is not a "
      "box. It is not a boy. It is not a boy.");
  ASSERT_TRUE(looping.ok());
  expect_same_greedy(path, *looping, 200, true);
}

TEST(Speculative, GreedyWithDraftsEqualsGreedyOnGlobalAndSlidingLayersToTheEndOfTheContext) {
  for (const std::string arch : {"llama", "mistral"}) {
    test::TinyModel m{arch, 4, 256};
    m.sliding_window = arch == "mistral" ? 8 : 0;  // 230 tokens run far past the window
    m.step_sizes = std::vector<int64_t>{2, 4, 8};
    const std::string prog = test::tiny_program(m);
    // Random weights rarely continue a pattern, but the repeated prompt gives drafts to verify; 256 − 20
    // tokens generated: the last steps' drafts are cut at the context, and both stop with kContextFull.
    const auto prompt = repeating_prompt(10, 3);
    expect_same_greedy(prog, prompt, 1000, /*expect_accepted=*/false);
    const Outcome spec = test::generate_fresh(prog, prompt, greedy(1000, DraftKind::kNgram));
    EXPECT_EQ(spec.out.stop, GenerationResult::Stop::kContextFull) << arch;
    EXPECT_EQ(static_cast<int64_t>(spec.out.tokens.size()), 256 - 20 + 1) << arch;
  }
}

TEST(Speculative, WithoutStepMethodsDraftsAreOffAndOutputUnchanged) {
  const std::string prog = test::tiny_program({"llama", 4, 64});  // no step methods, logits "last"
  const auto prompt = repeating_prompt(8, 4);
  const Outcome plain = test::generate_fresh(prog, prompt, greedy(40, DraftKind::kNone));
  const Outcome spec = test::generate_fresh(prog, prompt, greedy(40, DraftKind::kNgram));
  EXPECT_EQ(spec.out.tokens, plain.out.tokens);
  EXPECT_EQ(spec.stats.verify_steps, 0);
}

TEST(Speculative, StopTokensAndTheBudgetEndGenerationAsWithoutDrafts) {
  test::TinyModel m{"llama", 4, 128};
  m.step_sizes = std::vector<int64_t>{8};
  const std::string prog = test::tiny_program(m);
  const auto prompt = repeating_prompt(12, 5);
  const Outcome plain = test::generate_fresh(prog, prompt, greedy(60, DraftKind::kNone));
  ASSERT_GE(plain.out.tokens.size(), 20u);
  for (int n : {1, 2, 3, 17}) {  // budgets ending inside a verification step
    GenerationConfig g = greedy(n, DraftKind::kNgram);
    const Outcome spec = test::generate_fresh(prog, prompt, g);
    EXPECT_EQ(spec.out.tokens, std::vector<int32_t>(plain.out.tokens.begin(), plain.out.tokens.begin() + n)) << n;
  }
  // A stop token that greedy reaches at index 9: both stop there, the stop token included.
  GenerationConfig g = greedy(60, DraftKind::kNgram);
  g.stop_tokens = {plain.out.tokens[9]};
  const auto first = std::find(plain.out.tokens.begin(), plain.out.tokens.end(), plain.out.tokens[9]);
  const Outcome spec = test::generate_fresh(prog, prompt, g);
  EXPECT_EQ(spec.out.stop, GenerationResult::Stop::kStopToken);
  EXPECT_EQ(spec.out.tokens, std::vector<int32_t>(plain.out.tokens.begin(), first + 1));
}

// ---- the acceptance rule ---------------------------------------------------------------------------

// Pearson's chi-square of observed counts against probabilities p over n draws.
double chi_square(const std::vector<int>& counts, const std::vector<double>& p, int n) {
  double x = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double e = p[i] * n;
    if (e > 0) x += (counts[i] - e) * (counts[i] - e) / e;
    else if (counts[i] > 0) return 1e9;  // a token with probability 0 was produced
  }
  return x;
}

// The distribution plain sampling draws from, estimated from 400k draws of Sampler::sample (so the test
// checks verify() against sample() itself, including top-k/top-p/min-p cuts).
std::vector<double> sample_distribution(const SamplingConfig& c, const std::vector<float>& logits) {
  Sampler s(c, static_cast<int64_t>(logits.size()));
  std::vector<double> p(logits.size(), 0);
  const int n = 400000;
  for (int i = 0; i < n; ++i) p[static_cast<size_t>(s.sample(logits, {}))] += 1.0 / n;
  return p;
}

// A subtly wrong rule for contrast: accept the draft with p(draft), but on rejection draw from p itself
// (the draft not removed), which over-weights the draft.
int32_t wrong_verify(Sampler& s, const std::vector<float>& logits, int32_t draft, const std::vector<double>& p,
                     std::mt19937_64& rng) {
  hfs::test::Uniform<double> u(0, 1);
  if (u(rng) < p[static_cast<size_t>(draft)]) return draft;
  return s.sample(logits, {});
}

TEST(Speculative, AcceptanceRuleKeepsThePlainSamplingDistribution) {
  const std::vector<float> logits = {1.0f, 0.2f, 2.0f, -0.5f, 1.5f, 0.0f};
  // Draft proposals from a distribution unlike the model's, and a token some configs cut (id 3).
  const std::vector<double> q = {0.05, 0.1, 0.5, 0.05, 0.1, 0.2};
  std::vector<SamplingConfig> configs(4);
  configs[0].temperature = 1.0f;
  configs[1].temperature = 0.7f, configs[1].top_k = 3;
  configs[2].temperature = 1.3f, configs[2].top_p = 0.8f;
  configs[3].temperature = 1.0f, configs[3].min_p = 0.2f;
  for (size_t ci = 0; ci < configs.size(); ++ci) {
    SamplingConfig c = configs[ci];
    c.seed = 100 + ci;
    const std::vector<double> p = sample_distribution(c, logits);
    Sampler s(c, 6), wrong(c, 6);
    std::mt19937_64 rng(7 + ci);
    std::discrete_distribution<int32_t> draft(q.begin(), q.end());
    const int n = 60000;
    std::vector<int> right_counts(6, 0), wrong_counts(6, 0);
    for (int i = 0; i < n; ++i) {
      const int32_t d = draft(rng);
      const Sampler::Verdict v = s.verify(logits, {}, d);
      if (v.accepted) {
        EXPECT_EQ(v.token, d);
      }
      ++right_counts[static_cast<size_t>(v.token)];
      ++wrong_counts[static_cast<size_t>(wrong_verify(wrong, logits, d, p, rng))];
    }
    // 5 degrees of freedom (fewer where tokens are cut): 20.5 is the 0.999 quantile, so a correct rule
    // fails once in a thousand runs of a given seed — and the seeds are fixed.
    EXPECT_LT(chi_square(right_counts, p, n), 20.5) << "config " << ci;
    EXPECT_GT(chi_square(wrong_counts, p, n), 100.0) << "config " << ci << ": the wrong rule went unnoticed";
  }
}

TEST(Speculative, GreedyAcceptanceIsTheArgmax) {
  SamplingConfig c;  // temperature 0
  Sampler s(c, 4);
  const std::vector<float> l = {0.5f, 3.0f, 3.0f, -1.0f};  // tie: lowest id wins, as argmax
  EXPECT_TRUE(s.verify(l, {}, 1).accepted);
  const Sampler::Verdict v = s.verify(l, {}, 2);
  EXPECT_FALSE(v.accepted);
  EXPECT_EQ(v.token, 1);
}

// ---- prompt lookup ------------------------------------------------------------------------------

TEST(NgramDraft, ProposesWhatFollowedTheLatestEarlierOccurrence) {
  NgramDraft d(64);
  for (int32_t t : {5, 6, 7, 8, 9, 5, 6, 7, 1, 2, 5, 6}) d.push(t);
  int32_t out[8];
  // Last tokens "5 6": the latest earlier occurrence is at 5..6, followed by 7 1 2 5 6.
  ASSERT_EQ(d.propose(3, out), 3u);
  EXPECT_EQ(std::vector<int32_t>(out, out + 3), (std::vector<int32_t>{7, 1, 2}));
  // The longest match wins: "7 8" occurred once, but after pushing 7 the 3-gram "5 6 7" matches at index 7.
  d.push(7);
  ASSERT_EQ(d.propose(2, out), 2u);
  EXPECT_EQ(std::vector<int32_t>(out, out + 2), (std::vector<int32_t>{1, 2}));
  // A token never seen: nothing to propose.
  d.push(42);
  EXPECT_EQ(d.propose(4, out), 0u);
  // pop takes back a push made only to look up.
  d.pop();
  ASSERT_EQ(d.propose(1, out), 1u);
  EXPECT_EQ(out[0], 1);
}

}  // namespace
}  // namespace hfs
