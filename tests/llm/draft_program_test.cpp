// Speculative decoding with a draft program (DraftKind::kProgram): greedy output is token-identical to
// greedy without drafts (a real model drafting for itself, accepting nearly everything; a random-weight
// target with a different random-weight draft, accepting little); the draft's proposals are its own greedy
// continuation of the committed tokens after every rollback (checked against a fresh run of the draft
// program alone); a draft with a different vocabulary is refused at load naming the first difference; a
// draft with a shorter context stops drafting at its capacity, the output unchanged (the engine's draft
// programs: engine_test.cpp). The acceptance rule is
// the draft-source-agnostic one tested in speculative_test.cpp (any deterministic draft, drawn from any q).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "hfstatic/ext/backend.h"
#include "hfstatic/export.h"
#include "hfstatic/llm_runner.h"
#include "hfstatic/program.h"
#include "hfstatic/tokenizer.h"
#include "llm/program_draft.h"
#include "support/fixtures.h"
#include "support/hf_static_fixture.h"
#include "support/require_fixture.h"

namespace hfs {
namespace {

GenerationConfig greedy(int n) {
  GenerationConfig g;
  g.max_new_tokens = n;
  g.ignore_eos = true;
  return g;
}

GenerationConfig with_program(int n, const std::string& draft) {
  GenerationConfig g = greedy(n);
  g.draft.kind = DraftKind::kProgram;
  g.draft.program_path = draft;
  g.draft.max_tokens = 6;
  return g;
}

using test::Outcome;

// stories260K exported with step methods (the target verifies drafts) at the given context.
std::string stories_program(int context, const std::string& name) {
  static std::map<std::string, std::string> cache;
  const std::string key = name + std::to_string(context);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  ExportOptions opt;
  opt.context = context;
  opt.step_sizes = std::vector<int64_t>{4, 8};
  opt.progress = false;
  const std::string path = test::temp_dir() + "/" + key + ".hfs";
  const Status st = export_checkpoint(test::stories_dir(), path, opt);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  cache[key] = path;
  return path;
}

std::vector<int32_t> encode(const std::string& program, const std::string& text) {
  auto p = Program::load(program);
  EXPECT_TRUE(p.ok());
  auto tok = Tokenizer::from_program(**p);
  EXPECT_TRUE(tok.ok());
  auto ids = (*tok)->encode(text);
  EXPECT_TRUE(ids.ok());
  return *ids;
}

double acceptance(const RunnerStats& s) {
  return s.draft_tokens > 0 ? static_cast<double>(s.draft_accepted) / static_cast<double>(s.draft_tokens) : 0;
}

TEST(DraftProgram, ItselfAsDraftIsTokenIdenticalAndAcceptsNearlyEverything) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  HFS_REQUIRE_FIXTURE(test::stories_dir() + "/config.json");
  const std::string target = stories_program(512, "stories");
  const auto prompt = encode(target, "Once upon a time, there was a little girl named Lily.");
  const Outcome plain = test::generate_fresh(target, prompt, greedy(250));
  const Outcome spec = test::generate_fresh(target, prompt, with_program(250, target));
  ASSERT_EQ(plain.out.tokens.size(), 250u);
  EXPECT_EQ(spec.out.tokens, plain.out.tokens);
  EXPECT_GT(spec.stats.verify_steps, 0);
  EXPECT_GT(spec.stats.draft_tokens, 0);
  // The same weights draft what the target then picks: every draft is accepted but where a multi-row
  // step's rounding flips a near tie.
  EXPECT_GE(acceptance(spec.stats), 0.9) << spec.stats.draft_accepted << "/" << spec.stats.draft_tokens;
  EXPECT_GT(spec.stats.draft_program_steps, 0);
}

// Naming the reference backend (which takes no settings) runs the draft program too: the draft's runner
// gives its thread count only to backends that take one.
TEST(DraftProgram, LoadsAndDraftsWithTheReferenceBackendNamed) {
  HFS_REQUIRE_FIXTURE(test::stories_dir() + "/config.json");
  const std::string target = stories_program(512, "stories");
  const auto prompt = encode(target, "Once upon a time, there was a little girl named Lily.");
  const Outcome plain = test::generate_fresh(target, prompt, greedy(40));
  for (const std::vector<std::string>& named : {std::vector<std::string>{std::string(kReferenceBackend)},
                                               std::vector<std::string>{"cpu_fast", std::string(kReferenceBackend)}}) {
    RunnerOptions o;
    o.io.method.backends.backends = named;
    auto r = Runner::load(target, o);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    auto out = (*r)->generate(prompt, with_program(40, target));
    ASSERT_TRUE(out.ok()) << out.error().to_string();
    EXPECT_EQ(out->tokens, plain.out.tokens) << named.front();
    EXPECT_GT((*r)->stats().draft_program_steps, 0);
  }
}

// Sampling: the draft program's greedy drafts go through the same acceptance rule as prompt lookup's (its
// distribution is checked in speculative_test.cpp for drafts drawn from any q); here the whole path runs:
// drafts are verified and accepted under sampling, and the run ends where plain sampling's would (the budget).
TEST(DraftProgram, SamplingWithADraftProgramVerifiesDrafts) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  HFS_REQUIRE_FIXTURE(test::stories_dir() + "/config.json");
  const std::string target = stories_program(512, "stories");
  const auto prompt = encode(target, "Once upon a time, there was a little girl named Lily.");
  GenerationConfig g = with_program(200, target);
  g.sampling.temperature = 0.7f;
  g.sampling.top_k = 40;
  g.sampling.seed = 3;
  const Outcome spec = test::generate_fresh(target, prompt, g);
  EXPECT_EQ(spec.out.tokens.size(), 200u);
  EXPECT_GT(spec.stats.verify_steps, 0);
  EXPECT_GT(spec.stats.draft_accepted, 0);  // a draft from the same weights is the likeliest token
}

TEST(DraftProgram, DifferentRandomDraftIsTokenIdenticalAndRejected) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  HFS_REQUIRE_FIXTURE(test::stories_dir() + "/config.json");
  test::TinyModel t{"llama", 4, 256};
  t.step_sizes = std::vector<int64_t>{2, 4, 8};
  t.tokenizer = true;
  test::TinyModel d{"llama", 4, 256};
  d.layers = 1;  // a different random model over the same tokenizer: another seed, so that not even the
  d.seed = 11;   // embeddings and the first layer are the target's
  d.tokenizer = true;
  const std::string target = test::tiny_program(t), draft = test::tiny_program(d);
  const auto prompt = test::random_tokens(12, 512, 5);
  const Outcome plain = test::generate_fresh(target, prompt, greedy(220));
  const Outcome spec = test::generate_fresh(target, prompt, with_program(220, draft));
  ASSERT_EQ(plain.out.tokens.size(), 220u);
  EXPECT_EQ(spec.out.tokens, plain.out.tokens);
  EXPECT_GT(spec.stats.draft_tokens, 0);
  // Drafts of other weights are rejected. How many depends on when the policy drafts (it times the steps),
  // and this target's greedy text ends in a one-token loop that both models continue: no rate is asserted.
  EXPECT_LT(spec.stats.draft_accepted, spec.stats.draft_tokens);
}

// The draft program's greedy continuation of `tokens`, run alone from scratch: the reference for what
// ProgramDraft proposes.
std::vector<int32_t> greedy_continuation(const std::string& program, std::vector<int32_t> tokens, int n) {
  auto r = Runner::load(program);
  EXPECT_TRUE(r.ok());
  auto out = (*r)->generate(tokens, greedy(n));
  EXPECT_TRUE(out.ok());
  return out->tokens;
}

// A one-layer random llama with the fixture's tokenizer at `context`, as a draft source for itself.
struct OneLayerDraft {
  std::string path;
  std::unique_ptr<ProgramDraft> source;
};
OneLayerDraft one_layer_draft(int context) {
  test::TinyModel d{"llama", 4, context};
  d.layers = 1;
  d.tokenizer = true;
  OneLayerDraft out{test::tiny_program(d), nullptr};
  auto prog = Program::load(out.path);
  EXPECT_TRUE(prog.ok());
  if (!prog.ok()) return out;
  auto pd = ProgramDraft::create(*prog, prog->get(), 512, out.path);
  EXPECT_TRUE(pd.ok()) << pd.error().to_string();
  if (pd.ok()) out.source = std::move(*pd);
  return out;
}

TEST(DraftProgram, ProposalsAreTheDraftsGreedyContinuationAfterEveryRollback) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  auto [path, pd] = one_layer_draft(64);
  ASSERT_TRUE(pd);
  ProgramDraft& src = *pd;
  std::vector<int32_t> committed = test::random_tokens(9, 512, 11);
  src.commit(committed);
  ASSERT_TRUE(src.catch_up().ok());
  int32_t pending = 77;
  int32_t out[4];
  // Rounds accepting 0, 2, all 4 and 1 of the drafts, with a different next pending token each time (a
  // rejected draft's replacement) or the bonus token: each proposal must be what the draft alone makes.
  for (const int accept : {0, 2, 4, 1, 3}) {
    std::vector<int32_t> context = committed;
    context.push_back(pending);
    auto n = src.propose(pending, 4, out);
    ASSERT_TRUE(n.ok()) << n.error().to_string();
    ASSERT_EQ(*n, 4u);
    EXPECT_EQ(std::vector<int32_t>(out, out + 4), greedy_continuation(path, context, 4)) << "accepting " << accept;
    committed.push_back(pending);
    for (int i = 0; i < accept; ++i) committed.push_back(out[i]);
    src.commit(std::span<const int32_t>(committed).last(static_cast<size_t>(1 + accept)));
    pending = accept < 4 ? (out[accept] + 1) % 512 : 123;  // never the rejected draft itself
  }
  // A new prompt sharing only a prefix: the source is brought to it (rollback, then the rest).
  std::vector<int32_t> other(committed.begin(), committed.begin() + 5);
  other.push_back(300);
  sync_source(src, other);
  auto n = src.propose(9, 3, out);
  ASSERT_TRUE(n.ok());
  other.push_back(9);
  EXPECT_EQ(std::vector<int32_t>(out, out + *n), greedy_continuation(path, other, 3));
}

TEST(DraftProgram, ProposesNothingPastItsContext) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  auto draft = one_layer_draft(32);
  ASSERT_TRUE(draft.source);
  ProgramDraft& src = *draft.source;
  src.commit(test::random_tokens(29, 512, 12));
  int32_t out[8];
  // 29 committed + the pending token + 2 fed drafts fill the 32 positions: the third draft is read from
  // the logits after the second, so 3 drafts fit.
  auto n = src.propose(5, 8, out);
  ASSERT_TRUE(n.ok()) << n.error().to_string();
  EXPECT_EQ(*n, 3u);
  src.commit(std::vector<int32_t>{5, out[0], out[1]});  // 32 committed: nothing more fits
  n = src.propose(6, 8, out);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u);
}

TEST(DraftProgram, ShorterContextDraftStopsDraftingAtItsCapacityOutputUnchanged) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  HFS_REQUIRE_FIXTURE(test::stories_dir() + "/config.json");
  const std::string target = stories_program(512, "stories"), draft = stories_program(64, "stories_short");
  const auto prompt = encode(target, "Once upon a time, there was a little girl named Lily.");
  ASSERT_LT(prompt.size(), 64u);
  const Outcome plain = test::generate_fresh(target, prompt, greedy(240));
  const Outcome spec = test::generate_fresh(target, prompt, with_program(240, draft));
  EXPECT_EQ(spec.out.tokens, plain.out.tokens);
  EXPECT_EQ(spec.out.stop, plain.out.stop);
  // Drafts while the 64 positions hold the text, none after: fewer than 64 − prompt tokens were drafted
  // ahead of a committed position below 64.
  EXPECT_GT(spec.stats.draft_tokens, 0);
  EXPECT_LE(spec.stats.draft_accepted + spec.stats.verify_steps, 64);
  // A prompt longer than the draft's context: no drafts at all, no error.
  std::vector<int32_t> long_prompt;
  while (long_prompt.size() < 80) long_prompt.insert(long_prompt.end(), prompt.begin(), prompt.end());
  const Outcome plain_long = test::generate_fresh(target, long_prompt, greedy(60));
  const Outcome spec_long = test::generate_fresh(target, long_prompt, with_program(60, draft));
  EXPECT_EQ(spec_long.out.tokens, plain_long.out.tokens);
  EXPECT_EQ(spec_long.stats.draft_tokens, 0);
}

// A copy of the stories260K checkpoint with its tokenizer.json edited by `edit`, exported.
template <typename Edit>
std::string edited_vocab_program(const std::string& name, const Edit& edit) {
  namespace fs = std::filesystem;
  const std::string dir = test::temp_dir() + "/" + name;
  fs::create_directories(dir);
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors", "tokenizer_config.json",
                        "special_tokens_map.json"})
    fs::copy_file(test::stories_dir() + "/" + f, dir + "/" + f, fs::copy_options::overwrite_existing);
  nlohmann::json tj = nlohmann::json::parse(std::ifstream(test::stories_dir() + "/tokenizer.json"));
  edit(tj["model"]["vocab"]);
  std::ofstream(dir + "/tokenizer.json") << tj.dump();
  ExportOptions opt;
  opt.context = 128;
  opt.progress = false;
  const std::string path = dir + "/model.hfs";
  const Status st = export_checkpoint(dir, path, opt);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  return path;
}

std::string piece_of(const nlohmann::json& vocab, int32_t id) {
  for (const auto& [piece, i] : vocab.items())
    if (i == id) return piece;
  return "";
}

// Two pieces' ids swapped: the same size, different strings.
std::string swapped_vocab_program(int32_t a, int32_t b, std::string* piece_a, std::string* piece_b) {
  return edited_vocab_program("swapped_vocab", [&](nlohmann::json& vocab) {
    *piece_a = piece_of(vocab, a);
    *piece_b = piece_of(vocab, b);
    vocab[*piece_a] = b;
    vocab[*piece_b] = a;
  });
}

TEST(DraftProgram, DifferentVocabularyIsRefusedAtLoadNamingTheFirstDifference) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  HFS_REQUIRE_FIXTURE(test::stories_dir() + "/config.json");
  const std::string target = stories_program(512, "stories");
  std::string piece_a, piece_b;
  const std::string draft = swapped_vocab_program(300, 301, &piece_a, &piece_b);
  ASSERT_FALSE(piece_a.empty());
  ASSERT_FALSE(piece_b.empty());
  auto r = Runner::load(target);
  ASSERT_TRUE(r.ok());
  const std::vector<int32_t> prompt = {1, 400, 401};
  auto out = (*r)->generate(prompt, with_program(10, draft));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code(), ErrorCode::kInvalidArgument);
  const std::string msg = out.error().message();
  EXPECT_NE(msg.find("draft program " + draft), std::string::npos) << msg;
  EXPECT_NE(msg.find("at id 300: target \"" + piece_a + "\", draft \"" + piece_b + "\""), std::string::npos) << msg;
  // Nothing ran: the runner still generates as before.
  EXPECT_EQ((*r)->position(), 0);
  auto plain = (*r)->generate(prompt, greedy(5));
  EXPECT_TRUE(plain.ok());
  // A draft without an embedded tokenizer next to a target with one cannot be checked: refused too.
  const std::string bare = test::tiny_program({"llama", 4, 64});
  auto out2 = (*r)->generate(prompt, with_program(10, bare));
  ASSERT_FALSE(out2.ok());
  EXPECT_NE(out2.error().message().find("the target embeds a tokenizer and the draft does not"), std::string::npos)
      << out2.error().message();
}

TEST(DraftProgram, SmallerVocabularyIsRefusedNamingTheFirstMissingIdAndBothSizes) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  HFS_REQUIRE_FIXTURE(test::stories_dir() + "/config.json");
  const std::string target = stories_program(512, "stories");
  std::string last;  // the piece of id 511 (no merge makes it: dropping it leaves a valid tokenizer of 511)
  const std::string draft = edited_vocab_program("smaller_vocab", [&](nlohmann::json& vocab) {
    last = piece_of(vocab, 511);
    vocab.erase(last);
  });
  ASSERT_FALSE(last.empty());
  auto r = Runner::load(target);
  ASSERT_TRUE(r.ok());
  const std::vector<int32_t> prompt = {1, 400};
  auto out = (*r)->generate(prompt, with_program(4, draft));
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("at id 511: target \"" + last +
                                       "\", draft (no token) (vocabulary sizes: target 512, draft 511)"),
            std::string::npos)
      << out.error().message();
}

TEST(DraftProgram, MissingDraftFileNamesThePath) {
  const std::string target = test::tiny_program({"llama", 4, 64});
  auto r = Runner::load(target);
  ASSERT_TRUE(r.ok());
  const std::vector<int32_t> prompt = {1, 5};
  auto out = (*r)->generate(prompt, with_program(4, "/nonexistent/draft.hfs"));
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("draft program /nonexistent/draft.hfs"), std::string::npos)
      << out.error().message();
}

// Runner::truncate, which rolls a draft program back: the positions past `length` are forgotten (the next
// token's logits are those of a runner that never saw them); past position() → an error, nothing changes.
TEST(RunnerTruncate, ForgetsPositionsAsIfNeverFed) {
  const std::string path = test::tiny_program({"llama", 4, 64});
  const auto tokens = test::random_tokens(10, 512, 21);
  auto a = Runner::load(path);
  auto b = Runner::load(path);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*a)->prefill(tokens).ok());
  auto bad = (*a)->truncate(11);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.error().message().find("Runner::truncate(11): the runner holds 10 positions"), std::string::npos)
      << bad.error().message();
  EXPECT_EQ((*a)->position(), 10);
  ASSERT_TRUE((*a)->truncate(6).ok());
  EXPECT_EQ((*a)->position(), 6);
  ASSERT_TRUE((*b)->prefill(std::span<const int32_t>(tokens).first(6)).ok());
  auto la = (*a)->decode_step(99);
  auto lb = (*b)->decode_step(99);
  ASSERT_TRUE(la.ok() && lb.ok());
  ASSERT_EQ(la->size(), lb->size());
  for (size_t i = 0; i < la->size(); ++i) ASSERT_NEAR((*la)[i], (*lb)[i], 1e-4f) << i;
}

}  // namespace
}  // namespace hfs
