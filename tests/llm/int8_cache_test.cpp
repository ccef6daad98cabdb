// int8 KV caches (io contract minor 1) against f32 caches of the same checkpoint, on trained models (the
// stories260K fixture and the bundled default model): a greedy continuation of the f32 program, teacher-
// forced through both programs on cpu_ref, keeps its top-1 token at (almost) every position and the mean KL
// divergence of the next-token distributions is small; cpu_fast on the int8 program equals cpu_ref within
// float tolerance. Each program: context 128, 72 positions (a 40-token prompt in a 32-token chunk plus a
// tail, then decode steps). About 1 s on 2 cores.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "hfstatic/export.h"
#include "hfstatic/llm_runner.h"
#include "support/engine_trace.h"
#include "support/hf_static_fixture.h"
#include "support/require_fixture.h"

namespace hfs {
namespace {

std::string export_with(const std::string& dir, const std::string& name, DType cache) {
  ExportOptions opt;
  opt.context = 128;
  opt.prefill_chunk = 32;
  opt.prefill_variants = std::vector<int64_t>{};
  opt.cache_dtype = cache;
  opt.progress = false;
  const std::string path = test::temp_dir() + "/" + name + "_" + std::string(dtype_name(cache)) + ".hfs";
  const Status st = export_checkpoint(dir, path, opt);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  return path;
}

int32_t argmax(std::span<const float> l) { return static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin()); }

// The logits after the prompt (prefill) and after each later token (decode), on `backend`.
std::vector<std::vector<float>> teacher_forced(const std::string& prog, const std::vector<int32_t>& tokens, size_t prompt,
                                               const std::string& backend) {
  RunnerOptions o;
  o.io.method.backends.backends = {backend};
  auto r = Runner::load(prog, o);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  std::vector<std::vector<float>> out;
  if (!r) return out;
  EXPECT_TRUE((*r)->prefill(std::span<const int32_t>(tokens).first(prompt)).ok());
  out.emplace_back((*r)->logits().begin(), (*r)->logits().end());
  for (size_t i = prompt; i < tokens.size(); ++i) {
    auto l = (*r)->decode_step(tokens[i]);
    EXPECT_TRUE(l.ok()) << l.error().to_string();
    if (!l) return out;
    out.emplace_back(l->begin(), l->end());
  }
  return out;
}

double kl(std::span<const float> p_logits, std::span<const float> q_logits) {  // KL(p || q) of the softmaxes
  auto log_softmax = [](std::span<const float> x) {
    const double m = *std::max_element(x.begin(), x.end());
    double z = 0;
    for (float v : x) z += std::exp(v - m);
    std::vector<double> out(x.size());
    for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] - m - std::log(z);
    return out;
  };
  const auto lp = log_softmax(p_logits), lq = log_softmax(q_logits);
  double d = 0;
  for (size_t i = 0; i < lp.size(); ++i) d += std::exp(lp[i]) * (lp[i] - lq[i]);
  return d;
}

void compare(const std::string& dir, const std::string& name) {
  const std::string f32 = export_with(dir, name, DType::kF32), i8 = export_with(dir, name, DType::kI8);
  // Prompt: 40 tokens of the f32 program's own greedy text from token 1, then 32 more of it.
  std::vector<int32_t> tokens{1};
  {
    auto r = test::open_runner(f32);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_TRUE((*r)->prefill(tokens).ok());
    while (tokens.size() < 72) {
      tokens.push_back(argmax((*r)->logits()));
      ASSERT_TRUE((*r)->decode_step(tokens.back()).ok());
    }
  }
  const auto want = teacher_forced(f32, tokens, 40, "cpu_ref");
  const auto got = teacher_forced(i8, tokens, 40, "cpu_ref");
  const auto fast = teacher_forced(i8, tokens, 40, "cpu_fast");
  ASSERT_EQ(want.size(), 33u);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(fast.size(), want.size());
  double kl_sum = 0, kl_max = 0, fast_diff = 0, f32_diff = 0;
  size_t same_top1 = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = kl(want[i], got[i]);
    kl_sum += d;
    kl_max = std::max(kl_max, d);
    same_top1 += argmax(want[i]) == argmax(got[i]);
    fast_diff = std::max<double>(fast_diff, test::max_abs_diff(fast[i], got[i]));
    f32_diff = std::max<double>(f32_diff, test::max_abs_diff(want[i], got[i]));
  }
  const double kl_mean = kl_sum / static_cast<double>(want.size());
  std::printf("%s: int8 vs f32 caches: mean KL %.3g, max KL %.3g, top-1 equal %zu/%zu, max |dlogit| %.3g; "
              "cpu_fast vs cpu_ref max |dlogit| %.3g\n",
              name.c_str(), kl_mean, kl_max, same_top1, want.size(), f32_diff, fast_diff);
  EXPECT_LE(kl_mean, 1e-3) << name;
  EXPECT_GE(same_top1 + 1, want.size()) << name;  // at most one near-tie flips
  EXPECT_LE(fast_diff, 1e-3) << name;
}

TEST(Int8Cache, StoriesLogitsCloseToF32Caches) {
  HFS_REQUIRE_FIXTURE(test::stories_dir() + "/config.json");
  compare(test::stories_dir(), "stories260K");
}

TEST(Int8Cache, DefaultModelLogitsCloseToF32Caches) { compare(std::string(HFS_SOURCE_DIR) + "/models/kjv-llama", "kjv"); }

}  // namespace
}  // namespace hfs
