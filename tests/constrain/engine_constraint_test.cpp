// GenerationConfig::constraint in the multi-sequence Engine: each sequence follows its own constraint while
// sharing steps with others (constrained by another grammar, or not at all), and its tokens are exactly
// what the Runner generates alone under the same constraint; drafts stay off for constrained sequences.
#include <gtest/gtest.h>

#include <map>
#include <regex>

#include "hfstatic/constraint.h"
#include "hfstatic/engine.h"
#include "hfstatic/llm_runner.h"
#include "hfstatic/tokenizer.h"
#include "support/hf_static_fixture.h"

namespace hfs {
namespace {

GenerationConfig config(std::shared_ptr<const Grammar> g, int n, uint64_t seed) {
  GenerationConfig c;
  c.max_new_tokens = n;
  c.constraint = std::move(g);
  c.sampling.temperature = 0.9f;
  c.sampling.seed = seed;
  // Asked for, and ignored under a constraint. (Sampled drafts give the same distribution, not the same draws,
  // so the unconstrained sequence, compared with a Runner that cannot draft, asks for none.)
  if (c.constraint) c.draft.kind = DraftKind::kNgram;
  return c;
}

TEST(EngineConstraint, EachSequenceFollowsItsOwnConstraintAsTheRunnerDoesAlone) {
  test::TinyModel m;
  m.tokenizer = true;  // stories260K's vocabulary on random weights: valid output never happens by chance
  m.context = 96;
  m.sequences = 3;
  m.step_sizes = std::vector<int64_t>{2, 4, 8};
  test::TinyModel solo = m;
  solo.sequences = 1;
  solo.step_sizes = std::nullopt;
  auto digits = Grammar::from_regex("[0-9]{3}-[a-z]{2,4}");
  auto record = Grammar::from_json_schema(R"({"type": "object", "properties": {"n": {"type": "integer"},
      "ok": {"type": "boolean"}}, "required": ["n", "ok"], "additionalProperties": false})");
  ASSERT_TRUE(digits && record);
  const std::vector<std::pair<std::shared_ptr<const Grammar>, uint64_t>> runs = {
      {*digits, 1}, {*record, 2}, {nullptr, 3}};
  auto e = Engine::load(test::tiny_program(m));
  ASSERT_TRUE(e) << e.error().to_string();
  const std::vector<int32_t> prompt = {1, 20, 30};
  std::vector<SequenceId> ids;
  for (const auto& [g, seed] : runs) {
    auto id = (*e)->add(prompt, config(g, 60, seed));
    ASSERT_TRUE(id) << id.error().to_string();
    ids.push_back(*id);
  }
  while (!(*e)->idle()) ASSERT_TRUE((*e)->step());
  EXPECT_EQ((*e)->stats().draft_tokens, 0);
  auto tok = Tokenizer::from_program(**Program::load(test::tiny_program(m)));
  ASSERT_TRUE(tok);
  for (size_t i = 0; i < runs.size(); ++i) {
    auto info = (*e)->sequence(ids[i]);
    ASSERT_TRUE(info);
    auto r = test::open_runner(test::tiny_program(solo));
    ASSERT_TRUE(r);
    auto want = (*r)->generate(prompt, config(runs[i].first, 60, runs[i].second));
    ASSERT_TRUE(want) << want.error().to_string();
    EXPECT_EQ(info->generated, want->tokens) << "sequence " << i;
    if (!runs[i].first) continue;
    EXPECT_EQ(info->stop, SequenceStop::kStopToken) << "sequence " << i;
    std::string text;
    for (int32_t t : info->generated)
      if (!(*tok)->is_special(t)) text += (*tok)->token_bytes(t).value_or("");
    GrammarMatcher check(runs[i].first);
    EXPECT_TRUE(check.feed(text) && check.complete()) << "sequence " << i << ": " << text;
    if (i == 0) {  // std::regex agrees
      EXPECT_TRUE(std::regex_match(text, std::regex("[0-9]{3}-[a-z]{2,4}"))) << text;
    }
  }
}

}  // namespace
}  // namespace hfs
