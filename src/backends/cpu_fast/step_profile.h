// cpu_fast/step_profile.h — where a delegate's execute() time goes, by kind of step (HFS_PROFILE=1).
//
// With the environment variable HFS_PROFILE set (to anything), every cpu_fast delegate times each of
// its steps and, when it is destroyed (the Runner unloads the program), prints to stderr:
//
//   cpu_fast profile: 661 steps, 16 executes, 589.8 ms in steps
//     attention            158.77 ms  26.9%    480 calls
//     linear_glu           205.14 ms  34.7%    480 calls   (gate/up + silu·up, one pool job)
//     ...
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

namespace hfs::cpu_fast {

class StepProfile {
 public:
  static bool requested();  // HFS_PROFILE is set
  // `kinds[i]`: step i's kind. Empty (the default) = profiling off.
  void enable(std::vector<std::string> kinds);
  bool on() const { return !kinds_.empty(); }
  void count_execute() { ++executes_; }
  void add(size_t step, double seconds) {
    seconds_[step] += seconds;
    ++calls_[step];
  }
  // Totals per kind, largest first.
  void report(std::FILE* out) const;

 private:
  std::vector<std::string> kinds_;
  std::vector<double> seconds_;
  std::vector<int64_t> calls_;
  int64_t executes_ = 0;
};

}  // namespace hfs::cpu_fast
