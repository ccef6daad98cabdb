// f16/bf16 conversion against IEEE encodings computed by hand (and checked with torch).
#include "export/convert.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace hfs {
namespace {

TEST(Convert, F16Encodings) {
  EXPECT_EQ(f32_to_f16_bits(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16_bits(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16_bits(0.1f), 0x2e66);
  EXPECT_EQ(f32_to_f16_bits(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16_bits(65520.0f), 0x7c00);          // rounds up to inf
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -25)), 0x0000);  // tie → even (zero)
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 units → 2 (even)
  EXPECT_EQ(f32_to_f16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie between 0x3c00/0x3c01 → even
  EXPECT_EQ(f32_to_f16_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(f32_to_f16_bits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(f16_bits_to_f32(f32_to_f16_bits(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(f16_bits_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_bits_to_f32(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(f16_bits_to_f32(0x2e66), 0.0999755859375f);
  EXPECT_EQ(f16_bits_to_f32(0xfbff), -65504.0f);
}

TEST(Convert, BF16Encodings) {
  EXPECT_EQ(f32_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16_bits(0.1f), 0x3dcd);  // 0x3dcccccd rounds up
  EXPECT_EQ(f32_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie → even
  EXPECT_EQ(f32_to_bf16_bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(bf16_bits_to_f32(0xc040), -3.0f);
}

TEST(Convert, Buffers) {
  std::vector<float> src = {1.0f, -2.0f, 0.5f};
  std::vector<uint16_t> h(3);
  ASSERT_TRUE(convert_floats(std::as_bytes(std::span(src)), DType::kF32, std::as_writable_bytes(std::span(h)), DType::kF16).ok());
  EXPECT_EQ(h[0], 0x3c00);
  EXPECT_EQ(h[1], 0xc000);
  EXPECT_EQ(h[2], 0x3800);
  std::vector<uint16_t> b(3);
  ASSERT_TRUE(convert_floats(std::as_bytes(std::span(h)), DType::kF16, std::as_writable_bytes(std::span(b)), DType::kBF16).ok());
  EXPECT_EQ(b[0], 0x3f80);
  EXPECT_EQ(b[1], 0xc000);
  EXPECT_EQ(b[2], 0x3f00);
  std::vector<uint16_t> small(2);
  EXPECT_FALSE(convert_floats(std::as_bytes(std::span(src)), DType::kF32, std::as_writable_bytes(std::span(small)), DType::kF16).ok());
  EXPECT_FALSE(convert_floats(std::as_bytes(std::span(src)), DType::kI32, std::as_writable_bytes(std::span(src)), DType::kF32).ok());
}

}  // namespace
}  // namespace hfs
