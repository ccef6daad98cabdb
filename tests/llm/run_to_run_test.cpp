// Run-to-run and thread-count determinism of a whole program on cpu_fast (docs/determinism.md): the same
// prompt through fresh Runners on 1, 2 and 3 threads gives memcmp-equal logits after every step and
// memcmp-equal K/V cache bytes, for every weight format and both cache dtypes. stories260K (hidden 64,
// K = 64 and 172) exported with a 32-token prefill chunk: a 40-token prompt runs one chunk (more than 16
// rows: float weights' prefill path) and an 8-token tail, then decode steps. Each load packs its own
// weights (the first Runner of a thread count is released before the next loads). About 1 s in all.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "hfstatic/export.h"
#include "hfstatic/llm_runner.h"
#include "hfstatic/program.h"
#include "support/fixtures.h"
#include "support/hf_static_fixture.h"
#include "support/require_fixture.h"

namespace hfs {
namespace {

struct Trace {
  std::vector<std::vector<float>> logits;  // after the prompt, then after each decode step
  std::vector<std::vector<std::byte>> caches;
};

Trace run_on_threads(const std::string& path, int threads) {
  RunnerOptions o;
  o.io.method.backends.backends = {"cpu_fast"};
  o.io.method.backends.settings["cpu_fast"] = Value::object();
  o.io.method.backends.settings["cpu_fast"].set("threads", Value(threads));
  Trace t;
  auto r = Runner::load(path, o);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  if (!r) return t;
  std::vector<int32_t> prompt = test::random_tokens(40, 512, 11);
  EXPECT_TRUE((*r)->prefill(prompt).ok());
  t.logits.emplace_back((*r)->logits().begin(), (*r)->logits().end());
  for (int32_t tok : {7, 300, 42, 1}) {
    auto l = (*r)->decode_step(tok);
    EXPECT_TRUE(l.ok()) << l.error().to_string();
    if (!l) return t;
    t.logits.emplace_back(l->begin(), l->end());
  }
  for (const TensorView& v : (*r)->io().cache_views()) {
    const auto* b = v.data<const std::byte>();
    t.caches.emplace_back(b, b + v.nbytes());
  }
  return t;
}

TEST(RunToRun, EveryThreadCountGivesTheSameBitsInEveryWeightFormatAndCacheDtype) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  for (WeightsMode weights : {WeightsMode::kF32, WeightsMode::kF16, WeightsMode::kBF16, WeightsMode::kInt8, WeightsMode::kInt4})
    for (DType cache : {DType::kF32, DType::kF16, DType::kI8}) {
      const std::string name = "w" + std::to_string(static_cast<int>(weights)) + "_" + std::string(dtype_name(cache));
      SCOPED_TRACE(name);
      ExportOptions opt;
      opt.context = 64;
      opt.prefill_chunk = 32;
      opt.prefill_variants = std::vector<int64_t>{};
      opt.weights = weights;
      opt.cache_dtype = cache;
      opt.progress = false;
      const std::string path = test::temp_dir() + "/det_" + name + ".hfs";
      ASSERT_TRUE(export_checkpoint(test::stories_dir(), path, opt));
      const Trace one = run_on_threads(path, 1);
      ASSERT_EQ(one.logits.size(), 5u);
      ASSERT_FALSE(one.caches.empty());
      for (int threads : {2, 3, 1}) {
        SCOPED_TRACE("threads " + std::to_string(threads));
        const Trace t = run_on_threads(path, threads);
        ASSERT_EQ(t.logits.size(), one.logits.size());
        for (size_t s = 0; s < t.logits.size(); ++s) {
          ASSERT_EQ(t.logits[s].size(), one.logits[s].size());
          EXPECT_EQ(0, std::memcmp(t.logits[s].data(), one.logits[s].data(), t.logits[s].size() * sizeof(float)))
              << "logits after step " << s;
        }
        ASSERT_EQ(t.caches.size(), one.caches.size());
        for (size_t c = 0; c < t.caches.size(); ++c)
          EXPECT_TRUE(t.caches[c] == one.caches[c]) << "cache buffer " << c;
      }
    }
}

}  // namespace
}  // namespace hfs
