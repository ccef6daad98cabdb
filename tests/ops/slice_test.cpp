// slice: hand-computed ranges along first/middle/last (negative) axes, empty slices, and the rule.
#include <gtest/gtest.h>

#include "ops/op_test_util.h"

namespace hfs {
namespace {

using optest::expect_error;
using optest::infer;
using optest::run;

Attrs slice_attrs(int64_t axis, int64_t start, int64_t end) {
  return {{"axis", Value(axis)}, {"start", Value(start)}, {"end", Value(end)}};
}

TEST(Slice, HandComputed) {
  // x = [[0, 1, 2, 3, 4], [10, 11, 12, 13, 14]] ([2, 5])
  float x[] = {0, 1, 2, 3, 4, 10, 11, 12, 13, 14}, y[6];
  // axis 1, [1, 4) -> [[1, 2, 3], [11, 12, 13]]
  ASSERT_TRUE(run("slice", slice_attrs(1, 1, 4), {TensorView(x, DType::kF32, {2, 5})}, {TensorView(y, DType::kF32, {2, 3})}).ok());
  const float want1[] = {1, 2, 3, 11, 12, 13};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[i], want1[i]);
  // axis -1 is the same axis: [3, 5) -> [[3, 4], [13, 14]]
  ASSERT_TRUE(run("slice", slice_attrs(-1, 3, 5), {TensorView(x, DType::kF32, {2, 5})}, {TensorView(y, DType::kF32, {2, 2})}).ok());
  const float want2[] = {3, 4, 13, 14};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y[i], want2[i]);
  // axis 0, [1, 2) -> [[10, 11, 12, 13, 14]]
  ASSERT_TRUE(run("slice", slice_attrs(0, 1, 2), {TensorView(x, DType::kF32, {2, 5})}, {TensorView(y, DType::kF32, {1, 5})}).ok());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(y[i], 10.0f + static_cast<float>(i));
}

TEST(Slice, MiddleAxisOfRank3I32) {
  // x[a, b, c] = 100 a + 10 b + c with dims [2, 4, 3]; slice axis 1 [2, 4) -> y[a, b', c] = 100 a + 10 (b' + 2) + c
  int32_t x[24], y[12];
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 4; ++b)
      for (int c = 0; c < 3; ++c) x[(a * 4 + b) * 3 + c] = 100 * a + 10 * b + c;
  ASSERT_TRUE(run("slice", slice_attrs(1, 2, 4), {TensorView(x, DType::kI32, {2, 4, 3})}, {TensorView(y, DType::kI32, {2, 2, 3})}).ok());
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 3; ++c) EXPECT_EQ(y[(a * 2 + b) * 3 + c], 100 * a + 10 * (b + 2) + c);
}

TEST(Slice, Rule) {
  const TensorType x{DType::kF32, {2, 8}};
  auto r = infer("slice", {x}, slice_attrs(1, 2, 2));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ((*r)[0], (TensorType{DType::kF32, {2, 0}}));  // empty slices are allowed
  r = infer("slice", {x}, slice_attrs(-2, 0, 1));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0], (TensorType{DType::kF32, {1, 8}}));
  expect_error(infer("slice", {x}, slice_attrs(1, 0, 9)), ErrorCode::kBadAttribute,
               "expected 0 <= start <= end <= 8 (dim 1 of operand 0 (x) f32[2, 8]), got start = 0, end = 9");
  expect_error(infer("slice", {x}, slice_attrs(1, 5, 4)), ErrorCode::kBadAttribute, "got start = 5, end = 4");
  expect_error(infer("slice", {x}, slice_attrs(1, -1, 4)), ErrorCode::kBadAttribute, "got start = -1");
  expect_error(infer("slice", {x}, slice_attrs(2, 0, 1)), ErrorCode::kBadAttribute,
               "attribute 'axis': expected an axis in [-2, 2) for a rank-2 operand, got 2");
  expect_error(infer("slice", {x}, slice_attrs(-3, 0, 1)), ErrorCode::kBadAttribute, "got -3");
  expect_error(infer("slice", {TensorType{DType::kQ4_0, {2, 64}}}, slice_attrs(0, 0, 1)), ErrorCode::kDTypeMismatch,
               "operand 0 (x): expected a non-block-quantized dtype");
  expect_error(infer("slice", {x}, {{"axis", Value(1)}, {"start", Value(0)}}), ErrorCode::kBadAttribute,
               "missing required attribute 'end'");
  expect_error(infer("slice", {x}, {{"axis", Value(1.5)}, {"start", Value(0)}, {"end", Value(1)}}), ErrorCode::kBadAttribute,
               "attribute 'axis' must be int");
  expect_error(infer("slice", {x}, {{"axis", Value(1)}, {"start", Value(0)}, {"end", Value(1)}, {"step", Value(1)}}),
               ErrorCode::kUnknownAttribute, "unknown attribute 'step'");
}

}  // namespace
}  // namespace hfs
