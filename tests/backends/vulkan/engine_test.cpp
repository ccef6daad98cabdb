// The multi-sequence engine and speculative decoding on Vulkan are just methods on another backend, held
// to the properties the CPU tests hold them to (tests/llm/engine_test.cpp, tests/llm/speculative_test.cpp):
// several sequences sharing steps (contract version 2, step_<T> methods) each equal the same sequence run
// alone through the Runner on Vulkan, and produce cpu_ref's tokens; drafts verified in multi-row steps
// (prompt lookup, a draft program) give exactly the tokens greedy decoding gives without them.
#include <gtest/gtest.h>

#include <map>
#include <utility>

#include "hfstatic/engine.h"
#include "hfstatic/llm_runner.h"
#include "support/engine_trace.h"
#include "support/hf_static_fixture.h"
#include "test_support.h"

namespace hfs::vulkan {
namespace {

// Shared steps run multi-row methods (the tiled linear) where the solo run decodes one row (the GEMV):
// the two sum K in another order.
constexpr float kSoloTol = 1e-4f;

GenerationConfig greedy(int max_new) {
  GenerationConfig g;
  g.max_new_tokens = max_new;
  g.ignore_eos = true;
  return g;
}

EngineOptions on(const std::string& backend) {
  EngineOptions o;
  o.io.method.backends.backends = {backend};
  return o;
}

std::map<SequenceId, std::vector<int32_t>> run_engine(const std::string& path, const std::string& backend, bool draft) {
  auto e = Engine::load(path, on(backend));
  EXPECT_TRUE(e.ok()) << e.error().to_string();
  std::map<SequenceId, std::vector<int32_t>> out;
  if (!e.ok()) return out;
  GenerationConfig g = greedy(8);
  if (draft) g.draft.kind = DraftKind::kNgram;
  for (uint64_t seed : {21u, 22u, 23u}) {
    auto id = (*e)->add(hfs::test::random_tokens(5 + static_cast<int>(seed % 3), 512, seed), g);
    EXPECT_TRUE(id.ok()) << id.error().to_string();
  }
  while (!(*e)->idle()) {
    auto events = (*e)->step();
    EXPECT_TRUE(events.ok()) << events.error().to_string();
    if (!events.ok()) break;
    for (const StepEvent& ev : *events) out[ev.sequence].push_back(ev.token);
  }
  return out;
}

TEST(VulkanEngine, SharedStepsGiveCpuRefsTokens) {
  hfs::test::TinyModel m;
  m.sequences = 3;
  m.context = 32;
  const std::string path = hfs::test::tiny_program(m);
  auto vk = run_engine(path, "vulkan", false);
  auto ref = run_engine(path, "cpu_ref", false);
  ASSERT_EQ(vk.size(), 3u);
  EXPECT_EQ(vk, ref);
  EXPECT_EQ(run_engine(path, "vulkan", true), ref);  // drafts verified in multi-row steps: same tokens
}

// Sequences of different lengths arriving at different steps (one with a one-token prompt, one running
// into the end of the context, one added while others decode), on global layers, on sliding-window layers
// (the ring caches wrap), and on sliding-window layers with f16 caches: each sequence's logits at every
// sampled position equal its solo run's.
TEST(VulkanEngine, StaggeredSequencesEqualTheirSoloRuns) {
  const std::pair<std::string, std::string> cases[] = {{"llama", "f32"}, {"mistral", "f32"}, {"mistral", "f16"}};
  for (const auto& [arch, cache] : cases) {
    SCOPED_TRACE(arch + " " + cache + " cache");
    hfs::test::TinyModel m{arch, 4, 32};
    m.sliding_window = arch == "mistral" ? 6 : 0;
    m.cache_dtype = cache;
    m.sequences = 3;
    m.step_sizes = std::vector<int64_t>{2, 4, 8};
    const std::string prog = hfs::test::tiny_program(m), solo = hfs::test::tiny_program(hfs::test::solo_of(m));
    auto e = Engine::load(prog, on("vulkan"));
    ASSERT_TRUE(e.ok()) << e.error().to_string();
    std::map<SequenceId, hfs::test::Trace> traces;
    SequenceId last = -1;
    auto add = [&](int len, int max_new, uint64_t seed) {
      auto p = hfs::test::random_tokens(len, 512, seed);
      auto id = (*e)->add(p, greedy(max_new));
      ASSERT_TRUE(id.ok()) << id.error().to_string();
      traces[*id].fed = p;
      last = *id;
    };
    add(1, 6, 1);
    add(7, m.context, 2);  // runs until the context is full
    const SequenceId to_the_end = last;
    for (int i = 0; i < 3; ++i) hfs::test::step_and_record(**e, traces);
    add(12, 5, 3);
    hfs::test::run_to_idle(**e, traces);
    hfs::test::expect_matches_solo(solo, traces, kSoloTol, "vulkan");
    auto full = (*e)->sequence(to_the_end);
    ASSERT_TRUE(full.ok());
    EXPECT_EQ(full->stop, SequenceStop::kContextFull);
  }
}

// One generate() on a fresh Runner over `program` on `backend`.
hfs::test::Outcome generate_on(const std::string& backend, const std::string& program, std::span<const int32_t> prompt,
                               const GenerationConfig& g) {
  auto r = test::runner_on(program, backend);
  if (!r) return {};
  auto out = r->generate(prompt, g);
  EXPECT_TRUE(out.ok()) << out.error().to_string();
  if (!out) return {};
  return {*out, r->stats()};
}

// Greedy with drafts verified on Vulkan gives the tokens greedy without them gives, on Vulkan and on
// cpu_ref, to the end of the context (sliding layers far past the window): prompt-lookup drafts from a
// prompt that repeats itself, and a draft program with the target's own weights (nearly every draft
// accepted, so the accepted path is exercised whatever the random weights continue).
TEST(VulkanSpeculative, GreedyWithDraftsEqualsGreedy) {
  for (const std::string arch : {"llama", "mistral"}) {
    hfs::test::TinyModel m{arch, 4, 64};
    m.sliding_window = arch == "mistral" ? 8 : 0;
    m.step_sizes = std::vector<int64_t>{2, 4, 8};
    const std::string prog = hfs::test::tiny_program(m);
    auto half = hfs::test::random_tokens(8, 512, 3);
    std::vector<int32_t> prompt = half;
    prompt.insert(prompt.end(), half.begin(), half.end());
    const auto plain_ref = generate_on("cpu_ref", prog, prompt, greedy(1000));
    const auto plain = generate_on("vulkan", prog, prompt, greedy(1000));
    ASSERT_EQ(plain_ref.out.stop, GenerationResult::Stop::kContextFull) << arch;
    EXPECT_EQ(plain.out.tokens, plain_ref.out.tokens) << arch;

    GenerationConfig ngram = greedy(1000);
    ngram.draft.kind = DraftKind::kNgram;
    ngram.draft.max_tokens = 7;
    const auto lookup = generate_on("vulkan", prog, prompt, ngram);
    EXPECT_EQ(lookup.out.tokens, plain_ref.out.tokens) << arch;
    EXPECT_GT(lookup.stats.verify_steps, 0) << arch;

    GenerationConfig self = greedy(1000);
    self.draft.kind = DraftKind::kProgram;
    self.draft.program_path = prog;
    self.draft.max_tokens = 6;
    const auto drafted = generate_on("vulkan", prog, prompt, self);
    EXPECT_EQ(drafted.out.tokens, plain_ref.out.tokens) << arch;
    EXPECT_GT(drafted.stats.draft_accepted, 0) << arch << ": of " << drafted.stats.draft_tokens;
  }
}

}  // namespace
}  // namespace hfs::vulkan
