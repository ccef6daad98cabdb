// The two GEMV kernels of few-row linears — linear_gemv_subgroup.comp (subgroupAdd, then one shared step
// across subgroups) and linear_gemv.comp (a shared-memory tree) — each against the reference kernel
// (cpu_ref's src/ops/linear.cpp) on the same device, the choice forced by the backend's `subgroups`
// setting. Shapes are the awkward ones for a reduction over K by 64 threads in subgroups (lavapipe's are
// 8 wide): odd K, K shorter than a subgroup, K not a multiple of the subgroup or of the workgroup, N
// smaller than a subgroup, one row and several (up to the GEMV's 4). The kernels differ from the
// reference by summation order only. Tolerance, f32 weights: |got - ref| <= 1e-6 (1 + sum_k |x_k w_k|)
// per element (two orders of the same sum differ by a few ulps of the sum of magnitudes: measured up to
// 1.3e-7 on lavapipe with K = 513); stored formats (K <= 101): 1e-5 absolute + 1e-5 relative, as every
// linear kernel test.
//
// Cost: 58 single-node programs per path, about 1 s per path on lavapipe (2.5 s for the file).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "backends/vulkan/backend.h"
#include "op_harness.h"

namespace hfs::vulkan::test {
namespace {

std::unique_ptr<Backend> backend_with_subgroups(bool on) {
  Value s = Value::object();
  s.set("subgroups", Value(on));
  auto b = make_vulkan_backend(s);
  EXPECT_TRUE(b.ok()) << b.error().to_string();
  return b.ok() ? std::move(*b) : nullptr;
}

bool uses_subgroup_gemv(const Backend& b) {
  return static_cast<const VulkanBackend&>(b).lower_options().subgroup_gemv;
}

constexpr double kSumTol = 1e-6;

std::vector<float> floats_of(const OpOperand& o) {
  std::vector<float> v(o.bytes.size() / 4);
  std::memcpy(v.data(), o.bytes.data(), o.bytes.size());
  return v;
}

// sum_k |x[m, k] w[n, k]| for each output element [m, n].
std::vector<float> sum_bound(const OpOperand& x, const OpOperand& w, int64_t m, int64_t n, int64_t k) {
  const std::vector<float> xv = floats_of(x), wv = floats_of(w);
  std::vector<float> out(static_cast<size_t>(m * n));
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < n; ++c) {
      double s = 0;
      for (int64_t i = 0; i < k; ++i) s += std::abs(double(xv[size_t(r * k + i)]) * wv[size_t(c * k + i)]);
      out[size_t(r * n + c)] = static_cast<float>(s);
    }
  return out;
}

// Both paths where the device has subgroup arithmetic (lavapipe does), else only the shared one.
class VulkanGemv : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    backend_ = backend_with_subgroups(GetParam());
    ASSERT_NE(backend_, nullptr);
    const SubgroupInfo& sg = static_cast<VulkanBackend&>(*backend_).context().subgroups();
    if (GetParam() && !sg.arithmetic_in_compute())
      GTEST_SKIP() << "this device has no subgroup arithmetic in compute shaders (subgroup size " << sg.size << ")";
    ASSERT_EQ(uses_subgroup_gemv(*backend_), GetParam());
  }
  void expect_match(const NodeDef& node, const std::vector<OpOperand>& operands) {
    OpRun ref = run_ref(node, operands);
    ASSERT_TRUE(ref.status.ok()) << ref.status.error().to_string();
    OpRun got = run_vulkan(*backend_, node, operands);
    ASSERT_TRUE(got.status.ok()) << got.status.error().to_string();
    ASSERT_EQ(got.outputs.size(), 1u);
    EXPECT_LE(worst_ratio(got.outputs[0], ref.outputs[0], 1e-5, 1e-5), 1.0);
  }
  // |got - ref| <= kSumTol * (1 + sum_k |x[m, k] w[n, k]|) per element: two summation orders of the
  // same K products differ by a few ulps of the sum of their magnitudes, whatever the sign of the result.
  void expect_sum_match(const NodeDef& node, const std::vector<OpOperand>& operands, const std::vector<float>& bound) {
    OpRun ref = run_ref(node, operands);
    ASSERT_TRUE(ref.status.ok()) << ref.status.error().to_string();
    OpRun got = run_vulkan(*backend_, node, operands);
    ASSERT_TRUE(got.status.ok()) << got.status.error().to_string();
    ASSERT_EQ(got.outputs.at(0).size(), bound.size());
    double worst = 0;
    for (size_t i = 0; i < bound.size(); ++i)
      worst = std::max(worst, std::abs(double(got.outputs[0][i]) - ref.outputs[0][i]) / (1.0 + bound[i]));
    EXPECT_LE(worst, kSumTol);
  }
  std::unique_ptr<Backend> backend_;
};

TEST_P(VulkanGemv, F32AwkwardShapesWithAndWithoutBias) {
  // (K, N): K of 1, shorter than a subgroup, odd and not a multiple of 8 or 64, exactly the workgroup,
  // one past it, several workgroups and odd; N below a subgroup, odd, over two workgroups' worth of columns.
  const int64_t shapes[][2] = {{1, 5}, {7, 3}, {37, 45}, {64, 8}, {65, 17}, {200, 1}, {513, 130}};
  uint32_t seed = 200;
  for (const auto& s : shapes) {
    const int64_t k = s[0], n = s[1];
    for (int64_t m : {1, 2, 3, 4}) {
      auto x = f32_operand("x", {1, m, k}, random_floats(static_cast<size_t>(m * k), seed++, -2, 2));
      auto w = f32_operand("w", {n, k}, random_floats(static_cast<size_t>(n * k), seed++), true);
      auto b = f32_operand("b", {n}, random_floats(static_cast<size_t>(n), seed++), true);
      SCOPED_TRACE("M=" + std::to_string(m) + " K=" + std::to_string(k) + " N=" + std::to_string(n));
      const std::vector<float> bound = sum_bound(x, w, m, n, k);
      expect_sum_match({"linear", {"x", "w"}, {"y"}, {}}, {x, w}, bound);
      if (m == 1 || m == 3) expect_sum_match({"linear", {"x", "w", "b"}, {"y"}, {}}, {x, w, b}, bound);
    }
  }
}

TEST_P(VulkanGemv, StoredWeightFormats) {
  // f16/bf16/i8 rows of odd K start mid-word; q4_0 needs K % 32 == 0 (96: not a multiple of the 64
  // threads; 32: fewer values than threads). N = 5 is below a subgroup.
  for (DType dt : {DType::kF16, DType::kBF16, DType::kI8, DType::kQ4_0}) {
    const bool q4 = dt == DType::kQ4_0;
    for (int64_t k : {q4 ? int64_t{32} : int64_t{7}, q4 ? int64_t{96} : int64_t{101}}) {
      for (int64_t m : {1, 4}) {
        const int64_t n = m == 1 ? 5 : 23;
        std::vector<OpOperand> ops = {
            f32_operand("x", {1, m, k}, random_floats(static_cast<size_t>(m * k), static_cast<uint32_t>(300 + k)))};
        for (OpOperand& o : stored_weight(dt, n, k, static_cast<uint32_t>(400 + k))) ops.push_back(std::move(o));
        NodeDef node{"linear", {"x", "w"}, {"y"}, {}};
        if (dt == DType::kI8) {
          node.inputs = {"x", "w", "b", "w.scale"};
          ops.insert(ops.begin() + 2, f32_operand("b", {n}, random_floats(static_cast<size_t>(n), 500), true));
        }
        SCOPED_TRACE(std::string(dtype_name(dt)) + " M=" + std::to_string(m) + " K=" + std::to_string(k));
        expect_match(node, ops);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, VulkanGemv, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "Subgroup" : "Shared"; });

TEST(VulkanGemvChoice, FollowsTheDeviceAndTheSettingAndTheEnvironment) {
  auto dflt = vulkan_backend();
  ASSERT_NE(dflt, nullptr);
  const Context& ctx = static_cast<VulkanBackend&>(*dflt).context();
  // By default the subgroup GEMV exactly where the device reports what it needs.
  EXPECT_EQ(uses_subgroup_gemv(*dflt), ctx.subgroups().arithmetic_in_compute())
      << "subgroup size " << ctx.subgroups().size << ", stages " << ctx.subgroups().stages << ", operations "
      << ctx.subgroups().operations;
  // lavapipe (every CI run) reports subgroups of 8 with arithmetic in compute: the subgroup path is the
  // one these tests exercise by default there.
  if (ctx.device_name().find("llvmpipe") != std::string::npos) {
    EXPECT_TRUE(uses_subgroup_gemv(*dflt));
  }
  EXPECT_FALSE(uses_subgroup_gemv(*backend_with_subgroups(false)));

  const char* old = std::getenv("HFS_VULKAN_SUBGROUPS");
  const std::string saved = old ? old : "";
  setenv("HFS_VULKAN_SUBGROUPS", "0", 1);
  auto env_off = vulkan_backend();
  if (old) {
    setenv("HFS_VULKAN_SUBGROUPS", saved.c_str(), 1);
  } else {
    unsetenv("HFS_VULKAN_SUBGROUPS");
  }
  ASSERT_NE(env_off, nullptr);
  EXPECT_FALSE(uses_subgroup_gemv(*env_off));

  Value bad = Value::object();
  bad.set("subgroups", Value(1));
  auto r = make_vulkan_backend(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("'subgroups' must be a bool"), std::string::npos) << r.error().to_string();
}

}  // namespace
}  // namespace hfs::vulkan::test
