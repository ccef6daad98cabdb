// The step timing behind `hfstatic bench --backend vulkan`'s decode_step (core/device_timing.h): every
// Vulkan step adds one submission, and the device's own time of a step, read from its timestamps, lies
// inside the host's wait for it, which lies inside the delegate's execute. A backend on the CPU adds nothing.
#include <gtest/gtest.h>

#include "core/device_timing.h"
#include "hfstatic/llm_runner.h"
#include "support/hf_static_fixture.h"

namespace hfs::vulkan {
namespace {

std::unique_ptr<Runner> runner(const std::string& path, const std::string& backend) {
  RunnerOptions o;
  o.io.method.backends.backends = {backend};
  auto r = Runner::load(path, o);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return r.ok() ? std::move(*r) : nullptr;
}

TEST(VulkanStepTiming, EachStepAddsOneSubmissionWhoseDeviceTimeFitsTheWait) {
  const std::string path = hfs::test::tiny_program(hfs::test::TinyModel{});
  auto vk = runner(path, "vulkan");
  ASSERT_TRUE(vk);
  ASSERT_TRUE(vk->prefill(hfs::test::random_tokens(6, 512, 3)).ok());
  const DeviceTiming before = device_timing();
  constexpr int kSteps = 5;
  for (int i = 0; i < kSteps; ++i) ASSERT_TRUE(vk->decode_step(7 + i).ok());
  const DeviceTiming d = device_timing() - before;
  EXPECT_EQ(d.submits, uint64_t{kSteps});  // the whole tiny decode method is one Vulkan partition
  EXPECT_GT(d.submit_wait_ms, 0.0);
  EXPECT_GE(d.execute_ms, d.submit_wait_ms);
  // lavapipe (and every desktop GPU) times its compute queue; a device that cannot adds untimed submissions.
  if (d.timed_submits > 0) {
    EXPECT_EQ(d.timed_submits, d.submits);
    EXPECT_GT(d.device_ms, 0.0);
    EXPECT_LE(d.device_ms, d.submit_wait_ms * 1.01 + 0.01);  // timer granularity; never more than the wait
  }
}

TEST(VulkanStepTiming, CpuBackendsAddNothing) {
  const std::string path = hfs::test::tiny_program(hfs::test::TinyModel{});
  auto ref = runner(path, "cpu_ref");
  ASSERT_TRUE(ref);
  const DeviceTiming before = device_timing();
  ASSERT_TRUE(ref->prefill(hfs::test::random_tokens(6, 512, 3)).ok());
  ASSERT_TRUE(ref->decode_step(7).ok());
  EXPECT_EQ((device_timing() - before).submits, 0u);
}

}  // namespace
}  // namespace hfs::vulkan
