// cpu_fast/thread_pool.h — one persistent pool of workers for the fast CPU kernels.
//
// The caller's thread takes part. A job's tasks are dealt out as one contiguous range per thread
// (thread t owns [n·t/T, n·(t+1)/T)); each thread claims its own range's tasks one at a time, front to
// back, then takes what is left of the others' ranges the same way. So a worker that lost its core to
// another process simply runs fewer tasks (a fixed split would make every step wait for the slowest
// core), while on free cores every thread works on the same part of every job: consecutive GEMMs write
// the same output columns from the same core, and the lines stay in that core's cache instead of
// moving between cores (one shared counter dealt the columns out by arrival: the 2-thread prefill GEMMs
// ran 5-10 % slower, bench/results/log/cpu-fast-design.md, "Thread pool"). Idle workers spin briefly — steps issue kernels
// microseconds apart — then sleep on a futex, so they never burn a core another process needs.
//
// A worker that shares its core with another busy process still stalls the step whenever it is
// descheduled while holding a task. So every 4 ms the caller reads how long each worker waited for a
// CPU (run_delay in the worker's /proc/thread-self/schedstat, the kernel's own count: a busy neighbour shows
// there, a hypervisor's steal does not); a worker that waited a quarter of two windows in a row sits
// out (sleeps) for a hold of 0.2 s, doubling up to 1.6 s while it keeps finding its core taken. The
// others, and the caller, take its tasks. Without /proc the check is off.
//
//   hfs::cpu_fast::ThreadPool pool(2);
//   pool.run(64, [&](int64_t task) { process_chunk(task); });
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace hfs::cpu_fast {

class ThreadPool {
 public:
  // `threads` counts the caller; ≤ 0 means one per CPU this process may run on.
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(task) — or fn(task, thread) with thread in [0, size()), the caller being 0 — for every
  // task in [0, n_tasks) and returns when all are done. Calls from several threads are serialized.
  // n_tasks < 2^32.
  // Does not allocate.
  template <typename Fn>
  void run(int64_t n_tasks, Fn&& fn) {
    using F = std::remove_reference_t<Fn>;
    TaskFn call;
    if constexpr (std::is_invocable_v<F&, int64_t, int>)
      call = [](void* ctx, int64_t t, int thread) { (*static_cast<F*>(ctx))(t, thread); };
    else
      call = [](void* ctx, int64_t t, int) { (*static_cast<F*>(ctx))(t); };
    run_impl(n_tasks, call, const_cast<void*>(static_cast<const void*>(&fn)));
  }

  // Microseconds an idle worker spins before sleeping (tests shorten it).
  void set_spin_us(int us) { spin_us_.store(us, std::memory_order_relaxed); }
  static int default_threads();

  // Workers sitting out now because their core was found busy, and how many times a sitting-out worker
  // has been let back in to look again (both for tests and diagnostics).
  int benched_workers() const;
  int64_t probes() const { return probes_.load(std::memory_order_relaxed); }

  // Where a job's time goes (HFS_PROFILE, step_profile.h), counted only while accounting is on: jobs
  // run, their wall time (publish to last task done), the time threads spent inside tasks (all threads
  // summed; a job on T threads that lost nothing has busy = T x wall), and workers a job had to wake.
  // Turning it on adds two clock reads per task. Jobs run inline (one task, or no workers) count too.
  struct Accounting {
    int64_t jobs = 0, wall_ns = 0, busy_ns = 0, woke_workers = 0;
    Accounting& operator+=(const Accounting& o) {
      jobs += o.jobs, wall_ns += o.wall_ns, busy_ns += o.busy_ns, woke_workers += o.woke_workers;
      return *this;
    }
    // What happened between two readings.
    Accounting operator-(const Accounting& earlier) const {
      return {jobs - earlier.jobs, wall_ns - earlier.wall_ns, busy_ns - earlier.busy_ns, woke_workers - earlier.woke_workers};
    }
  };
  void set_accounting(bool on) { accounting_.store(on, std::memory_order_relaxed); }
  Accounting accounting() const;

 private:
  using TaskFn = void (*)(void*, int64_t, int);
  void run_impl(int64_t n_tasks, TaskFn fn, void* ctx);
  void worker_main(int thread);
  // Caller, under run_mu_: every kSampleNs, benches workers that waited for a CPU, lets expired ones back.
  void check_contention();

  // Per worker (index thread - 1). The fd and the flag are shared with the worker; the rest is the
  // caller's, under run_mu_.
  struct Contention {
    std::atomic<int> schedstat_fd{-1};  // the worker's /proc/thread-self/schedstat, opened by itself
    std::atomic<bool> benched{false};
    int64_t last_delay_ns = -1;         // run_delay at the last sample (-1: none yet)
    int strikes = 0;                    // contended windows in a row
    int64_t bench_until_ns = 0;
    int64_t hold_ns = 0;
  };
  // Claims and runs tasks of job `gen`, its own range first, until none are left or the job is no
  // longer current.
  void work(uint32_t gen, int thread);
  // Range r's end in a job of n tasks: ranges split [0, n) as evenly as whole tasks allow.
  int64_t range_end(int64_t n, int r) const { return n * (r + 1) / size(); }

  std::vector<std::thread> workers_;
  std::unique_ptr<Contention[]> contention_;
  int64_t last_sample_ns_ = 0;
  std::atomic<int64_t> probes_{0};
  mutable std::mutex run_mu_;
  // Job description, written before the job's claim word is published (release) and read by workers
  // only after a successful claim (acquire), so plain fields suffice.
  TaskFn fn_ = nullptr;
  void* ctx_ = nullptr;
  int64_t n_tasks_ = 0;
  // One claim word per thread's range, each on its own line: (generation << 32) | tasks of the range not
  // yet claimed; task index = range end - count. A claim is a CAS that checks the generation and a count
  // > 0, so a worker that wakes late can never claim a task of a job that finished (nor read the job
  // fields while the caller rewrites them), and the caller never waits for a worker that has not
  // started: it only waits for tasks actually claimed (done_ counts them).
  struct alignas(64) Claim {
    std::atomic<uint64_t> word{0};
  };
  std::unique_ptr<Claim[]> claims_;
  alignas(64) std::atomic<uint32_t> generation_{0};  // futex word for sleeping workers
  std::atomic<int> sleepers_{0};
  alignas(64) std::atomic<uint32_t> done_{0};        // tasks finished in the current job (futex word)
  std::atomic<int> caller_sleeping_{0};
  alignas(64) std::atomic<uint32_t> bench_gen_{0};  // futex word benched workers sleep on
  std::atomic<bool> stop_{false};
  std::atomic<int> spin_us_{50};
  std::atomic<bool> accounting_{false};
  // Accounting: the job counters are the caller's (under run_mu_); busy time is per thread, each on its
  // own line, added by the thread that ran the task.
  Accounting acct_;
  struct alignas(64) Busy {
    std::atomic<int64_t> ns{0};
  };
  std::unique_ptr<Busy[]> busy_;
};

}  // namespace hfs::cpu_fast
