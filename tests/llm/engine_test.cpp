// The multi-sequence engine and the version-2 contract on exported programs: every sequence, whatever
// shares its steps, equals the same sequence run alone through the single-sequence Runner on a version-1
// program of the same weights (itself checked against PyTorch in tests/export/test_parity.py).
#include "hfstatic/engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "hfstatic/ext/metadata_keys.h"
#include "support/engine_trace.h"
#include "support/hf_static_fixture.h"
#include "support/random_schedule.h"
#include "support/require_fixture.h"

namespace hfs {
namespace {

using test::TinyModel;

// Against a version-1 program: another program (another sliding ring length, its own kernel choices at
// load), so only close; against the same program a sequence is bit-identical (determinism_test.cpp).
constexpr float kTol = 1e-5f;

using test::max_abs_diff;
using test::run_to_idle;
using test::solo_logits;
using test::solo_of;
using test::step_and_record;
using test::Trace;

void expect_matches_solo(const std::string& solo_program, const std::map<SequenceId, Trace>& traces) {
  test::expect_matches_solo(solo_program, traces, kTol);
}

GenerationConfig greedy(int max_new) {
  GenerationConfig g;
  g.max_new_tokens = max_new;
  g.ignore_eos = true;
  return g;
}

// Sequences of different lengths arriving at different steps: one with a one-token prompt, one that runs
// into the context, one added while others decode; each equals its solo run.
void staggered_arrivals(const TinyModel& m) {
  const std::string prog = test::tiny_program(m), solo = test::tiny_program(solo_of(m));
  auto e = Engine::load(prog);
  ASSERT_TRUE(e.ok()) << e.error().to_string();
  const int N = m.context;
  std::map<SequenceId, Trace> traces;
  auto add = [&](int len, int max_new, uint64_t seed) {
    auto p = test::random_tokens(len, 512, seed);
    auto id = (*e)->add(p, greedy(max_new));
    ASSERT_TRUE(id.ok()) << id.error().to_string();
    traces[*id].fed = p;
  };
  add(1, 6, 1);
  add(7, N, 2);  // runs until the context is full
  for (int i = 0; i < 3; ++i) step_and_record(**e, traces);
  add(12, 5, 3);
  step_and_record(**e, traces);
  add(3, 9, 4);
  run_to_idle(**e, traces);
  expect_matches_solo(solo, traces);
  auto full = (*e)->sequence(1);
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->stop, SequenceStop::kContextFull);
  EXPECT_EQ(full->length, N);  // the last generated token is not fed
}

TEST(Engine, StaggeredSequencesEqualTheirSoloRunsGlobalLayers) {
  TinyModel m{"llama", 4, 32};
  m.sequences = 4;
  m.step_sizes = std::vector<int64_t>{2, 4, 8};
  staggered_arrivals(m);
}

TEST(Engine, StaggeredSequencesEqualTheirSoloRunsPastThreeSlidingWindows) {
  TinyModel m{"mistral", 4, 40};
  m.sliding_window = 8;
  m.sequences = 4;
  m.step_sizes = std::vector<int64_t>{2, 4, 8};
  staggered_arrivals(m);
}

TEST(Engine, F16CachesAndNoStepMethodsStillMatch) {
  // Without step methods every decode row runs alone through decode; the result is the same.
  TinyModel m{"mistral", 4, 32};
  m.sliding_window = 6;
  m.cache_dtype = "f16";
  m.sequences = 4;
  m.step_sizes = std::vector<int64_t>{};
  staggered_arrivals(m);
}

// A fork shares its parent's prefix blocks; writes after the fork point copy the shared block first, so
// neither sequence sees the other's continuation.
TEST(Engine, ForkedSequencesShareThePrefixAndDivergeIndependently) {
  for (const std::string arch : {"llama", "mistral"}) {
    TinyModel m{arch, 4, 32};
    m.sliding_window = arch == "mistral" ? 6 : 0;
    m.sequences = 3;
    m.step_sizes = std::vector<int64_t>{2, 4};
    const std::string prog = test::tiny_program(m), solo = test::tiny_program(solo_of(m));
    auto e = Engine::load(prog);
    ASSERT_TRUE(e.ok()) << e.error().to_string();
    auto prompt = test::random_tokens(10, 512, 11);  // the shared block of 16 slots is partly filled
    std::map<SequenceId, Trace> traces;
    auto parent = (*e)->add(prompt, greedy(4));
    ASSERT_TRUE(parent.ok());
    traces[*parent].fed = prompt;
    run_to_idle(**e, traces);
    const int64_t blocks_before = (*e)->io().free_blocks();
    // Two forks from the 10-token prompt, each with its own next tokens.
    for (int32_t next : {100, 200}) {
      std::vector<int32_t> more{next, static_cast<int32_t>(next + 1)};
      auto f = (*e)->fork(*parent, 10, more, greedy(6));
      ASSERT_TRUE(f.ok()) << f.error().to_string();
      traces[*f].fed.assign(prompt.begin(), prompt.end());
      traces[*f].fed.insert(traces[*f].fed.end(), more.begin(), more.end());
    }
    EXPECT_EQ((*e)->io().free_blocks(), blocks_before) << "a fork takes no block until it writes";
    // The parent continues too, writing into the block its forks share.
    std::vector<int32_t> cont{300};
    ASSERT_TRUE((*e)->append(*parent, cont, greedy(5)).ok());
    Trace& pt = traces[*parent];
    pt.fed.resize(static_cast<size_t>((*e)->sequence(*parent)->length));  // its last generated token was not fed
    pt.fed.insert(pt.fed.end(), cont.begin(), cont.end());
    run_to_idle(**e, traces);
    expect_matches_solo(solo, traces);
  }
}

// Every sequence's K/V rows by position, per cache group and layer: what a step must leave as it was.
struct CacheSnapshot {
  // [sequence][group] → slot per position; and every cache's bytes
  std::map<int32_t, std::vector<std::vector<int32_t>>> slots;
  std::vector<std::vector<std::byte>> bytes;
};

CacheSnapshot snapshot(const IOManager& io, size_t groups) {
  CacheSnapshot s;
  for (int32_t seq = 0; seq < io.info().max_sequences; ++seq) {
    if (io.sequence_length(seq) < 0) continue;
    for (size_t g = 0; g < groups; ++g) s.slots[seq].push_back(io.sequence_slots(seq, g));
  }
  for (const TensorView& v : io.cache_views()) {
    auto* p = static_cast<const std::byte*>(v.ptr);
    s.bytes.emplace_back(p, p + v.nbytes());
  }
  return s;
}

// After a step: every position a sequence held before still has the same K/V bytes (wherever its slot is
// now: a copied-on-write block moves it), and no slot free before and after the step changed. Caches are
// [1, H, S, D] per layer, K then V; layer_group maps a cache to its group.
void expect_step_kept_history(const IOManager& io, const CacheSnapshot& before, const std::vector<size_t>& layer_group) {
  const CacheSnapshot after = snapshot(io, before.slots.empty() ? 0 : before.slots.begin()->second.size());
  std::vector<TensorView> views = io.cache_views();
  for (size_t c = 0; c < views.size(); ++c) {
    const size_t g = layer_group[c / 2];
    const int64_t H = views[c].shape[1], S = views[c].shape[2], row = views[c].nbytes() / static_cast<size_t>(H * S);
    auto at = [&](const std::vector<std::byte>& b, int64_t h, int32_t slot) { return b.data() + (h * S + slot) * row; };
    std::vector<char> used(static_cast<size_t>(S), 0);
    for (const auto& [seq, groups] : after.slots)
      for (int32_t slot : groups[g]) if (slot >= 0) used[static_cast<size_t>(slot)] = 1;
    for (const auto& [seq, groups] : before.slots) {
      for (int32_t slot : groups[g]) if (slot >= 0) used[static_cast<size_t>(slot)] = 1;
      auto it = after.slots.find(seq);
      if (it == after.slots.end()) continue;  // removed: its slots are free
      const auto& old_slots = groups[g];
      const auto& new_slots = it->second[g];
      for (size_t p = 0; p < old_slots.size() && p < new_slots.size(); ++p) {
        if (old_slots[p] < 0 || new_slots[p] < 0) continue;  // evicted from a ring by this step: allowed
        for (int64_t h = 0; h < H; ++h)
          ASSERT_EQ(std::memcmp(at(before.bytes[c], h, old_slots[p]), at(after.bytes[c], h, new_slots[p]), static_cast<size_t>(row)), 0)
              << "cache " << c << " sequence " << seq << " position " << p << " changed";
      }
    }
    for (int32_t slot = 0; slot < S; ++slot) {
      if (used[static_cast<size_t>(slot)]) continue;
      for (int64_t h = 0; h < H; ++h)
        ASSERT_EQ(std::memcmp(at(before.bytes[c], h, slot), at(after.bytes[c], h, slot), static_cast<size_t>(row)), 0)
            << "cache " << c << " slot " << slot << " belongs to no sequence but changed";
    }
  }
}

// Add, append, fork and remove at random over many steps: every sequence still equals its solo run, and
// after every step each sequence's earlier K/V rows are byte-identical and no free slot changed.
TEST(Engine, RandomScheduleEveryOutputEqualsItsSoloRun) {
  for (uint64_t seed : {1, 2, 3}) {
    TinyModel m{seed == 2 ? "mistral" : "llama", 4, 32};
    m.sliding_window = seed == 2 ? 5 : 0;
    m.sequences = 5;
    m.step_sizes = std::vector<int64_t>{2, 4, 8};
    m.pool_slots = 5 * 32 - 48;  // not every sequence can reach the context at once
    const std::string prog = test::tiny_program(m), solo = test::tiny_program(solo_of(m));
    auto e = Engine::load(prog);
    ASSERT_TRUE(e.ok()) << e.error().to_string();
    std::mt19937_64 rng(seed);
    std::map<SequenceId, Trace> traces, done;
    // mistral's layers are all sliding (group 0), llama's all global: one group.
    const std::vector<size_t> layer_group(static_cast<size_t>(m.layers), 0);
    struct Hooks {
      static bool appends() { return true; }
      Engine& e;
      std::mt19937_64& rng;
      std::map<SequenceId, Trace>& traces;
      const std::vector<size_t>& layer_group;
      int64_t context;
      int steps = 0;
      std::vector<int32_t> prompt(std::mt19937_64& r) const { return test::random_tokens(1 + static_cast<int>(r() % 12), 512, r()); }
      GenerationConfig config(std::mt19937_64& r, bool fork) const { return greedy(1 + static_cast<int>(r() % (fork ? 6 : 10))); }
      void refused(const Error& err) const { EXPECT_EQ(err.code(), ErrorCode::kResourceExhausted) << err.to_string(); }
      void append(SequenceId id, Trace& t) {
        auto info = e.sequence(id);
        ASSERT_TRUE(info.ok());
        std::vector<int32_t> more = test::random_tokens(1 + static_cast<int>(rng() % 4), 512, rng());
        if (info->pending == 0 && info->length + static_cast<int64_t>(more.size()) <= context &&
            e.append(id, more, greedy(1 + static_cast<int>(rng() % 4))).ok()) {
          // The last generated token was never fed: the trace holds only what the caches hold.
          t.fed.resize(static_cast<size_t>(info->length));
          t.fed.insert(t.fed.end(), more.begin(), more.end());
        }
      }
      void step() {
        const CacheSnapshot before = snapshot(e.io(), 1);
        step_and_record(e, traces);
        if (::testing::Test::HasFatalFailure()) return;
        expect_step_kept_history(e.io(), before, layer_group);
        ++steps;
      }
    } hooks{**e, rng, traces, layer_group, m.context, 0};
    test::random_schedule_ops(**e, rng, 1000, traces, done, hooks);
    ASSERT_FALSE(HasFatalFailure());
    const int steps = hooks.steps;
    EXPECT_GT(steps, 300);
    for (auto& [id, t] : traces) done[id] = std::move(t);
    expect_matches_solo(solo, done);
  }
}

// Rows the host discards (rejected draft tokens): a step feeds a sequence's next K + 1 tokens, the host
// keeps a prefix and forgets the rest, and the sequence continues with other tokens. Its logits equal the
// kept tokens run alone, also in a sliding ring well past its window, with another sequence sharing every
// step; and no step changes a kept row (checked by position after each step).
TEST(Engine, DiscardedRowsNeverOverwriteWhatLaterRowsNeed) {
  for (const std::string arch : {"llama", "mistral"}) {
    TinyModel m{arch, 4, 64};
    m.sliding_window = arch == "mistral" ? 5 : 0;
    m.sequences = 2;
    m.step_sizes = std::vector<int64_t>{2, 4, 8};  // T_max 8: at most 7 drafts + 1
    const std::string prog = test::tiny_program(m), solo = test::tiny_program(solo_of(m));
    IOManagerOptions o;
    o.default_sequence = false;
    auto program = Program::load(prog);
    ASSERT_TRUE(program.ok());
    auto io = create_io_manager(*program, o);
    ASSERT_TRUE(io.ok()) << io.error().to_string();
    const int32_t a = *(*io)->add_sequence(), b = *(*io)->add_sequence();
    std::mt19937_64 rng(5);
    std::vector<int32_t> kept_a, kept_b;  // what each sequence's caches hold
    std::vector<std::vector<float>> logits_a;  // after each kept token of a, by position
    const std::vector<size_t> layer_group(static_cast<size_t>(m.layers), 0);
    while (static_cast<int64_t>(kept_a.size()) + 8 <= m.context) {
      // a: 1 + up to 7 "draft" rows; b: one row, sharing the step.
      const int rows = 1 + static_cast<int>(rng() % 7);
      std::vector<int32_t> ta = test::random_tokens(rows, 512, rng()), tb = test::random_tokens(1, 512, rng());
      const bool with_b = static_cast<int64_t>(kept_b.size()) < m.context;
      std::vector<SequenceTokens> parts{{a, ta}};
      if (with_b) parts.push_back({b, tb});
      const CacheSnapshot before = snapshot(**io, 1);
      ASSERT_TRUE((*io)->run_step(parts, StepLogits::kAllRows).ok());
      expect_step_kept_history(**io, before, layer_group);
      ASSERT_FALSE(HasFatalFailure());
      // Keep a random prefix of a's rows (at least one), with the logits after each kept row.
      const int keep = 1 + static_cast<int>(rng() % static_cast<uint64_t>(rows));
      auto all = (*io)->last_step_logits();
      ASSERT_EQ(all.size(), static_cast<size_t>(rows + (with_b ? 1 : 0)) * 512u);
      for (int j = 0; j < keep; ++j) logits_a.emplace_back(all.begin() + j * 512, all.begin() + (j + 1) * 512);
      kept_a.insert(kept_a.end(), ta.begin(), ta.begin() + keep);
      ASSERT_TRUE((*io)->truncate_sequence(a, static_cast<int64_t>(kept_a.size())).ok());
      if (with_b) kept_b.push_back(tb[0]);
    }
    auto ref = solo_logits(solo, kept_a);
    ASSERT_EQ(ref.size(), logits_a.size());
    for (size_t p = 0; p < ref.size(); ++p) EXPECT_LE(max_abs_diff(logits_a[p], ref[p]), kTol) << arch << " position " << p;
    // Truncating past the end, or an unknown sequence, is an error that changes nothing.
    EXPECT_EQ((*io)->truncate_sequence(a, static_cast<int64_t>(kept_a.size()) + 1).error().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ((*io)->truncate_sequence(7, 0).error().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ((*io)->sequence_length(a), static_cast<int64_t>(kept_a.size()));
  }
}

// Truncating a sequence below the point another sequence was forked from, then stepping it: the blocks
// past the new length are no longer the sequence's, so the step takes fresh blocks (copying only the
// positions it still holds) and never writes into the fork's. Both sequences' logits equal their tokens
// run alone.
TEST(Engine, TruncateBelowAForkPointThenStep) {
  TinyModel m{"llama", 4, 64};
  m.sequences = 2;
  m.step_sizes = std::vector<int64_t>{2, 4, 8};
  const std::string prog = test::tiny_program(m), solo = test::tiny_program(solo_of(m));
  IOManagerOptions o;
  o.default_sequence = false;
  o.block_slots = 4;
  auto program = Program::load(prog);
  ASSERT_TRUE(program.ok());
  auto io = create_io_manager(*program, o);
  ASSERT_TRUE(io.ok()) << io.error().to_string();
  const int32_t a = *(*io)->add_sequence();
  const std::vector<int32_t> prefix = test::random_tokens(16, 512, 11);
  for (size_t i = 0; i < prefix.size(); i += 8) {
    const SequenceTokens part{a, std::span<const int32_t>(prefix).subspan(i, 8)};
    ASSERT_TRUE((*io)->run_step(std::span<const SequenceTokens>(&part, 1), StepLogits::kKeep).ok());
  }
  auto b = (*io)->fork_sequence(a, 16);
  ASSERT_TRUE(b.ok()) << b.error().to_string();
  ASSERT_TRUE((*io)->truncate_sequence(a, 2).ok());  // inside the first shared block, below the fork point
  EXPECT_EQ((*io)->sequence_length(a), 2);
  const std::vector<int32_t> ta = test::random_tokens(7, 512, 12), tb = test::random_tokens(1, 512, 13);  // 8 rows: step_8
  const std::vector<SequenceTokens> parts{{a, ta}, {*b, tb}};
  auto st = (*io)->run_step(parts, StepLogits::kAllRows);
  ASSERT_TRUE(st.ok()) << st.error().to_string();
  const auto all = (*io)->last_step_logits();
  ASSERT_EQ(all.size(), 8u * 512u);
  std::vector<int32_t> seq_a(prefix.begin(), prefix.begin() + 2), seq_b = prefix;
  seq_a.insert(seq_a.end(), ta.begin(), ta.end());
  seq_b.push_back(tb[0]);
  const auto ref_a = solo_logits(solo, seq_a), ref_b = solo_logits(solo, seq_b);
  ASSERT_EQ(ref_a.size(), 9u);
  for (size_t j = 0; j < 7; ++j)
    EXPECT_LE(max_abs_diff(std::span<const float>(all).subspan(j * 512, 512), ref_a[2 + j]), kTol) << "a row " << j;
  EXPECT_LE(max_abs_diff(std::span<const float>(all).subspan(7 * 512, 512), ref_b.back()), kTol) << "b";
  EXPECT_EQ((*io)->sequence_length(a), 9);
  EXPECT_EQ((*io)->sequence_length(*b), 17);
}

// Sequences with prompt-lookup drafts, sharing steps with each other and with a sequence without drafts,
// generate greedy's tokens exactly — each as the Runner generates it alone — to the end of the context.
TEST(Engine, SequencesWithDraftsGenerateWhatTheyGenerateAlone) {
  for (const std::string arch : {"llama", "mistral"}) {
    TinyModel m{arch, 4, 96};
    m.sliding_window = arch == "mistral" ? 8 : 0;
    m.sequences = 3;
    m.step_sizes = std::vector<int64_t>{2, 4, 8, 16};
    const std::string prog = test::tiny_program(m), solo = test::tiny_program(solo_of(m));
    auto e = Engine::load(prog);
    ASSERT_TRUE(e.ok()) << e.error().to_string();
    std::vector<std::vector<int32_t>> prompts;
    std::vector<SequenceId> ids;
    for (int i = 0; i < 3; ++i) {
      auto half = test::random_tokens(6 + 3 * i, 512, 40 + i);
      std::vector<int32_t> p = half;
      p.insert(p.end(), half.begin(), half.end());  // repeats: prompt lookup proposes from the first step
      GenerationConfig g = greedy(i == 0 ? 200 : 40);  // the first runs into the end of the context
      if (i < 2) g.draft.kind = DraftKind::kNgram, g.draft.max_tokens = 6;
      auto id = (*e)->add(p, g);
      ASSERT_TRUE(id.ok());
      ids.push_back(*id);
      prompts.push_back(p);
    }
    while (!(*e)->idle()) ASSERT_TRUE((*e)->step().ok());
    EXPECT_GT((*e)->stats().draft_tokens, 0) << arch;
    for (size_t i = 0; i < ids.size(); ++i) {
      auto info = (*e)->sequence(ids[i]);
      ASSERT_TRUE(info.ok());
      auto r = Runner::load(solo);
      ASSERT_TRUE(r.ok());
      auto want = (*r)->generate(prompts[i], greedy(i == 0 ? 200 : 40));
      ASSERT_TRUE(want.ok());
      EXPECT_EQ(info->generated, want->tokens) << arch << " sequence " << i;
      if (i == 0) {
        EXPECT_EQ(info->stop, SequenceStop::kContextFull) << arch;
      }
      EXPECT_EQ(info->length, (*r)->position()) << arch << " sequence " << i;
    }
  }
}

// Sequences drafting with draft programs (one with the target's own weights, accepting nearly every draft;
// one with a different random model, accepting little) share steps with a sequence without drafts; each
// generates greedy's tokens exactly, as the Runner does alone. A sequence added after the first finished
// takes its draft back from the pool (caches holding another sequence's tokens) and is exact too.
TEST(Engine, SequencesDraftingWithProgramsGenerateWhatTheyGenerateAlone) {
  TinyModel m{"llama", 4, 96};
  m.sequences = 3;
  m.step_sizes = std::vector<int64_t>{2, 4, 8, 16};
  const std::string prog = test::tiny_program(m), solo = test::tiny_program(solo_of(m));
  TinyModel other{"llama", 4, 96};
  other.layers = 1;
  other.seed = 99;
  const std::string random_draft = test::tiny_program(other);
  auto e = Engine::load(prog);
  ASSERT_TRUE(e.ok()) << e.error().to_string();
  const std::vector<std::string> drafts = {solo, random_draft, "", solo};
  const std::vector<int> lengths = {150, 40, 40, 30};
  std::vector<std::vector<int32_t>> prompts;
  std::vector<SequenceId> ids;
  auto add = [&](size_t i) {
    prompts.push_back(test::random_tokens(5 + 3 * static_cast<int>(i), 512, 60 + static_cast<int>(i)));
    GenerationConfig g = greedy(lengths[i]);
    if (!drafts[i].empty()) g.draft.kind = DraftKind::kProgram, g.draft.program_path = drafts[i], g.draft.max_tokens = 6;
    auto id = (*e)->add(prompts.back(), g);
    ASSERT_TRUE(id.ok()) << id.error().to_string();
    ids.push_back(*id);
  };
  for (size_t i = 0; i < 3; ++i) add(i);
  std::map<SequenceId, SequenceInfo> done;
  while (!(*e)->idle() || ids.size() < 4) {
    auto events = (*e)->step();
    ASSERT_TRUE(events.ok()) << events.error().to_string();
    for (const StepEvent& ev : *events) {
      if (!ev.finished) continue;
      auto info = (*e)->sequence(ev.sequence);
      ASSERT_TRUE(info.ok());
      done[ev.sequence] = *info;
      if (ev.sequence == ids[0]) {  // its draft goes back to the pool and its slot is freed: the fourth takes both
        ASSERT_TRUE((*e)->remove(ev.sequence).ok());
        add(3);
      }
    }
  }
  // Drafts were verified and some accepted (how many the policy drafts depends on measured step times).
  EXPECT_GT((*e)->stats().draft_accepted, 0) << "of " << (*e)->stats().draft_tokens;
  ASSERT_EQ(done.size(), 4u);
  for (size_t i = 0; i < ids.size(); ++i) {
    const SequenceInfo& info = done[ids[i]];
    EXPECT_TRUE(info.draft_error.empty()) << info.draft_error;
    auto r = Runner::load(solo);
    ASSERT_TRUE(r.ok());
    auto want = (*r)->generate(prompts[i], greedy(lengths[i]));
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(info.generated, want->tokens) << "sequence " << i;
  }
}

// A draft program that cannot draft for the target (here: only one of them embeds a tokenizer) is refused
// by add(), with the draft named; nothing is added.
TEST(Engine, ADraftProgramItCannotUseIsRefusedAndNothingIsAdded) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  TinyModel m{"llama", 4, 64};
  m.sequences = 2;
  m.tokenizer = true;
  auto e = Engine::load(test::tiny_program(m));
  ASSERT_TRUE(e.ok()) << e.error().to_string();
  const std::string draft = test::tiny_program({"llama", 4, 64});
  GenerationConfig g = greedy(4);
  g.draft.kind = DraftKind::kProgram;
  g.draft.program_path = draft;
  const std::vector<int32_t> prompt = {1, 5, 6};
  const int64_t free_before = (*e)->io().free_blocks();
  auto id = (*e)->add(prompt, g);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(id.error().message().find("draft program " + draft), std::string::npos) << id.error().message();
  EXPECT_NE(id.error().message().find("the target embeds a tokenizer and the draft does not"), std::string::npos)
      << id.error().message();
  EXPECT_TRUE((*e)->sequences().empty());
  EXPECT_EQ((*e)->io().free_blocks(), free_before);
  g.draft.program_path = test::temp_dir() + "/missing.hfs";
  auto missing = (*e)->add(prompt, g);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("missing.hfs"), std::string::npos) << missing.error().message();
  EXPECT_TRUE((*e)->sequences().empty());
}

TEST(Engine, BadInputIsRejectedAndNothingChanges) {
  TinyModel m{"llama", 4, 24};
  m.sequences = 2;
  m.step_sizes = std::vector<int64_t>{2};
  auto e = Engine::load(test::tiny_program(m));
  ASSERT_TRUE(e.ok()) << e.error().to_string();
  std::vector<int32_t> p{5, 6, 7};
  auto a = (*e)->add(p, greedy(2));
  ASSERT_TRUE(a.ok());
  const int64_t free_before = (*e)->io().free_blocks();
  // Over the context, an id outside the vocabulary, a bad sampling value, an empty prompt.
  std::vector<int32_t> too_long(25, 5), bad_id{5, 512};
  auto r1 = (*e)->add(too_long, greedy(1));
  ASSERT_FALSE(r1.ok());
  EXPECT_EQ(r1.error().code(), ErrorCode::kCapacityExceeded);
  EXPECT_NE(r1.error().message().find("25 tokens"), std::string::npos) << r1.error().message();
  auto r2 = (*e)->add(bad_id, greedy(1));
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.error().code(), ErrorCode::kOutOfRange);
  GenerationConfig bad = greedy(1);
  bad.sampling.top_p = 2;
  auto r3 = (*e)->add(p, bad);
  ASSERT_FALSE(r3.ok());
  EXPECT_NE(r3.error().message().find("top_p"), std::string::npos);
  auto r4 = (*e)->add(std::span<const int32_t>(), greedy(1));
  ASSERT_FALSE(r4.ok());
  // A third sequence in a two-sequence program.
  ASSERT_TRUE((*e)->add(p, greedy(1)).ok());
  auto r5 = (*e)->add(p, greedy(1));
  ASSERT_FALSE(r5.ok());
  EXPECT_EQ(r5.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(r5.error().message().find("2 sequences"), std::string::npos) << r5.error().message();
  // Unknown sequence; append while it still has input.
  EXPECT_EQ((*e)->remove(99).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ((*e)->append(*a, p, greedy(1)).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ((*e)->io().free_blocks(), free_before);
  EXPECT_EQ((*e)->sequences().size(), 2u);
  // After remove, the id is unknown.
  ASSERT_TRUE((*e)->remove(*a).ok());
  EXPECT_EQ((*e)->append(*a, p, greedy(1)).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE((*e)->sequence(*a).ok());
}

// A pool too small for every sequence: the one that cannot get a block ends alone with kContextFull and
// the others finish as their solo runs.
TEST(Engine, PoolExhaustionEndsOnlyTheSequenceWithoutABlock) {
  TinyModel m{"llama", 4, 32};
  m.sequences = 3;
  m.step_sizes = std::vector<int64_t>{2, 4};
  m.pool_slots = 32;  // one sequence's context for all three
  const std::string prog = test::tiny_program(m), solo = test::tiny_program(solo_of(m));
  auto e = Engine::load(prog);
  ASSERT_TRUE(e.ok()) << e.error().to_string();
  std::map<SequenceId, Trace> traces;
  for (int i = 0; i < 3; ++i) {
    auto p = test::random_tokens(6, 512, 20 + i);
    auto id = (*e)->add(p, greedy(i == 0 ? 20 : 6));
    ASSERT_TRUE(id.ok());
    traces[*id].fed = p;
  }
  run_to_idle(**e, traces);
  int full = 0;
  for (SequenceId id : (*e)->sequences()) {
    auto info = (*e)->sequence(id);
    ASSERT_TRUE(info.ok());
    if (info->stop == SequenceStop::kContextFull) {
      ++full;
      EXPECT_NE(info->error.find("pool"), std::string::npos) << info->error;
    } else {
      EXPECT_EQ(info->stop, SequenceStop::kMaxTokens);
    }
  }
  EXPECT_GE(full, 1);
  expect_matches_solo(solo, traces);
}

// Rows of several sequences share one method call: with step methods, eight running sequences decode in
// one step of step_8, not eight decode steps.
TEST(Engine, RunningSequencesShareOneStep) {
  TinyModel m{"llama", 4, 32};
  m.sequences = 8;
  m.step_sizes = std::vector<int64_t>{2, 4, 8};
  auto e = Engine::load(test::tiny_program(m));
  ASSERT_TRUE(e.ok()) << e.error().to_string();
  for (int i = 0; i < 8; ++i) {
    std::vector<int32_t> p{static_cast<int32_t>(10 + i)};
    ASSERT_TRUE((*e)->add(p, greedy(5)).ok());
  }
  int steps = 0;
  while (!(*e)->idle()) {
    auto ev = (*e)->step();
    ASSERT_TRUE(ev.ok()) << ev.error().to_string();
    EXPECT_EQ(ev->size(), 8u) << "step " << steps;
    EXPECT_EQ((*e)->io().last_step_tokens(), 8);
    ++steps;
  }
  EXPECT_EQ(steps, 5);
  EXPECT_EQ((*e)->stats().padded_rows, 0);
}

// Version-1 programs keep working with the engine: one sequence at a time.
TEST(Engine, VersionOneProgramServesOneSequence) {
  auto e = Engine::load(test::tiny_program({"llama", 4, 24}));
  ASSERT_TRUE(e.ok()) << e.error().to_string();
  EXPECT_EQ((*e)->info().max_sequences, 1);
  std::vector<int32_t> p{5, 6};
  ASSERT_TRUE((*e)->add(p, greedy(3)).ok());
  EXPECT_EQ((*e)->add(p, greedy(3)).error().code(), ErrorCode::kResourceExhausted);
}

}  // namespace
}  // namespace hfs
