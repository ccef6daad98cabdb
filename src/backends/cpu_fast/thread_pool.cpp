#include "backends/cpu_fast/thread_pool.h"

#include <fcntl.h>
#include <pthread.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

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

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The contention check (see thread_pool.h): sample spacing, the share of a window spent waiting for a
// CPU that benches a worker, and the hold's range.
constexpr int64_t kSampleNs = 4'000'000;
constexpr int64_t kContendedPermille = 250;
constexpr int64_t kMinHoldNs = 200'000'000, kMaxHoldNs = 1'600'000'000;

// run_delay (ns spent runnable but not running), the second field of a schedstat file; -1 if unreadable.
int64_t read_run_delay(int fd) {
  char buf[96];
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return -1;
  buf[n] = '\0';
  char* end = nullptr;
  std::strtoll(buf, &end, 10);  // time on a CPU
  if (end == buf) return -1;
  const char* second = end;
  const long long delay = std::strtoll(second, &end, 10);
  return end == second ? -1 : delay;
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
  contention_ = std::make_unique<Contention[]>(static_cast<size_t>(threads));
  claims_ = std::make_unique<Claim[]>(static_cast<size_t>(threads));
  busy_ = std::make_unique<Busy[]>(static_cast<size_t>(threads));
  for (int i = 0; i < threads; ++i) contention_[static_cast<size_t>(i)].hold_ns = kMinHoldNs;
  workers_.reserve(static_cast<size_t>(threads - 1));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_main(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  for (int r = 0; r < size(); ++r) claims_[static_cast<size_t>(r)].word.store(0);
  generation_.fetch_add(1);
  futex_wake_all(generation_);
  bench_gen_.fetch_add(1);
  futex_wake_all(bench_gen_);
  for (auto& t : workers_) t.join();
  for (size_t i = 0; i < workers_.size(); ++i)
    if (const int fd = contention_[i].schedstat_fd.load(); fd >= 0) close(fd);
}

int ThreadPool::benched_workers() const {
  int n = 0;
  for (size_t i = 0; i < workers_.size(); ++i) n += contention_[i].benched.load(std::memory_order_relaxed);
  return n;
}

ThreadPool::Accounting ThreadPool::accounting() const {
  std::lock_guard<std::mutex> lock(run_mu_);
  Accounting a = acct_;
  for (int t = 0; t < size(); ++t) a.busy_ns += busy_[static_cast<size_t>(t)].ns.load(std::memory_order_relaxed);
  return a;
}

void ThreadPool::check_contention() {
  const int64_t now = now_ns();
  const int64_t window = now - last_sample_ns_;
  if (window < kSampleNs) return;
  last_sample_ns_ = now;
  for (size_t i = 0; i < workers_.size(); ++i) {
    Contention& c = contention_[i];
    if (c.benched.load(std::memory_order_relaxed)) {
      if (now < c.bench_until_ns) continue;
      // Let it back in to look again: a fresh baseline, and a decision after two full windows of work.
      c.last_delay_ns = -1;
      c.strikes = 0;
      probes_.fetch_add(1, std::memory_order_relaxed);
      c.benched.store(false);
      bench_gen_.fetch_add(1);
      futex_wake_all(bench_gen_);
      continue;
    }
    const int fd = c.schedstat_fd.load(std::memory_order_acquire);
    if (fd < 0) continue;
    const int64_t delay = read_run_delay(fd);
    if (delay < 0) continue;
    if (c.last_delay_ns >= 0) {
      // Two windows in a row, so that one burst of some daemon's work does not bench a worker.
      if ((delay - c.last_delay_ns) * 1000 < window * kContendedPermille) {
        c.strikes = 0;
        c.hold_ns = kMinHoldNs;
      } else if (++c.strikes >= 2) {
        c.strikes = 0;
        c.benched.store(true);
        c.bench_until_ns = now + c.hold_ns;
        c.hold_ns = std::min(2 * c.hold_ns, kMaxHoldNs);
      }
    }
    c.last_delay_ns = delay;
  }
}

void ThreadPool::work(uint32_t gen, int thread) {
  // Tasks this thread finished, reported to done_ once, when it finds nothing left to claim: one
  // increment per task bounced done_'s line between the cores 16 times per GEMM (5-10 µs of a 90 µs
  // prefill GEMM on two threads). The job cannot end while this thread holds unreported tasks, so the
  // job's fields and claim words stay as they are until the report.
  uint32_t finished = 0;
  int64_t n = 0;
  auto report = [&] {
    // seq_cst pairs with the caller's caller_sleeping_ store / done_ load (no lost wake-up).
    if (finished != 0 && done_.fetch_add(finished) + finished == static_cast<uint32_t>(n) && caller_sleeping_.load() != 0)
      futex_wake_all(done_);
  };
  const int ranges = size();
  for (int k = 0; k < ranges; ++k) {
    const int r = (thread + k) % ranges;  // own range first, then the next ones round the ring
    std::atomic<uint64_t>& claim = claims_[static_cast<size_t>(r)].word;
    uint64_t cur = claim.load(std::memory_order_acquire);
    for (;;) {
      if (static_cast<uint32_t>(cur >> 32) != gen) {  // the job finished, or a newer one started
        report();
        return;
      }
      const auto left = static_cast<uint32_t>(cur);
      if (left == 0) break;  // this range is all claimed: look at the next
      // The CAS succeeds only while job `gen` still has this unclaimed task, so the job cannot have
      // finished and the caller cannot be writing the next job's fn_/ctx_/n_tasks_. (Checking a task
      // index against n_tasks_ *before* the claim, as this once did, read the next job's count and let a
      // late worker claim in a finished generation: tasks ran twice, done_ overshot, the caller hung or
      // returned while its tasks still ran.) Acquire: reads the caller's release store of this job.
      if (!claim.compare_exchange_weak(cur, cur - 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
      n = n_tasks_;  // stable until this thread reports its tasks done
      const int64_t task = range_end(n, r) - left;
      if (accounting_.load(std::memory_order_relaxed)) {
        const int64_t t0 = now_ns();
        fn_(ctx_, task, thread);
        busy_[static_cast<size_t>(thread)].ns.fetch_add(now_ns() - t0, std::memory_order_relaxed);
      } else {
        fn_(ctx_, task, thread);
      }
      ++finished;
      cur = claim.load(std::memory_order_acquire);
    }
  }
  report();
}

void ThreadPool::worker_main(int thread) {
  // Named so that per-thread CPU time (top -H, /proc/PID/task) tells the kernels' workers from a host's
  // own threads: bench/serve counts what a server spends outside them.
  pthread_setname_np(pthread_self(), "hfs-pool");
  Contention& c = contention_[static_cast<size_t>(thread - 1)];
  c.schedstat_fd.store(open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC), std::memory_order_release);
  uint32_t seen = 0;
  for (;;) {
    // Benched: sleep until the caller lets this worker back in. Seq-cst on benched / bench_gen_ pairs with
    // check_contention's store-then-increment, so the wake-up cannot be lost.
    if (c.benched.load()) {
      const uint32_t g = bench_gen_.load();
      if (c.benched.load() && !stop_.load()) futex_wait(bench_gen_, g);
      if (stop_.load()) return;
      continue;
    }
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
  const bool acct = accounting_.load(std::memory_order_relaxed);
  if (workers_.empty() || n_tasks == 1) {
    const int64_t t0 = acct ? now_ns() : 0;
    for (int64_t t = 0; t < n_tasks; ++t) fn(ctx, t, 0);
    if (acct) {
      std::lock_guard<std::mutex> lock(run_mu_);
      const int64_t ns = now_ns() - t0;
      ++acct_.jobs;
      acct_.wall_ns += ns;
      acct_.busy_ns += ns;
    }
    return;
  }
  std::lock_guard<std::mutex> lock(run_mu_);
  check_contention();
  const int64_t t_start = acct ? now_ns() : 0;
  fn_ = fn;
  ctx_ = ctx;
  n_tasks_ = n_tasks;
  done_.store(0, std::memory_order_relaxed);
  const uint32_t gen = generation_.load(std::memory_order_relaxed) + 1;
  for (int r = 0; r < size(); ++r) {
    const int64_t begin = r == 0 ? 0 : range_end(n_tasks, r - 1);
    claims_[static_cast<size_t>(r)].word.store(static_cast<uint64_t>(gen) << 32 | static_cast<uint32_t>(range_end(n_tasks, r) - begin),
                                               std::memory_order_release);
  }
  generation_.store(gen);  // seq_cst: publishes the job
  if (const int sleeping = sleepers_.load(); sleeping != 0) {
    futex_wake_all(generation_);
    if (acct) acct_.woke_workers += sleeping;
  }
  work(gen, 0);
  const auto all = static_cast<uint32_t>(n_tasks);
  if (!spin_until([&] { return done_.load(std::memory_order_acquire) == all; }, spin_us_.load())) {
    caller_sleeping_.store(1);
    for (uint32_t d = done_.load(); d != all; d = done_.load()) futex_wait(done_, d);
    caller_sleeping_.store(0);
  }
  if (acct) {
    ++acct_.jobs;
    acct_.wall_ns += now_ns() - t_start;
  }
}

}  // namespace hfs::cpu_fast
