// `hfstatic` with --backend vulkan: generation, inspect's placement, --device checks, and the errors a
// user without Vulkan gets (exit 1 naming the backend and what to install, never a crash).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <sys/wait.h>

#include "test_support.h"

namespace hfs::vulkan {
namespace {

struct Ran {
  int status = -1;
  std::string out;  // stdout and stderr
};

Ran cli(const std::string& env, const std::string& args) {
  const std::string cmd = env + " '" + std::string(HFS_CLI_PATH) + "' " + args + " 2>&1";
  Ran r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string program() { return stories_program(); }

class VulkanCli : public StoriesTest {};

TEST_F(VulkanCli, RunGreedyTellsTheKnownStory) {
  Ran r = cli("", "run -m '" + program() + "' -p 'Once upon a time' -n 12 --temp 0 --backend vulkan --device 0");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Once upon a time, there was a little girl named Lily"), std::string::npos) << r.out;
}

TEST_F(VulkanCli, InspectShowsWhereEveryNodeRuns) {
  Ran r = cli("", "inspect '" + program() + "' --backend vulkan");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("partition 0 on vulkan: 114 nodes"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("on cpu_ref"), std::string::npos) << r.out;
}

TEST_F(VulkanCli, DeviceNeedsTheVulkanBackendAndAnExistingIndex) {
  Ran r = cli("", "run -m '" + program() + "' -p Once -n 2 --backend cpu_ref --device 0");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--device selects the vulkan backend's device"), std::string::npos) << r.out;
  r = cli("", "run -m '" + program() + "' -p Once -n 2 --backend vulkan --device 1000");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("device 1000 does not exist; the devices are 0: "), std::string::npos) << r.out;
}

TEST_F(VulkanCli, NoLoaderOrNoDriverIsAClearErrorNotACrash) {
  Ran r = cli("HFS_VULKAN_LOADER=/nonexistent/libvulkan.so.1",
              "run -m '" + program() + "' -p Once -n 2 --backend vulkan");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("backend 'vulkan'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cannot load the Vulkan loader"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("apt-get install libvulkan1 mesa-vulkan-drivers"), std::string::npos) << r.out;
  r = cli("VK_ICD_FILENAMES=/nonexistent/icd.json VK_DRIVER_FILES=/nonexistent/icd.json",
          "run -m '" + program() + "' -p Once -n 2 --backend vulkan");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("backend 'vulkan'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mesa-vulkan-drivers"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace hfs::vulkan
