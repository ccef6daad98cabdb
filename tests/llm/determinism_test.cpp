// Chunking and batch invariance (docs/determinism.md): a prompt's cache rows and logits are bit-identical
// however it is fed, and a sequence's logits are bit-identical whatever shares its steps. Tiny programs
// (2 layers, 512-token vocabulary, f32 weights) on cpu_fast and cpu_ref; about 3 s in all on 2 cores.
// Their hidden size (64) keeps f32 linears on the transposed-weight kernel, one chain along K per output
// for any row count (docs/cpu-fast-backend.md), so these tests check attention and the engine; the linear
// kernels' row invariance of larger models has its own tests.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>

#include "hfstatic/engine.h"
#include "hfstatic/llm_runner.h"
#include "support/engine_trace.h"
#include "support/hf_static_fixture.h"
#include "support/random_schedule.h"

namespace hfs {
namespace {

using test::TinyModel;

struct Fed {
  std::vector<float> logits;
  std::vector<std::vector<std::byte>> caches;
};

// Feeds `prompt` through a Runner in pieces of the given sizes (0: the rest), returns the last logits and
// every cache's bytes.
Fed feed(const std::string& prog, std::span<const int32_t> prompt, const std::vector<int>& pieces, TailPolicy tail,
         const std::string& backend) {
  RunnerOptions o;
  o.tail = tail;
  o.io.method.backends.backends = {backend};
  auto r = Runner::load(prog, o);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  Fed f;
  if (!r) return f;
  size_t at = 0;
  for (size_t i = 0; at < prompt.size(); ++i) {
    const size_t n = i < pieces.size() && pieces[i] > 0 ? std::min<size_t>(static_cast<size_t>(pieces[i]), prompt.size() - at)
                                                        : prompt.size() - at;
    const Status st = (*r)->prefill(prompt.subspan(at, n));
    EXPECT_TRUE(st.ok()) << st.error().to_string();
    at += n;
  }
  f.logits.assign((*r)->logits().begin(), (*r)->logits().end());
  for (const TensorView& v : (*r)->io().cache_views()) {
    auto* p = static_cast<const std::byte*>(v.ptr);
    f.caches.emplace_back(p, p + v.nbytes());
  }
  return f;
}

void expect_same(const Fed& a, const Fed& b, const std::string& what) {
  ASSERT_EQ(a.logits.size(), b.logits.size()) << what;
  ASSERT_FALSE(a.logits.empty()) << what;
  EXPECT_EQ(std::memcmp(a.logits.data(), b.logits.data(), a.logits.size() * sizeof(float)), 0)
      << what << ": logits differ by up to " << test::max_abs_diff(a.logits, b.logits);
  ASSERT_EQ(a.caches.size(), b.caches.size()) << what;
  for (size_t c = 0; c < a.caches.size(); ++c) EXPECT_TRUE(a.caches[c] == b.caches[c]) << what << ": cache " << c;
}

// One chunk, random chunk sizes (any prefill variant, padded or decoded tails) and token by token: the
// same bits, for global layers and sliding layers past 3× the window, f32, f16 and int8 caches (each row
// quantized alone, with its own scale, so chunking cannot change a cache byte), on cpu_fast and (f32 and
// int8 caches) cpu_ref.
void prompt_in_any_chunks(const std::string& backend) {
  std::mt19937_64 rng(11);
  for (const std::string arch : {"llama", "mistral"}) {
    for (const std::string cache : {"f32", "f16", "int8"}) {
      if (backend == "cpu_ref" && cache == "f16") continue;
      TinyModel m{arch, 24, 48};  // chunks of more than 16 rows take other kernels than steps of few rows
      m.sliding_window = arch == "llama" ? 0 : 5;
      m.cache_dtype = cache;
      m.prefill_variants = std::vector<int64_t>{4, 8};
      const std::string prog = test::tiny_program(m);
      const std::vector<int32_t> prompt = test::random_tokens(41, 512, rng());
      const std::string what = backend + " " + arch + " " + cache;
      const Fed whole = feed(prog, prompt, {}, TailPolicy::kPad, backend);
      expect_same(whole, feed(prog, prompt, std::vector<int>(prompt.size(), 1), TailPolicy::kPad, backend),
                  what + " token by token");
      expect_same(whole, feed(prog, prompt, {}, TailPolicy::kDecode, backend), what + " decoded tail");
      for (int trial = 0; trial < 2; ++trial) {
        std::vector<int> pieces;
        for (int i = 0; i < 41; ++i) pieces.push_back(1 + static_cast<int>(rng() % 30));
        const TailPolicy tail = trial == 0 ? TailPolicy::kPad : TailPolicy::kAuto;
        expect_same(whole, feed(prog, prompt, pieces, tail, backend), what + " random chunks, trial " + std::to_string(trial));
      }
    }
  }
}

TEST(Determinism, PromptFedInAnyChunksEqualsOneChunk) { prompt_in_any_chunks("cpu_fast"); }
TEST(Determinism, PromptFedInAnyChunksEqualsOneChunkOnTheReference) { prompt_in_any_chunks("cpu_ref"); }

// A sequence alone in a fresh Engine on the same program, fed token by token (decode rows): the logits
// after each of `tokens`.
EngineOptions on(const std::string& backend) {
  EngineOptions o;
  o.io.method.backends.backends = {backend};
  return o;
}

std::vector<std::vector<float>> alone(const std::string& prog, std::span<const int32_t> tokens, const std::string& backend) {
  auto e = Engine::load(prog, on(backend));
  EXPECT_TRUE(e.ok()) << e.error().to_string();
  std::vector<std::vector<float>> out;
  if (!e) return out;
  GenerationConfig feed_only;
  feed_only.max_new_tokens = 0;
  SequenceId id = -1;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i == 0) {
      auto a = (*e)->add(tokens.first(1), feed_only);
      EXPECT_TRUE(a.ok()) << a.error().to_string();
      if (!a) return out;
      id = *a;
    } else {
      const Status st = (*e)->append(id, tokens.subspan(i, 1), feed_only);
      EXPECT_TRUE(st.ok()) << st.error().to_string();
      if (!st.ok()) return out;
    }
    while (!(*e)->idle()) EXPECT_TRUE((*e)->step().ok());
    auto l = (*e)->logits(id);
    out.emplace_back(l.begin(), l.end());
  }
  return out;
}

// What the engine showed a sequence: every token it fed or generated, in order, and the logits after the
// last fed token at each step that sampled.
struct Seen {
  std::vector<int32_t> fed;
  std::map<int64_t, std::vector<float>> logits;
};

void record_step(Engine& e, std::map<SequenceId, Seen>& seen) {
  auto ev = e.step();
  ASSERT_TRUE(ev.ok()) << ev.error().to_string();
  std::vector<SequenceId> sampled;
  for (const StepEvent& x : *ev) {
    if (x.token < 0) continue;
    seen[x.sequence].fed.push_back(x.token);
    if (sampled.empty() || sampled.back() != x.sequence) sampled.push_back(x.sequence);
  }
  for (SequenceId id : sampled) {
    auto info = e.sequence(id);
    ASSERT_TRUE(info.ok());
    auto l = e.logits(id);
    if (l.empty()) continue;  // a verification step keeps no logits row
    seen[id].logits[info->length - 1] = {l.begin(), l.end()};
  }
}

// Arrivals at random steps, forks, prompt-lookup drafts, sampling at temperature 1, removals, 1 to 16
// sequences: every logit row a sequence was shown is bit for bit the row it gets alone, fed token by
// token, on the same program (its prompt fed in chunks and step rows of any size, its drafts verified
// beside other sequences' rows, its blocks wherever the pool had them).
void random_schedule(const std::string& backend, const std::vector<uint64_t>& seeds, int iterations,
                     const std::string& cache = "f32") {
  for (uint64_t seed : seeds) {
    const bool sliding = seed == 2;
    TinyModel m{sliding ? "mistral" : "llama", 4, 40};
    m.cache_dtype = cache;
    m.sliding_window = sliding ? 5 : 0;
    m.sequences = seed == 3 ? 16 : 6;
    m.step_sizes = std::vector<int64_t>{2, 4, 8, 16};
    m.pool_slots = m.sequences * 40 - 64;  // blocks run short: freed ones are reused out of order
    const std::string prog = test::tiny_program(m);
    auto e = Engine::load(prog, on(backend));
    ASSERT_TRUE(e.ok()) << e.error().to_string();
    std::mt19937_64 rng(seed);
    std::map<SequenceId, Seen> seen, done;
    struct Hooks {
      static bool appends() { return false; }
      Engine& e;
      std::map<SequenceId, Seen>& seen;
      std::vector<int32_t> prompt(std::mt19937_64& r) const {
        auto half = test::random_tokens(1 + static_cast<int>(r() % 9), 512, r());
        std::vector<int32_t> p = half;
        p.insert(p.end(), half.begin(), half.end());  // repeats: prompt lookup has drafts to propose
        return p;
      }
      GenerationConfig config(std::mt19937_64& r, bool /*fork*/) const {
        GenerationConfig g;
        g.max_new_tokens = 1 + static_cast<int>(r() % 12);
        g.ignore_eos = true;
        if (r() % 2 == 0) {
          g.sampling.temperature = 1.0f;
          g.sampling.seed = r();
        }
        if (r() % 3 == 0) g.draft.kind = DraftKind::kNgram, g.draft.max_tokens = 1 + static_cast<int>(r() % 6);
        return g;
      }
      void refused(const Error&) const {}
      void append(SequenceId, Seen&) const {}
      void step() const { record_step(e, seen); }
    } hooks{**e, seen};
    test::random_schedule_ops(**e, rng, iterations, seen, done, hooks);
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    for (auto& [id, t] : seen) done[id] = std::move(t);
    size_t rows = 0;
    for (const auto& [id, t] : done) {
      if (t.logits.empty()) continue;
      const size_t upto = static_cast<size_t>(t.logits.rbegin()->first + 1);
      ASSERT_LE(upto, t.fed.size());
      const auto ref = alone(prog, std::span<const int32_t>(t.fed).first(upto), backend);
      ASSERT_EQ(ref.size(), upto);
      for (const auto& [pos, l] : t.logits) {
        const auto& want = ref[static_cast<size_t>(pos)];
        ASSERT_EQ(l.size(), want.size());
        EXPECT_EQ(std::memcmp(l.data(), want.data(), l.size() * sizeof(float)), 0)
            << backend << " seed " << seed << " sequence " << id << " position " << pos << ": differs by up to "
            << test::max_abs_diff(l, want);
        ++rows;
      }
    }
    EXPECT_GT(rows, static_cast<size_t>(iterations / 6)) << "seed " << seed;
  }
}

TEST(Determinism, RandomScheduleEveryLogitRowEqualsTheSequenceAlone) { random_schedule("cpu_fast", {2, 3}, 300); }
TEST(Determinism, RandomScheduleEveryLogitRowEqualsTheSequenceAloneOnTheReference) { random_schedule("cpu_ref", {3}, 120); }
// int8 caches (scales travel with every row a fork, a copy-on-write block or a ring copy moves; rejected
// drafts' rows and scales unreachable): a sliding window of 5 passed many times over, and 16 sequences on a
// short block pool. About 1 s.
TEST(Determinism, RandomScheduleInt8CachesEveryLogitRowEqualsTheSequenceAlone) {
  random_schedule("cpu_fast", {2, 3}, 150, "int8");
}

}  // namespace
}  // namespace hfs
