// cpu_fast's moe kernel against the reference kernel (cpu_ref: ops/moe.cpp) for every expert weight format,
// E = 12, top-2 and top-4, 1 to 20 rows, a row of tied router logits; and a row's output alone vs among 19 others, bit for bit
// (docs/determinism.md). Small shapes: the whole file runs in well under a second.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu_fast/backend.h"
#include "backends/cpu_fast/half.h"
#include "core/quant.h"
#include "hfstatic/ext/method.h"
#include "ops/op_test_util.h"
#include "support/memory_constant_store.h"
#include "support/random_floats.h"

namespace hfs::cpu_fast {
namespace {

constexpr int64_t kE = 12, kH = 64, kI = 96;

using Store = hfs::test::MemoryConstantStore;

std::vector<float> randn(size_t n, uint32_t seed, float sd) {
  std::mt19937 rng(seed);
  hfs::test::Normal<float> d(0.0f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// A stacked [E, N, K] expert weight in format f (i8: with its [E, N] per-channel scale as "<name>.scale").
void add_stack(Store& st, const std::string& name, DType f, int64_t n, int64_t k, uint32_t seed) {
  const std::vector<float> w = randn(static_cast<size_t>(kE * n * k), seed, 0.2f);
  const TensorType type{f, {kE, n, k}};
  std::vector<uint8_t> b(type.nbytes());
  switch (f) {
    case DType::kF32: std::memcpy(b.data(), w.data(), b.size()); break;
    case DType::kF16:
    case DType::kBF16:
      for (size_t i = 0; i < w.size(); ++i) {
        const uint16_t h = f == DType::kF16 ? f32_to_f16(w[i]) : f32_to_bf16(w[i]);
        std::memcpy(b.data() + 2 * i, &h, 2);
      }
      break;
    case DType::kI8: {
      std::vector<float> scale(static_cast<size_t>(kE * n));
      for (int64_t r = 0; r < kE * n; ++r) {
        float amax = 0;
        for (int64_t c = 0; c < k; ++c) amax = std::max(amax, std::fabs(w[static_cast<size_t>(r * k + c)]));
        scale[static_cast<size_t>(r)] = amax / 127.0f;
        for (int64_t c = 0; c < k; ++c)
          b[static_cast<size_t>(r * k + c)] = static_cast<uint8_t>(static_cast<int8_t>(std::lround(w[static_cast<size_t>(r * k + c)] / scale[static_cast<size_t>(r)])));
      }
      ASSERT_TRUE(st.add(name + ".scale", {DType::kF32, {kE, n}}, std::as_bytes(std::span(scale))).ok());
      break;
    }
    case DType::kQ4_0: ASSERT_TRUE(quant::quantize_q4_0(w.data(), kE * n, k, b.data()).ok()); break;
    default: FAIL();
  }
  ASSERT_TRUE(st.add(name, type, std::as_bytes(std::span(b))).ok());
}

struct Case {
  DType f;
  const char* name;
};
const Case kCases[] = {{DType::kF32, "f32"}, {DType::kF16, "f16"}, {DType::kBF16, "bf16"}, {DType::kI8, "i8"}, {DType::kQ4_0, "q4_0"}};

std::vector<std::string> operands(DType f) {
  std::vector<std::string> in = {"x", "logits", "gate", "up", "down"};
  if (f == DType::kI8) in.insert(in.end(), {"gate.scale", "up.scale", "down.scale"});
  return in;
}

Attrs attrs_of(int64_t k, bool renorm) { return {{"top_k", Value(k)}, {"norm_topk_prob", Value(renorm)}}; }

MethodDef moe_method(int64_t rows, DType f, int64_t k, bool renorm) {
  MethodDef m;
  m.name = "moe";
  m.inputs = {{"x", {DType::kF32, {rows, kH}}, IORole::kInput, ""}, {"logits", {DType::kF32, {rows, kE}}, IORole::kInput, ""}};
  m.nodes.push_back({"moe", operands(f), {"out"}, attrs_of(k, renorm)});
  m.outputs = {{"out", {DType::kF32, {rows, kH}}, IORole::kOutput, ""}};
  return m;
}

Subgraph subgraph_of(const MethodDef& m, const Store& st) {
  Subgraph sg;
  sg.nodes = m.nodes;
  sg.inputs = m.inputs;
  sg.outputs = m.outputs;
  sg.constants = &st;
  return sg;
}

struct Fixture {
  Store st;
  explicit Fixture(DType f, bool releases = false) {
    st.releases = releases;
    add_stack(st, "gate", f, kI, kH, 1);
    add_stack(st, "up", f, kI, kH, 2);
    add_stack(st, "down", f, kH, kI, 3);
  }
  std::vector<float> fast(CpuFastBackend& be, DType f, const std::vector<float>& x, const std::vector<float>& logits,
                          int64_t rows, int64_t k, bool renorm) {
    auto del = be.compile(subgraph_of(moe_method(rows, f, k, renorm), st));
    EXPECT_TRUE(del.ok()) << del.error().to_string();
    std::vector<float> y(static_cast<size_t>(rows * kH), NAN);
    if (!del.ok()) return y;
    std::vector<TensorView> in = {TensorView(const_cast<float*>(x.data()), DType::kF32, {rows, kH}),
                                  TensorView(const_cast<float*>(logits.data()), DType::kF32, {rows, kE})};
    std::vector<TensorView> out = {TensorView(y.data(), DType::kF32, {rows, kH})};
    Status s = (*del)->execute(in, out);
    EXPECT_TRUE(s.ok()) << s.error().to_string();
    return y;
  }
  std::vector<float> reference(DType f, const std::vector<float>& x, const std::vector<float>& logits, int64_t rows,
                               int64_t k, bool renorm) {
    std::vector<TensorView> in = {TensorView(const_cast<float*>(x.data()), DType::kF32, {rows, kH}),
                                  TensorView(const_cast<float*>(logits.data()), DType::kF32, {rows, kE})};
    for (size_t i = 2; i < operands(f).size(); ++i) in.push_back(*st.find(operands(f)[i]));
    std::vector<float> y(static_cast<size_t>(rows * kH));
    Status s = optest::run("moe", attrs_of(k, renorm), in, {TensorView(y.data(), DType::kF32, {rows, kH})});
    EXPECT_TRUE(s.ok()) << s.error().to_string();
    return y;
  }
};

// Relative RMS error of got against want.
double rel_rms(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return std::sqrt(num / den);
}

TEST(CpuFastMoe, MatchesTheReferenceKernelForEveryWeightFormat) {
  CpuFastBackend be(2);
  for (const Case& c : kCases) {
    Fixture fx(c.f);
    for (int64_t k : {2, 4}) {
      for (int64_t rows : {1, 3, 20}) {
        SCOPED_TRACE(std::string(c.name) + " top_k " + std::to_string(k) + " rows " + std::to_string(rows));
        const bool renorm = k == 4;
        const std::vector<float> x = randn(static_cast<size_t>(rows * kH), 100 + static_cast<uint32_t>(rows), 1.0f);
        std::vector<float> logits = randn(static_cast<size_t>(rows * kE), 200 + static_cast<uint32_t>(rows), 2.0f);
        // Row 0 of a multi-row step ties every expert: only the lower-index rule picks its experts.
        if (rows > 1) std::fill(logits.begin(), logits.begin() + kE, 0.5f);
        const std::vector<float> got = fx.fast(be, c.f, x, logits, rows, k, renorm);
        const std::vector<float> want = fx.reference(c.f, x, logits, rows, k, renorm);
        // Float weights: the same products summed in another order. Integer weights: the kernels also
        // round x and the experts' hidden activations to int8 per 32-block (docs/cpu-fast-backend.md).
        EXPECT_LT(rel_rms(got, want), c.f == DType::kF32 || c.f == DType::kF16 || c.f == DType::kBF16 ? 1e-5 : 2e-2);
      }
    }
  }
}

TEST(CpuFastMoe, ARowGetsTheSameBitsAloneAndAmongOtherRows) {
  CpuFastBackend be(2);
  constexpr int64_t kRows = 20;
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    Fixture fx(c.f, /*releases=*/c.f == DType::kF16);  // f16: the huge-page copies of the experts
    const std::vector<float> x = randn(kRows * kH, 7, 1.0f);
    const std::vector<float> logits = randn(kRows * kE, 8, 2.0f);
    const std::vector<float> all = fx.fast(be, c.f, x, logits, kRows, 4, true);
    for (int64_t r : {0, 7, 19}) {
      const std::vector<float> xr(x.begin() + r * kH, x.begin() + (r + 1) * kH);
      const std::vector<float> lr(logits.begin() + r * kE, logits.begin() + (r + 1) * kE);
      const std::vector<float> alone = fx.fast(be, c.f, xr, lr, 1, 4, true);
      EXPECT_EQ(0, std::memcmp(alone.data(), all.data() + r * kH, kH * sizeof(float))) << "row " << r;
    }
  }
}

TEST(CpuFastMoe, SigmoidGateMatchesTheReference) {
  Store st;
  MethodDef m;
  m.name = "g";
  m.inputs = {{"x", {DType::kF32, {3, kH}}, IORole::kInput, ""}, {"g", {DType::kF32, {3, 1}}, IORole::kInput, ""}};
  m.nodes.push_back({"sigmoid_gate", {"x", "g"}, {"out"}, {}});
  m.outputs = {{"out", {DType::kF32, {3, kH}}, IORole::kOutput, ""}};
  CpuFastBackend be(2);
  auto del = be.compile(subgraph_of(m, st));
  ASSERT_TRUE(del.ok()) << del.error().to_string();
  std::vector<float> x = randn(3 * kH, 9, 1.0f), g = {-2.0f, 0.0f, 3.5f}, y(3 * kH), want(3 * kH);
  std::vector<TensorView> in = {TensorView(x.data(), DType::kF32, {3, kH}), TensorView(g.data(), DType::kF32, {3, 1})};
  std::vector<TensorView> out = {TensorView(y.data(), DType::kF32, {3, kH})};
  ASSERT_TRUE((*del)->execute(in, out).ok());
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t i = 0; i < kH; ++i) want[r * kH + i] = x[r * kH + i] / (1.0f + std::exp(-g[r]));
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-6f * (1 + std::fabs(want[i])));
}

}  // namespace
}  // namespace hfs::cpu_fast
