// What the Vulkan tests share: stories260K (the shared fixture, tests/support/fixtures.h) exported once
// per test binary run and set of options, the fixture check, and Runners on a chosen backend.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "hfstatic/export.h"
#include "hfstatic/llm_runner.h"

namespace hfs::vulkan {

// The path of stories260K exported with prefill chunk 8 and these options (exported on first use; later
// calls with the same options return the same file). Empty, with a test failure, when the export fails.
std::string stories_program(WeightsMode weights = WeightsMode::kF32, DType cache = DType::kF32, int context = 64);

// A Runner over `path` whose methods run on `backend` (nullptr, with a test failure, when it does not load).
std::unique_ptr<Runner> runner_on(const std::string& path, const std::string& backend);

// Tests of stories260K: a missing fixture fails the test with where it was looked for.
class StoriesTest : public ::testing::Test {
 protected:
  void SetUp() override;
};
void require_stories();  // the same check, for TEST and TEST_P bodies (ASSERT_NO_FATAL_FAILURE)

}  // namespace hfs::vulkan
