// The decode GEMV variants for f16 / bf16 weights (linear_half.h): every variant against the double
// reference, the load-time tuning's answer, and HFS_CPU_FAST_HALF_GEMV through the backend.
#include "backends/cpu_fast/linear_half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu_fast/backend.h"
#include "backends/cpu_fast/half.h"
#include "backends/cpu_fast/thread_pool.h"
#include "hfstatic/ext/method.h"
#include "isa_fixture.h"
#include "linear_reference.h"
#include "support/memory_constant_store.h"
#include "support/random_floats.h"

namespace hfs::cpu_fast {
namespace {

class CpuFastHalfGemv : public IsaTest {};

// Sets an environment variable for one scope.
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }
  const char* name_;
};

std::string variant_name(int v) { return std::string(half_gemv_variants()[static_cast<size_t>(v)].name); }

// y = W x + bias for one row through variant v, against Σ x·w in double (f32 rounding only: the same bound as
// the other float kernels' tests).
void check_variant(int v, DType f, int64_t n, int64_t k, ThreadPool& pool, bool with_bias) {
  SCOPED_TRACE(variant_name(v) + " " + std::string(dtype_name(f)) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
               " threads=" + std::to_string(pool.size()) + (with_bias ? "" : " no bias"));
  Weight w = make_weight(f, n, k, static_cast<uint32_t>(n * 31 + k));
  std::mt19937 rng(static_cast<uint32_t>(k));
  hfs::test::Normal<float> d(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(k)), bias(static_cast<size_t>(n));
  for (auto& e : x) e = d(rng);
  for (auto& e : bias) e = with_bias ? d(rng) : 0.0f;
  auto pw = pack_weight(f, w.bytes.data(), n, k, nullptr);
  ASSERT_TRUE(pw.ok()) << pw.error().to_string();
  pw->gemv_variant = v;
  LinearScratch scratch;
  std::vector<float> y(static_cast<size_t>(n), -7.0f);
  linear(*pw, x.data(), 1, with_bias ? bias.data() : nullptr, y.data(), scratch, &pool);
  for (int64_t j = 0; j < n; ++j) {
    double ref = bias[static_cast<size_t>(j)], mag = 0;
    for (int64_t e = 0; e < k; ++e) {
      const double p = double(x[static_cast<size_t>(e)]) * w.deq[static_cast<size_t>(j * k + e)];
      ref += p;
      mag += std::fabs(p);
    }
    ASSERT_NEAR(y[static_cast<size_t>(j)], ref, 1e-5 * (mag + 1.0)) << "col " << j;
  }
}

// Every variant the CPU runs, both formats: K with whole steps of every width, leftover whole vectors and
// a tail (203, 1000), no whole vector (9), a K beyond the split kernel's stack buffer (17000: it falls
// back to widening), N = 37, 9, 6, 40 (pool ranges of 4-row units and their tails), 1 and 2 threads.
TEST_P(CpuFastHalfGemv, EveryVariantMatchesDoubleReference) {
  ThreadPool pools[2] = {ThreadPool(1), ThreadPool(2)};
  for (DType f : {DType::kF16, DType::kBF16}) {
    const std::vector<int> vs = eligible_half_gemv(f);
    if (GetParam() == Isa::kScalar) {
      EXPECT_TRUE(vs.empty());
      continue;
    }
    ASSERT_GE(vs.size(), 3u);
    EXPECT_EQ(variant_name(vs[0]), GetParam() == Isa::kAvx2 ? "ymm-default" : "zmm-default");
    for (int v : vs) {
      EXPECT_LE(half_gemv_variants()[static_cast<size_t>(v)].isa, active_isa()) << variant_name(v);
      for (auto [n, k] : {std::pair<int64_t, int64_t>{37, 203}, {9, 1000}, {6, 9}, {40, 256}})
        for (ThreadPool& pool : pools) check_variant(v, f, n, k, pool, true);
      check_variant(v, f, 3, 17000, pools[0], false);
    }
  }
}

// linear(), linear_batch() and linear_glu() run the variant a weight records for one row: each gives, bit for
// bit, what the variant's own kernel gives over all the columns (a row's sum does not depend on the range a
// pool task takes). The 256-bit and 512-bit built-in kernels add in different orders, so on AVX-512 a
// dispatch that ignored the record would show (checked: they differ on this shape).
TEST_P(CpuFastHalfGemv, OneRowCallsRunTheRecordedVariant) {
  if (GetParam() == Isa::kScalar) GTEST_SKIP() << "no variants on the portable path";
  ThreadPool pool(2);
  constexpr int64_t n = 70, k = 1000;
  for (DType f : {DType::kF16, DType::kBF16}) {
    const Weight wa = make_weight(f, n, k, 21), wb = make_weight(f, n, k, 22);
    auto a = pack_weight(f, wa.bytes.data(), n, k, nullptr);
    auto b = pack_weight(f, wb.bytes.data(), n, k, nullptr);
    ASSERT_TRUE(a.ok() && b.ok());
    std::vector<float> x(k), bias(n);
    for (int64_t i = 0; i < k; ++i) x[static_cast<size_t>(i)] = std::cos(0.37f * static_cast<float>(i));
    for (int64_t i = 0; i < n; ++i) bias[static_cast<size_t>(i)] = 0.01f * static_cast<float>(i);
    std::map<int, std::vector<float>> direct;
    for (int v : eligible_half_gemv(f)) {
      SCOPED_TRACE(variant_name(v) + " " + std::string(dtype_name(f)));
      auto& want = direct[v];
      want.assign(2 * n, 0.0f);
      half_gemv_variants()[static_cast<size_t>(v)].fn(*a, x.data(), 1, bias.data(), want.data(), 0, n);
      half_gemv_variants()[static_cast<size_t>(v)].fn(*b, x.data(), 1, nullptr, want.data() + n, 0, n);
      a->gemv_variant = b->gemv_variant = v;
      LinearScratch scratch;
      std::vector<float> y(n), ya(n), yb(n), gate(n), up(n), glu(n);
      linear(*a, x.data(), 1, bias.data(), y.data(), scratch, &pool);
      const LinearJob jobs[2] = {{&*a, bias.data(), ya.data()}, {&*b, nullptr, yb.data()}};
      linear_batch(jobs, x.data(), nullptr, 1, &pool);
      linear_glu({&*a, bias.data(), gate.data()}, {&*b, nullptr, up.data()}, x.data(), nullptr, 1, glu.data(), &pool);
      for (int64_t j = 0; j < n; ++j) {
        ASSERT_EQ(y[static_cast<size_t>(j)], want[static_cast<size_t>(j)]) << "linear col " << j;
        ASSERT_EQ(ya[static_cast<size_t>(j)], want[static_cast<size_t>(j)]) << "batch col " << j;
        ASSERT_EQ(yb[static_cast<size_t>(j)], want[static_cast<size_t>(n + j)]) << "batch col " << j;
        ASSERT_EQ(gate[static_cast<size_t>(j)], want[static_cast<size_t>(j)]) << "glu col " << j;
        ASSERT_EQ(up[static_cast<size_t>(j)], want[static_cast<size_t>(n + j)]) << "glu col " << j;
      }
    }
    if (GetParam() >= Isa::kAvx512) {
      const std::vector<int> vs = eligible_half_gemv(f);
      int ymm = -1;
      for (int v : vs)
        if (variant_name(v) == "ymm-default") ymm = v;
      ASSERT_GE(ymm, 0);
      EXPECT_NE(direct[vs[0]], direct[ymm]) << "the two built-in kernels round alike: the checks above cannot see the dispatch";
    }
  }
}

// The tuning times every eligible variant and returns one of them; a second tuning of the same
// (format, K) is the cached answer. Nothing is eligible for f32 or on the scalar path.
TEST_P(CpuFastHalfGemv, TuningPicksAnEligibleVariantOncePerClass) {
  ThreadPool pool(2);
  for (DType f : {DType::kF16, DType::kBF16}) {
    // A K no other test tunes (the cache is per process), weights of several shapes.
    const int64_t k = 328 + (f == DType::kF16 ? 0 : 8) + 16 * static_cast<int64_t>(GetParam());
    std::vector<Weight> ws;
    std::vector<PackedWeight> packed;
    for (int64_t n : {300, 64, 1100}) {
      ws.push_back(make_weight(f, n, k, static_cast<uint32_t>(n)));
      packed.push_back(std::move(pack_weight(f, ws.back().bytes.data(), n, k, nullptr).value()));
    }
    std::vector<const PackedWeight*> ptrs;
    for (auto& p : packed) ptrs.push_back(&p);
    const HalfGemvTuning t = tune_half_gemv(f, k, ptrs, &pool);
    const std::vector<int> vs = eligible_half_gemv(f);
    EXPECT_EQ(t.candidates, vs);
    if (GetParam() == Isa::kScalar) {
      EXPECT_EQ(t.variant, -1);
      continue;
    }
    ASSERT_EQ(t.gbs.size(), vs.size());
    ASSERT_EQ(t.score.size(), vs.size());
    EXPECT_NE(std::find(vs.begin(), vs.end(), t.variant), vs.end()) << t.variant;
    for (double g : t.gbs) EXPECT_GT(g, 0.0);
    for (double g : t.score) EXPECT_GT(g, 0.0);
    EXPECT_GT(t.ms, 0.0);
    EXPECT_FALSE(t.cached);
    const HalfGemvTuning again = tune_half_gemv(f, k, ptrs, &pool);
    EXPECT_TRUE(again.cached);
    EXPECT_EQ(again.variant, t.variant);
    const std::string d = describe(t, f, k, 2);
    EXPECT_NE(d.find(variant_name(t.variant)), std::string::npos) << d;
    EXPECT_NE(d.find("K=" + std::to_string(k)), std::string::npos) << d;
  }
  EXPECT_TRUE(eligible_half_gemv(DType::kF32).empty());
  EXPECT_TRUE(eligible_half_gemv(DType::kQ4_0).empty());
}

TEST_P(CpuFastHalfGemv, ForcedVariantIsCheckedAgainstTheFormatAndTheIsa) {
  {
    EXPECT_EQ(forced_half_gemv(DType::kBF16).value(), -1);  // unset: the ISA's kernel, no timing
    EXPECT_FALSE(half_gemv_tuning_requested());
  }
  {
    ScopedEnv e("HFS_CPU_FAST_HALF_GEMV", "tune");
    EXPECT_EQ(forced_half_gemv(DType::kBF16).value(), -1);
    EXPECT_TRUE(half_gemv_tuning_requested());
    EXPECT_TRUE(check_half_gemv_env().ok());
  }
  {
    ScopedEnv e("HFS_CPU_FAST_HALF_GEMV", "no-such-kernel");
    auto r = forced_half_gemv(DType::kBF16);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message().find("HFS_CPU_FAST_HALF_GEMV='no-such-kernel' is not a GEMV variant for bf16"),
              std::string::npos)
        << r.error().message();
    EXPECT_NE(r.error().message().find("choices: default"), std::string::npos) << r.error().message();
  }
  {
    // The split kernel widens bf16 only.
    ScopedEnv e("HFS_CPU_FAST_HALF_GEMV", "ymm-split-pf4k");
    auto r = forced_half_gemv(DType::kF16);
    ASSERT_FALSE(r.ok());
#if defined(__x86_64__)
    EXPECT_NE(r.error().message().find("cannot run f16"), std::string::npos) << r.error().message();
#else
    // Only x86-64 builds compile the x86 variants: elsewhere the name is not a variant at all.
    EXPECT_NE(r.error().message().find("is not a GEMV variant for f16"), std::string::npos) << r.error().message();
#endif
    auto b = forced_half_gemv(DType::kBF16);
    if (GetParam() == Isa::kScalar) {
      EXPECT_FALSE(b.ok());
    } else {
      ASSERT_TRUE(b.ok()) << b.error().to_string();
      EXPECT_EQ(variant_name(*b), "ymm-split-pf4k");
    }
  }
  {
    // A 512-bit variant on the AVX2 path.
    ScopedEnv e("HFS_CPU_FAST_HALF_GEMV", "zmm-r1-nopf");
    auto r = forced_half_gemv(DType::kF16);
    EXPECT_EQ(r.ok(), GetParam() >= Isa::kAvx512) << (r.ok() ? "" : r.error().message());
    if (!r.ok()) {
#if defined(__x86_64__)
      EXPECT_NE(r.error().message().find("cannot run f16 weights on " + std::string(isa_name(GetParam()))), std::string::npos)
          << r.error().message();
#else
      EXPECT_NE(r.error().message().find("is not a GEMV variant for f16"), std::string::npos) << r.error().message();
#endif
    }
  }
  {
    ScopedEnv e("HFS_CPU_FAST_HALF_GEMV", "default");
    auto r = forced_half_gemv(DType::kF16);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, GetParam() == Isa::kScalar ? -1 : eligible_half_gemv(DType::kF16)[0]);
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, CpuFastHalfGemv, all_isas(), isa_test_name);

// ---- through the backend: a one-row linear method compiled under HFS_CPU_FAST_HALF_GEMV --------------

using Constants = hfs::test::MemoryConstantStore;

// A forced variant runs the method's one-row linear (the output matches the reference whichever it is);
// an unknown one fails the compile, naming the variable and the choices.
TEST(CpuFastHalfGemvBackend, ForcedVariantRunsTheDecodeLinearOrFailsTheLoad) {
  if (detected_isa() < Isa::kAvx2) GTEST_SKIP() << "no GEMV variants on the portable path";
  constexpr int64_t N = 70, K = 200;
  const Weight w = make_weight(DType::kBF16, N, K, 11);
  Constants st;
  ASSERT_TRUE(st.add("w", {DType::kBF16, {N, K}}, std::as_bytes(std::span(w.bytes))).ok());
  MethodDef m;
  m.inputs = {{"x", {DType::kF32, {1, 1, K}}, IORole::kInput, ""}};
  m.nodes = {{"linear", {"x", "w"}, {"y"}, {}}};
  m.outputs = {{"y", {DType::kF32, {1, 1, N}}, IORole::kOutput, ""}};
  Subgraph sg;
  sg.nodes = m.nodes;
  sg.inputs = m.inputs;
  sg.outputs = m.outputs;
  sg.constants = &st;
  std::vector<float> x(K);
  for (int64_t i = 0; i < K; ++i) x[static_cast<size_t>(i)] = std::sin(0.3f * static_cast<float>(i));
  CpuFastBackend be(2);
  for (int v : eligible_half_gemv(DType::kBF16)) {
    SCOPED_TRACE(variant_name(v));
    ScopedEnv e("HFS_CPU_FAST_HALF_GEMV", variant_name(v).c_str());
    auto del = be.compile(sg);
    ASSERT_TRUE(del.ok()) << del.error().to_string();
    std::vector<float> y(N, -7.0f);
    std::vector<TensorView> in = {TensorView(x.data(), DType::kF32, {1, 1, K})};
    std::vector<TensorView> out = {TensorView(y.data(), DType::kF32, {1, 1, N})};
    ASSERT_TRUE((*del)->execute(in, out).ok());
    for (int64_t j = 0; j < N; ++j) {
      double ref = 0, mag = 0;
      for (int64_t i = 0; i < K; ++i) {
        ref += double(x[static_cast<size_t>(i)]) * w.deq[static_cast<size_t>(j * K + i)];
        mag += std::fabs(double(x[static_cast<size_t>(i)]) * w.deq[static_cast<size_t>(j * K + i)]);
      }
      ASSERT_NEAR(y[static_cast<size_t>(j)], ref, 1e-5 * (mag + 1.0)) << "col " << j;
    }
  }
  ScopedEnv e("HFS_CPU_FAST_HALF_GEMV", "zmm-r9-warp");
  auto bad = be.compile(sg);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.error().message().find("HFS_CPU_FAST_HALF_GEMV='zmm-r9-warp'"), std::string::npos) << bad.error().to_string();
}

// The decode kernel of a 16-bit weight class large enough for the timing (64 MiB: [8192, 4096] bf16) is a
// function of the CPU's dispatch level alone: two loads give memcmp-equal outputs, those of the ISA's own
// kernel, and time nothing (with HFS_PROFILE=1 a timing would print its "cpu_fast tune:" line);
// HFS_CPU_FAST_HALF_GEMV=tune is what asks for the timing. About 0.3 s (the weight is written, copied by
// the constant store and by the backend's packing).
TEST(CpuFastHalfGemvBackend, LoadsPickTheIsaKernelWithoutTiming) {
  if (detected_isa() < Isa::kAvx2) GTEST_SKIP() << "no GEMV variants on the portable path";
  constexpr int64_t N = 8192, K = 4096;
  std::vector<uint16_t> bytes(static_cast<size_t>(N * K));
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint16_t>(0x3c00 + (i * 2654435761u >> 20) % 512);
  Constants st;
  ASSERT_TRUE(st.add("w", {DType::kBF16, {N, K}}, std::as_bytes(std::span(bytes))).ok());
  MethodDef m;
  m.inputs = {{"x", {DType::kF32, {1, 1, K}}, IORole::kInput, ""}};
  m.nodes = {{"linear", {"x", "w"}, {"y"}, {}}};
  m.outputs = {{"y", {DType::kF32, {1, 1, N}}, IORole::kOutput, ""}};
  Subgraph sg;
  sg.nodes = m.nodes;
  sg.inputs = m.inputs;
  sg.outputs = m.outputs;
  sg.constants = &st;
  std::vector<float> x(K);
  for (int64_t i = 0; i < K; ++i) x[static_cast<size_t>(i)] = std::sin(0.3f * static_cast<float>(i));
  // What the ISA's kernel gives.
  auto pw = pack_weight(DType::kBF16, bytes.data(), N, K, nullptr);
  ASSERT_TRUE(pw.ok());
  LinearScratch scratch;
  std::vector<float> want(N);
  linear(*pw, x.data(), 1, nullptr, want.data(), scratch, nullptr);
  CpuFastBackend be(2);
  auto load_and_run = [&](std::string* printed) {
    ScopedEnv profile("HFS_PROFILE", "1");
    testing::internal::CaptureStderr();
    std::vector<float> y(N, -7.0f);
    {
      auto del = be.compile(sg);
      EXPECT_TRUE(del.ok()) << del.error().to_string();
      if (del.ok()) {
        std::vector<TensorView> in = {TensorView(x.data(), DType::kF32, {1, 1, K})};
        std::vector<TensorView> out = {TensorView(y.data(), DType::kF32, {1, 1, N})};
        EXPECT_TRUE((*del)->execute(in, out).ok());
      }
    }
    *printed = testing::internal::GetCapturedStderr();
    return y;
  };
  std::string printed;
  for (int load = 0; load < 2; ++load) {
    SCOPED_TRACE("load " + std::to_string(load));
    const std::vector<float> y = load_and_run(&printed);
    EXPECT_EQ(0, std::memcmp(y.data(), want.data(), want.size() * sizeof(float)));
    EXPECT_EQ(printed.find("cpu_fast tune:"), std::string::npos) << printed;
  }
  ScopedEnv e("HFS_CPU_FAST_HALF_GEMV", "tune");
  (void)load_and_run(&printed);
  EXPECT_NE(printed.find("cpu_fast tune: bf16 K=4096"), std::string::npos) << printed;
}

}  // namespace
}  // namespace hfs::cpu_fast
