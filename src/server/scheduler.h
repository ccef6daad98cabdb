// server/scheduler.h — one thread owns the Engine: it admits queued requests as sequences between steps
// (continuous batching), runs the steps, and hands each request's tokens to it through its Job.
//
//   auto job = std::make_shared<Job>();
//   job->prompt = ids; job->config.max_new_tokens = 64; job->deadline = Clock::now() + 600s;
//   if (scheduler.submit(job) != Scheduler::Admission::kQueued) return reply_429_or_503();
//   size_t seen = 0;
//   while (job->wait(seen, 1s)) { ... read job->tokens under job->mu ... }   // false: done, all read
//   job->cancel = true;   // any time: the client went away; its sequence is removed at the next step
//
// A request waits in a bounded queue while every sequence slot (--parallel) generates. Finished sequences
// stay in the engine for the prompt cache (server/prompt_cache.h) until their index is needed: a new
// request forks the one sharing its longest prefix and prefills only the rest (Job::cached_tokens).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "hfstatic/engine.h"
#include "server/logprobs.h"
#include "server/metrics.h"
#include "server/disk_cache.h"
#include "server/prompt_cache.h"

namespace hfs::server {

using Clock = std::chrono::steady_clock;

struct Job {
  enum class End : uint8_t { kNone, kStop, kLength, kCancelled, kTimeout, kShutdown, kError };

  // Set before submit.
  std::vector<int32_t> prompt;
  GenerationConfig config;
  Clock::time_point arrived = Clock::now();
  Clock::time_point deadline = Clock::time_point::max();
  // Log probabilities (docs/server.md): -1 off, else the alternatives to list per token (0: the chosen
  // token's only). Such a job runs without drafts, so each of its steps samples one token from logits the
  // scheduler can read.
  int32_t top_logprobs = -1;
  // n > 1: the request's first choice, whose prompt this one forks once it is prefilled (its cache blocks
  // shared, copied on write) rather than prefilling the same prompt again. Null for the first choice.
  std::shared_ptr<Job> fork_of;
  // Set by the request's thread at any time: the client is gone, or a stop string completed.
  std::atomic<bool> cancel{false};

  // Written by the scheduler under `mu` (read them under it too); `cv` signals each change.
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int32_t> tokens;  // generated so far
  bool started = false;         // admitted as a sequence
  bool done = false;
  End end = End::kNone;
  std::string error;            // End::kError: why
  int64_t cached_tokens = 0;    // prompt tokens reused from the prompt cache
  std::vector<TokenLogprobs> logprobs;  // top_logprobs >= 0: one per token of `tokens`

  // The scheduler thread's own: the job's sequence while it runs (siblings fork it), and for logprobs the
  // constraint's mask followed beside the engine's, and scratch.
  SequenceId sequence = -1;
  std::unique_ptr<TokenConstraint> logprob_constraint;
  std::vector<uint8_t> logprob_mask;
  LogprobScratch logprob_scratch;

  // Waits until more than `seen` tokens exist, the job is done, or `timeout` passes. False when done and
  // every token was seen (nothing more will come).
  bool wait(size_t seen, std::chrono::milliseconds timeout);
};

class Scheduler {
 public:
  struct Options {
    int parallel = 4;
    int max_queue = 64;
    int step_delay_ms = 0;
    // The prompt cache's disk tier (serve --cache-dir), used on the scheduler's thread only; null: none.
    std::shared_ptr<DiskPromptCache> disk;
  };
  Scheduler(std::unique_ptr<Engine> engine, const Options& options, Metrics& metrics);
  ~Scheduler();

  enum class Admission : uint8_t { kQueued, kQueueFull, kDraining };
  Admission submit(std::shared_ptr<Job> job);
  // The choices of one request (n > 1), queued together or not at all; each after the first names the
  // first as Job::fork_of.
  Admission submit(const std::vector<std::shared_ptr<Job>>& jobs);
  // Stops admitting (submit answers kDraining), lets running and queued jobs finish for up to `seconds`,
  // cancels the rest (End::kShutdown) and stops the thread.
  void drain(double seconds);

  // Runs f on the scheduler's thread with the engine to itself, and returns what f returns: admission
  // pauses (queued requests wait, and are admitted after f), running requests finish first, and the prompt
  // cache's kept sequences are dropped so that f finds every sequence index free. bench/serve times the
  // engine in-process this way between rounds of requests to the same server. One call at a time (others
  // wait); during drain() or after it, an error.
  Result<std::string> run_alone(const std::function<Result<std::string>(Engine&)>& f);

  const ModelInfo& info() const { return engine_->info(); }
  int parallel() const { return options_.parallel; }

 private:
  void loop();
  void admit(const std::shared_ptr<Job>& job);
  void end_job(Job& job, Job::End end, const std::string& error = {});
  void drop_cancelled();
  void on_event(const StepEvent& ev, Clock::time_point now);
  void record_logprobs(Job& job, SequenceId id, int32_t token);
  static bool waits_for_parent(const Job& job);
  void publish_gauges();
  void free_pool_for_running();
  struct AloneTask;
  void finish_alone(AloneTask& task, Result<std::string> result);

  std::unique_ptr<Engine> engine_;
  Options options_;
  Metrics& metrics_;

  std::mutex mu_;  // guards queue_, alone_, draining_, shutdown_, stop_
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::shared_ptr<AloneTask> alone_;  // run_alone's pending call (null: none)
  std::mutex alone_callers_;          // one run_alone call at a time
  bool draining_ = false, shutdown_ = false, stop_ = false;

  // The scheduler thread's own state.
  struct Running {
    std::shared_ptr<Job> job;
    Clock::time_point last_token;
  };
  std::unordered_map<SequenceId, Running> running_;
  PromptCache cache_;
  // A pool smaller than max_sequences × context (export --pool-slots) can run short while kept sequences
  // hold blocks: then they give way before running sequences would starve. 0 when the pool always suffices.
  int64_t blocks_per_sequence_step_ = 0;
  std::atomic<int64_t> active_{0};  // queued + running, for drain()
  std::thread thread_;
};

}  // namespace hfs::server
