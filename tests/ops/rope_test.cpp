// rope: a hand-computed rotation of each pair, partial rotary pass-through, attention_scaling, a
// differential test against a naive double implementation of HF's rotate_half formula, and rules.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/op_test_util.h"

namespace hfs {
namespace {

using optest::expect_error;
using optest::infer;
using optest::run;

TEST(Rope, HandComputedPairs) {
  // D = R = 4, inv_freq = [1, 0.5], position 1 -> freq = [1, 0.5]. x = [1, 2, 3, 4]; pairs are (0, 2), (1, 3).
  //   out0 = x0 cos1 - x2 sin1 = 0.5403023 - 3 * 0.8414710 = -1.9841106
  //   out2 = x2 cos1 + x0 sin1 = 3 * 0.5403023 + 0.8414710 =  2.4623779
  //   out1 = x1 cos.5 - x3 sin.5 = 2 * 0.8775826 - 4 * 0.4794255 = -0.1625370
  //   out3 = x3 cos.5 + x1 sin.5 = 4 * 0.8775826 + 2 * 0.4794255 =  4.4691813
  float x[] = {1, 2, 3, 4}, inv[] = {1.0f, 0.5f}, y[4];
  int32_t pos[] = {1};
  ASSERT_TRUE(run("rope", {},
                  {TensorView(x, DType::kF32, {1, 1, 1, 4}), TensorView(pos, DType::kI32, {1, 1}),
                   TensorView(inv, DType::kF32, {2})},
                  {TensorView(y, DType::kF32, {1, 1, 1, 4})})
                  .ok());
  EXPECT_NEAR(y[0], -1.9841106, 1e-6);
  EXPECT_NEAR(y[1], -0.1625370, 1e-6);
  EXPECT_NEAR(y[2], 2.4623779, 1e-6);
  EXPECT_NEAR(y[3], 4.4691813, 1e-6);
}

TEST(Rope, PositionZeroIsIdentityAndPartialRotaryPassesThrough) {
  // D = 6, R = 2 (inv_freq = [1]): only the pair (0, 1) rotates; dims 2..5 pass through unchanged.
  // Token 0 at position 0: identity. Token 1 at position 2: angle 2 rad, attention_scaling 2:
  //   out0 = 2 * (x0 cos2 - x1 sin2) = 2 * (1 * -0.4161468 - 1 * 0.9092974) = -2.6508884
  //   out1 = 2 * (x1 cos2 + x0 sin2) = 2 * (-0.4161468 + 0.9092974) = 0.9863012
  float x[12] = {5, 6, 7, 8, 9, 10, 1, 1, 7, 8, 9, 10}, inv[] = {1.0f}, y[12];
  int32_t pos[] = {0, 2};
  ASSERT_TRUE(run("rope", {{"attention_scaling", Value(2.0)}},
                  {TensorView(x, DType::kF32, {1, 2, 1, 6}), TensorView(pos, DType::kI32, {1, 2}),
                   TensorView(inv, DType::kF32, {1})},
                  {TensorView(y, DType::kF32, {1, 2, 1, 6})})
                  .ok());
  // Position 0: cos = 1 * 2, sin = 0 -> the rotated dims are scaled by attention_scaling, the rest copied.
  EXPECT_EQ(y[0], 10.0f);
  EXPECT_EQ(y[1], 12.0f);
  for (int i = 2; i < 6; ++i) EXPECT_EQ(y[i], x[i]) << i;
  EXPECT_NEAR(y[6], -2.6508884, 1e-6);
  EXPECT_NEAR(y[7], 0.9863012, 1e-6);
  for (int i = 8; i < 12; ++i) EXPECT_EQ(y[i], x[i]) << i;
}

// Naive HF: cos/sin of emb = cat(freq, freq) with freq = f32(pos * inv_freq), rotate_half on the first R dims.
std::vector<double> naive_rope(const std::vector<float>& x, const std::vector<int32_t>& pos, const std::vector<float>& inv,
                               int64_t t_len, int64_t heads, int64_t d, double scaling) {
  const int64_t r = 2 * static_cast<int64_t>(inv.size()), half = r / 2;
  std::vector<double> out(x.size());
  for (int64_t t = 0; t < t_len; ++t)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < d; ++i) {
        const size_t base = static_cast<size_t>((t * heads + h) * d);
        if (i >= r) {
          out[base + static_cast<size_t>(i)] = x[base + static_cast<size_t>(i)];
          continue;
        }
        const float freq = static_cast<float>(pos[static_cast<size_t>(t)]) * inv[static_cast<size_t>(i % half)];
        const double c = std::cos(static_cast<double>(freq)) * scaling, s = std::sin(static_cast<double>(freq)) * scaling;
        const double rot = i < half ? -static_cast<double>(x[base + static_cast<size_t>(i + half)])
                                    : x[base + static_cast<size_t>(i - half)];
        out[base + static_cast<size_t>(i)] = x[base + static_cast<size_t>(i)] * c + rot * s;
      }
  return out;
}

TEST(Rope, MatchesNaiveDouble) {
  const int64_t t_len = 5, heads = 3, d = 16;
  for (int64_t r : {16, 8}) {  // full and partial rotary
    std::vector<float> inv(static_cast<size_t>(r / 2));
    for (size_t j = 0; j < inv.size(); ++j) inv[j] = static_cast<float>(std::pow(10000.0, -2.0 * j / r));
    std::vector<float> x = optest::random_floats(static_cast<size_t>(t_len * heads * d), 61, -2.0f, 2.0f);
    std::vector<int32_t> pos = {0, 1, 7, 100, 255};
    std::vector<float> y(x.size());
    ASSERT_TRUE(run("rope", {{"attention_scaling", Value(1.25)}},
                    {TensorView(x.data(), DType::kF32, {1, t_len, heads, d}), TensorView(pos.data(), DType::kI32, {1, t_len}),
                     TensorView(inv.data(), DType::kF32, {r / 2})},
                    {TensorView(y.data(), DType::kF32, {1, t_len, heads, d})})
                    .ok());
    optest::expect_close(y, naive_rope(x, pos, inv, t_len, heads, d, 1.25), 1e-5);
  }
}

TEST(Rope, Rule) {
  const TensorType x{DType::kF32, {1, 4, 8, 64}}, pos{DType::kI32, {1, 4}}, inv{DType::kF32, {32}};
  auto r = infer("rope", {x, pos, inv});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ((*r)[0], x);
  ASSERT_TRUE(infer("rope", {x, pos, TensorType{DType::kF32, {16}}}).ok());  // partial rotary
  expect_error(infer("rope", {x, pos, TensorType{DType::kF32, {33}}}), ErrorCode::kShapeMismatch,
               "operand 2 (inv_freq): expected [R/2] with R <= D = 64");
  expect_error(infer("rope", {x, TensorType{DType::kI32, {1, 5}}, inv}), ErrorCode::kShapeMismatch,
               "operand 1 (positions): expected [1, T] with T = 4, got i32[1, 5]");
  expect_error(infer("rope", {x, TensorType{DType::kI64, {1, 4}}, inv}), ErrorCode::kDTypeMismatch,
               "operand 1 (positions): expected dtype i32, got i64[1, 4]");
  expect_error(infer("rope", {TensorType{DType::kF32, {4, 8, 64}}, pos, inv}), ErrorCode::kShapeMismatch,
               "operand 0 (x): expected [1, T, H, D], got f32[4, 8, 64]");
  expect_error(infer("rope", {TensorType{DType::kF16, {1, 4, 8, 64}}, pos, inv}), ErrorCode::kDTypeMismatch,
               "operand 0 (x): expected dtype f32");
  expect_error(infer("rope", {x, pos, TensorType{DType::kF32, {2, 16}}}), ErrorCode::kShapeMismatch,
               "operand 2 (inv_freq): expected [R/2], got f32[2, 16]");
  expect_error(infer("rope", {x, pos, TensorType{DType::kBF16, {32}}}), ErrorCode::kDTypeMismatch,
               "operand 2 (inv_freq): expected dtype f32");
  expect_error(infer("rope", {x, pos}), ErrorCode::kInvalidArgument, "operand 2 (inv_freq): required operand is absent");
  expect_error(infer("rope", {x, pos, inv}, {{"theta", Value(10000.0)}}), ErrorCode::kUnknownAttribute,
               "unknown attribute 'theta'");
  expect_error(infer("rope", {x, pos, inv}, {{"attention_scaling", Value(true)}}), ErrorCode::kBadAttribute,
               "attribute 'attention_scaling' must be float");
}

}  // namespace
}  // namespace hfs
