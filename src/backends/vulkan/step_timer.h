// A delegate's step timing: two timestamps around its recorded command buffer (where the queue can time
// its commands) and the host's clock around execute and around the submit + wait, added to the
// process-wide totals of core/device_timing.h after every step.
//
//   StepTimer t;  HFS_TRY(t.create(ctx));       // at compile: a query pool of 2 timestamps, or none
//   t.begin(cb); ...dispatches...; t.end(cb);    // when recording
//   auto s = StepTimer::now(); ...execute, with w0/w1 around submit_and_wait...; t.add(s, w0, w1);
//
// The timestamps cost the device two writes per step and the host one small query read after the wait.
#pragma once

#include <chrono>
#include <memory>

#include "backends/vulkan/context.h"

namespace hfs::vulkan {

class StepTimer {
 public:
  using Clock = std::chrono::steady_clock;
  StepTimer() = default;
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;
  ~StepTimer();

  // A query pool when the device's compute queue has timestamps; without, steps add host times only.
  [[nodiscard]] Status create(std::shared_ptr<Context> ctx);
  void begin(VkCommandBuffer cb) const;  // first commands of the recording
  void end(VkCommandBuffer cb) const;    // last command of the recording
  // After the wait: adds one submission (execute from `start` to now, submit + wait from `submit` to `waited`).
  void add(Clock::time_point start, Clock::time_point submit, Clock::time_point waited) const;
  static Clock::time_point now() { return Clock::now(); }

 private:
  double device_ms() const;  // < 0 when not timed or not available

  std::shared_ptr<Context> ctx_;
  VkQueryPool pool_ = VK_NULL_HANDLE;
};

}  // namespace hfs::vulkan
