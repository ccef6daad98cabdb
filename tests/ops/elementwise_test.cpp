// add, mul, silu, gelu_tanh, softcap, scale: hand-computed values, differential tests for the
// activations against naive double formulas, and rule rejections.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/op_test_util.h"

namespace hfs {
namespace {

using optest::expect_error;
using optest::infer;
using optest::run;

std::vector<float> run_unary(std::string_view op, const Attrs& attrs, std::vector<float> x) {
  std::vector<float> y(x.size());
  const int64_t n = static_cast<int64_t>(x.size());
  Status s = run(op, attrs, {TensorView(x.data(), DType::kF32, {1, n})}, {TensorView(y.data(), DType::kF32, {1, n})});
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().to_string());
  return y;
}

std::vector<float> run_binary(std::string_view op, std::vector<float> a, std::vector<float> b) {
  std::vector<float> y(a.size());
  const int64_t n = static_cast<int64_t>(a.size());
  Status s = run(op, {}, {TensorView(a.data(), DType::kF32, {n}), TensorView(b.data(), DType::kF32, {n})},
                 {TensorView(y.data(), DType::kF32, {n})});
  EXPECT_TRUE(s.ok());
  return y;
}

TEST(Elementwise, AddMulHandComputed) {
  // [1, 2] + [3, -5] = [4, -3];  [1.5, 2] * [2, -3] = [3, -6]
  EXPECT_EQ(run_binary("add", {1, 2}, {3, -5}), (std::vector<float>{4, -3}));
  EXPECT_EQ(run_binary("mul", {1.5f, 2}, {2, -3}), (std::vector<float>{3, -6}));
}

TEST(Elementwise, SiluHandComputed) {
  // silu(0) = 0; silu(1) = 1 / (1 + e^-1) = 0.7310585786; silu(-2) = -2 / (1 + e^2) = -0.2384058440
  std::vector<float> y = run_unary("silu", {}, {0, 1, -2});
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_NEAR(y[1], 0.7310585786, 1e-7);
  EXPECT_NEAR(y[2], -0.2384058440, 1e-7);
  // Large |x| stays finite: silu(-100) ~ -100 * e^-100 ~ 0, silu(100) = 100.
  y = run_unary("silu", {}, {-100, 100});
  EXPECT_NEAR(y[0], 0.0, 1e-30);
  EXPECT_EQ(y[1], 100.0f);
}

TEST(Elementwise, GeluTanhHandComputed) {
  // gelu(1) = 0.5 * (1 + tanh(0.7978845608 * 1.044715)) = 0.5 * (1 + tanh(0.8335624)) = 0.8411919906
  // gelu(-1) = -0.1588080094; gelu(2.5) = 2.4849157339 (also what torch's gelu(approximate="tanh") gives)
  std::vector<float> y = run_unary("gelu_tanh", {}, {0, 1, -1, 2.5f});
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_NEAR(y[1], 0.8411919906, 1e-6);
  EXPECT_NEAR(y[2], -0.1588080094, 1e-6);
  EXPECT_NEAR(y[3], 2.4849157339, 1e-6);
}

TEST(Elementwise, ActivationsMatchNaiveDouble) {
  std::vector<float> x = optest::random_floats(2000, 51, -8.0f, 8.0f);
  std::vector<double> gelu(x.size()), silu(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    gelu[i] = 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
    silu[i] = v / (1.0 + std::exp(-v));
  }
  optest::expect_close(run_unary("gelu_tanh", {}, x), gelu, 1e-5);
  optest::expect_close(run_unary("silu", {}, x), silu, 1e-5);
}

TEST(Elementwise, SoftcapAndScaleHandComputed) {
  // softcap cap = 2: x = 2 -> tanh(1) * 2 = 1.5231883119; x = -100 -> -2 * tanh(50) = -2; x = 0 -> 0
  std::vector<float> y = run_unary("softcap", {{"cap", Value(2)}}, {2, -100, 0});
  EXPECT_NEAR(y[0], 1.5231883119, 1e-6);
  EXPECT_EQ(y[1], -2.0f);
  EXPECT_EQ(y[2], 0.0f);
  // scale by 0.5: [1.5, -2] -> [0.75, -1]
  EXPECT_EQ(run_unary("scale", {{"value", Value(0.5)}}, {1.5f, -2}), (std::vector<float>{0.75f, -1}));
}

TEST(Elementwise, SoftcapMatchesNaiveDouble) {
  std::vector<float> x = optest::random_floats(500, 52, -100.0f, 100.0f);
  std::vector<double> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = std::tanh(x[i] / 30.0) * 30.0;
  optest::expect_close(run_unary("softcap", {{"cap", Value(30.0)}}, x), want, 1e-5);
}

TEST(Elementwise, Rules) {
  const TensorType a{DType::kF32, {2, 3}};
  for (const char* op : {"add", "mul"}) {
    auto r = infer(op, {a, a});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ((*r)[0], a);
    expect_error(infer(op, {a, TensorType{DType::kF32, {3, 2}}}), ErrorCode::kShapeMismatch,
                 "operand 1 (b): expected the shape of operand 0 (a) [2, 3], got f32[3, 2]");
    expect_error(infer(op, {a, TensorType{DType::kF32, {1, 3}}}), ErrorCode::kShapeMismatch, "operand 1 (b)");
    expect_error(infer(op, {TensorType{DType::kF16, {2, 3}}, a}), ErrorCode::kDTypeMismatch,
                 "operand 0 (a): expected dtype f32, got f16[2, 3]");
    expect_error(infer(op, {a, TensorType{DType::kI32, {2, 3}}}), ErrorCode::kDTypeMismatch,
                 "operand 1 (b): expected dtype f32, got i32[2, 3]");
  }
  for (const char* op : {"silu", "gelu_tanh"}) {
    ASSERT_TRUE(infer(op, {a}).ok());
    expect_error(infer(op, {TensorType{DType::kBF16, {2}}}), ErrorCode::kDTypeMismatch,
                 "operand 0 (x): expected dtype f32, got bf16[2]");
    expect_error(infer(op, {a}, {{"approximate", Value("tanh")}}), ErrorCode::kUnknownAttribute,
                 "unknown attribute 'approximate'");
  }
  expect_error(infer("softcap", {a}), ErrorCode::kBadAttribute, "missing required attribute 'cap'");
  expect_error(infer("softcap", {a}, {{"cap", Value(0.0)}}), ErrorCode::kBadAttribute,
               "attribute 'cap': expected a finite number > 0");
  expect_error(infer("softcap", {TensorType{DType::kI32, {2}}}, {{"cap", Value(30)}}), ErrorCode::kDTypeMismatch,
               "operand 0 (x)");
  expect_error(infer("scale", {a}), ErrorCode::kBadAttribute, "missing required attribute 'value'");
  expect_error(infer("scale", {a}, {{"value", Value("big")}}), ErrorCode::kBadAttribute,
               "attribute 'value' must be float");
  expect_error(infer("scale", {a}, {{"value", Value(INFINITY)}}), ErrorCode::kBadAttribute,
               "attribute 'value': expected a finite number");
  ASSERT_TRUE(infer("scale", {a}, {{"value", Value(3)}}).ok());  // ints are accepted as floats
}

}  // namespace
}  // namespace hfs
