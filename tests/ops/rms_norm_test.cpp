// rms_norm: hand-computed Llama and Gemma (unit_offset) cases, rule rejections, and a differential test
// against a naive double-precision x / sqrt(mean(x²) + eps) * w.
#include <gtest/gtest.h>

#include "ops/op_test_util.h"

namespace hfs {
namespace {

using optest::expect_error;
using optest::infer;
using optest::run;

TEST(RmsNorm, HandComputed) {
  // x = [3, 4]: mean(x²) = (9 + 16) / 2 = 12.5, rms = sqrt(12.5) = 3.5355339
  // w = [1, 2]           -> y = [3 / 3.5355339 * 1, 4 / 3.5355339 * 2] = [0.8485281, 2.2627417]
  // unit_offset, w = [0, 1] -> gains [1, 2], same result.
  float x[] = {3, 4}, w[] = {1, 2}, w_gemma[] = {0, 1}, y[2];
  ASSERT_TRUE(run("rms_norm", {{"eps", Value(0.0)}}, {TensorView(x, DType::kF32, {1, 2}), TensorView(w, DType::kF32, {2})},
                  {TensorView(y, DType::kF32, {1, 2})})
                  .ok());
  EXPECT_NEAR(y[0], 0.8485281, 1e-6);
  EXPECT_NEAR(y[1], 2.2627417, 1e-6);
  ASSERT_TRUE(run("rms_norm", {{"eps", Value(0.0)}, {"unit_offset", Value(true)}},
                  {TensorView(x, DType::kF32, {1, 2}), TensorView(w_gemma, DType::kF32, {2})},
                  {TensorView(y, DType::kF32, {1, 2})})
                  .ok());
  EXPECT_NEAR(y[0], 0.8485281, 1e-6);
  EXPECT_NEAR(y[1], 2.2627417, 1e-6);
  // eps matters: x = [0, 0] with eps = 1 -> y = 0 (finite, no division by zero).
  float z[] = {0, 0};
  ASSERT_TRUE(run("rms_norm", {{"eps", Value(1)}}, {TensorView(z, DType::kF32, {2}), TensorView(w, DType::kF32, {2})},
                  {TensorView(y, DType::kF32, {2})})
                  .ok());
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);
}

void check_differential(bool unit_offset) {
  const int64_t rows = 2 * 3, d = 48;
  const double eps = 1e-6;
  std::vector<float> x = optest::random_floats(static_cast<size_t>(rows * d), 31, -3.0f, 3.0f);
  std::vector<float> w = optest::random_floats(static_cast<size_t>(d), 32, -1.5f, 1.5f);
  std::vector<float> y(x.size());
  ASSERT_TRUE(run("rms_norm", {{"eps", Value(eps)}, {"unit_offset", Value(unit_offset)}},
                  {TensorView(x.data(), DType::kF32, {2, 3, d}), TensorView(w.data(), DType::kF32, {d})},
                  {TensorView(y.data(), DType::kF32, {2, 3, d})})
                  .ok());
  std::vector<double> want(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < d; ++i) ss += static_cast<double>(x[static_cast<size_t>(r * d + i)]) * x[static_cast<size_t>(r * d + i)];
    const double inv = 1.0 / std::sqrt(ss / d + static_cast<double>(static_cast<float>(eps)));
    for (int64_t i = 0; i < d; ++i) {
      const double g = unit_offset ? 1.0 + w[static_cast<size_t>(i)] : w[static_cast<size_t>(i)];
      want[static_cast<size_t>(r * d + i)] = x[static_cast<size_t>(r * d + i)] * inv * g;
    }
  }
  optest::expect_close(y, want, 1e-5);
}

TEST(RmsNorm, MatchesNaiveDouble) { check_differential(false); }
TEST(RmsNorm, UnitOffsetMatchesNaiveDouble) { check_differential(true); }

TEST(RmsNorm, RuleAndAttributes) {
  const Attrs eps{{"eps", Value(1e-5)}};
  auto r = infer("rms_norm", {TensorType{DType::kF32, {1, 4, 8, 16}}, TensorType{DType::kF32, {16}}}, eps);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ((*r)[0], (TensorType{DType::kF32, {1, 4, 8, 16}}));  // per-head norm: any leading dims
  expect_error(infer("rms_norm", {TensorType{DType::kF32, {1, 4, 64}}, TensorType{DType::kF32, {32}}}, eps),
               ErrorCode::kShapeMismatch, "operand 1 (weight): expected [D] with D = 64, got f32[32]");
  expect_error(infer("rms_norm", {TensorType{DType::kF32, {1, 4, 64}}, TensorType{DType::kBF16, {64}}}, eps),
               ErrorCode::kDTypeMismatch, "operand 1 (weight): expected dtype f32, got bf16[64]");
  expect_error(infer("rms_norm", {TensorType{DType::kI32, {1, 4, 64}}, TensorType{DType::kF32, {64}}}, eps),
               ErrorCode::kDTypeMismatch, "operand 0 (x): expected dtype f32, got i32[1, 4, 64]");
  expect_error(infer("rms_norm", {TensorType{DType::kF32, {}}, TensorType{DType::kF32, {64}}}, eps),
               ErrorCode::kShapeMismatch, "operand 0 (x): expected [..., D], got f32[]");
  expect_error(infer("rms_norm", {TensorType{DType::kF32, {4, 64}}, TensorType{DType::kF32, {64}}}, {{"eps", Value(-1.0)}}),
               ErrorCode::kBadAttribute, "attribute 'eps': expected a finite number >= 0");

  const OpSchema& s = *find_op("rms_norm");
  expect_error(check_attrs(s, {}), ErrorCode::kBadAttribute, "missing required attribute 'eps'");
  expect_error(check_attrs(s, {{"eps", Value(1e-5)}, {"epsilon", Value(1e-5)}}), ErrorCode::kUnknownAttribute,
               "unknown attribute 'epsilon'");
  expect_error(check_attrs(s, {{"eps", Value("small")}}), ErrorCode::kBadAttribute, "attribute 'eps' must be float");
  expect_error(check_attrs(s, {{"eps", Value(1e-5)}, {"unit_offset", Value(1)}}), ErrorCode::kBadAttribute,
               "attribute 'unit_offset' must be bool");
  // The rule checks attributes itself, so it is safe to call without the verifier.
  expect_error(infer("rms_norm", {TensorType{DType::kF32, {4, 64}}, TensorType{DType::kF32, {64}}}),
               ErrorCode::kBadAttribute, "missing required attribute 'eps'");
}

}  // namespace
}  // namespace hfs
