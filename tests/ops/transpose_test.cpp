// transpose: hand-computed 2-D case, rank-4 and rank-6 permutations against explicit index loops,
// 2-byte and 4-byte integer dtypes, and the rule.
#include <gtest/gtest.h>

#include <numeric>

#include "ops/op_test_util.h"

namespace hfs {
namespace {

using optest::expect_error;
using optest::infer;
using optest::run;

Attrs perm_attr(const std::vector<int64_t>& p) { return {{"perm", Value::int_array(p)}}; }

TEST(Transpose, HandComputed2D) {
  // [[1, 2, 3], [4, 5, 6]]^T = [[1, 4], [2, 5], [3, 6]]
  float x[] = {1, 2, 3, 4, 5, 6}, y[6];
  ASSERT_TRUE(run("transpose", perm_attr({1, 0}), {TensorView(x, DType::kF32, {2, 3})}, {TensorView(y, DType::kF32, {3, 2})}).ok());
  const float want[] = {1, 4, 2, 5, 3, 6};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[i], want[i]);
}

TEST(Transpose, Rank4HeadsSwapMatchesIndexLoops) {
  // [1, T, H, D] -> [1, H, T, D] (perm 0, 2, 1, 3), i32 elements.
  const int t_len = 3, heads = 4, d = 5;
  std::vector<int32_t> x(static_cast<size_t>(t_len * heads * d)), y(x.size());
  std::iota(x.begin(), x.end(), 0);
  ASSERT_TRUE(run("transpose", perm_attr({0, 2, 1, 3}), {TensorView(x.data(), DType::kI32, {1, t_len, heads, d})},
                  {TensorView(y.data(), DType::kI32, {1, heads, t_len, d})})
                  .ok());
  for (int h = 0; h < heads; ++h)
    for (int t = 0; t < t_len; ++t)
      for (int i = 0; i < d; ++i)
        ASSERT_EQ(y[static_cast<size_t>((h * t_len + t) * d + i)], x[static_cast<size_t>((t * heads + h) * d + i)]);
}

TEST(Transpose, Rank6ReversedF16) {
  // dims [2, 1, 3, 2, 1, 2] reversed -> [2, 1, 2, 3, 1, 2]; element (a,b,c,d,e,f) -> (f,e,d,c,b,a).
  const int n[6] = {2, 1, 3, 2, 1, 2};
  std::vector<uint16_t> x(24), y(24);
  std::iota(x.begin(), x.end(), uint16_t{100});
  ASSERT_TRUE(run("transpose", perm_attr({5, 4, 3, 2, 1, 0}), {TensorView(x.data(), DType::kF16, {2, 1, 3, 2, 1, 2})},
                  {TensorView(y.data(), DType::kF16, {2, 1, 2, 3, 1, 2})})
                  .ok());
  for (int a = 0; a < n[0]; ++a)
    for (int c = 0; c < n[2]; ++c)
      for (int dd = 0; dd < n[3]; ++dd)
        for (int f = 0; f < n[5]; ++f) {
          const int src = ((a * 3 + c) * 2 + dd) * 2 + f;  // b = e = 0
          const int dst = ((f * 2 + dd) * 3 + c) * 2 + a;
          ASSERT_EQ(y[static_cast<size_t>(dst)], x[static_cast<size_t>(src)]);
        }
}

TEST(Transpose, Rule) {
  auto r = infer("transpose", {TensorType{DType::kF32, {1, 4, 8, 64}}}, perm_attr({0, 2, 1, 3}));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ((*r)[0], (TensorType{DType::kF32, {1, 8, 4, 64}}));
  expect_error(infer("transpose", {TensorType{DType::kF32, {2, 3}}}, perm_attr({0, 0})), ErrorCode::kBadAttribute,
               "attribute 'perm': expected a permutation of 0..1 for operand 0 (x) f32[2, 3], got [0,0]");
  expect_error(infer("transpose", {TensorType{DType::kF32, {2, 3}}}, perm_attr({1, 0, 2})), ErrorCode::kBadAttribute,
               "expected a permutation of 0..1");
  expect_error(infer("transpose", {TensorType{DType::kF32, {2, 3}}}, perm_attr({2, 0})), ErrorCode::kBadAttribute,
               "expected a permutation of 0..1");
  expect_error(infer("transpose", {TensorType{DType::kQ4_0, {2, 32}}}, perm_attr({1, 0})), ErrorCode::kDTypeMismatch,
               "operand 0 (x): expected a non-block-quantized dtype, got q4_0[2, 32]");
  expect_error(infer("transpose", {TensorType{DType::kF32, {2, 3}}}), ErrorCode::kBadAttribute,
               "missing required attribute 'perm'");
}

}  // namespace
}  // namespace hfs
