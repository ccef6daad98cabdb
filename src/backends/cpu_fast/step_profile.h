// cpu_fast/step_profile.h — where a delegate's execute() time goes, by kind of step (HFS_PROFILE=1).
//
// With the environment variable HFS_PROFILE set (to anything), every cpu_fast delegate times each of
// its steps and, when it is destroyed (the Runner unloads the program), prints to stderr:
//
//   cpu_fast profile: 661 steps, 16 executes, 589.8 ms in steps, 2 threads
//     kind                        ms      %   calls   jobs  in jobs  busy/job  woke
//     linear_glu              205.14  34.7%     480    480    99.1%      1.93    61
//     attention               158.77  26.9%     480    960    97.4%      1.88   150
//     ...
//
// `jobs`: thread-pool jobs the steps ran (a kernel too small to split runs on the caller, outside any
// job). `in jobs`: the share of the steps' time spent inside those jobs — the rest runs
// on the calling thread alone. `busy/job`: threads busy inside tasks, averaged over the jobs' wall time
// (at most the pool's size; what is missing is time a thread waited for a job's last task or for its
// wake-up). `woke`: workers found asleep when a job started. A second thread's gain on a kind is
// roughly busy/job x (share in jobs), less what its tasks lose by sharing memory bandwidth and caches —
// which shows as more busy milliseconds than the same steps take on one thread.
//
// A program's prefill and decode methods are separate delegates, so each prints its own table (the
// one with more executes is decode). Kinds are op names; a linear that runs a batch of linears reading
// the same input is `linear_batch` (`linear_glu` when it also applies silu·up), and the batched
// members, which then do nothing, `linear_batched`. Off (the default) a step costs one branch.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "backends/cpu_fast/thread_pool.h"

namespace hfs::cpu_fast {

class StepProfile {
 public:
  static bool requested();  // HFS_PROFILE is set
  // `kinds[i]`: step i's kind. Empty (the default) = profiling off.
  void enable(std::vector<std::string> kinds);
  bool on() const { return !kinds_.empty(); }
  void count_execute() { ++executes_; }
  // `jobs`: the pool's counters over the step (the difference of two ThreadPool::accounting() readings).
  void add(size_t step, double seconds, const ThreadPool::Accounting& jobs) {
    seconds_[step] += seconds;
    ++calls_[step];
    jobs_[step] += jobs;
  }
  void set_threads(int threads) { threads_ = threads; }
  // Totals per kind, largest first.
  void report(std::FILE* out) const;

 private:
  std::vector<std::string> kinds_;
  std::vector<double> seconds_;
  std::vector<int64_t> calls_;
  std::vector<ThreadPool::Accounting> jobs_;
  int64_t executes_ = 0;
  int threads_ = 1;
};

}  // namespace hfs::cpu_fast
