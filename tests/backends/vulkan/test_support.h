// What the Vulkan tests share: stories260K (the shared fixture, tests/support/fixtures.h) exported once
// per test binary run and set of options, and the fixture check (Runners on a backend: test::runner_on).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "hfstatic/export.h"
#include "hfstatic/llm_runner.h"
#include "support/hf_static_fixture.h"

namespace hfs::vulkan {

// The path of stories260K exported with prefill chunk 8 and these options (exported on first use; later
// calls with the same options return the same file). Empty, with a test failure, when the export fails.
std::string stories_program(WeightsMode weights = WeightsMode::kF32, DType cache = DType::kF32, int context = 64);

// Tests of stories260K: a missing fixture skips the test with where it was looked for (fails under CI=true,
// tests/support/require_fixture.h).
class StoriesTest : public ::testing::Test {
 protected:
  void SetUp() override;
};

}  // namespace hfs::vulkan
