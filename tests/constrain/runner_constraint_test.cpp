// GenerationConfig::constraint in the Runner: greedy picks the argmax among the allowed tokens, outputs
// match with n-gram drafts on (each draft checked, each row masked), greedy with drafts equals greedy without,
// and a Runner without a program's tokenizer needs constraint_vocab.
#include <gtest/gtest.h>

#include <regex>

#include "hfstatic/constraint.h"
#include "hfstatic/ext/io_contract.h"
#include "hfstatic/llm_runner.h"
#include "hfstatic/tokenizer.h"
#include "support/hf_static_fixture.h"
#include "support/require_fixture.h"

namespace hfs {
namespace {

test::TinyModel model() {
  test::TinyModel m;
  m.tokenizer = true;  // stories260K's 512-piece vocabulary on random weights
  m.context = 64;
  m.logits = "all";    // verification rows, so n-gram drafts would run without the constraint
  return m;
}

std::string text_of(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids)
    if (!tok.is_special(id)) s += tok.token_bytes(id).value_or("");
  return s;
}

TEST(RunnerConstraint, GreedyIsTheArgmaxOfTheAllowedTokens) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  const std::string path = test::tiny_program(model());
  auto prog = Program::load(path);
  ASSERT_TRUE(prog);
  auto tok = Tokenizer::from_program(**prog);
  ASSERT_TRUE(tok);
  auto grammar = Grammar::from_regex("[0-9]{2}x");
  ASSERT_TRUE(grammar);
  auto vocab = token_vocabulary(**tok, (*tok)->eos_ids());
  ASSERT_TRUE(vocab);
  auto ref = test::open_runner(path);
  ASSERT_TRUE(ref);
  auto gen = test::open_runner(path);
  ASSERT_TRUE(gen);
  const std::vector<int32_t> prompt = {1, 20, 30};
  // Reference: the unconstrained logits after the prompt, the mask from a separate TokenConstraint.
  ASSERT_TRUE((*ref)->prefill(prompt));
  std::vector<float> logits((*ref)->logits().begin(), (*ref)->logits().end());
  TokenConstraint c(*grammar, *vocab);
  std::vector<uint8_t> mask(static_cast<size_t>((*vocab)->size()));
  ASSERT_GT(c.compute_mask(mask), 0u);
  int32_t best = -1;
  for (size_t i = 0; i < mask.size(); ++i)
    if (mask[i] && (best < 0 || logits[i] > logits[static_cast<size_t>(best)])) best = static_cast<int32_t>(i);
  EXPECT_NE(best, argmax(logits)) << "the random model's own argmax is allowed: the test would not see the mask";
  GenerationConfig g;
  g.max_new_tokens = 1;
  g.constraint = *grammar;
  auto out = (*gen)->generate(prompt, g);
  ASSERT_TRUE(out) << out.error().to_string();
  ASSERT_EQ(out->tokens.size(), 1u);
  EXPECT_EQ(out->tokens[0], best);
}

TEST(RunnerConstraint, SampledOutputsWithDraftsMatch) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  const std::string path = test::tiny_program(model());
  auto prog = Program::load(path);
  ASSERT_TRUE(prog);
  auto tok = Tokenizer::from_program(**prog);
  ASSERT_TRUE(tok);
  auto runner = test::open_runner(path);
  ASSERT_TRUE(runner);
  const char* pattern = "(ab|[c-e]{1,3})+-[0-9]";
  auto grammar = Grammar::from_regex(pattern);
  ASSERT_TRUE(grammar);
  // The same language without the nested repetition: std::regex backtracks exponentially on
  // "(…{1,3})+" over runs of c-e (97 % of this test's time was the check, not the generation).
  const std::regex whole("(ab|[c-e])+-[0-9]"), prefix("(ab|[c-e])+-|(ab|[c-e])*a?");
  int64_t verify_steps = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    (*runner)->reset();
    GenerationConfig g;
    g.max_new_tokens = 40;
    g.sampling.temperature = 1.0f;
    g.sampling.seed = seed;
    g.draft.kind = DraftKind::kNgram;
    g.constraint = *grammar;
    auto out = (*runner)->generate(std::vector<int32_t>{1, 5, 6}, g);
    ASSERT_TRUE(out) << out.error().to_string();
    const std::string text = text_of(**tok, out->tokens);
    if (out->stop == GenerationResult::Stop::kStopToken) {
      EXPECT_TRUE(std::regex_match(text, whole)) << text;
    } else {  // cut by the token limit: a match or a prefix of one (maybe waiting for the digit after '-')
      EXPECT_TRUE(std::regex_match(text, whole) || std::regex_match(text, prefix)) << text;
    }
    verify_steps += (*runner)->stats().verify_steps;
  }
  // Drafts ran (prompt lookup finds the repeats a small alphabet makes), checked against the constraint.
  EXPECT_GT(verify_steps, 0);
}

// Greedy with drafts under a constraint is token for token greedy without them: each verification row is
// masked by the matcher after the tokens before it, drafts the grammar refuses are cut before the step.
TEST(RunnerConstraint, GreedyWithDraftsEqualsGreedyWithoutThem) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  const std::string path = test::tiny_program(model());
  int64_t verify_steps = 0;
  for (const char* pattern : {"(ab|[c-e]{1,3})+-[0-9]", "[a-c]{40,60}", "(x[0-9]y)*z"}) {
    auto grammar = Grammar::from_regex(pattern);
    ASSERT_TRUE(grammar);
    GenerationConfig g;
    g.max_new_tokens = 50;
    g.constraint = *grammar;
    auto plain = test::open_runner(path);
    auto spec = test::open_runner(path);
    ASSERT_TRUE(plain && spec);
    auto want = (*plain)->generate(std::vector<int32_t>{1, 5, 6}, g);
    g.draft.kind = DraftKind::kNgram;
    g.draft.max_tokens = 4;
    auto got = (*spec)->generate(std::vector<int32_t>{1, 5, 6}, g);
    ASSERT_TRUE(want && got);
    EXPECT_EQ(got->tokens, want->tokens) << pattern;
    EXPECT_EQ(got->stop, want->stop) << pattern;
    verify_steps += (*spec)->stats().verify_steps;
  }
  EXPECT_GT(verify_steps, 0);
}

TEST(RunnerConstraint, RunnerWithoutProgramNeedsAVocabulary) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  const std::string path = test::tiny_program(model());
  auto prog = Program::load(path);
  ASSERT_TRUE(prog);
  auto io = create_io_manager(*prog);
  ASSERT_TRUE(io);
  auto runner = Runner::create(std::move(*io));
  ASSERT_TRUE(runner);
  GenerationConfig g;
  g.max_new_tokens = 4;
  g.constraint = Grammar::json_object();
  auto out = (*runner)->generate(std::vector<int32_t>{1}, g);
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(out.error().message().find("needs constraint_vocab"), std::string::npos) << out.error().message();
  EXPECT_EQ((*runner)->position(), 0);  // nothing ran
  auto tok = Tokenizer::from_program(**prog);
  ASSERT_TRUE(tok);
  auto vocab = token_vocabulary(**tok, (*tok)->eos_ids());
  ASSERT_TRUE(vocab);
  g.constraint_vocab = *vocab;
  out = (*runner)->generate(std::vector<int32_t>{1}, g);
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(text_of(**tok, out->tokens).substr(0, 1), "{");
}

}  // namespace
}  // namespace hfs
