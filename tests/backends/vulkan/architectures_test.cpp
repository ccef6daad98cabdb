// The exporter's attention variants on Vulkan, against cpu_ref on the same program (random-weight tiny
// checkpoints, tests/support/hf_static_fixture.h): global layers (llama), sliding-window ring caches
// (mistral, past the window) and an f16 cache. Every node runs on Vulkan; logits agree step by step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "hfstatic/ext/method.h"
#include "hfstatic/program.h"
#include "support/hf_static_fixture.h"
#include "test_support.h"

namespace hfs::vulkan {
namespace {

struct Case {
  const char* name;
  hfs::test::TinyModel model;
};

class Architectures : public ::testing::TestWithParam<Case> {};

TEST_P(Architectures, WholeProgramOnVulkanMatchesCpuRef) {
  const std::string path = hfs::test::tiny_program(GetParam().model);
  auto program = Program::load(path);
  ASSERT_TRUE(program.ok()) << program.error().to_string();
  MethodOptions mo;
  mo.backends.backends = {"vulkan"};
  for (const MethodDef& m : (*program)->methods()) {
    auto loaded = Method::load(*program, m.name, mo);
    ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
    EXPECT_EQ((*loaded)->plan().partition_backends, std::vector<std::string>{"vulkan"}) << m.name;
  }
  auto vk = test::runner_on(path, "vulkan"), ref = test::runner_on(path, "cpu_ref");
  ASSERT_TRUE(vk && ref);
  const std::vector<int32_t> prompt = hfs::test::random_tokens(6, 512, 11);
  ASSERT_TRUE(vk->prefill(prompt).ok());
  ASSERT_TRUE(ref->prefill(prompt).ok());
  for (int step = 0; step < 10; ++step) {  // 16 positions: past the sliding window of 8
    auto a = vk->logits();
    auto b = ref->logits();
    ASSERT_EQ(a.size(), b.size());
    float worst = 0, scale = 1;
    for (size_t i = 0; i < a.size(); ++i) {
      worst = std::max(worst, std::fabs(a[i] - b[i]));
      scale = std::max(scale, std::fabs(b[i]));
    }
    EXPECT_LT(worst, 1e-4f * scale) << "step " << step;
    const int32_t next = static_cast<int32_t>(std::max_element(b.begin(), b.end()) - b.begin());
    ASSERT_TRUE(vk->decode_step(next).ok());
    ASSERT_TRUE(ref->decode_step(next).ok());
  }
}

hfs::test::TinyModel model(const char* arch, int window, const char* cache = "f32") {
  hfs::test::TinyModel m;
  m.arch = arch;
  m.sliding_window = window;
  m.cache_dtype = cache;
  return m;
}

INSTANTIATE_TEST_SUITE_P(Vulkan, Architectures,
                         ::testing::Values(Case{"llama", model("llama", 0)}, Case{"mistral_window8", model("mistral", 8)},
                                           Case{"llama_f16_cache", model("llama", 0, "f16")}),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace hfs::vulkan
