// Runner logic against a fake IO manager: chunking, tail routing, capacity, stopping. The contract
// itself (padding, masks, slots) is tested on real programs in hf_static_runner_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <thread>

#include "hfstatic/llm_runner.h"

namespace hfs {
namespace {

// Logits put all mass on (last token + 1) % V, so greedy generation counts upwards.
class FakeIO final : public IOManager {
 public:
  // `sizes`: the prefill step sizes it reports (empty: just chunk, as IO managers written before prefill
  // variants did). step_ms(T), if set, is how long a step of a T-token method takes (T = 1: decode).
  FakeIO(int64_t context, int64_t chunk, int64_t vocab, std::vector<int64_t> sizes = {}) {
    info_.contract = "fake";
    info_.prefill_tokens = chunk;
    info_.prefill_step_sizes = std::move(sizes);
    info_.context_length = context;
    info_.vocab_size = vocab;
    info_.eos_token_ids = {0};
    logits_.assign(static_cast<size_t>(vocab), 0.0f);
  }
  const ModelInfo& info() const override { return info_; }
  int64_t position() const override { return pos_; }
  bool can_accept(int64_t n) const override { return pos_ + n <= info_.context_length; }
  // "p8" ran a chunk of 8 whose logits are read, "p8-" one whose logits nobody reads (kSkip).
  Status run_prefill(std::span<const int32_t> t, StepLogits logits) override {
    calls.push_back("p" + std::to_string(t.size()) + (logits == StepLogits::kSkip ? "-" : ""));
    const auto& sizes = info_.prefill_step_sizes;
    take(sizes.empty() ? info_.prefill_tokens : sizes[prefill_size_index(sizes, static_cast<int64_t>(t.size()))]);
    HFS_TRY(advance(t.back(), static_cast<int64_t>(t.size())));
    has_ = logits == StepLogits::kKeep;
    return Ok{};
  }
  Status run_decode(int32_t tok) override {
    calls.push_back("d");
    take(1);
    return advance(tok, 1);
  }
  std::span<const float> last_logits() const override { return has_ ? std::span<const float>(logits_) : std::span<const float>(); }
  std::span<const float> last_step_logits() const override { return last_logits(); }
  void reset() override {
    pos_ = 0;
    has_ = false;
  }
  bool needs_reset() const override { return false; }
  std::vector<TensorView> cache_views() const override { return {}; }

  std::vector<std::string> calls;
  std::function<double(int64_t)> step_ms;
  // Edits each step's logits (given the position after the step): non-finite logits tests.
  std::function<void(std::vector<float>&, int64_t)> edit_logits;

 private:
  void take(int64_t T) const {
    if (step_ms) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(step_ms(T)));
  }
  Status advance(int32_t last, int64_t n) {
    if (!can_accept(n)) return make_error(ErrorCode::kCapacityExceeded, "fake: over capacity");
    pos_ += n;
    std::fill(logits_.begin(), logits_.end(), 0.0f);
    logits_[static_cast<size_t>((last + 1) % info_.vocab_size)] = 10.0f;
    if (edit_logits) edit_logits(logits_, pos_);
    has_ = true;
    return Ok{};
  }
  ModelInfo info_;
  int64_t pos_ = 0;
  bool has_ = false;
  std::vector<float> logits_;
};

std::unique_ptr<Runner> make_runner(TailPolicy tail, FakeIO** io_out, int64_t context = 64, int64_t chunk = 8) {
  auto io = std::make_unique<FakeIO>(context, chunk, 100);
  *io_out = io.get();
  RunnerOptions o;
  o.tail = tail;
  auto r = Runner::create(std::move(io), o);
  EXPECT_TRUE(r.ok());
  return std::move(*r);
}

std::vector<int32_t> iota_tokens(int n, int start = 1) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + i;
  return v;
}

TEST(Runner, PadPolicyPadsTailIntoOneChunk) {
  FakeIO* io;
  auto r = make_runner(TailPolicy::kPad, &io);
  ASSERT_TRUE(r->prefill(iota_tokens(2 * 8 + 3)).ok());
  EXPECT_EQ(io->calls, (std::vector<std::string>{"p8-", "p8-", "p3"}));  // only the last step's logits are read
  EXPECT_EQ(r->position(), 19);
  EXPECT_FALSE(r->logits().empty());
  io->calls.clear();
  ASSERT_TRUE(r->prefill(iota_tokens(2 * 8)).ok());  // a whole number of chunks: the last one keeps them
  EXPECT_EQ(io->calls, (std::vector<std::string>{"p8-", "p8"}));
  EXPECT_FALSE(r->logits().empty());
}

TEST(Runner, DecodePolicyRoutesTailTokenByToken) {
  FakeIO* io;
  auto r = make_runner(TailPolicy::kDecode, &io);
  ASSERT_TRUE(r->prefill(iota_tokens(2 * 8 + 3)).ok());
  EXPECT_EQ(io->calls, (std::vector<std::string>{"p8-", "p8-", "d", "d", "d"}));
}

// With prefill variants the tail becomes the cheapest mix of smaller full chunks, one padded chunk and
// decode steps in a fixed cost model (a T-row step costs 1 + (T − 1)/16 decode steps), never from measured
// step times: the plan must not change with the machine's load (docs/determinism.md). The FakeIO's steps
// sleep for simulated costs (units of 4 ms) that would favour other plans, to show they are not followed.
std::unique_ptr<Runner> variant_runner(TailPolicy tail, FakeIO** io_out, std::function<double(int64_t)> cost) {
  auto io = std::make_unique<FakeIO>(256, 8, 100, std::vector<int64_t>{2, 8});
  io->step_ms = [cost = std::move(cost)](int64_t T) { return 4.0 * cost(T); };
  *io_out = io.get();
  RunnerOptions o;
  o.tail = tail;
  auto r = Runner::create(std::move(io), o);
  EXPECT_TRUE(r.ok());
  // Measure every step kind once: a full chunk, a 2-token chunk, a decode step.
  EXPECT_TRUE((*r)->prefill(iota_tokens(8)).ok());
  EXPECT_TRUE((*r)->prefill(iota_tokens(2)).ok());
  EXPECT_TRUE((*r)->decode_step(5).ok());
  (*io_out)->calls.clear();
  return std::move(*r);
}

TEST(Runner, AutoTailPadsIntoTheChunkThatHoldsIt) {
  // Model costs in decode steps: pad 8 = 1.44, 2-chunk = 1.06, decode = 1.
  FakeIO* io;
  auto r = variant_runner(TailPolicy::kAuto, &io, [](int64_t T) { return T == 1 ? 5.0 : 20.0; });
  ASSERT_TRUE(r->prefill(iota_tokens(8 + 7)).ok());  // tail 7: pad 8 (1.44) < 2+2+2+1 (4.19) < 7 decodes (7)
  EXPECT_EQ(io->calls, (std::vector<std::string>{"p8-", "p7"}));
  io->calls.clear();
  ASSERT_TRUE(r->prefill(iota_tokens(1)).ok());  // 1 decode (1) < pad 2 (1.06)
  EXPECT_EQ(io->calls, (std::vector<std::string>{"d"}));
  EXPECT_EQ(r->position(), 8 + 2 + 1 + 15 + 1);
}

TEST(Runner, AutoTailPlanDoesNotFollowMeasuredStepTimes) {
  // Step times where 2 + pad 2 (16 units) would beat pad 8 (32) and 2 + decode (28): the model still pads
  // into 8 (1.44 < 2 + decode 2.06 < 2 + pad 2 2.13), on every prompt, as a runner with no timings does.
  for (bool timed : {true, false}) {
    FakeIO* io;
    auto r = timed ? variant_runner(TailPolicy::kAuto, &io, [](int64_t T) { return T == 1 ? 20.0 : 4.0 * static_cast<double>(T); })
                   : variant_runner(TailPolicy::kAuto, &io, [](int64_t) { return 0.0; });
    for (int rep = 0; rep < 2; ++rep) {
      io->calls.clear();
      ASSERT_TRUE(r->prefill(iota_tokens(3)).ok());
      EXPECT_EQ(io->calls, (std::vector<std::string>{"p3"})) << (timed ? "timed" : "untimed") << " prompt " << rep;
    }
  }
}

TEST(Runner, PadAndDecodePoliciesKeepTheirMeaningWithVariants) {
  FakeIO* io;
  // kPad never decodes a prompt token: even where one decode step (5 ms) beats a padded chunk (20 ms).
  auto pad = variant_runner(TailPolicy::kPad, &io, [](int64_t T) { return T == 1 ? 5.0 : 20.0; });
  ASSERT_TRUE(pad->prefill(iota_tokens(1)).ok());
  EXPECT_EQ(io->calls, (std::vector<std::string>{"p1"}));
  // kDecode never pads: full chunks of every size, the rest token by token.
  auto dec = variant_runner(TailPolicy::kDecode, &io, [](int64_t T) { return T == 1 ? 20.0 : 4.0 * static_cast<double>(T); });
  ASSERT_TRUE(dec->prefill(iota_tokens(8 + 5)).ok());
  // The full chunk comes first; 2 + 2 + decode cost the same in any order, so sorted.
  ASSERT_FALSE(io->calls.empty());
  EXPECT_EQ(io->calls.front(), "p8-");
  std::vector<std::string> steps;
  for (std::string c : io->calls) {
    if (c.back() == '-') c.pop_back();
    steps.push_back(c);
  }
  std::sort(steps.begin(), steps.end());
  EXPECT_EQ(steps, (std::vector<std::string>{"d", "p2", "p2", "p8"}));
}

TEST(Runner, OverCapacityIsRejectedBeforeAnyStep) {
  FakeIO* io;
  auto r = make_runner(TailPolicy::kPad, &io, /*context=*/20);
  ASSERT_TRUE(r->prefill(iota_tokens(12)).ok());
  io->calls.clear();
  EXPECT_FALSE(r->can_accept(9));
  Status st = r->prefill(iota_tokens(9));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kCapacityExceeded);
  EXPECT_TRUE(io->calls.empty());  // nothing ran: not even the first full chunk
  EXPECT_EQ(r->position(), 12);
  EXPECT_EQ(r->capacity_left(), 8);
}

TEST(Runner, GenerateGreedyStopsAtMaxTokensAndFeedsAllButLast) {
  FakeIO* io;
  auto r = make_runner(TailPolicy::kPad, &io);
  GenerationConfig g;
  g.max_new_tokens = 4;
  std::vector<int32_t> streamed;
  auto out = r->generate(std::vector<int32_t>{5}, g, [&](int32_t t) {
    streamed.push_back(t);
    return true;
  });
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->tokens, (std::vector<int32_t>{6, 7, 8, 9}));
  EXPECT_EQ(streamed, out->tokens);
  EXPECT_EQ(out->stop, GenerationResult::Stop::kMaxTokens);
  EXPECT_EQ(r->position(), 1 + 3);  // prompt + 3 fed tokens; the 4th is committed by the next call
  // Continuation: the unfed last token opens the next call's prompt; an empty prompt instead re-samples
  // from the last logits (the same position).
  g.max_new_tokens = 1;
  auto again = r->generate({}, g);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->tokens, (std::vector<int32_t>{9}));
  auto more = r->generate(std::vector<int32_t>{9}, g);
  ASSERT_TRUE(more.ok());
  EXPECT_EQ(more->tokens, (std::vector<int32_t>{10}));
  EXPECT_EQ(r->position(), 5);
}

TEST(Runner, GenerateStopsAtEosAndStopTokensAndContextEnd) {
  FakeIO* io;
  auto r = make_runner(TailPolicy::kPad, &io);
  GenerationConfig g;
  g.max_new_tokens = 50;
  auto out = r->generate(std::vector<int32_t>{97}, g);  // 98, 99, 0 (eos)
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->tokens, (std::vector<int32_t>{98, 99, 0}));
  EXPECT_EQ(out->stop, GenerationResult::Stop::kStopToken);

  r->reset();
  g.stop_tokens = {13};
  out = r->generate(std::vector<int32_t>{10}, g);
  EXPECT_EQ(out->tokens, (std::vector<int32_t>{11, 12, 13}));

  auto small = make_runner(TailPolicy::kPad, &io, /*context=*/4);
  g.stop_tokens.clear();
  out = small->generate(std::vector<int32_t>{20, 21}, g);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->stop, GenerationResult::Stop::kContextFull);
  EXPECT_EQ(out->tokens, (std::vector<int32_t>{22, 23, 24}));
  EXPECT_EQ(small->position(), 4);
}

TEST(Runner, CancelFlagStopsBetweenSteps) {
  FakeIO* io;
  auto r = make_runner(TailPolicy::kPad, &io);
  std::atomic<bool> cancel{false};
  GenerationConfig g;
  g.max_new_tokens = 50;
  g.cancel = &cancel;
  auto out = r->generate(std::vector<int32_t>{1}, g, [&](int32_t t) {
    if (t == 3) cancel = true;
    return true;
  });
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->stop, GenerationResult::Stop::kCancelled);
  EXPECT_EQ(out->tokens, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(r->position(), 2);  // prompt + token 2; token 3 was returned but never fed
}

// Ctrl-C during a long prompt: the flag is read before every prefill step, so the chunk in progress
// finishes and nothing after it runs; what ran stays committed and the runner stays usable.
TEST(Runner, CancelFlagStopsPrefillAfterTheChunkInProgress) {
  auto io_owned = std::make_unique<FakeIO>(64, 8, 100);
  FakeIO* io = io_owned.get();
  std::atomic<bool> cancel{false};
  RunnerOptions o;
  o.tail = TailPolicy::kPad;
  bool armed = true;
  o.on_prefill_progress = [&](int64_t done, int64_t) {
    if (armed && done == 8) cancel = true, armed = false;  // set while the first chunk's progress is reported
  };
  auto created = Runner::create(std::move(io_owned), o);
  ASSERT_TRUE(created.ok());
  Runner& r = **created;
  GenerationConfig g;
  g.max_new_tokens = 5;
  g.cancel = &cancel;
  int streamed = 0;
  auto out = r.generate(iota_tokens(5 * 8 + 3), g, [&](int32_t) { return ++streamed, true; });
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  EXPECT_EQ(out->stop, GenerationResult::Stop::kCancelled);
  EXPECT_TRUE(out->tokens.empty());
  EXPECT_EQ(streamed, 0);
  EXPECT_EQ(io->calls, (std::vector<std::string>{"p8-"}));  // exactly the first chunk
  EXPECT_EQ(r.position(), 8);
  EXPECT_EQ(r.stats().prompt_tokens, 8);  // the stats count what ran
  EXPECT_GT(r.stats().prefill_ms, 0.0);
  EXPECT_TRUE(r.logits().empty());  // a skipped-logits chunk was the last step

  // Usable as is: prefilling the rest continues exactly where the cancelled prompt stopped.
  cancel = false;
  io->calls.clear();
  auto rest = iota_tokens(4 * 8 + 3, 9);
  out = r.generate(rest, g);
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  EXPECT_EQ(out->stop, GenerationResult::Stop::kMaxTokens);
  EXPECT_EQ(out->tokens.front(), 44);  // after token 43, the last of the whole prompt
  EXPECT_EQ(r.position(), 5 * 8 + 3 + 4);
}

TEST(Runner, PrefillAloneIsCancellableAndGenerationStartsCancelled) {
  FakeIO* io;
  auto r = make_runner(TailPolicy::kDecode, &io);
  std::atomic<bool> cancel{true};
  Status st = r->prefill(iota_tokens(19), &cancel);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kCancelled);
  EXPECT_TRUE(io->calls.empty());  // already set: not one step
  EXPECT_EQ(r->position(), 0);

  cancel = false;
  ASSERT_TRUE(r->prefill(iota_tokens(19), &cancel).ok());
  EXPECT_EQ(io->calls, (std::vector<std::string>{"p8-", "p8-", "d", "d", "d"}));
  EXPECT_EQ(r->position(), 19);

  cancel = true;  // start(): the Generation is over before its first token
  GenerationConfig g;
  g.cancel = &cancel;
  auto gen = r->start(iota_tokens(3, 20), g);
  ASSERT_TRUE(gen.ok());
  auto tok = (*gen)->next();
  ASSERT_TRUE(tok.ok());
  EXPECT_FALSE(tok->has_value());
  EXPECT_EQ((*gen)->stop_reason(), GenerationResult::Stop::kCancelled);
  EXPECT_EQ(r->position(), 19);
}

TEST(Runner, EmptyPromptWithNothingToContinueIsAnError) {
  FakeIO* io;
  auto r = make_runner(TailPolicy::kPad, &io);
  auto out = r->generate({}, GenerationConfig{});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code(), ErrorCode::kInvalidArgument);
}

TEST(Runner, InvalidSamplingIsRejectedBeforeAnyStep) {
  FakeIO* io;
  auto r = make_runner(TailPolicy::kPad, &io);
  GenerationConfig g;
  g.sampling.top_p = 2.0f;
  auto out = r->generate(iota_tokens(3), g);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(out.error().message(), "generate: sampling: top_p: expected a number in (0, 1] (1 = off), got 2");
  EXPECT_TRUE(io->calls.empty());
  EXPECT_EQ(r->position(), 0);
  g.sampling.top_p = 1.0f;
  g.sampling.temperature = std::numeric_limits<float>::quiet_NaN();
  auto gen = r->start(iota_tokens(3), g);
  ASSERT_FALSE(gen.ok());
  EXPECT_NE(gen.error().message().find("temperature"), std::string::npos);
  EXPECT_TRUE(io->calls.empty());
}

// Logits the sampler cannot use name the step; -inf entries (masked tokens) are fine while one is not.
TEST(Runner, UnusableLogitsAreAnErrorNamingTheStep) {
  const float inf = std::numeric_limits<float>::infinity();
  FakeIO* io;
  auto r = make_runner(TailPolicy::kPad, &io);
  io->edit_logits = [&](std::vector<float>& l, int64_t) {
    for (size_t i = 0; i + 1 < l.size(); i += 2) l[i] = -inf;  // half the vocab masked
  };
  GenerationConfig g;
  g.max_new_tokens = 4;
  g.ignore_eos = true;
  g.sampling.temperature = 0.7f;
  auto fine = r->generate(iota_tokens(3), g);
  ASSERT_TRUE(fine.ok()) << fine.error().to_string();
  for (int32_t t : fine->tokens) EXPECT_EQ(t % 2, 1) << t;

  r->reset();
  io->edit_logits = [&](std::vector<float>& l, int64_t pos) {
    if (pos == 5) l[42] = inf;  // the logits after decode step 2 (its token at position 4)
  };
  auto out = r->generate(iota_tokens(3), g);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code(), ErrorCode::kExecution);
  EXPECT_NE(out.error().message().find("generate: decode step 2 (position 4): logits contain +inf at id 42"),
            std::string::npos)
      << out.error().message();
  EXPECT_EQ(r->position(), 5);
  EXPECT_EQ(r->generate({}, g).error().code(), ErrorCode::kNeedsReset);

  r->reset();
  io->edit_logits = [&](std::vector<float>& l, int64_t) { std::fill(l.begin(), l.end(), -inf); };
  out = r->generate(iota_tokens(3), g);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("the prompt's last step (position 2): every logit is -inf"), std::string::npos)
      << out.error().message();

  // reset() makes the runner usable again.
  r->reset();
  io->edit_logits = nullptr;
  EXPECT_TRUE(r->generate(iota_tokens(3), g).ok());
}

}  // namespace
}  // namespace hfs
