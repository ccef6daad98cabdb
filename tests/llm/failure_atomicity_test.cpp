// Failure atomicity (docs/io-contract-v1.md §6, docs/reliability.md, "Runner steps"): a step that fails part-way
// through execute() — after some layers already wrote their K/V rows — must not advance the position,
// must mark the runner as needing reset, and every later request must fail with kNeedsReset without
// running anything until reset(); after reset() the runner must behave exactly like a fresh one.
//
// The failure is injected by the "test_fault" backend (support/fault_backend.h) at node "l1.attn_norm"
// of a 2-layer model: layer 0's kv_cache_write has run by then, layer 1's has not.
#include <gtest/gtest.h>

#include <cstring>

#include "support/fault_backend.h"
#include "support/hf_static_fixture.h"

namespace hfs {
namespace {

constexpr const char* kFailNode = "l1.attn_norm";
using Bytes = std::vector<std::vector<std::byte>>;

Bytes cache_bytes(Runner& r) {
  Bytes out;
  for (const TensorView& v : r.io().cache_views()) {
    auto* p = static_cast<const std::byte*>(v.ptr);
    out.emplace_back(p, p + v.nbytes());
  }
  return out;
}

std::vector<float> copy(std::span<const float> s) { return {s.begin(), s.end()}; }
// Error codes by name, so a failed expectation prints "capacity_exceeded", not two raw bytes.
std::string code(const Error& e) { return std::string(error_code_name(e.code())); }

class FailureAtomicity : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { test::FaultSwitch::disarm(); }
  void TearDown() override { test::FaultSwitch::disarm(); }

  // The test_fault backend takes kFailNode; the backend under test (GetParam()) takes the rest.
  RunnerOptions options() const {
    RunnerOptions o;
    o.tail = TailPolicy::kPad;
    BackendOptions& b = o.io.method.backends;
    b.backends = {test::kFaultBackend, GetParam()};
    b.settings[test::kFaultBackend] = test::fault_settings(kFailNode);
    if (GetParam() == "cpu_fast") {
      b.settings["cpu_fast"] = Value::object();
      b.settings["cpu_fast"].set("threads", Value(2));
    }
    return o;
  }
  std::unique_ptr<Runner> open(RunnerOptions o) const {
    auto r = Runner::load(program_, o);
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    return r.ok() ? std::move(*r) : nullptr;
  }

  const std::string program_ = test::tiny_program({"llama", 4, 24});  // C = 4, N = 24, 2 layers
};

GenerationConfig greedy(int n) {
  GenerationConfig g;
  g.max_new_tokens = n;
  g.ignore_eos = true;
  return g;
}

// Layer 0 (cache views 0, 1) was written by the failed step; layer 1 (views 2, 3) was never reached.
void expect_partially_written(const Bytes& before, const Bytes& after) {
  ASSERT_EQ(before.size(), 4u);
  ASSERT_EQ(after.size(), 4u);
  EXPECT_TRUE(after[0] != before[0]) << "layer 0 K: the failed step should have written its rows";
  EXPECT_TRUE(after[1] != before[1]) << "layer 0 V";
  EXPECT_TRUE(after[2] == before[2]) << "layer 1 K: written past the failing node";
  EXPECT_TRUE(after[3] == before[3]) << "layer 1 V";
}

// Every kind of request fails with kNeedsReset, runs no method (the fault backend sees no call) and
// leaves position and cache bytes exactly as the failure left them.
void expect_refuses_until_reset(Runner& r, int64_t position) {
  const Bytes caches = cache_bytes(r);
  const int64_t calls = test::FaultSwitch::calls();
  auto expect_needs_reset = [&](const Status& st, const char* what) {
    ASSERT_FALSE(st.ok()) << what;
    EXPECT_EQ(code(st.error()), "needs_reset") << what << ": " << st.error().to_string();
    EXPECT_NE(st.error().message().find("reset()"), std::string::npos) << st.error().message();
  };
  const auto prompt = test::random_tokens(5, 512, 21);
  expect_needs_reset(r.prefill(prompt), "prefill");
  expect_needs_reset(r.prefill(test::random_tokens(40, 512, 22)), "over-capacity prefill");  // not kCapacityExceeded
  auto d = r.decode_step(7);
  expect_needs_reset(d.ok() ? Status(Ok{}) : Status(d.error()), "decode_step");
  auto g = r.generate(prompt, greedy(4));
  expect_needs_reset(g.ok() ? Status(Ok{}) : Status(g.error()), "generate");
  auto c = r.generate({}, greedy(4));  // continuing: not "nothing to continue from"
  expect_needs_reset(c.ok() ? Status(Ok{}) : Status(c.error()), "generate (continue)");
  EXPECT_TRUE(r.io().needs_reset());
  EXPECT_EQ(r.position(), position);
  EXPECT_EQ(test::FaultSwitch::calls(), calls) << "a method ran while the runner needed reset";
  EXPECT_TRUE(cache_bytes(r) == caches) << "a refused request touched the caches";
}

// After reset(): zeroed caches like a fresh load, and prefill logits + generated tokens bit-identical.
void expect_like_fresh(Runner& r, Runner& fresh, std::span<const int32_t> prompt) {
  r.reset();
  EXPECT_FALSE(r.io().needs_reset());
  EXPECT_EQ(r.position(), 0);
  EXPECT_TRUE(cache_bytes(r) == cache_bytes(fresh)) << "reset() must zero the caches like a fresh load";
  ASSERT_TRUE(fresh.prefill(prompt).ok());
  ASSERT_TRUE(r.prefill(prompt).ok());
  const auto a = copy(fresh.logits()), b = copy(r.logits());
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  auto ga = fresh.generate({}, greedy(8));
  auto gb = r.generate({}, greedy(8));
  ASSERT_TRUE(ga.ok() && gb.ok());
  EXPECT_EQ(gb->tokens, ga->tokens);
  EXPECT_TRUE(cache_bytes(r) == cache_bytes(fresh)) << "caches after the same run differ from a fresh runner's";
}

// A 10-token prompt is chunks [0,4) [4,8) and a padded tail [8,10); the second chunk fails half-way.
TEST_P(FailureAtomicity, PrefillFailingMidChunkNeedsResetAndKeepsPosition) {
  RunnerOptions o = options();
  Runner* runner = nullptr;  // set once loaded; the callback only fires during prefill
  Bytes after_first_chunk;
  o.on_prefill_progress = [&](int64_t done, int64_t) {
    if (done == 4) after_first_chunk = cache_bytes(*runner);
  };
  auto r = open(o);
  ASSERT_TRUE(r);
  runner = r.get();
  const auto prompt = test::random_tokens(10, 512, 11);
  const int64_t calls0 = test::FaultSwitch::calls();
  test::FaultSwitch::arm(2);
  Status st = r->prefill(prompt);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(test::FaultSwitch::calls(), calls0 + 2);  // chunk 1 ran, chunk 2 failed, the tail never ran
  EXPECT_EQ(code(st.error()), "execution");
  const std::string& msg = st.error().message();
  EXPECT_NE(msg.find("method 'prefill'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("backend 'test_fault'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("node 'l1.attn_norm' (rms_norm)"), std::string::npos) << msg;

  EXPECT_TRUE(r->io().needs_reset());
  EXPECT_EQ(r->position(), 4);       // the first chunk stays committed; the failed one does not
  EXPECT_TRUE(r->logits().empty());  // no stale logits from the torn step
  expect_partially_written(after_first_chunk, cache_bytes(*r));
  expect_refuses_until_reset(*r, 4);

  auto fresh = open(options());
  ASSERT_TRUE(fresh);
  expect_like_fresh(*r, *fresh, prompt);
}

// Generation: the third decode step fails; the tokens streamed before it match an unbroken run.
TEST_P(FailureAtomicity, DecodeFailingMidStepNeedsResetAndKeepsPosition) {
  const auto prompt = test::random_tokens(6, 512, 12);
  auto fresh = open(options());
  ASSERT_TRUE(fresh);
  ASSERT_TRUE(fresh->prefill(prompt).ok());
  auto expected = fresh->generate({}, greedy(8));
  ASSERT_TRUE(expected.ok());
  fresh->reset();

  auto r = open(options());
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->prefill(prompt).ok());
  test::FaultSwitch::arm(3);  // token 1 comes from the prefill logits; decodes of tokens 1, 2 succeed
  std::vector<int32_t> streamed;
  Bytes before_step;
  auto out = r->generate({}, greedy(8), [&](int32_t t) {
    streamed.push_back(t);
    before_step = cache_bytes(*r);  // the state the next decode starts from
    return true;
  });
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(code(out.error()), "execution");
  const std::string& msg = out.error().message();
  EXPECT_NE(msg.find("method 'decode'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("node 'l1.attn_norm'"), std::string::npos) << msg;
  EXPECT_EQ(streamed, std::vector<int32_t>(expected->tokens.begin(), expected->tokens.begin() + 3));

  EXPECT_TRUE(r->io().needs_reset());
  EXPECT_EQ(r->position(), 6 + 2);  // two decodes committed, the failed third one not
  EXPECT_TRUE(r->logits().empty());
  expect_partially_written(before_step, cache_bytes(*r));
  expect_refuses_until_reset(*r, 8);
  expect_like_fresh(*r, *fresh, prompt);
}

// The same failure through the stepwise API: next() reports it, and a retried next() does not resume.
TEST_P(FailureAtomicity, StepwiseGenerationDoesNotResumeAfterAFailedStep) {
  auto r = open(options());
  ASSERT_TRUE(r);
  auto gen = r->start(test::random_tokens(6, 512, 13), greedy(8));
  ASSERT_TRUE(gen.ok());
  ASSERT_TRUE((*gen)->next().ok());  // sampled from the prefill logits, nothing fed yet
  test::FaultSwitch::arm(1);
  auto bad = (*gen)->next();  // feeds token 1: fails
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(code(bad.error()), "execution");
  const int64_t calls = test::FaultSwitch::calls();
  auto retry = (*gen)->next();
  ASSERT_FALSE(retry.ok());
  EXPECT_EQ(code(retry.error()), "needs_reset");
  EXPECT_EQ(test::FaultSwitch::calls(), calls);
  EXPECT_EQ(r->position(), 6);
}

INSTANTIATE_TEST_SUITE_P(Backends, FailureAtomicity, ::testing::Values("cpu_ref", "cpu_fast"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace hfs
