// The scheduler on a real engine (a tiny exported program, 3 sequences): requests submitted from several
// threads at once each get exactly the tokens the same prompt gets alone on a fresh engine; a cancelled
// request frees its sequence; a prompt extending a finished one reuses its cache (cached_tokens).
#include "server/scheduler.h"

#include <gtest/gtest.h>

#include <thread>

#include "support/hf_static_fixture.h"

namespace hfs::server {
namespace {

test::TinyModel model() {
  test::TinyModel m{"llama", 4, 64};
  m.sequences = 3;
  return m;
}

std::unique_ptr<Engine> engine() {
  auto e = Engine::load(test::tiny_program(model()));
  EXPECT_TRUE(e.ok()) << e.error().to_string();
  return std::move(*e);
}

GenerationConfig greedy(int32_t n) {
  GenerationConfig g;
  g.max_new_tokens = n;
  g.ignore_eos = true;
  return g;
}

// The reference: the prompt alone on a fresh engine.
std::vector<int32_t> solo(std::span<const int32_t> prompt, int32_t n) {
  auto e = engine();
  auto id = e->add(prompt, greedy(n));
  EXPECT_TRUE(id.ok());
  while (!e->idle()) EXPECT_TRUE(e->step().ok());
  return e->sequence(*id)->generated;
}

std::vector<int32_t> wait_all(Job& job) {
  size_t seen = 0;
  while (job.wait(seen, std::chrono::milliseconds(100))) {
    std::lock_guard<std::mutex> l(job.mu);
    seen = job.tokens.size();
  }
  std::lock_guard<std::mutex> l(job.mu);
  return job.tokens;
}

TEST(Scheduler, ConcurrentRequestsGetTheirSoloTokens) {
  Metrics metrics;
  Scheduler s(engine(), {.parallel = 3, .max_queue = 16, .step_delay_ms = 0, .disk = nullptr}, metrics);
  constexpr int kJobs = 8;
  std::vector<std::vector<int32_t>> prompts, got(kJobs);
  for (int i = 0; i < kJobs; ++i) prompts.push_back(test::random_tokens(3 + 5 * i % 17, 512, 100 + i));
  std::vector<std::thread> threads;
  for (int i = 0; i < kJobs; ++i)
    threads.emplace_back([&, i] {
      auto job = std::make_shared<Job>();
      job->prompt = prompts[static_cast<size_t>(i)];
      job->config = greedy(6 + i);
      ASSERT_EQ(s.submit(job), Scheduler::Admission::kQueued);
      got[static_cast<size_t>(i)] = wait_all(*job);
      EXPECT_EQ(job->end, Job::End::kLength);
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < kJobs; ++i) EXPECT_EQ(got[static_cast<size_t>(i)], solo(prompts[static_cast<size_t>(i)], 6 + i)) << i;
  EXPECT_EQ(metrics.busy(), 0);
}

TEST(Scheduler, CancelFreesTheSequenceAndQueueIsBounded) {
  Metrics metrics;
  Scheduler s(engine(), {.parallel = 1, .max_queue = 1, .step_delay_ms = 5, .disk = nullptr}, metrics);
  auto a = std::make_shared<Job>(), b = std::make_shared<Job>(), c = std::make_shared<Job>();
  for (auto* j : {&a, &b, &c}) (*j)->prompt = test::random_tokens(4, 512, 9), (*j)->config = greedy(40);
  ASSERT_EQ(s.submit(a), Scheduler::Admission::kQueued);
  ASSERT_TRUE(a->wait(0, std::chrono::seconds(10)));  // a runs
  ASSERT_EQ(s.submit(b), Scheduler::Admission::kQueued);
  EXPECT_EQ(s.submit(c), Scheduler::Admission::kQueueFull);
  a->cancel = true;
  wait_all(*a);
  EXPECT_EQ(a->end, Job::End::kCancelled);
  EXPECT_LT(a->tokens.size(), 40u);
  EXPECT_EQ(wait_all(*b).size(), 40u);  // b got the freed sequence
  s.drain(5);
  EXPECT_EQ(s.submit(c), Scheduler::Admission::kDraining);
}

TEST(Scheduler, PromptExtendingAFinishedOneReusesItsCache) {
  Metrics metrics;
  Scheduler s(engine(), {.parallel = 2, .max_queue = 4, .step_delay_ms = 0, .disk = nullptr}, metrics);
  auto first = std::make_shared<Job>();
  first->prompt = test::random_tokens(10, 512, 3);
  first->config = greedy(5);
  ASSERT_EQ(s.submit(first), Scheduler::Admission::kQueued);
  const std::vector<int32_t> reply = wait_all(*first);
  // The next turn: the first prompt, the reply, and more. The caches hold the prompt and the reply's
  // first 4 tokens (the last one was never fed).
  auto next = std::make_shared<Job>();
  next->prompt = first->prompt;
  next->prompt.insert(next->prompt.end(), reply.begin(), reply.end());
  const std::vector<int32_t> more = test::random_tokens(3, 512, 4);
  next->prompt.insert(next->prompt.end(), more.begin(), more.end());
  next->config = greedy(6);
  ASSERT_EQ(s.submit(next), Scheduler::Admission::kQueued);
  EXPECT_EQ(wait_all(*next), solo(next->prompt, 6));
  EXPECT_EQ(next->cached_tokens, 10 + 4);
}

}  // namespace
}  // namespace hfs::server
