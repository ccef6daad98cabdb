// linear: hand-computed cases, rule rejections, and differential tests against a naive double-precision
// x @ W^T + b, with every weight dtype (f16/bf16/i8/q4_0 also compared to "dequantize, then f32 linear").
#include <gtest/gtest.h>

#include <cstring>

#include "ops/op_test_util.h"

namespace hfs {
namespace {

using optest::expect_error;
using optest::infer;
using optest::run;

// Naive y[m, n] = sum_k x[m, k] * w[n, k] + b[n] in double; `abs_sum` gets sum_k |x w| (+|b|) for tolerances.
std::vector<double> naive_linear(const std::vector<float>& x, const std::vector<double>& w, const std::vector<float>* b,
                                 int64_t m_rows, int64_t n_out, int64_t k, std::vector<double>* abs_sum) {
  std::vector<double> y(static_cast<size_t>(m_rows * n_out));
  abs_sum->assign(y.size(), 0.0);
  for (int64_t m = 0; m < m_rows; ++m)
    for (int64_t n = 0; n < n_out; ++n) {
      double acc = b ? (*b)[static_cast<size_t>(n)] : 0.0, mag = b ? std::abs((*b)[static_cast<size_t>(n)]) : 0.0;
      for (int64_t i = 0; i < k; ++i) {
        const double t = static_cast<double>(x[static_cast<size_t>(m * k + i)]) * w[static_cast<size_t>(n * k + i)];
        acc += t;
        mag += std::abs(t);
      }
      y[static_cast<size_t>(m * n_out + n)] = acc;
      (*abs_sum)[static_cast<size_t>(m * n_out + n)] = mag;
    }
  return y;
}

// Builds llama.cpp Q4_0 blocks: per block an f16 scale (little-endian) then 16 bytes of packed nibbles.
std::vector<uint8_t> random_q4_0(int64_t n_rows, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t blocks = n_rows * k / 32;
  std::vector<uint8_t> bytes(static_cast<size_t>(blocks * 18));
  std::vector<uint16_t> scales = optest::random_f16_bits(static_cast<size_t>(blocks), seed + 1);
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t* blk = bytes.data() + b * 18;
    blk[0] = static_cast<uint8_t>(scales[static_cast<size_t>(b)] & 0xFF);
    blk[1] = static_cast<uint8_t>(scales[static_cast<size_t>(b)] >> 8);
    for (int j = 0; j < 16; ++j) blk[2 + j] = static_cast<uint8_t>(rng() & 0xFF);
  }
  return bytes;
}

// Independent Q4_0 dequantization: value i of block b = (nibble - 8) * d, low nibbles first then high.
std::vector<double> dequant_q4_0(const std::vector<uint8_t>& bytes, int64_t numel) {
  std::vector<double> out(static_cast<size_t>(numel));
  for (int64_t b = 0; b < numel / 32; ++b) {
    const uint8_t* blk = bytes.data() + b * 18;
    const double d = optest::f16_bits_to_double(static_cast<uint16_t>(blk[0] | (blk[1] << 8)));
    for (int j = 0; j < 16; ++j) {
      out[static_cast<size_t>(b * 32 + j)] = ((blk[2 + j] & 0x0F) - 8) * d;
      out[static_cast<size_t>(b * 32 + j + 16)] = ((blk[2 + j] >> 4) - 8) * d;
    }
  }
  return out;
}

std::vector<float> to_f32(const std::vector<double>& v) { return {v.begin(), v.end()}; }

// Runs linear with weight `w` and compares it bit-for-bit to the f32 path on `w_real` (the same weight
// already dequantized to f32), and to the double reference.
void check_against_f32_and_double(const TensorView& w, const std::vector<double>& w_real, const TensorView* scale) {
  const int64_t m_rows = 3, n_out = w.shape[0], k = w.shape[1];
  std::vector<float> x = optest::random_floats(static_cast<size_t>(m_rows * k), 11);
  std::vector<float> bias = optest::random_floats(static_cast<size_t>(n_out), 12);
  std::vector<float> y(static_cast<size_t>(m_rows * n_out)), y_f32(y.size());
  std::vector<TensorView> in = {TensorView(x.data(), DType::kF32, {1, m_rows, k}), w,
                                TensorView(bias.data(), DType::kF32, {n_out})};
  if (scale) in.push_back(*scale);
  ASSERT_TRUE(run("linear", {}, in, {TensorView(y.data(), DType::kF32, {1, m_rows, n_out})}).ok());

  std::vector<float> w32 = to_f32(w_real);
  in[1] = TensorView(w32.data(), DType::kF32, {n_out, k});
  in.resize(3);
  ASSERT_TRUE(run("linear", {}, in, {TensorView(y_f32.data(), DType::kF32, {1, m_rows, n_out})}).ok());
  EXPECT_EQ(y, y_f32);

  std::vector<double> mag;
  std::vector<double> want = naive_linear(x, w_real, &bias, m_rows, n_out, k, &mag);
  optest::expect_close(y, want, 1e-5, &mag);
}

TEST(Linear, HandComputed) {
  // x = [1, 2]; W = [[1, 0], [0, 1], [1, 1]]; b = [0.5, -1, 0]
  // y = [1*1 + 2*0 + 0.5, 1*0 + 2*1 - 1, 1 + 2 + 0] = [1.5, 1, 3]
  float x[] = {1, 2}, w[] = {1, 0, 0, 1, 1, 1}, b[] = {0.5f, -1, 0}, y[3] = {};
  ASSERT_TRUE(run("linear", {},
                  {TensorView(x, DType::kF32, {1, 2}), TensorView(w, DType::kF32, {3, 2}),
                   TensorView(b, DType::kF32, {3})},
                  {TensorView(y, DType::kF32, {1, 3})})
                  .ok());
  EXPECT_EQ(y[0], 1.5f);
  EXPECT_EQ(y[1], 1.0f);
  EXPECT_EQ(y[2], 3.0f);
  // Without bias (absent operand 2 as a null view): [1, 2, 3].
  ASSERT_TRUE(run("linear", {}, {TensorView(x, DType::kF32, {1, 2}), TensorView(w, DType::kF32, {3, 2}), TensorView()},
                  {TensorView(y, DType::kF32, {1, 3})})
                  .ok());
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], 2.0f);
  EXPECT_EQ(y[2], 3.0f);
}

TEST(Linear, HandComputedQ4_0Block) {
  // One row, one block: d = 0.5 (f16 0x3800); qs[0] = 0x9A: element 0 = (0xA - 8) * 0.5 = 1.0,
  // element 16 = (0x9 - 8) * 0.5 = 0.5; all other qs = 0x88 -> 0. With x = e0 + 2 * e16: y = 1 + 2 * 0.5 = 2.
  uint8_t blk[18];
  blk[0] = 0x00;
  blk[1] = 0x38;
  std::memset(blk + 2, 0x88, 16);
  blk[2] = 0x9A;
  float x[32] = {};
  x[0] = 1;
  x[16] = 2;
  float y = 0;
  ASSERT_TRUE(run("linear", {}, {TensorView(x, DType::kF32, {1, 32}), TensorView(blk, DType::kQ4_0, {1, 32})},
                  {TensorView(&y, DType::kF32, {1, 1})})
                  .ok());
  EXPECT_EQ(y, 2.0f);
}

TEST(Linear, HandComputedI8WithScale) {
  // w = [[2, -3], [127, -128]] (i8), scale = [0.5, 0.25] -> W = [[1, -1.5], [31.75, -32]]
  // x = [2, 1] -> y = [2 - 1.5, 63.5 - 32] = [0.5, 31.5]
  int8_t w[] = {2, -3, 127, -128};
  float s[] = {0.5f, 0.25f}, x[] = {2, 1}, y[2];
  ASSERT_TRUE(run("linear", {},
                  {TensorView(x, DType::kF32, {1, 2}), TensorView(w, DType::kI8, {2, 2}), TensorView(),
                   TensorView(s, DType::kF32, {2})},
                  {TensorView(y, DType::kF32, {1, 2})})
                  .ok());
  EXPECT_EQ(y[0], 0.5f);
  EXPECT_EQ(y[1], 31.5f);
}

TEST(Linear, F32MatchesNaiveDouble) {
  const int64_t m_rows = 6, n_out = 7, k = 64;
  std::vector<float> x = optest::random_floats(static_cast<size_t>(m_rows * k), 1);
  std::vector<float> w = optest::random_floats(static_cast<size_t>(n_out * k), 2);
  std::vector<float> b = optest::random_floats(static_cast<size_t>(n_out), 3);
  std::vector<float> y(static_cast<size_t>(m_rows * n_out));
  ASSERT_TRUE(run("linear", {},
                  {TensorView(x.data(), DType::kF32, {2, 3, k}), TensorView(w.data(), DType::kF32, {n_out, k}),
                   TensorView(b.data(), DType::kF32, {n_out})},
                  {TensorView(y.data(), DType::kF32, {2, 3, n_out})})
                  .ok());
  std::vector<double> mag;
  std::vector<double> want = naive_linear(x, std::vector<double>(w.begin(), w.end()), &b, m_rows, n_out, k, &mag);
  optest::expect_close(y, want, 1e-5, &mag);
}

TEST(Linear, F16WeightMatchesDequantizedF32) {
  const int64_t n_out = 5, k = 48;
  std::vector<uint16_t> w = optest::random_f16_bits(static_cast<size_t>(n_out * k), 21);
  std::vector<double> real(w.size());
  for (size_t i = 0; i < w.size(); ++i) real[i] = optest::f16_bits_to_double(w[i]);
  check_against_f32_and_double(TensorView(w.data(), DType::kF16, {n_out, k}), real, nullptr);
}

TEST(Linear, Bf16WeightMatchesDequantizedF32) {
  const int64_t n_out = 5, k = 48;
  std::vector<uint16_t> w = optest::random_bf16_bits(static_cast<size_t>(n_out * k), 22);
  std::vector<double> real(w.size());
  for (size_t i = 0; i < w.size(); ++i) real[i] = optest::bf16_bits_to_double(w[i]);
  check_against_f32_and_double(TensorView(w.data(), DType::kBF16, {n_out, k}), real, nullptr);
}

TEST(Linear, I8WeightMatchesDequantizedF32) {
  const int64_t n_out = 6, k = 40;
  std::mt19937 rng(23);
  std::vector<int8_t> w(static_cast<size_t>(n_out * k));
  for (int8_t& v : w) v = static_cast<int8_t>(static_cast<int>(rng() % 256) - 128);
  std::vector<float> scale = optest::random_floats(static_cast<size_t>(n_out), 24, 0.001f, 0.02f);
  // Dequantized as PyTorch would in f32: float(scale[n] * float(w)).
  std::vector<double> real(w.size());
  for (int64_t n = 0; n < n_out; ++n)
    for (int64_t i = 0; i < k; ++i)
      real[static_cast<size_t>(n * k + i)] = scale[static_cast<size_t>(n)] * static_cast<float>(w[static_cast<size_t>(n * k + i)]);
  TensorView sv(scale.data(), DType::kF32, {n_out});
  check_against_f32_and_double(TensorView(w.data(), DType::kI8, {n_out, k}), real, &sv);
}

TEST(Linear, Q4_0WeightMatchesDequantizedF32) {
  const int64_t n_out = 4, k = 96;  // 3 blocks per row
  std::vector<uint8_t> w = random_q4_0(n_out, k, 25);
  check_against_f32_and_double(TensorView(w.data(), DType::kQ4_0, {n_out, k}), dequant_q4_0(w, n_out * k), nullptr);
}

TEST(Linear, RuleComputesOutputShape) {
  auto r = infer("linear", {TensorType{DType::kF32, {1, 4, 64}}, TensorType{DType::kBF16, {32, 64}},
                            TensorType{DType::kF32, {32}}});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ((*r)[0], (TensorType{DType::kF32, {1, 4, 32}}));
  r = infer("linear", {TensorType{DType::kF32, {2, 64}}, TensorType{DType::kQ4_0, {8, 64}}});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ((*r)[0], (TensorType{DType::kF32, {2, 8}}));
  r = infer("linear", {TensorType{DType::kF32, {2, 64}}, TensorType{DType::kI8, {8, 64}}, std::nullopt,
                       TensorType{DType::kF32, {8}}});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
}

TEST(Linear, RuleRejectsBadOperands) {
  const TensorType x{DType::kF32, {1, 4, 64}};
  expect_error(infer("linear", {x, TensorType{DType::kF32, {32, 48}}}), ErrorCode::kShapeMismatch,
               "operand 1 (weight): expected [N, K] with K = 64, got f32[32, 48]");
  expect_error(infer("linear", {x, TensorType{DType::kF32, {32, 64, 1}}}), ErrorCode::kShapeMismatch,
               "operand 1 (weight): expected [N, K] with K = 64, got f32[32, 64, 1]");
  expect_error(infer("linear", {x, TensorType{DType::kQ8_0, {32, 64}}}), ErrorCode::kDTypeMismatch,
               "operand 1 (weight): expected dtype f32|f16|bf16|i8|q4_0, got q8_0[32, 64]");
  expect_error(infer("linear", {TensorType{DType::kF16, {1, 64}}, TensorType{DType::kF32, {32, 64}}}),
               ErrorCode::kDTypeMismatch, "operand 0 (x): expected dtype f32, got f16[1, 64]");
  expect_error(infer("linear", {TensorType{DType::kF32, {}}, TensorType{DType::kF32, {32, 64}}}),
               ErrorCode::kShapeMismatch, "operand 0 (x): expected [..., K], got f32[]");
  expect_error(infer("linear", {x, TensorType{DType::kF32, {32, 64}}, TensorType{DType::kF32, {31}}}),
               ErrorCode::kShapeMismatch, "operand 2 (bias): expected [N] with N = 32, got f32[31]");
  expect_error(infer("linear", {x, TensorType{DType::kF32, {32, 64}}, TensorType{DType::kF16, {32}}}),
               ErrorCode::kDTypeMismatch, "operand 2 (bias): expected dtype f32");
  expect_error(infer("linear", {TensorType{DType::kF32, {1, 48}}, TensorType{DType::kQ4_0, {32, 48}}}),
               ErrorCode::kShapeMismatch, "operand 1 (weight): expected [N, K] with K a multiple of 32");
  // i8 needs its scale; other dtypes must not have one.
  expect_error(infer("linear", {x, TensorType{DType::kI8, {32, 64}}}), ErrorCode::kInvalidArgument,
               "operand 3 (scale): required for an i8 weight");
  expect_error(infer("linear", {x, TensorType{DType::kF32, {32, 64}}, std::nullopt, TensorType{DType::kF32, {32}}}),
               ErrorCode::kInvalidArgument, "operand 3 (scale): only allowed with an i8 weight");
  expect_error(infer("linear", {x, TensorType{DType::kI8, {32, 64}}, std::nullopt, TensorType{DType::kF32, {16}}}),
               ErrorCode::kShapeMismatch, "operand 3 (scale): expected [N] with N = 32, got f32[16]");
  expect_error(infer("linear", {x}), ErrorCode::kInvalidArgument, "operand 1 (weight): required operand is absent");
  expect_error(infer("linear", {x, TensorType{DType::kF32, {32, 64}}}, {{"eps", Value(1.0)}}),
               ErrorCode::kUnknownAttribute, "unknown attribute 'eps'");
}

}  // namespace
}  // namespace hfs
