// The step timing behind `hfstatic bench --backend vulkan`'s decode_step (core/device_timing.h): every
// Vulkan step adds one submission, and the device's own time of a step, read from its timestamps, lies
// inside the host's wait for it, which lies inside the delegate's execute. A backend on the CPU adds nothing.
// `hfstatic bench --json` reports them per decode step.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/device_timing.h"
#include "hfstatic/llm_runner.h"
#include "support/hf_static_fixture.h"

namespace hfs::vulkan {
namespace {

TEST(VulkanStepTiming, EachStepAddsOneSubmissionWhoseDeviceTimeFitsTheWait) {
  const std::string path = hfs::test::tiny_program(hfs::test::TinyModel{});
  auto vk = test::runner_on(path, "vulkan");
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
  auto ref = test::runner_on(path, "cpu_ref");
  ASSERT_TRUE(ref);
  const DeviceTiming before = device_timing();
  ASSERT_TRUE(ref->prefill(hfs::test::random_tokens(6, 512, 3)).ok());
  ASSERT_TRUE(ref->decode_step(7).ok());
  EXPECT_EQ((device_timing() - before).submits, 0u);
}

// stdout of `hfstatic ARGS` (stderr dropped), and its exit status.
std::pair<int, std::string> cli(const std::string& args) {
  const std::string cmd = "'" + std::string(HFS_CLI_PATH) + "' " + args + " 2>/dev/null";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, out};
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

TEST(VulkanStepTiming, BenchReportsTheDecodeStepsDeviceTimeAndHostOverhead) {
  const std::string path = hfs::test::tiny_program(hfs::test::TinyModel{});
  auto [status, out] = cli("bench -m '" + path + "' --backend vulkan --prompt 6 --gen 5 --reps 2 --json");
  ASSERT_EQ(status, 0) << out;
  const auto j = nlohmann::json::parse(out);
  const auto& d = j.at("decode_step");
  ASSERT_TRUE(d.is_object()) << out;
  EXPECT_EQ(d.at("steps").get<int>(), 2 * (5 - 1));  // per run: the tokens after the prefill's
  EXPECT_DOUBLE_EQ(d.at("submits_per_step").get<double>(), 1.0);
  const double step = d.at("step_ms").get<double>(), wait = d.at("submit_wait_ms").get<double>();
  EXPECT_GT(wait, 0.0);
  EXPECT_LE(wait, step);
  if (d.at("device_timed").get<bool>()) {
    const double device = d.at("device_ms").get<double>();
    EXPECT_LE(device, wait * 1.01 + 0.01);
    EXPECT_NEAR(d.at("host_overhead_ms").get<double>(), step - device, 1e-9 + 1e-9 * step);
  }
  const double share = d.at("host_overhead_share").get<double>();
  EXPECT_GE(share, 0.0);
  EXPECT_LT(share, 1.0);
  EXPECT_EQ(j.at("prefill_step").at("steps").get<int>(), 2);  // one prefill per run

  auto [cpu_status, cpu_out] = cli("bench -m '" + path + "' --backend cpu_ref --prompt 6 --gen 5 --json");
  ASSERT_EQ(cpu_status, 0) << cpu_out;
  EXPECT_TRUE(nlohmann::json::parse(cpu_out).at("decode_step").is_null());  // nothing ran on a device
}

}  // namespace
}  // namespace hfs::vulkan
