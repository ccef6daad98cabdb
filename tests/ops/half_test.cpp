// f16/bf16 conversions (src/core/half.h) against an independent double-precision decoder and the
// round-to-nearest-even definition.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "core/half.h"
#include "ops/op_test_util.h"

namespace hfs {
namespace {

using optest::f16_bits_to_double;

TEST(Half, F16DecodeMatchesDefinitionForAllPatterns) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const double want = f16_bits_to_double(static_cast<uint16_t>(b));
    const float got = f16_to_f32(static_cast<uint16_t>(b));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << b;
    } else {
      ASSERT_EQ(static_cast<double>(got), want) << b;
      ASSERT_EQ(std::signbit(got), std::signbit(want)) << b;
    }
  }
}

TEST(Half, F16RoundTripsEveryFiniteValue) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    if (((b >> 10) & 0x1F) == 0x1F && (b & 0x3FF)) continue;  // NaN payloads are canonicalized
    ASSERT_EQ(f32_to_f16(f16_to_f32(static_cast<uint16_t>(b))), b) << b;
  }
}

TEST(Half, F16EncodeHandPickedValues) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);                 // max finite
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7BFF);                 // below the halfway point to 65536
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);                 // halfway: ties to even = inf
  EXPECT_EQ(f32_to_f16(1e10f), 0x7C00);
  EXPECT_EQ(f32_to_f16(-INFINITY), 0xFC00);
  EXPECT_EQ(f32_to_f16(1.0f + 0x1p-11f), 0x3C00);          // tie between 0x3C00 and 0x3C01 -> even
  EXPECT_EQ(f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3C02);      // tie between 0x3C01 and 0x3C02 -> even
  EXPECT_EQ(f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);  // just above the tie
  EXPECT_EQ(f32_to_f16(0x1p-24f), 0x0001);                 // smallest subnormal
  EXPECT_EQ(f32_to_f16(0x1p-25f), 0x0000);                 // tie with zero -> even (zero)
  EXPECT_EQ(f32_to_f16(0x1.8p-25f), 0x0001);
  EXPECT_EQ(f32_to_f16(3 * 0x1p-25f), 0x0002);             // 1.5 units: tie between 1 and 2 -> 2
  EXPECT_EQ(f32_to_f16(0x1p-14f - 0x1p-25f), 0x0400);      // rounds up into the smallest normal
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(NAN))));
}

// For random floats in the f16 range the encoding is the nearest f16, ties to even mantissa.
TEST(Half, F16EncodeIsNearestEven) {
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    // Exponents spanning subnormals to the top of the f16 range.
    const float f = std::ldexp(static_cast<float>(rng() % 0x1000000) / 0x1000000, static_cast<int>(rng() % 42) - 26) *
                    ((rng() & 1) ? -1.0f : 1.0f);
    const uint16_t h = f32_to_f16(f);
    const double got = f16_bits_to_double(h), x = f;
    const double below = f16_bits_to_double(static_cast<uint16_t>(h - 1));
    const double above = f16_bits_to_double(static_cast<uint16_t>(h + 1));
    const double err = std::abs(got - x);
    const bool has_below = (h & 0x7FFF) != 0, has_above = (h & 0x7FFF) < 0x7BFF;
    if (has_below) {
      ASSERT_LE(err, std::abs(below - x)) << f;
    }
    if (has_above) {
      ASSERT_LE(err, std::abs(above - x)) << f;
    }
    if ((has_below && err == std::abs(below - x)) || (has_above && err == std::abs(above - x))) {
      ASSERT_EQ(h & 1, 0) << "tie not rounded to even for " << f;
    }
  }
}

TEST(Half, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(bf16_to_f32(0x3F80), 1.0f);
  EXPECT_EQ(f32_to_bf16(1.0f + 0x1p-8f), 0x3F80);               // tie -> even
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82);           // tie -> even (up)
  EXPECT_EQ(f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);    // above the tie
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x7F7FFFFFu)), 0x7F80);  // FLT_MAX rounds to inf
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::bit_cast<float>(0x7F800001u)))));  // low-payload NaN stays NaN
  for (uint32_t b = 0; b < 0x10000; ++b) {
    if (((b >> 7) & 0xFF) == 0xFF && (b & 0x7F)) continue;
    ASSERT_EQ(f32_to_bf16(bf16_to_f32(static_cast<uint16_t>(b))), b);
  }
}

}  // namespace
}  // namespace hfs
