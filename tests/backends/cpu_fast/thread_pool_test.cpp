#include "backends/cpu_fast/thread_pool.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
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

TEST(CpuFastThreadPool, SingleThreadPoolRunsInline) {
  ThreadPool pool(1);
  int sum = 0;
  pool.run(10, [&](int64_t t) { sum += static_cast<int>(t); });
  EXPECT_EQ(sum, 45);
}

double process_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

TEST(CpuFastThreadPool, IdleWorkersSleepInsteadOfSpinning) {
  ThreadPool pool(2);
  pool.run(4, [](int64_t) {});
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the spin window
  const double before = process_cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // A spinning worker would burn ~100 ms here.
  EXPECT_LT(process_cpu_seconds() - before, 0.02);
}

}  // namespace
}  // namespace hfs::cpu_fast
