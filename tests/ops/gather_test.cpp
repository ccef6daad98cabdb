// gather: rows and columns picked by index (repeats allowed), run-time out-of-range indices, and the rule.
#include <gtest/gtest.h>

#include "ops/op_test_util.h"

namespace hfs {
namespace {

using optest::expect_error;
using optest::infer;
using optest::run;

TEST(Gather, HandComputed) {
  // x = [[0, 1], [10, 11], [20, 21]] ([3, 2])
  float x[] = {0, 1, 10, 11, 20, 21}, y[6];
  int32_t rows[] = {2, 0, 2};
  // axis 0, index [2, 0, 2] -> [[20, 21], [0, 1], [20, 21]]
  ASSERT_TRUE(run("gather", {{"axis", Value(0)}}, {TensorView(x, DType::kF32, {3, 2}), TensorView(rows, DType::kI32, {3})},
                  {TensorView(y, DType::kF32, {3, 2})})
                  .ok());
  const float want0[] = {20, 21, 0, 1, 20, 21};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[i], want0[i]);
  // axis -1 (= 1), index [1] -> [[1], [11], [21]]
  int32_t cols[] = {1};
  ASSERT_TRUE(run("gather", {{"axis", Value(-1)}}, {TensorView(x, DType::kF32, {3, 2}), TensorView(cols, DType::kI32, {1})},
                  {TensorView(y, DType::kF32, {3, 1})})
                  .ok());
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], 11.0f);
  EXPECT_EQ(y[2], 21.0f);
}

TEST(Gather, OutOfRangeIndexIsAnError) {
  float x[6] = {}, y[6];
  for (int32_t bad : {3, -1}) {
    int32_t idx[] = {0, bad};
    expect_error(run("gather", {{"axis", Value(0)}}, {TensorView(x, DType::kF32, {3, 2}), TensorView(idx, DType::kI32, {2})},
                     {TensorView(y, DType::kF32, {2, 2})}),
                 ErrorCode::kOutOfRange, "index[1] = " + std::to_string(bad) + " is outside [0, 3) (dim 0 of f32[3, 2])");
  }
}

TEST(Gather, Rule) {
  auto r = infer("gather", {TensorType{DType::kF32, {1, 7, 64}}, TensorType{DType::kI32, {1}}}, {{"axis", Value(1)}});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ((*r)[0], (TensorType{DType::kF32, {1, 1, 64}}));  // e.g. pick the last token's hidden state
  expect_error(infer("gather", {TensorType{DType::kF32, {3, 2}}, TensorType{DType::kI32, {1, 2}}}, {{"axis", Value(0)}}),
               ErrorCode::kShapeMismatch, "operand 1 (index): expected [n], got i32[1, 2]");
  expect_error(infer("gather", {TensorType{DType::kF32, {3, 2}}, TensorType{DType::kI64, {2}}}, {{"axis", Value(0)}}),
               ErrorCode::kDTypeMismatch, "operand 1 (index): expected dtype i32, got i64[2]");
  expect_error(infer("gather", {TensorType{DType::kF32, {3, 2}}, TensorType{DType::kI32, {2}}}, {{"axis", Value(2)}}),
               ErrorCode::kBadAttribute, "attribute 'axis': expected an axis in [-2, 2)");
  expect_error(infer("gather", {TensorType{DType::kQ4_0, {3, 32}}, TensorType{DType::kI32, {2}}}, {{"axis", Value(0)}}),
               ErrorCode::kDTypeMismatch, "operand 0 (x): expected a non-block-quantized dtype");
  expect_error(infer("gather", {TensorType{DType::kF32, {3, 2}}, TensorType{DType::kI32, {2}}}), ErrorCode::kBadAttribute,
               "missing required attribute 'axis'");
}

}  // namespace
}  // namespace hfs
