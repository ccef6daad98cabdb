#include "backends/cpu_fast/thread_pool.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <cstdio>
#include <chrono>
#include <thread>
#include <vector>

namespace hfs::cpu_fast {
namespace {

TEST(CpuFastThreadPool, EveryTaskRunsOnceWithValidThreadIndex) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.size(), 3);
  for (int spin : {50, 0}) {  // 0: workers sleep on the futex between every job
    pool.set_spin_us(spin);
    for (int rep = 0; rep < 200; ++rep) {
      std::vector<std::atomic<int>> hits(37);
      std::atomic<bool> bad_thread{false};
      pool.run(37, [&](int64_t t, int thread) {
        hits[static_cast<size_t>(t)].fetch_add(1);
        if (thread < 0 || thread >= 3) bad_thread = true;
      });
      for (auto& h : hits) ASSERT_EQ(h.load(), 1);
      ASSERT_FALSE(bad_thread.load());
    }
  }
}

// Each thread starts on its own range of the job (thread t: tasks [n·t/T, n·(t+1)/T)), so consecutive
// jobs of one shape give every thread the same tasks, and only then takes what is left of the others'.
// Deterministic: each thread's first task waits (bounded) until the other thread has started one, so
// neither can run through its own range and into the other's before both have claimed their first.
TEST(CpuFastThreadPool, EachThreadStartsOnItsOwnRangeThenTakesTheRest) {
  ThreadPool pool(2);
  // A worker whose core another process keeps busy sits out (the pool's contention check), and then the
  // caller rightly runs every task: such a rep says nothing about where the worker starts. So reps go on
  // until the worker has joined 20 of them, and each rep in which it joined is checked.
  int joined = 0;
  for (int rep = 0; rep < 400 && joined < 20; ++rep) {
    std::vector<std::atomic<int>> hits(8);
    std::atomic<int> first[2] = {-1, -1};
    std::atomic<int> started{0};
    std::atomic<bool> benched{false};
    pool.run(8, [&](int64_t t, int thread) {
      hits[static_cast<size_t>(t)].fetch_add(1);
      int none = -1;
      if (first[thread].compare_exchange_strong(none, static_cast<int>(t))) {
        started.fetch_add(1);
        // Hold the first task until the other thread has started too, so neither can take the other's
        // range; a benched worker will not come, and the deadline only guards against a hang.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (started.load() < 2 && !(benched = pool.benched_workers() != 0) && std::chrono::steady_clock::now() < deadline)
          std::this_thread::yield();
      }
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
    // A worker benched by this job's contention check after it had already woken for the job still runs
    // it, and no longer waits: if the caller is descheduled meanwhile, the worker runs range 0 too. Such a
    // rep says nothing about where each thread starts.
    if (benched.load()) continue;
    EXPECT_EQ(first[0].load(), 0);  // the caller: the start of range 0
    if (first[1].load() == -1) continue;  // the worker sat out this rep
    ++joined;
    EXPECT_EQ(first[1].load(), 4);  // the worker: the start of range 1
  }
  // Uneven: 3 tasks on 2 threads are ranges [0, 1) and [1, 3); a range of none (1 task) still runs.
  for (int64_t n : {1, 2, 3, 5}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    pool.run(n, [&](int64_t t) { hits[static_cast<size_t>(t)].fetch_add(1); });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  }
  if (joined == 0) GTEST_SKIP() << "the worker sat out every rep: its core was busy throughout";
}

// Regression (found by ThreadSanitizer): a worker finishing the last task of a job could read the *next*
// job's larger task count while the caller was still publishing it, claim a task in the old generation
// and run the new job's function with a stale context or index, ending that job early (caller's stack
// reused: crash). Back-to-back jobs that grow in size maximize that window; every task checks that it
// belongs to the job that is running.
TEST(CpuFastThreadPool, BackToBackGrowingJobsNeverRunATaskOfAnotherJob) {
  ThreadPool pool(3);
  std::atomic<int> current{-1};
  std::atomic<int> foreign{0}, out_of_range{0};
  for (int job = 0; job < 20000; ++job) {
    const int n = 2 + job % 24;  // 2, 3, ..., 25, 2, ...: mostly each job is larger than the last
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    current.store(job);
    pool.run(n, [&, job](int64_t t) {
      if (current.load() != job) foreign.fetch_add(1);
      if (t < 0 || t >= n) {
        out_of_range.fetch_add(1);
        return;
      }
      hits[static_cast<size_t>(t)].fetch_add(1);
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1) << "job " << job << " of " << n << " tasks";
  }
  EXPECT_EQ(foreign.load(), 0);
  EXPECT_EQ(out_of_range.load(), 0);
}

// One pool shared by several calling threads (several Runners on one backend): run() serializes the
// jobs, and every job still runs each of its tasks exactly once with its own function and context.
TEST(CpuFastThreadPool, ConcurrentCallersEachGetTheirOwnJob) {
  ThreadPool pool(3);
  pool.set_spin_us(0);
  constexpr int kCallers = 3, kJobs = 2000;
  std::vector<std::thread> callers;
  std::vector<int> failures(kCallers, 0);
  for (int c = 0; c < kCallers; ++c)
    callers.emplace_back([&, c] {
      for (int job = 0; job < kJobs; ++job) {
        const int n = 5 + (c * 7 + job) % 29;  // jobs of different sizes interleave
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        pool.run(n, [&](int64_t t) { hits[static_cast<size_t>(t)].fetch_add(c + 1); });
        for (auto& h : hits) failures[static_cast<size_t>(c)] += h.load() != c + 1;
      }
    });
  for (auto& t : callers) t.join();
  for (int c = 0; c < kCallers; ++c) EXPECT_EQ(failures[static_cast<size_t>(c)], 0) << "caller " << c;
}

// The busy-core check: with the process pinned to one CPU the worker waits for that CPU while the caller
// runs tasks, which its schedstat run_delay shows; it must sit out within a few windows, be let back in
// once its hold (0.2 s) is over, and every task must still run exactly once throughout.
TEST(CpuFastThreadPool, WorkerThatWaitsForItsCpuSitsOutAndIsProbedAgain) {
  {
    // A kernel without schedstats has no file, or one that reads "0 0 0": the check cannot see anything.
    std::FILE* f = std::fopen("/proc/thread-self/schedstat", "r");
    long long run = 0, wait = 0, slices = 0;
    const bool counts = f != nullptr && std::fscanf(f, "%lld %lld %lld", &run, &wait, &slices) == 3 && (run | wait | slices) != 0;
    if (f != nullptr) std::fclose(f);
    if (!counts) GTEST_SKIP() << "no schedstat counts: the check is off";
  }
  cpu_set_t all, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &all)) {
      CPU_SET(c, &one);
      break;
    }
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  {
    ThreadPool pool(2);  // the worker inherits the single-CPU affinity
    auto busy_job = [&] {
      std::vector<std::atomic<int>> hits(16);
      pool.run(16, [&](int64_t t) {
        volatile double x = 0;
        for (int i = 0; i < 20000; ++i) x = x + i;
        hits[static_cast<size_t>(t)].fetch_add(1);
      });
      for (auto& h : hits) ASSERT_EQ(h.load(), 1);
    };
    const auto t0 = std::chrono::steady_clock::now();
    auto elapsed = [&] { return std::chrono::steady_clock::now() - t0; };
    while (pool.benched_workers() == 0 && elapsed() < std::chrono::seconds(5)) busy_job();
    EXPECT_EQ(pool.benched_workers(), 1) << "not benched after 5 s of jobs sharing one CPU";
    while (pool.probes() == 0 && elapsed() < std::chrono::seconds(10)) busy_job();
    EXPECT_GE(pool.probes(), 1) << "never let back in";
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof all, &all), 0);
}

TEST(CpuFastThreadPool, SingleThreadPoolRunsInline) {
  ThreadPool pool(1);
  int sum = 0;
  pool.run(10, [&](int64_t t) { sum += static_cast<int>(t); });
  EXPECT_EQ(sum, 45);
}

void spin_for(std::chrono::microseconds us) {
  const auto until = std::chrono::steady_clock::now() + us;
  while (std::chrono::steady_clock::now() < until) {
  }
}

// Runs empty jobs (accounting on), pausing past the spin window before each, until one had to wake a
// sleeping worker; returns how many it ran (at most 1000). It counts tries instead of timing: on a busy
// machine a worker may need many pauses to reach its futex, but one that spins forever is never woken.
int64_t run_until_a_job_wakes_a_worker(ThreadPool& pool) {
  const int64_t woke = pool.accounting().woke_workers;
  int64_t runs = 0;
  while (runs < 1000 && pool.accounting().woke_workers == woke) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    pool.run(4, [](int64_t) {});
    ++runs;
  }
  return runs;
}

// HFS_PROFILE's counters: off by default; on, a job's wall time spans its tasks (8 tasks of 2 ms on 2
// threads cannot finish in under 8 ms) and the threads' busy time is every task's time, at most both
// threads over the whole wall time. A one-task job runs inline and counts as a job too.
TEST(CpuFastThreadPool, AccountingCountsJobsWallAndBusyTimeOnlyWhenOn) {
  ThreadPool pool(2);
  pool.run(8, [](int64_t) { spin_for(std::chrono::microseconds(200)); });
  ThreadPool::Accounting a = pool.accounting();
  EXPECT_EQ(a.jobs, 0);
  EXPECT_EQ(a.busy_ns, 0);
  EXPECT_EQ(a.wall_ns, 0);

  pool.set_accounting(true);
  pool.run(8, [](int64_t) { spin_for(std::chrono::milliseconds(2)); });
  a = pool.accounting();
  EXPECT_EQ(a.jobs, 1);
  EXPECT_GE(a.busy_ns, 8 * 2'000'000);
  EXPECT_GE(a.wall_ns, 8'000'000);
  EXPECT_LE(a.busy_ns, 2 * a.wall_ns);

  pool.run(1, [](int64_t) { spin_for(std::chrono::milliseconds(1)); });
  const ThreadPool::Accounting b = pool.accounting();
  EXPECT_EQ(b.jobs, 2);
  EXPECT_GE(b.busy_ns - a.busy_ns, 1'000'000);
  EXPECT_GE(b.wall_ns - a.wall_ns, 1'000'000);
  EXPECT_LE(b.busy_ns - a.busy_ns, b.wall_ns - a.wall_ns);

  // A sleeping worker is counted when a job wakes it.
  const int64_t jobs = b.jobs + run_until_a_job_wakes_a_worker(pool);
  EXPECT_EQ(pool.accounting().woke_workers, b.woke_workers + 1);

  pool.set_accounting(false);
  pool.run(8, [](int64_t) { spin_for(std::chrono::microseconds(200)); });
  EXPECT_EQ(pool.accounting().jobs, jobs);
}

// After a job, an idle worker goes to sleep on its futex (a later job has to wake it) instead of spinning
// on a core another process may need. Counted by the pool's wake-ups, not by CPU time, which a loaded
// machine makes noisy.
TEST(CpuFastThreadPool, IdleWorkersSleepInsteadOfSpinning) {
  ThreadPool pool(2);
  pool.run(4, [](int64_t) {});
  pool.set_accounting(true);
  const int64_t runs = run_until_a_job_wakes_a_worker(pool);
  EXPECT_EQ(pool.accounting().woke_workers, 1) << "no job found the worker asleep in " << runs << " tries";
  EXPECT_LT(runs, 1000);
}

}  // namespace
}  // namespace hfs::cpu_fast
