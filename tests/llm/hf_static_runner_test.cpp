// The hf_static contract end to end on exported programs: padding, tail routing, counters, capacity,
// reset, continuation, ring caches, and which cache bytes a step may touch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "hfstatic/ext/io_contract.h"
#include "hfstatic/ext/metadata_keys.h"
#include "support/hf_static_fixture.h"

namespace hfs {
namespace {

using test::TinyModel;

std::vector<float> copy(std::span<const float> s) { return {s.begin(), s.end()}; }

float max_abs_diff(std::span<const float> a, std::span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  float m = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

std::vector<std::vector<std::byte>> cache_bytes(Runner& r) {
  std::vector<std::vector<std::byte>> out;
  for (const TensorView& v : r.io().cache_views()) {
    auto* p = static_cast<const std::byte*>(v.ptr);
    out.emplace_back(p, p + v.nbytes());
  }
  return out;
}

// The reference for every prompt test: the same program fed one token at a time through decode,
// never padded.
std::vector<float> token_by_token(const std::string& program, std::span<const int32_t> prompt) {
  auto r = test::open_runner(program);
  EXPECT_TRUE(r.ok());
  std::vector<float> last;
  for (int32_t t : prompt) {
    auto l = (*r)->decode_step(t);
    EXPECT_TRUE(l.ok()) << l.error().to_string();
    last = copy(*l);
  }
  return last;
}

struct PromptCase {
  TinyModel model;
  TailPolicy tail;
};

void PrintTo(const PromptCase& c, std::ostream* os) {
  *os << c.model.arch << " C=" << c.model.chunk << " N=" << c.model.context << " W=" << c.model.sliding_window << " "
      << c.model.cache_dtype << " logits=" << c.model.logits << (c.tail == TailPolicy::kPad ? " pad" : " decode");
}

class PromptLengths : public ::testing::TestWithParam<PromptCase> {};

TEST_P(PromptLengths, ChunkedEqualsTokenByToken) {
  const PromptCase& pc = GetParam();
  const std::string program = test::tiny_program(pc.model);
  const int C = pc.model.chunk, N = pc.model.context;
  for (int n : {1, C - 1, C, C + 1, 2 * C + 3, N - 1, N}) {
    SCOPED_TRACE("prompt length " + std::to_string(n));
    auto prompt = test::random_tokens(n, 512, static_cast<uint64_t>(n));
    auto r = test::open_runner(program, pc.tail);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_TRUE((*r)->prefill(prompt).ok());
    EXPECT_EQ((*r)->position(), n);
    auto ref = token_by_token(program, prompt);
    EXPECT_LE(max_abs_diff((*r)->logits(), ref), 1e-5f);
  }
}

INSTANTIATE_TEST_SUITE_P(
    HfStatic, PromptLengths,
    ::testing::Values(PromptCase{{"llama", 4, 24}, TailPolicy::kPad}, PromptCase{{"llama", 4, 24}, TailPolicy::kDecode},
                      PromptCase{{"llama", 5, 23, 0, "f32", "all"}, TailPolicy::kPad},
                      PromptCase{{"llama", 4, 24, 0, "f16"}, TailPolicy::kPad},
                      PromptCase{{"mistral", 4, 24, 6}, TailPolicy::kPad},
                      PromptCase{{"mistral", 6, 24, 6}, TailPolicy::kPad},
                      PromptCase{{"mistral", 9, 27, 6}, TailPolicy::kPad},
                      PromptCase{{"mistral", 9, 27, 6}, TailPolicy::kDecode}));

// Prefill variants (smaller prefill methods of 2 and 5 tokens beside C = 8): every prompt length up to
// 2C + 1, under every tail policy, equals token-by-token decode, on global and on sliding (ring) caches.
TEST(HfStaticRunner, PrefillVariantsMatchTokenByTokenForEveryPromptLength) {
  for (test::TinyModel m : {test::TinyModel{"llama", 8, 40}, test::TinyModel{"mistral", 8, 40, 6}}) {
    m.prefill_variants = std::vector<int64_t>{2, 5};
    const std::string program = test::tiny_program(m);
    for (TailPolicy tail : {TailPolicy::kPad, TailPolicy::kDecode, TailPolicy::kAuto})
      for (int n = 1; n <= 17; ++n) {
        SCOPED_TRACE(m.arch + " prompt length " + std::to_string(n) + " tail policy " + std::to_string(static_cast<int>(tail)));
        auto prompt = test::random_tokens(n, 512, static_cast<uint64_t>(100 + n));
        auto r = test::open_runner(program, tail);
        ASSERT_TRUE(r.ok()) << r.error().to_string();
        EXPECT_EQ((*r)->info().prefill_step_sizes, (std::vector<int64_t>{2, 5, 8}));
        ASSERT_TRUE((*r)->prefill(prompt).ok());
        EXPECT_EQ((*r)->position(), n);
        EXPECT_LE(max_abs_diff((*r)->logits(), token_by_token(program, prompt)), 1e-5f);
      }
  }
}

// run_prefill pads a step to the smallest prefill method that holds it, and gives the logits the same
// program without variants gives (same checkpoint: the fixture's seed).
TEST(HfStaticRunner, RunPrefillUsesTheSmallestMethodThatHoldsTheTokens) {
  test::TinyModel with{"llama", 8, 40}, without{"llama", 8, 40};
  with.prefill_variants = std::vector<int64_t>{2, 5};
  without.prefill_variants = std::vector<int64_t>{};
  auto pw = Program::load(test::tiny_program(with)), po = Program::load(test::tiny_program(without));
  ASSERT_TRUE(pw.ok() && po.ok());
  EXPECT_EQ((*pw)->methods().size(), 4u);
  EXPECT_EQ((*po)->methods().size(), 2u);
  for (int n = 1; n <= 8; ++n) {
    SCOPED_TRACE("tokens " + std::to_string(n));
    auto a = create_io_manager(*pw), b = create_io_manager(*po);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ((*a)->last_step_tokens(), 0);
    EXPECT_EQ((*b)->info().prefill_step_sizes, (std::vector<int64_t>{8}));
    const auto tokens = test::random_tokens(n, 512, static_cast<uint64_t>(n));
    ASSERT_TRUE((*a)->run_prefill(tokens, StepLogits::kKeep).ok());
    ASSERT_TRUE((*b)->run_prefill(tokens, StepLogits::kKeep).ok());
    EXPECT_EQ((*a)->last_step_tokens(), n <= 2 ? 2 : n <= 5 ? 5 : 8);
    EXPECT_EQ((*b)->last_step_tokens(), 8);
    EXPECT_LE(max_abs_diff((*a)->last_logits(), (*b)->last_logits()), 1e-5f);
    // A second step continues from the caches the variant wrote.
    ASSERT_TRUE((*a)->run_prefill(tokens, StepLogits::kKeep).ok());
    ASSERT_TRUE((*b)->run_prefill(tokens, StepLogits::kKeep).ok());
    EXPECT_LE(max_abs_diff((*a)->last_logits(), (*b)->last_logits()), 1e-5f);
    ASSERT_TRUE((*a)->run_decode(tokens[0]).ok());
    EXPECT_EQ((*a)->last_step_tokens(), 1);
    (*a)->reset();
    EXPECT_EQ((*a)->last_step_tokens(), 0);
  }
}

// A prompt chunk whose logits nobody reads (StepLogits::kSkip) leaves them unbound. On cpu_fast the LM head
// is a partition of its own (the logits_index gather between runs on cpu_ref), so the prefill method can
// skip it; on cpu_ref alone it is one partition and the logits are computed anyway. Either way the caches
// come out byte for byte as with kKeep, and last_logits() is empty after a skipped step.
TEST(HfStaticRunner, PromptChunksWithUnreadLogitsSkipTheLmHeadAndUpdateTheSameCaches) {
  const std::string path = test::tiny_program({"llama", 4, 24});
  auto prog = Program::load(path);
  ASSERT_TRUE(prog.ok());
  const std::vector<int32_t> chunk = test::random_tokens(4, 512, 31);
  for (const char* backend : {"cpu_fast", "cpu_ref"}) {
    SCOPED_TRACE(backend);
    IOManagerOptions o;
    if (std::string(backend) == "cpu_fast") o.method.backends.backends = {"cpu_fast"};
    auto m = Method::load(*prog, "prefill", o.method);
    ASSERT_TRUE(m.ok()) << m.error().to_string();
    size_t logits = 0;
    while ((*m)->def().outputs[logits].name != keys::kLogits) ++logits;
    EXPECT_EQ((*m)->can_skip_output(logits), std::string(backend) == "cpu_fast");

    auto keep = create_io_manager(*prog, o), skip = create_io_manager(*prog, o);
    ASSERT_TRUE(keep.ok() && skip.ok());
    for (int step = 0; step < 2; ++step) {
      ASSERT_TRUE((*keep)->run_prefill(chunk, StepLogits::kKeep).ok());
      ASSERT_TRUE((*skip)->run_prefill(chunk, StepLogits::kSkip).ok());
      EXPECT_FALSE((*keep)->last_logits().empty());
      EXPECT_TRUE((*skip)->last_logits().empty());
      EXPECT_EQ((*skip)->position(), (*keep)->position());
      const auto a = (*keep)->cache_views(), b = (*skip)->cache_views();
      ASSERT_EQ(a.size(), b.size());
      for (size_t i = 0; i < a.size(); ++i)
        EXPECT_EQ(std::memcmp(a[i].ptr, b[i].ptr, a[i].nbytes()), 0) << "cache " << i << " step " << step;
    }
    // The next kept step has logits again, equal to the kept-all-along ones.
    ASSERT_TRUE((*keep)->run_prefill(chunk, StepLogits::kKeep).ok());
    ASSERT_TRUE((*skip)->run_prefill(chunk, StepLogits::kKeep).ok());
    EXPECT_EQ(copy((*skip)->last_logits()), copy((*keep)->last_logits()));
  }
}

TEST(HfStaticRunner, ResetThenRerunIsBitIdenticalToFreshLoad) {
  const std::string program = test::tiny_program({"mistral", 4, 24, 6});
  auto prompt = test::random_tokens(11, 512, 1);
  auto fresh = test::open_runner(program);
  ASSERT_TRUE(fresh.ok());
  auto fresh_caches = cache_bytes(**fresh);
  ASSERT_TRUE((*fresh)->prefill(prompt).ok());
  auto first = copy((*fresh)->logits());

  auto r = test::open_runner(program);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE((*r)->prefill(test::random_tokens(17, 512, 2)).ok());  // dirty the caches
  (*r)->reset();
  EXPECT_EQ((*r)->position(), 0);
  EXPECT_EQ(cache_bytes(**r), fresh_caches);
  ASSERT_TRUE((*r)->prefill(prompt).ok());
  auto again = copy((*r)->logits());
  ASSERT_EQ(first.size(), again.size());
  EXPECT_EQ(std::memcmp(first.data(), again.data(), first.size() * sizeof(float)), 0);
}

TEST(HfStaticRunner, ContinuationInTwoCallsEqualsOneCall) {
  const std::string program = test::tiny_program({"mistral", 4, 24, 6});
  auto prompt = test::random_tokens(15, 512, 3);
  auto one = test::open_runner(program);
  ASSERT_TRUE(one.ok());
  ASSERT_TRUE((*one)->prefill(prompt).ok());
  auto two = test::open_runner(program);
  ASSERT_TRUE(two.ok());
  ASSERT_TRUE((*two)->prefill(std::span(prompt).first(6)).ok());
  ASSERT_TRUE((*two)->prefill(std::span(prompt).subspan(6)).ok());
  EXPECT_EQ((*two)->position(), 15);
  EXPECT_LE(max_abs_diff((*one)->logits(), (*two)->logits()), 1e-6f);
}

TEST(HfStaticRunner, FullContextThenOneMoreIsRejectedWithStateUnchanged) {
  const TinyModel m{"llama", 4, 24};
  const std::string program = test::tiny_program(m);
  auto r = test::open_runner(program);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE((*r)->prefill(test::random_tokens(m.context, 512, 4)).ok());
  EXPECT_EQ((*r)->capacity_left(), 0);
  auto before = cache_bytes(**r);
  auto logits_before = copy((*r)->logits());
  EXPECT_FALSE((*r)->can_accept(1));
  Status st = (*r)->prefill(std::vector<int32_t>{5});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kCapacityExceeded);
  auto d = (*r)->decode_step(5);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code(), ErrorCode::kCapacityExceeded);
  EXPECT_EQ((*r)->position(), m.context);
  EXPECT_EQ(cache_bytes(**r), before);
  EXPECT_EQ(copy((*r)->logits()), logits_before);
}

TEST(HfStaticRunner, OverCapacityPromptOnEmptyRunnerRunsNothing) {
  const TinyModel m{"llama", 4, 24};
  auto r = test::open_runner(test::tiny_program(m));
  ASSERT_TRUE(r.ok());
  auto before = cache_bytes(**r);
  Status st = (*r)->prefill(test::random_tokens(m.context + 1, 512, 5));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kCapacityExceeded);
  EXPECT_EQ((*r)->position(), 0);
  EXPECT_EQ(cache_bytes(**r), before);
}

// After every step, only the cache rows of that step's valid tokens may differ (pads write nothing;
// ring slots other than p mod R are untouched).
TEST(HfStaticRunner, StepsTouchOnlyTheirOwnSlots) {
  for (const TinyModel& m : {TinyModel{"llama", 4, 24}, TinyModel{"mistral", 4, 24, 6}, TinyModel{"mistral", 9, 27, 6}}) {
    SCOPED_TRACE(m.arch + " C=" + std::to_string(m.chunk));
    auto prog = Program::load(test::tiny_program(m));
    ASSERT_TRUE(prog.ok());
    std::vector<int64_t> lengths;
    for (const Value& v : (*prog)->meta(keys::kLayerCacheLengths)->as_array()) lengths.push_back(v.as_int());
    std::vector<bool> sliding;
    for (const Value& v : (*prog)->meta(keys::kLayerKinds)->as_array()) sliding.push_back(v.as_string() == keys::kLayerSliding);
    auto r = test::open_runner(test::tiny_program(m));
    ASSERT_TRUE(r.ok());
    auto tokens = test::random_tokens(m.context, 512, 6);
    size_t done = 0;
    // Steps of varying sizes: partial chunks (padded), full chunks, single decodes.
    for (size_t step : {size_t(3), size_t(m.chunk), size_t(1), size_t(m.chunk - 1), size_t(m.chunk), size_t(2)}) {
      if (done + step > tokens.size()) break;
      auto before = cache_bytes(**r);
      int64_t p0 = (*r)->position();
      ASSERT_TRUE((*r)->prefill(std::span(tokens).subspan(done, step)).ok());
      auto after = cache_bytes(**r);
      auto views = (*r)->io().cache_views();
      for (size_t c = 0; c < views.size(); ++c) {
        const int64_t H = views[c].shape[1], S = views[c].shape[2], D = views[c].shape[3];
        const size_t elem = dtype_info(views[c].dtype).block_bytes;
        const size_t layer = c / 2;
        for (int64_t h = 0; h < H; ++h)
          for (int64_t s = 0; s < S; ++s) {
            bool allowed = false;
            for (int64_t p = p0; p < p0 + static_cast<int64_t>(step); ++p)
              allowed |= (sliding[layer] ? p % lengths[layer] : p) == s;
            size_t off = static_cast<size_t>((h * S + s) * D) * elem;
            bool same = std::memcmp(before[c].data() + off, after[c].data() + off, static_cast<size_t>(D) * elem) == 0;
            if (!allowed) {
              EXPECT_TRUE(same) << "cache " << c << " head " << h << " slot " << s << " changed at p0=" << p0;
            }
          }
      }
      done += step;
    }
  }
}

TEST(HfStaticRunner, SlidingModelPastThreeWindowsMatchesTokenByToken) {
  for (int C : {3, 6, 9}) {  // C < W, C = W, C > W with W = 6
    SCOPED_TRACE("C=" + std::to_string(C));
    const TinyModel m{"mistral", C, 30, 6};
    const std::string program = test::tiny_program(m);
    auto prompt = test::random_tokens(3 * 6 + 2, 512, 8);
    auto r = test::open_runner(program);
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE((*r)->prefill(prompt).ok());
    EXPECT_LE(max_abs_diff((*r)->logits(), token_by_token(program, prompt)), 1e-5f);
  }
}

TEST(HfStaticRunner, GenerateIsDeterministicPerSeed) {
  const std::string program = test::tiny_program({"llama", 4, 24});
  GenerationConfig g;
  g.max_new_tokens = 10;
  g.ignore_eos = true;
  g.sampling.temperature = 1.0f;
  g.sampling.seed = 99;
  auto a = test::open_runner(program), b = test::open_runner(program);
  ASSERT_TRUE(a.ok() && b.ok());
  auto ta = (*a)->generate(std::vector<int32_t>{1, 2, 3}, g);
  auto tb = (*b)->generate(std::vector<int32_t>{1, 2, 3}, g);
  ASSERT_TRUE(ta.ok() && tb.ok());
  EXPECT_EQ(ta->tokens, tb->tokens);
  EXPECT_EQ((*a)->position(), 3 + 9);
}


// bench --context-fill's skip: advancing n positions without a step leaves the runner exactly where a prefill of
// n tokens whose cache rows are then zeroed does (counters, slots, masks, rings), so the next decode step gives
// the same bits; over the context it is refused with nothing changed.
TEST(HfStaticRunner, AdvanceUnwrittenIsAPrefillWithZeroRows) {
  for (const TinyModel& m : {TinyModel{"llama", 4, 24}, TinyModel{"mistral", 4, 24, 6}}) {
    const std::string program = test::tiny_program(m);
    auto skipped = test::open_runner(program), filled = test::open_runner(program);
    ASSERT_TRUE(skipped.ok() && filled.ok());
    ASSERT_TRUE((*skipped)->io().advance_unwritten(0, 13).ok());
    EXPECT_EQ((*skipped)->position(), 13);
    ASSERT_TRUE((*filled)->prefill(test::random_tokens(13, 512, 8)).ok());
    for (const TensorView& v : (*filled)->io().cache_views()) std::memset(v.ptr, 0, v.nbytes());
    for (int32_t tok : {5, 77, 300}) {
      auto a = (*skipped)->decode_step(tok);
      ASSERT_TRUE(a.ok()) << a.error().to_string();
      auto av = copy(*a);
      auto b = (*filled)->decode_step(tok);
      ASSERT_TRUE(b.ok());
      ASSERT_EQ(av.size(), b->size());
      EXPECT_EQ(std::memcmp(av.data(), b->data(), av.size() * sizeof(float)), 0) << m.arch;
    }
    auto before = cache_bytes(**skipped);
    Status st = (*skipped)->io().advance_unwritten(0, m.context - 16 + 1);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code(), ErrorCode::kCapacityExceeded);
    EXPECT_EQ((*skipped)->position(), 16);
    EXPECT_EQ(cache_bytes(**skipped), before);
    EXPECT_EQ((*skipped)->io().advance_unwritten(3, 1).error().code(), ErrorCode::kInvalidArgument);
    EXPECT_TRUE((*skipped)->io().advance_unwritten(0, m.context - 16).ok());
    EXPECT_EQ((*skipped)->capacity_left(), 0);
  }
}

}  // namespace
}  // namespace hfs
