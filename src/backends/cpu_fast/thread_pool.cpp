#include "backends/cpu_fast/thread_pool.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>

namespace hfs::cpu_fast {
namespace {

void futex_wait(std::atomic<uint32_t>& word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}
void futex_wake_all(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until pred() or `us` microseconds pass; true if pred() held.
template <typename Pred>
bool spin_until(Pred pred, int us) {
  if (pred()) return true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (pred()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return pred();
  }
}

}  // namespace

int ThreadPool::default_threads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = default_threads();
  workers_.reserve(static_cast<size_t>(threads - 1));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_main(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  claim_.store(0);
  generation_.fetch_add(1);
  futex_wake_all(generation_);
  for (auto& t : workers_) t.join();
}

void ThreadPool::work(uint32_t gen, int thread) {
  uint64_t cur = claim_.load(std::memory_order_acquire);
  for (;;) {
    if (static_cast<uint32_t>(cur >> 32) != gen) return;
    const auto left = static_cast<uint32_t>(cur);
    if (left == 0) return;
    // The CAS succeeds only while job `gen` still has this unclaimed task, so the job cannot have
    // finished and the caller cannot be writing the next job's fn_/ctx_/n_tasks_. (Checking a task
    // index against n_tasks_ *before* the claim, as this once did, read the next job's count and let a
    // late worker claim in a finished generation: tasks ran twice, done_ overshot, the caller hung or
    // returned while its tasks still ran.) Acquire: reads the caller's release store of this job.
    if (!claim_.compare_exchange_weak(cur, cur - 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    const int64_t n = n_tasks_;  // stable until our done_ increment below completes the task
    fn_(ctx_, n - left, thread);
    // seq_cst pairs with the caller's caller_sleeping_ store / done_ load (no lost wake-up).
    if (done_.fetch_add(1) + 1 == static_cast<uint32_t>(n) && caller_sleeping_.load() != 0) futex_wake_all(done_);
    cur = claim_.load(std::memory_order_acquire);
  }
}

void ThreadPool::worker_main(int thread) {
  uint32_t seen = 0;
  for (;;) {
    // Seq-cst on sleepers_/generation_ pairs with run_impl: either the caller sees us sleeping and wakes
    // us, or we see the new generation before sleeping.
    if (!spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; },
                    spin_us_.load(std::memory_order_relaxed))) {
      sleepers_.fetch_add(1);
      while (generation_.load() == seen) futex_wait(generation_, seen);
      sleepers_.fetch_sub(1);
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load()) return;
    work(seen, thread);
  }
}

void ThreadPool::run_impl(int64_t n_tasks, TaskFn fn, void* ctx) {
  if (n_tasks <= 0) return;
  if (workers_.empty() || n_tasks == 1) {
    for (int64_t t = 0; t < n_tasks; ++t) fn(ctx, t, 0);
    return;
  }
  std::lock_guard<std::mutex> lock(run_mu_);
  fn_ = fn;
  ctx_ = ctx;
  n_tasks_ = n_tasks;
  done_.store(0, std::memory_order_relaxed);
  const uint32_t gen = generation_.load(std::memory_order_relaxed) + 1;
  claim_.store(static_cast<uint64_t>(gen) << 32 | static_cast<uint32_t>(n_tasks), std::memory_order_release);
  generation_.store(gen);  // seq_cst: publishes the job
  if (sleepers_.load() != 0) futex_wake_all(generation_);
  work(gen, 0);
  const auto all = static_cast<uint32_t>(n_tasks);
  if (!spin_until([&] { return done_.load(std::memory_order_acquire) == all; }, spin_us_.load())) {
    caller_sleeping_.store(1);
    for (uint32_t d = done_.load(); d != all; d = done_.load()) futex_wait(done_, d);
    caller_sleeping_.store(0);
  }
}

}  // namespace hfs::cpu_fast
