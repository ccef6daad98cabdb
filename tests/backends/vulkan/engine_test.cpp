// The multi-sequence engine and speculative decoding on Vulkan are just methods on another backend:
// several sequences sharing steps (contract version 2, step_<T> methods) produce the tokens each
// produces on cpu_ref, and prompt-lookup drafting keeps greedy output exact.
#include <gtest/gtest.h>

#include <map>

#include "hfstatic/engine.h"
#include "support/hf_static_fixture.h"

namespace hfs::vulkan {
namespace {

std::map<SequenceId, std::vector<int32_t>> run_engine(const std::string& path, const std::string& backend, bool draft) {
  EngineOptions o;
  o.io.method.backends.backends = {backend};
  auto e = Engine::load(path, o);
  EXPECT_TRUE(e.ok()) << e.error().to_string();
  std::map<SequenceId, std::vector<int32_t>> out;
  if (!e.ok()) return out;
  GenerationConfig g;
  g.max_new_tokens = 8;
  g.ignore_eos = true;
  if (draft) g.draft.kind = DraftKind::kNgram;
  for (uint64_t seed : {21u, 22u, 23u}) {
    auto id = (*e)->add(hfs::test::random_tokens(5 + static_cast<int>(seed % 3), 512, seed), g);
    EXPECT_TRUE(id.ok()) << id.error().to_string();
  }
  while (!(*e)->idle()) {
    auto events = (*e)->step();
    EXPECT_TRUE(events.ok()) << events.error().to_string();
    if (!events.ok()) break;
    for (const StepEvent& ev : *events) out[ev.sequence].push_back(ev.token);
  }
  return out;
}

TEST(VulkanEngine, SharedStepsGiveCpuRefsTokens) {
  hfs::test::TinyModel m;
  m.sequences = 3;
  m.context = 32;
  const std::string path = hfs::test::tiny_program(m);
  auto vk = run_engine(path, "vulkan", false);
  auto ref = run_engine(path, "cpu_ref", false);
  ASSERT_EQ(vk.size(), 3u);
  EXPECT_EQ(vk, ref);
  EXPECT_EQ(run_engine(path, "vulkan", true), ref);  // drafts verified in multi-row steps: same tokens
}

}  // namespace
}  // namespace hfs::vulkan
