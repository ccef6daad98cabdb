// embedding: hand-picked rows, f16/bf16 tables against an independent decode, i8 tables with per-row
// scales (hand-computed), out-of-range ids, rules.
#include <gtest/gtest.h>

#include "ops/op_test_util.h"

namespace hfs {
namespace {

using optest::expect_error;
using optest::infer;
using optest::run;

TEST(Embedding, PicksRows) {
  // table rows: r0 = [0, 1, 2], r1 = [10, 11, 12], r2 = [20, 21, 22], r3 = [30, 31, 32]; ids = [2, 0, 3]
  float table[12];
  for (int v = 0; v < 4; ++v)
    for (int j = 0; j < 3; ++j) table[v * 3 + j] = static_cast<float>(10 * v + j);
  int32_t ids[] = {2, 0, 3};
  float out[9];
  ASSERT_TRUE(run("embedding", {}, {TensorView(table, DType::kF32, {4, 3}), TensorView(ids, DType::kI32, {1, 3})},
                  {TensorView(out, DType::kF32, {1, 3, 3})})
                  .ok());
  const float want[] = {20, 21, 22, 0, 1, 2, 30, 31, 32};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(out[i], want[i]) << i;
}

// Random f16 / bf16 tables: every output equals the independently decoded table entry (double compare).
TEST(Embedding, HalfTablesMatchIndependentDecode) {
  const int64_t v = 16, h = 24, t = 5;
  int32_t ids[] = {15, 0, 7, 7, 3};
  for (DType dt : {DType::kF16, DType::kBF16}) {
    std::vector<uint16_t> table = dt == DType::kF16 ? optest::random_f16_bits(static_cast<size_t>(v * h), 41)
                                                    : optest::random_bf16_bits(static_cast<size_t>(v * h), 42);
    std::vector<float> out(static_cast<size_t>(t * h));
    ASSERT_TRUE(run("embedding", {}, {TensorView(table.data(), dt, {v, h}), TensorView(ids, DType::kI32, {1, t})},
                    {TensorView(out.data(), DType::kF32, {1, t, h})})
                    .ok());
    std::vector<double> want(out.size());
    for (int64_t i = 0; i < t; ++i)
      for (int64_t j = 0; j < h; ++j) {
        const uint16_t bits = table[static_cast<size_t>(ids[i] * h + j)];
        want[static_cast<size_t>(i * h + j)] =
            dt == DType::kF16 ? optest::f16_bits_to_double(bits) : optest::bf16_bits_to_double(bits);
      }
    optest::expect_close(out, want, 0.0);
  }
}

TEST(Embedding, OutOfRangeIdIsAnError) {
  float table[8] = {};
  float out[8];
  for (int32_t bad : {4, -1}) {
    int32_t ids[] = {1, bad};
    auto s = run("embedding", {}, {TensorView(table, DType::kF32, {4, 2}), TensorView(ids, DType::kI32, {1, 2})},
                 {TensorView(out, DType::kF32, {1, 2, 2})});
    expect_error(s, ErrorCode::kOutOfRange, "ids[0, 1] = " + std::to_string(bad));
    expect_error(s, ErrorCode::kOutOfRange, "V = 4");
  }
}

// i8 rows are scale[v] · q: row 1 = 0.5 · [-2, 4] = [-1, 2]; row 2 = 0.25 · [127, -128] = [31.75, -32].
TEST(Embedding, I8TableUsesPerRowScale) {
  const int8_t table[] = {1, 1, -2, 4, 127, -128};
  const float scale[] = {9.0f, 0.5f, 0.25f};
  int32_t ids[] = {2, 1};
  float out[4];
  ASSERT_TRUE(run("embedding", {},
                  {TensorView(table, DType::kI8, {3, 2}), TensorView(ids, DType::kI32, {1, 2}),
                   TensorView(scale, DType::kF32, {3})},
                  {TensorView(out, DType::kF32, {1, 2, 2})})
                  .ok());
  const float want[] = {31.75f, -32.0f, -1.0f, 2.0f};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], want[i]) << i;
}

TEST(Embedding, Rule) {
  auto r = infer("embedding", {TensorType{DType::kBF16, {256, 64}}, TensorType{DType::kI32, {1, 7}}});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ((*r)[0], (TensorType{DType::kF32, {1, 7, 64}}));
  expect_error(infer("embedding", {TensorType{DType::kF32, {256, 64}}, TensorType{DType::kI64, {1, 7}}}),
               ErrorCode::kDTypeMismatch, "operand 1 (ids): expected dtype i32, got i64[1, 7]");
  expect_error(infer("embedding", {TensorType{DType::kF32, {256, 64}}, TensorType{DType::kI32, {7}}}),
               ErrorCode::kShapeMismatch, "operand 1 (ids): expected [1, T], got i32[7]");
  expect_error(infer("embedding", {TensorType{DType::kF32, {256, 64}}, TensorType{DType::kI32, {2, 7}}}),
               ErrorCode::kShapeMismatch, "operand 1 (ids): expected [1, T], got i32[2, 7]");
  expect_error(infer("embedding", {TensorType{DType::kF32, {256, 64, 1}}, TensorType{DType::kI32, {1, 7}}}),
               ErrorCode::kShapeMismatch, "operand 0 (table): expected [V, H], got f32[256, 64, 1]");
  expect_error(infer("embedding", {TensorType{DType::kQ4_0, {256, 64}}, TensorType{DType::kI32, {1, 7}}}),
               ErrorCode::kDTypeMismatch, "operand 0 (table): expected dtype f32|f16|bf16|i8, got q4_0[256, 64]");
  expect_error(infer("embedding", {TensorType{DType::kI8, {256, 64}}, TensorType{DType::kI32, {1, 7}}}),
               ErrorCode::kInvalidArgument, "operand 2 (scale): required for an i8 table");
  expect_error(infer("embedding", {TensorType{DType::kF16, {256, 64}}, TensorType{DType::kI32, {1, 7}},
                                   TensorType{DType::kF32, {256}}}),
               ErrorCode::kInvalidArgument, "operand 2 (scale): only allowed with an i8 table");
  expect_error(infer("embedding", {TensorType{DType::kI8, {256, 64}}, TensorType{DType::kI32, {1, 7}},
                                   TensorType{DType::kF32, {64}}}),
               ErrorCode::kShapeMismatch, "operand 2 (scale): expected [V] with V = 256, got f32[64]");
  auto q = infer("embedding", {TensorType{DType::kI8, {256, 64}}, TensorType{DType::kI32, {1, 7}}, TensorType{DType::kF32, {256}}});
  ASSERT_TRUE(q.ok()) << q.error().to_string();
  EXPECT_EQ((*q)[0], (TensorType{DType::kF32, {1, 7, 64}}));
  expect_error(infer("embedding", {TensorType{DType::kF32, {256, 64}}, TensorType{DType::kI32, {1, 7}}},
                     {{"padding_idx", Value(0)}}),
               ErrorCode::kUnknownAttribute, "unknown attribute 'padding_idx' (expected one of: none)");
}

}  // namespace
}  // namespace hfs
