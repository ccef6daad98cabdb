#include "core/quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "support/random_floats.h"

namespace hfs::quant {
namespace {

std::vector<float> gaussian(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  hfs::test::Normal<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(QuantFormats, HalfAndBfloatRoundTrip) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_FLOAT_EQ(f16_to_f32(0x3555), 0.333251953125f);
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  // 1 + 2^-8 is exactly halfway between two bf16 values: ties go to even (1.0).
  EXPECT_EQ(f32_to_bf16(1.00390625f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.01171875f), 0x3f82);  // 1 + 3·2^-8: halfway, rounds up to even 0x3f82
  EXPECT_FLOAT_EQ(bf16_to_f32(0xc040), -3.0f);
}

TEST(QuantFormats, Q4_0MatchesHandComputedBlock) {
  // Largest magnitude is -4 (negative): d = -4 / -8 = 0.5, so q = x/0.5 + 8.
  std::vector<float> x(32, 0.0f);
  x[0] = -4.0f;   // q = 0
  x[1] = 1.0f;    // q = 10
  x[16] = 3.4f;   // 6.8 + 8.5 = 15.3 → 15
  x[17] = -0.26f; // -0.52 + 8.5 = 7.98 → 7
  std::vector<uint8_t> q(18);
  ASSERT_TRUE(quantize_q4_0(x.data(), 1, 32, q.data()).ok());
  uint16_t d;
  std::memcpy(&d, q.data(), 2);
  EXPECT_EQ(d, f32_to_f16(0.5f));
  EXPECT_EQ(q[2], 0 | (15 << 4));
  EXPECT_EQ(q[3], 10 | (7 << 4));
  EXPECT_EQ(q[4], 8 | (8 << 4));  // zeros are stored as 8
  std::vector<float> back(32);
  dequantize_q4_0(q.data(), 1, 32, back.data());
  EXPECT_FLOAT_EQ(back[0], -4.0f);
  EXPECT_FLOAT_EQ(back[1], 1.0f);
  EXPECT_FLOAT_EQ(back[16], 3.5f);
  EXPECT_FLOAT_EQ(back[17], -0.5f);
  EXPECT_FLOAT_EQ(back[2], 0.0f);
}

TEST(QuantFormats, Q8_0AndI8MatchHandComputed) {
  std::vector<float> x(32, 0.0f);
  x[0] = 2.54f;   // d = 0.02, q = 127
  x[1] = -1.0f;   // q = -50
  std::vector<uint8_t> q(34);
  ASSERT_TRUE(quantize_q8_0(x.data(), 1, 32, q.data()).ok());
  EXPECT_EQ(static_cast<int8_t>(q[2]), 127);
  EXPECT_EQ(static_cast<int8_t>(q[3]), -50);
  uint16_t d;
  std::memcpy(&d, q.data(), 2);
  EXPECT_EQ(d, f32_to_f16(0.02f));

  const float w[6] = {1.27f, -0.635f, 0.0f, 0.0f, 0.0f, 0.0f};  // rows [1.27, -0.635, 0], [0, 0, 0]
  int8_t wq[6];
  float s[2];
  quantize_i8_per_channel(w, 2, 3, wq, s);
  EXPECT_FLOAT_EQ(s[0], 0.01f);
  EXPECT_EQ(wq[0], 127);
  EXPECT_EQ(wq[1], -64);  // -63.5 rounds to even
  EXPECT_EQ(s[1], 0.0f);
  EXPECT_EQ(wq[4], 0);
}

TEST(QuantFormats, ErrorReportPerFormat) {
  auto w = gaussian(64 * 256, 1);
  struct Case {
    DType f;
    double lo, hi;
  };
  // Expected relative RMS for Gaussian weights: f16 ~ 2^-11·0.6, bf16 ~ 2^-8·0.6, int8 ~ 1%, q4_0 ~ 10%.
  for (Case c : {Case{DType::kF32, 0, 0}, Case{DType::kF16, 1e-5, 5e-4}, Case{DType::kBF16, 5e-4, 4e-3},
                 Case{DType::kI8, 2e-3, 2e-2}, Case{DType::kQ8_0, 2e-3, 1e-2}, Case{DType::kQ4_0, 0.05, 0.15}}) {
    auto rep = quantization_error(c.f, w.data(), 64, 256);
    ASSERT_TRUE(rep.ok()) << rep.error().to_string();
    EXPECT_GE(rep->rel_rms, c.lo) << dtype_name(c.f);
    EXPECT_LE(rep->rel_rms, c.hi) << dtype_name(c.f);
  }
  EXPECT_DOUBLE_EQ(relative_rms_error(w.data(), w.data(), 10), 0.0);
}

TEST(QuantFormats, RejectsBadShapesAndFormats) {
  std::vector<float> w(40, 1.0f);
  std::vector<uint8_t> q(64);
  auto st = quantize_q4_0(w.data(), 1, 40, q.data());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.error().message().find("k = 40"), std::string::npos);
  EXPECT_FALSE(quantize_q8_0(w.data(), 1, 40, q.data()).ok());
  auto rep = quantization_error(DType::kI32, w.data(), 1, 40);
  ASSERT_FALSE(rep.ok());
  EXPECT_EQ(rep.error().code(), ErrorCode::kUnsupported);
  EXPECT_FALSE(quantization_error(DType::kQ4_0, w.data(), 1, 40).ok());
}

}  // namespace
}  // namespace hfs::quant
