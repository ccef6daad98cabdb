// f16/bf16 conversion against IEEE encodings computed by hand (and checked with torch).
#include "export/convert.h"

#include <gtest/gtest.h>

#include <bit>
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

// The value scan agrees with the conversions: a value is refused exactly when it is NaN/±inf or when
// converting it to the target gives inf; the first such element is reported, in any block.
TEST(Convert, FirstUnrepresentable) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  auto scan = [](const std::vector<float>& v, DType to) { return first_unrepresentable(std::as_bytes(std::span(v)), DType::kF32, to); };
  EXPECT_FALSE(scan({1.0f, -65504.0f, 65519.0f}, DType::kF16));      // 65519 rounds down to 65504
  auto f16 = scan({1.0f, -65520.0f, 70000.0f}, DType::kF16);          // 65520 is the first that rounds to inf
  ASSERT_TRUE(f16);
  EXPECT_EQ(f16->index, 1u);
  EXPECT_EQ(f16->value, -65520.0f);
  EXPECT_TRUE(f16->overflow);
  EXPECT_EQ(f32_to_f16_bits(-65520.0f), 0xfc00);
  EXPECT_EQ(f32_to_f16_bits(65519.0f), 0x7bff);
  EXPECT_FALSE(scan({70000.0f, 3e38f}, DType::kF32));
  EXPECT_FALSE(scan({70000.0f, 3e38f}, DType::kBF16));
  const float bf16_edge = std::bit_cast<float>(0x7F7F8000u), below = std::bit_cast<float>(0x7F7F7FFFu);
  EXPECT_EQ(f32_to_bf16_bits(bf16_edge), 0x7f80);  // rounds to inf
  EXPECT_EQ(f32_to_bf16_bits(below), 0x7f7f);
  EXPECT_FALSE(scan({below}, DType::kBF16));
  ASSERT_TRUE(scan({below, bf16_edge}, DType::kBF16));
  EXPECT_EQ(scan({below, bf16_edge}, DType::kBF16)->index, 1u);
  // Non-finite values in a later block, in each source dtype.
  std::vector<float> big(10000, 0.25f);
  big[9000] = nan;
  big[9500] = inf;
  auto f = scan(big, DType::kF32);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->index, 9000u);
  EXPECT_TRUE(std::isnan(f->value));
  EXPECT_FALSE(f->overflow);
  std::vector<uint16_t> h(big.size()), b(big.size());
  for (size_t i = 0; i < big.size(); ++i) h[i] = f32_to_f16_bits(big[i]), b[i] = f32_to_bf16_bits(big[i]);
  h[9000] = 0x3c00;  // the inf at 9500 is then the first
  b[9000] = 0x3f80;
  auto hf = first_unrepresentable(std::as_bytes(std::span(h)), DType::kF16, DType::kBF16);
  ASSERT_TRUE(hf);
  EXPECT_EQ(hf->index, 9500u);
  EXPECT_EQ(hf->value, inf);
  auto bf = first_unrepresentable(std::as_bytes(std::span(b)), DType::kBF16, DType::kF32);
  ASSERT_TRUE(bf);
  EXPECT_EQ(bf->index, 9500u);
  // bf16 → f16 overflows like f32 → f16; quantized targets only refuse non-finite values (scanned as f32).
  std::vector<uint16_t> wide = {f32_to_bf16_bits(1.0f), f32_to_bf16_bits(65536.0f)};
  auto bw = first_unrepresentable(std::as_bytes(std::span(wide)), DType::kBF16, DType::kF16);
  ASSERT_TRUE(bw);
  EXPECT_EQ(bw->index, 1u);
  EXPECT_TRUE(bw->overflow);
  EXPECT_FALSE(first_unrepresentable(std::as_bytes(std::span(wide)), DType::kBF16, DType::kF32));
  EXPECT_FALSE(first_unrepresentable(std::as_bytes(std::span(wide)), DType::kI32, DType::kF32));  // not a float type
}

}  // namespace
}  // namespace hfs
