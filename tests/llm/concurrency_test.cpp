// Reliability of the runner on a real exported program: shared programs across threads, cancellation
// between steps, and errors that leave the runner where it was.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>

#include "support/hf_static_fixture.h"

namespace hfs {
namespace {

std::vector<int32_t> greedy(Runner& r, const std::vector<int32_t>& prompt, int n) {
  GenerationConfig g;
  g.max_new_tokens = n;
  g.ignore_eos = true;
  auto out = r.generate(prompt, g);
  EXPECT_TRUE(out.ok());
  return out.ok() ? out->tokens : std::vector<int32_t>{};
}

// One Program, several Runners on different threads: each result equals the serial run of its prompt.
void expect_threads_match_serial(const RunnerOptions& options) {
  auto prog = Program::load(test::tiny_program({"mistral", 4, 48, 6}));
  ASSERT_TRUE(prog.ok());
  const int kThreads = 4;
  std::vector<std::vector<int32_t>> prompts, serial(kThreads), parallel(kThreads);
  for (int t = 0; t < kThreads; ++t) prompts.push_back(test::random_tokens(5 + 3 * t, 512, 100 + t));
  for (int t = 0; t < kThreads; ++t) {
    auto r = Runner::create(*prog, options);
    ASSERT_TRUE(r.ok());
    serial[t] = greedy(**r, prompts[t], 16);
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 3; ++rep) {  // repeat so the threads really overlap
        auto r = Runner::create(*prog, options);
        if (!r.ok()) return;
        parallel[t] = greedy(**r, prompts[t], 16);
        if (parallel[t] != serial[t]) return;
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(parallel[t], serial[t]) << "thread " << t;
}

TEST(RunnerConcurrency, SharedProgramAcrossThreadsMatchesSerial) { expect_threads_match_serial({}); }

// The same on cpu_fast: the Runners' methods all run on the process's one 2-thread pool, whose jobs the
// runner threads take turns at, so pool workers, runner threads and the shared read-only constants (mmap)
// all overlap.
TEST(RunnerConcurrency, SharedProgramOnCpuFastAcrossThreadsMatchesSerial) {
  RunnerOptions o;
  o.io.method.backends.backends = {"cpu_fast"};
  o.io.method.backends.settings["cpu_fast"] = Value::object();
  o.io.method.backends.settings["cpu_fast"].set("threads", Value(2));
  expect_threads_match_serial(o);
}

// A stop flag ends generation between steps; the position counts exactly the fed tokens, and the runner
// continues as if never interrupted.
// The cancellation tests' setup: a fresh runner, the prompt, the uninterrupted 12-token greedy result.
struct CancelCase {
  std::vector<int32_t> prompt = test::random_tokens(6, 512, 7);
  std::vector<int32_t> expected;
  std::unique_ptr<Runner> runner;
  GenerationConfig config;

  explicit CancelCase(std::atomic<bool>* stop) {
    const std::string program = test::tiny_program({"llama", 4, 48});
    auto full = test::open_runner(program);
    EXPECT_TRUE(full.ok());
    if (full.ok()) expected = greedy(**full, prompt, 12);
    auto r = test::open_runner(program);
    EXPECT_TRUE(r.ok());
    if (r.ok()) runner = std::move(*r);
    config.max_new_tokens = 12;
    config.ignore_eos = true;
    config.cancel = stop;
  }
};

TEST(RunnerConcurrency, CancelBetweenStepsLeavesAUsableRunner) {
  std::atomic<bool> stop{false};
  CancelCase c(&stop);
  ASSERT_TRUE(c.runner != nullptr && c.expected.size() == 12u);
  auto& r = c.runner;
  const auto& prompt = c.prompt;
  const auto& expected = c.expected;
  GenerationConfig& g = c.config;
  auto out = r->generate(prompt, g, [&](int32_t) {
    static int seen = 0;
    if (++seen == 5) stop = true;
    return true;
  });
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->stop, GenerationResult::Stop::kCancelled);
  ASSERT_EQ(out->tokens.size(), 5u);
  EXPECT_EQ(std::vector<int32_t>(expected.begin(), expected.begin() + 5), out->tokens);
  EXPECT_EQ(r->position(), static_cast<int64_t>(prompt.size()) + 4);  // the 5th token was never fed
  // Continue: feed the unfed token, get the rest of the uninterrupted sequence.
  g.cancel = nullptr;
  g.max_new_tokens = 7;
  auto rest = r->generate(std::vector<int32_t>{out->tokens.back()}, g);
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(rest->tokens, std::vector<int32_t>(expected.begin() + 5, expected.end()));
}

// The cancel flag written by another thread: once it is set (the callback waits until the other thread
// has stored it), generation ends before the next step, with the same tokens and position as above.
TEST(RunnerConcurrency, CancelFromAnotherThreadStopsBeforeTheNextStep) {
  std::atomic<bool> stop{false};
  CancelCase c(&stop);
  ASSERT_TRUE(c.runner != nullptr && c.expected.size() == 12u);
  std::atomic<int> seen{0};
  std::atomic<bool> stored{false};
  std::thread canceller([&] {
    while (seen.load() < 3) std::this_thread::yield();
    stop.store(true);
    stored.store(true);
  });
  auto out = c.runner->generate(c.prompt, c.config, [&](int32_t) {
    if (seen.fetch_add(1) + 1 == 3)
      while (!stored.load()) std::this_thread::yield();
    return true;
  });
  canceller.join();
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->stop, GenerationResult::Stop::kCancelled);
  EXPECT_EQ(out->tokens, std::vector<int32_t>(c.expected.begin(), c.expected.begin() + 3));
  EXPECT_EQ(c.runner->position(), static_cast<int64_t>(c.prompt.size()) + 2);
}

// A rejected step (bad token id) runs nothing: position and logits unchanged, the runner still works.
TEST(RunnerConcurrency, RejectedStepLeavesStateUnchanged) {
  const std::string program = test::tiny_program({"llama", 4, 48});
  auto r = test::open_runner(program);
  ASSERT_TRUE(r.ok());
  { auto st = (*r)->prefill(test::random_tokens(5, 512, 9)); ASSERT_TRUE(st.ok()) << st.error().to_string(); }
  std::vector<float> before((*r)->logits().begin(), (*r)->logits().end());
  auto bad = (*r)->decode_step(100000);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ((*r)->position(), 5);
  EXPECT_EQ(std::vector<float>((*r)->logits().begin(), (*r)->logits().end()), before);
  EXPECT_FALSE((*r)->io().needs_reset());
  EXPECT_TRUE((*r)->decode_step(7).ok());
}

}  // namespace
}  // namespace hfs
