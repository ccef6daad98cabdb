// reshape: a view (in-place no-op when the output is the input's buffer, a byte copy otherwise) and the rule.
#include <gtest/gtest.h>

#include "ops/op_test_util.h"

namespace hfs {
namespace {

using optest::expect_error;
using optest::infer;
using optest::run;

Attrs shape_attr(const std::vector<int64_t>& dims) { return {{"shape", Value::int_array(dims)}}; }

TEST(Reshape, AliasedOutputIsANoOpAndSeparateOutputIsACopy) {
  float x[6] = {1, 2, 3, 4, 5, 6};
  ASSERT_TRUE(run("reshape", shape_attr({3, 2}), {TensorView(x, DType::kF32, {2, 3})}, {TensorView(x, DType::kF32, {3, 2})}).ok());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(x[i], static_cast<float>(i + 1));
  int32_t xi[6] = {1, -2, 3, -4, 5, -6}, yi[6] = {};
  ASSERT_TRUE(
      run("reshape", shape_attr({6}), {TensorView(xi, DType::kI32, {1, 2, 3})}, {TensorView(yi, DType::kI32, {6})}).ok());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(yi[i], xi[i]);
}

TEST(Reshape, Rule) {
  auto r = infer("reshape", {TensorType{DType::kF32, {1, 4, 512}}}, shape_attr({1, 4, 8, 64}));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ((*r)[0], (TensorType{DType::kF32, {1, 4, 8, 64}}));
  r = infer("reshape", {TensorType{DType::kQ4_0, {4, 64}}}, shape_attr({2, 128}));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ((*r)[0], (TensorType{DType::kQ4_0, {2, 128}}));
  expect_error(infer("reshape", {TensorType{DType::kF32, {1, 4, 512}}}, shape_attr({1, 4, 8, 63})), ErrorCode::kShapeMismatch,
               "operand 0 (x): expected 2016 elements to match attribute shape [1, 4, 8, 63], got f32[1, 4, 512]");
  expect_error(infer("reshape", {TensorType{DType::kF32, {4}}}, shape_attr({-1})), ErrorCode::kBadAttribute,
               "attribute 'shape': dims must be >= 0 (no -1 inference)");
  expect_error(infer("reshape", {TensorType{DType::kF32, {1}}}, shape_attr({1, 1, 1, 1, 1, 1, 1})), ErrorCode::kBadAttribute,
               "rank 7 exceeds the maximum 6");
  expect_error(infer("reshape", {TensorType{DType::kQ4_0, {4, 64}}}, shape_attr({16, 16})), ErrorCode::kBadAttribute,
               "last dim of [16, 16] must be a multiple of 32 for q4_0[4, 64]");
  expect_error(infer("reshape", {TensorType{DType::kF32, {4}}}), ErrorCode::kBadAttribute, "missing required attribute 'shape'");
  expect_error(infer("reshape", {TensorType{DType::kF32, {4}}}, {{"shape", Value(4)}}), ErrorCode::kBadAttribute,
               "attribute 'shape' must be int array");
  expect_error(check_attrs(*find_op("reshape"), {{"shape", Value::int_array({4})}, {"order", Value("C")}}),
               ErrorCode::kUnknownAttribute, "unknown attribute 'order'");
}

}  // namespace
}  // namespace hfs
