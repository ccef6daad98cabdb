// The real stories260K checkpoint (f32 weights) end to end on the vulkan backend: the first logits after
// BOS are the values llama2.c documents for this model, greedy decoding tells the known story, and the
// tokens and logits agree with the cpu_ref backend's through prefill chunks (padded and full) and decode.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backends/vulkan/context.h"
#include "hfstatic/export.h"
#include "hfstatic/llm_runner.h"
#include "hfstatic/ext/method.h"
#include "hfstatic/program.h"
#include "hfstatic/tokenizer.h"
#include "support/fixtures.h"
#include "support/hf_static_fixture.h"
#include "support/require_fixture.h"
#include "test_support.h"

namespace hfs::vulkan {
namespace {

constexpr int kGreedyTokens = 40;  // lavapipe runs shaders on the CPU: a few dozen steps

std::string stories_f32() { return stories_program(); }

std::unique_ptr<Runner> runner_on(const std::string& backend) { return test::runner_on(stories_f32(), backend); }

int32_t argmax(std::span<const float> v) { return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin()); }

class StoriesOnVulkan : public StoriesTest {};

TEST_F(StoriesOnVulkan, EveryNodeRunsOnVulkan) {
  auto program = Program::load(stories_f32());
  ASSERT_TRUE(program.ok()) << program.error().to_string();
  MethodOptions mo;
  mo.backends.backends = {"vulkan"};
  for (const char* name : {"prefill", "decode"}) {
    auto m = Method::load(*program, name, mo);
    ASSERT_TRUE(m.ok()) << m.error().to_string();
    EXPECT_EQ((*m)->plan().partition_backends, std::vector<std::string>{"vulkan"}) << name;
    ASSERT_EQ((*m)->plan().partition_nodes.size(), 1u);
    EXPECT_EQ((*m)->plan().partition_nodes[0].size(), (*m)->def().nodes.size()) << name;
    EXPECT_EQ((*m)->io_allocator()->name(), "vulkan");
  }
}

TEST_F(StoriesOnVulkan, FirstLogitsAreLlama2cs) {
  auto r = runner_on("vulkan");
  ASSERT_NE(r, nullptr);
  const int32_t bos = 1;
  ASSERT_TRUE(r->prefill(std::span(&bos, 1)).ok());
  auto logits = r->logits();
  ASSERT_EQ(logits.size(), 512u);
  // llama2.c's run of stories260K.bin (the fixture's README).
  const float want[] = {-6.22291f, 8.40434f, -6.22374f, -6.22254f, -6.22195f};
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(logits[static_cast<size_t>(i)], want[i], 2e-4) << i;
}

TEST_F(StoriesOnVulkan, GreedyMatchesCpuRefAndTellsTheKnownStory) {
  auto vk = runner_on("vulkan");
  auto ref = runner_on("cpu_ref");
  ASSERT_TRUE(vk && ref);
  GenerationConfig g;
  g.max_new_tokens = kGreedyTokens;
  g.ignore_eos = true;
  const std::vector<int32_t> prompt = {1};
  auto a = vk->generate(prompt, g, nullptr);
  auto b = ref->generate(prompt, g, nullptr);
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  ASSERT_TRUE(b.ok()) << b.error().to_string();
  EXPECT_EQ(a->tokens, b->tokens);
  auto program = Program::load(stories_f32());
  ASSERT_TRUE(program.ok());
  auto tok = Tokenizer::from_program(**program);
  ASSERT_TRUE(tok.ok());
  auto text = (*tok)->decode(a->tokens);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->rfind("Once upon a time, there was a little girl named Lily", 0), 0u) << *text;
}

TEST_F(StoriesOnVulkan, ChunkedPrefillAndDecodeLogitsMatchCpuRef) {
  auto vk = runner_on("vulkan");
  auto ref = runner_on("cpu_ref");
  ASSERT_TRUE(vk && ref);
  // 11 tokens: one full chunk of 8 and a tail; then decode steps.
  std::vector<int32_t> prompt = hfs::test::random_tokens(11, 512, 5);
  prompt[0] = 1;
  ASSERT_TRUE(vk->prefill(prompt).ok());
  ASSERT_TRUE(ref->prefill(prompt).ok());
  for (int step = 0; step < 6; ++step) {
    auto a = vk->logits();
    auto b = ref->logits();
    ASSERT_EQ(a.size(), b.size());
    float worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
    EXPECT_LT(worst, 1e-4f) << "step " << step;
    const int32_t next = argmax(b);
    ASSERT_TRUE(vk->decode_step(next).ok());
    ASSERT_TRUE(ref->decode_step(next).ok());
  }
}

// The exporter's other weight formats (f16, bf16, int8 per row, int4 = q4_0 with i8 where K % 32 != 0)
// and the f16 cache: still every node on Vulkan, and the same greedy tokens and logits (1e-4) as cpu_ref
// on the same program.
void expect_whole_model_matches_cpu_ref(WeightsMode weights, DType cache) {
  const std::string path = stories_program(weights, cache, 32);
  ASSERT_FALSE(path.empty());
  auto vk = test::runner_on(path, "vulkan"), ref = test::runner_on(path, "cpu_ref");
  ASSERT_TRUE(vk && ref);
  auto program = Program::load(path);
  ASSERT_TRUE(program.ok());
  MethodOptions mo;
  mo.backends.backends = {"vulkan"};
  auto decode = Method::load(*program, "decode", mo);
  ASSERT_TRUE(decode.ok());
  EXPECT_EQ((*decode)->plan().partition_backends, std::vector<std::string>{"vulkan"});
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 497};
  ASSERT_TRUE(vk->prefill(prompt).ok());
  ASSERT_TRUE(ref->prefill(prompt).ok());
  for (int step = 0; step < 8; ++step) {
    auto a = vk->logits();
    auto b = ref->logits();
    float worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
    EXPECT_LT(worst, 1e-4f) << "step " << step;
    EXPECT_EQ(argmax(a), argmax(b)) << "step " << step;
    const int32_t next = argmax(b);
    ASSERT_TRUE(vk->decode_step(next).ok());
    ASSERT_TRUE(ref->decode_step(next).ok());
  }
}

class StoriesWeightFormats : public ::testing::TestWithParam<WeightsMode> {};

TEST_P(StoriesWeightFormats, WholeModelOnVulkanMatchesCpuRef) {
  HFS_REQUIRE_FIXTURE(hfs::test::stories_dir() + "/config.json");
  expect_whole_model_matches_cpu_ref(GetParam(), DType::kF32);
}

TEST(StoriesF16Cache, WholeModelOnVulkanMatchesCpuRef) {
  HFS_REQUIRE_FIXTURE(hfs::test::stories_dir() + "/config.json");
  expect_whole_model_matches_cpu_ref(WeightsMode::kF32, DType::kF16);
}

INSTANTIATE_TEST_SUITE_P(Formats, StoriesWeightFormats,
                         ::testing::Values(WeightsMode::kF16, WeightsMode::kBF16, WeightsMode::kInt8, WeightsMode::kInt4));

TEST_F(StoriesOnVulkan, ValidationLayerStayedQuiet) {
  // Runs last in this file; the global check in ops_test covers the whole binary as well.
  EXPECT_EQ(validation_message_count(), 0u);
}

}  // namespace
}  // namespace hfs::vulkan
