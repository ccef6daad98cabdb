// GenerationConfig::constraint in the multi-sequence Engine: each sequence follows its own constraint while
// sharing steps with others (constrained by another grammar, or not at all), and its tokens are exactly
// what the Runner generates alone under the same constraint; drafts under a constraint are checked against
// the grammar and change no token.
#include <gtest/gtest.h>

#include <map>
#include <regex>

#include "hfstatic/constraint.h"
#include "hfstatic/engine.h"
#include "hfstatic/llm_runner.h"
#include "hfstatic/tokenizer.h"
#include "support/hf_static_fixture.h"
#include "support/require_fixture.h"

namespace hfs {
namespace {

GenerationConfig config(std::shared_ptr<const Grammar> g, int n, uint64_t seed) {
  GenerationConfig c;
  c.max_new_tokens = n;
  c.constraint = std::move(g);
  c.sampling.temperature = 0.9f;
  c.sampling.seed = seed;
  return c;
}

// Three sequences with multi-row steps, over stories260K's vocabulary on random weights: valid output never
// happens by chance.
test::TinyModel engine_model(int context) {
  test::TinyModel m;
  m.tokenizer = true;
  m.context = context;
  m.sequences = 3;
  m.step_sizes = std::vector<int64_t>{2, 4, 8};
  return m;
}

// The same model for the Runner alone: one sequence, no multi-row methods.
test::TinyModel solo_of(test::TinyModel m) {
  m.sequences = 1;
  m.step_sizes = std::nullopt;
  return m;
}

TEST(EngineConstraint, EachSequenceFollowsItsOwnConstraintAsTheRunnerDoesAlone) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  const test::TinyModel m = engine_model(96), solo = solo_of(m);
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

// Drafts under a constraint, greedy: a sequence drafting with a program (the target's own weights, so its
// drafts are the unconstrained greedy tokens, which the grammar often refuses) or by prompt lookup keeps
// the drafts the grammar allows in turn, verifies them against masked rows, and generates exactly the
// tokens of greedy decoding without drafts, beside a constrained sequence that does not draft.
TEST(EngineConstraint, DraftsAreCheckedAgainstTheGrammarAndChangeNoToken) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  const test::TinyModel m = engine_model(128);
  const std::string solo_path = test::tiny_program(solo_of(m));
  auto words = Grammar::from_regex("[a-z ]{10,60}\\.");
  auto record = Grammar::from_json_schema(R"({"type": "object", "properties": {"text": {"type": "string",
      "maxLength": 80}, "n": {"type": "integer"}}, "required": ["text", "n"], "additionalProperties": false})");
  ASSERT_TRUE(words && record);
  int64_t accepted = 0;
  for (const auto& g : {*words, *record}) {
    auto e = Engine::load(test::tiny_program(m));
    ASSERT_TRUE(e) << e.error().to_string();
    const std::vector<int32_t> prompt = {1, 20, 30};
    auto greedy = [&](DraftKind kind) {
      GenerationConfig c = config(g, 100, 0);
      c.sampling.temperature = 0;
      c.draft.kind = kind;
      if (kind == DraftKind::kProgram) c.draft.program_path = solo_path;
      c.draft.max_tokens = 6;
      return c;
    };
    std::vector<SequenceId> ids;
    for (DraftKind kind : {DraftKind::kProgram, DraftKind::kNgram, DraftKind::kNone}) {
      auto id = (*e)->add(prompt, greedy(kind));
      ASSERT_TRUE(id) << id.error().to_string();
      ids.push_back(*id);
    }
    while (!(*e)->idle()) ASSERT_TRUE((*e)->step());
    accepted += (*e)->stats().draft_accepted;
    auto r = test::open_runner(solo_path);
    ASSERT_TRUE(r);
    auto want = (*r)->generate(prompt, greedy(DraftKind::kNone));
    ASSERT_TRUE(want) << want.error().to_string();
    for (size_t i = 0; i < ids.size(); ++i) {
      auto info = (*e)->sequence(ids[i]);
      ASSERT_TRUE(info);
      EXPECT_TRUE(info->draft_error.empty()) << info->draft_error;
      EXPECT_EQ(info->generated, want->tokens) << "sequence " << i;
    }
  }
  EXPECT_GT(accepted, 0);  // the drafts were used, not all refused
}

}  // namespace
}  // namespace hfs
