// The shared rule helpers produce the uniform "operand i (name): expected ..., got ..." messages.
#include <gtest/gtest.h>

#include "ops/op_test_util.h"
#include "ops/op_util.h"

namespace hfs {
namespace {

TEST(OpUtil, ExpectLayoutNamesTheOperandAndConstrainedDims) {
  TensorType w{DType::kF32, {32, 48}};
  Status s = ops::expect_layout(w, 1, "weight", {{"N"}, {"K", 64}});
  optest::expect_error(s, ErrorCode::kShapeMismatch, "operand 1 (weight): expected [N, K] with K = 64, got f32[32, 48]");
  EXPECT_TRUE(ops::expect_layout(TensorType{DType::kF32, {32, 64}}, 1, "weight", {{"N"}, {"K", 64}}).ok());
}

TEST(OpUtil, ExpectLayoutLiteralsAndLeadingEllipsis) {
  optest::expect_error(ops::expect_layout(TensorType{DType::kI32, {2, 5}}, 1, "ids", {{"1"}, {"T"}}),
                       ErrorCode::kShapeMismatch, "operand 1 (ids): expected [1, T], got i32[2, 5]");
  EXPECT_TRUE(ops::expect_layout(TensorType{DType::kF32, {2, 3, 8}}, 0, "x", {{"..."}, {"D", 8}}).ok());
  EXPECT_TRUE(ops::expect_layout(TensorType{DType::kF32, {8}}, 0, "x", {{"..."}, {"D", 8}}).ok());
  optest::expect_error(ops::expect_layout(TensorType{DType::kF32, {}}, 0, "x", {{"..."}, {"D"}}),
                       ErrorCode::kShapeMismatch, "expected [..., D], got f32[]");
  optest::expect_error(ops::expect_layout(TensorType{DType::kF32, {2, 7}}, 0, "x", {{"..."}, {"D", 8}}),
                       ErrorCode::kShapeMismatch, "expected [..., D] with D = 8, got f32[2, 7]");
}

TEST(OpUtil, ExpectDtypeListsTheAllowedTypes) {
  optest::expect_error(ops::expect_dtype(TensorType{DType::kI32, {4}}, 0, "table", ops::kWeightFloat),
                       ErrorCode::kDTypeMismatch, "operand 0 (table): expected dtype f32|f16|bf16, got i32[4]");
}

TEST(OpUtil, RequiredOperand) {
  const TensorType* none[] = {nullptr};
  auto r = ops::required(none, 0, "x");
  optest::expect_error(r, ErrorCode::kInvalidArgument, "operand 0 (x): required operand is absent");
  optest::expect_error(ops::required({}, 2, "mask"), ErrorCode::kInvalidArgument, "operand 2 (mask)");
}

}  // namespace
}  // namespace hfs
