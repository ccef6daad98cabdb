// kv_cache_write: writes land exactly in the named slots and nothing else changes (whole-buffer compare
// against an independently built expectation), negative slots are skipped, f16 caches round to nearest
// even, out-of-range slots fail before writing, and the rule.
#include <gtest/gtest.h>

#include <cstring>

#include "ops/op_test_util.h"

namespace hfs {
namespace {

using optest::expect_error;
using optest::infer;
using optest::run;

constexpr int64_t kHkv = 2, kS = 5, kD = 3;

// Distinct sentinel per cache element so any stray write shows.
std::vector<float> sentinel_cache() {
  std::vector<float> c(static_cast<size_t>(kHkv * kS * kD));
  for (size_t i = 0; i < c.size(); ++i) c[i] = -1000.0f - static_cast<float>(i);
  return c;
}

// rows[0, t, h, i] = 100 t + 10 h + i
std::vector<float> make_rows(int64_t t_len) {
  std::vector<float> r(static_cast<size_t>(t_len * kHkv * kD));
  for (int64_t t = 0; t < t_len; ++t)
    for (int64_t h = 0; h < kHkv; ++h)
      for (int64_t i = 0; i < kD; ++i) r[static_cast<size_t>((t * kHkv + h) * kD + i)] = static_cast<float>(100 * t + 10 * h + i);
  return r;
}

TEST(KvCacheWrite, WritesOnlyTheNamedSlotsInPlace) {
  std::vector<float> cache = sentinel_cache();
  std::vector<float> rows = make_rows(4);
  int32_t slots[] = {4, -1, 1, -7};  // tokens 1 and 3 are padding
  // Expected: the sentinel cache with cache[h, 4, :] = rows[0, h, :] and cache[h, 1, :] = rows[2, h, :].
  std::vector<float> want = cache;
  for (int64_t h = 0; h < kHkv; ++h)
    for (int64_t i = 0; i < kD; ++i) {
      want[static_cast<size_t>((h * kS + 4) * kD + i)] = static_cast<float>(0 + 10 * h + i);
      want[static_cast<size_t>((h * kS + 1) * kD + i)] = static_cast<float>(200 + 10 * h + i);
    }
  TensorView cv(cache.data(), DType::kF32, {1, kHkv, kS, kD});
  ASSERT_TRUE(run("kv_cache_write", {},
                  {cv, TensorView(rows.data(), DType::kF32, {1, 4, kHkv, kD}), TensorView(slots, DType::kI32, {4})}, {cv})
                  .ok());
  EXPECT_EQ(cache, want);
}

TEST(KvCacheWrite, AllSlotsNegativeLeavesCacheUntouched) {
  std::vector<float> cache = sentinel_cache(), before = cache, rows = make_rows(2);
  int32_t slots[] = {-1, -1};
  TensorView cv(cache.data(), DType::kF32, {1, kHkv, kS, kD});
  ASSERT_TRUE(run("kv_cache_write", {},
                  {cv, TensorView(rows.data(), DType::kF32, {1, 2, kHkv, kD}), TensorView(slots, DType::kI32, {2})}, {cv})
                  .ok());
  EXPECT_EQ(cache, before);
}

TEST(KvCacheWrite, LaterRowWinsOnDuplicateSlot) {
  std::vector<float> cache = sentinel_cache(), rows = make_rows(2);
  int32_t slots[] = {3, 3};
  TensorView cv(cache.data(), DType::kF32, {1, kHkv, kS, kD});
  ASSERT_TRUE(run("kv_cache_write", {},
                  {cv, TensorView(rows.data(), DType::kF32, {1, 2, kHkv, kD}), TensorView(slots, DType::kI32, {2})}, {cv})
                  .ok());
  EXPECT_EQ(cache[static_cast<size_t>((1 * kS + 3) * kD + 2)], 112.0f);  // row t = 1, h = 1, i = 2
}

TEST(KvCacheWrite, OutOfRangeSlotFailsBeforeWriting) {
  std::vector<float> cache = sentinel_cache(), before = cache, rows = make_rows(2);
  int32_t slots[] = {0, 5};  // S = 5
  TensorView cv(cache.data(), DType::kF32, {1, kHkv, kS, kD});
  expect_error(run("kv_cache_write", {},
                   {cv, TensorView(rows.data(), DType::kF32, {1, 2, kHkv, kD}), TensorView(slots, DType::kI32, {2})}, {cv}),
               ErrorCode::kOutOfRange, "slots[1] = 5 is outside the cache's S = 5 slots");
  EXPECT_EQ(cache, before);  // slot 0 was not written either
}

TEST(KvCacheWrite, F16CacheRoundsRowsAndKeepsOtherBytes) {
  // Values: 1 + 2^-11 is a tie between f16 0x3C00 and 0x3C01 -> even 0x3C00; 1 + 3 * 2^-11 -> 0x3C02;
  // -2.5 -> 0xC100; 65504 -> 0x7BFF; 1e6 -> inf 0x7C00; 0.1 -> 0x2E66 (0.0999755859375 is nearest).
  constexpr int64_t hkv = 1, s = 4, d = 6;
  std::vector<uint16_t> cache(static_cast<size_t>(hkv * s * d));
  for (size_t i = 0; i < cache.size(); ++i) cache[i] = static_cast<uint16_t>(0xABC0 + i);
  std::vector<uint16_t> want = cache;
  float rows[] = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, -2.5f, 65504.0f, 1e6f, 0.1f};
  const uint16_t bits[] = {0x3C00, 0x3C02, 0xC100, 0x7BFF, 0x7C00, 0x2E66};
  for (int64_t i = 0; i < d; ++i) want[static_cast<size_t>(2 * d + i)] = bits[i];
  int32_t slots[] = {2};
  TensorView cv(cache.data(), DType::kF16, {1, hkv, s, d});
  ASSERT_TRUE(run("kv_cache_write", {}, {cv, TensorView(rows, DType::kF32, {1, 1, hkv, d}), TensorView(slots, DType::kI32, {1})},
                  {cv})
                  .ok());
  EXPECT_EQ(cache, want);
  EXPECT_EQ(optest::f16_bits_to_double(0x2E66), 0.0999755859375);
}

TEST(KvCacheWrite, SeparateOutputBufferGetsCacheWithRowsWritten) {
  std::vector<float> cache = sentinel_cache(), before = cache, rows = make_rows(1);
  std::vector<float> out(cache.size(), 0.0f);
  int32_t slots[] = {0};
  ASSERT_TRUE(run("kv_cache_write", {},
                  {TensorView(cache.data(), DType::kF32, {1, kHkv, kS, kD}),
                   TensorView(rows.data(), DType::kF32, {1, 1, kHkv, kD}), TensorView(slots, DType::kI32, {1})},
                  {TensorView(out.data(), DType::kF32, {1, kHkv, kS, kD})})
                  .ok());
  EXPECT_EQ(cache, before);
  std::vector<float> want = before;
  for (int64_t h = 0; h < kHkv; ++h)
    for (int64_t i = 0; i < kD; ++i) want[static_cast<size_t>((h * kS) * kD + i)] = static_cast<float>(10 * h + i);
  EXPECT_EQ(out, want);
}

TEST(KvCacheWrite, Rule) {
  const TensorType cache{DType::kF16, {1, 4, 128, 64}}, rows{DType::kF32, {1, 8, 4, 64}}, slots{DType::kI32, {8}};
  auto r = infer("kv_cache_write", {cache, rows, slots});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ((*r)[0], cache);
  expect_error(infer("kv_cache_write", {TensorType{DType::kBF16, {1, 4, 128, 64}}, rows, slots}),
               ErrorCode::kDTypeMismatch, "operand 0 (cache): expected dtype f32|f16|i8, got bf16[1, 4, 128, 64]");
  expect_error(infer("kv_cache_write", {cache, TensorType{DType::kF32, {1, 8, 2, 64}}, slots}), ErrorCode::kShapeMismatch,
               "operand 1 (rows): expected [1, T, Hkv, D] with Hkv = 4, D = 64, got f32[1, 8, 2, 64]");
  expect_error(infer("kv_cache_write", {cache, TensorType{DType::kF32, {1, 8, 4, 32}}, slots}), ErrorCode::kShapeMismatch,
               "operand 1 (rows)");
  expect_error(infer("kv_cache_write", {cache, TensorType{DType::kF16, {1, 8, 4, 64}}, slots}), ErrorCode::kDTypeMismatch,
               "operand 1 (rows): expected dtype f32");
  expect_error(infer("kv_cache_write", {cache, rows, TensorType{DType::kI32, {1, 8}}}), ErrorCode::kShapeMismatch,
               "operand 2 (slots): expected [T] with T = 8, got i32[1, 8]");
  expect_error(infer("kv_cache_write", {cache, rows, TensorType{DType::kI32, {7}}}), ErrorCode::kShapeMismatch,
               "operand 2 (slots)");
  expect_error(infer("kv_cache_write", {cache, rows, TensorType{DType::kI64, {8}}}), ErrorCode::kDTypeMismatch,
               "operand 2 (slots): expected dtype i32");
  expect_error(infer("kv_cache_write", {TensorType{DType::kF32, {4, 128, 64}}, rows, slots}), ErrorCode::kShapeMismatch,
               "operand 0 (cache): expected [1, Hkv, S, D], got f32[4, 128, 64]");
  expect_error(infer("kv_cache_write", {cache, rows, slots}, {{"layer", Value(0)}}), ErrorCode::kUnknownAttribute,
               "unknown attribute 'layer'");
}

}  // namespace
}  // namespace hfs

namespace hfs {
namespace {

// int8 caches: kv_scale_write then kv_cache_write, as the exported graph runs them. Hand-computed: row 0
// of head 0 has max |x| = 127, so its scale is exactly 1 and q is x rounded half to even (−3.5 → −4,
// 2.5 → 2, 0.5 → 0); row 0 of head 1 is all zero (scale 0, q 0); row 1 of head 0 is [254, −1, 0, 1]
// (scale 2: q = [127, −0 → 0 (−0.5 rounds to even), 0, 0]); head 1 of row 1 has max 63.5 (scale 0.5:
// q = [127, −127, 1, −1]). The pad row (slot −1) and the slots not named keep their bytes.
TEST(KvCacheWrite, Int8RowsQuantizeWithTheirOwnScaleRoundingHalfToEven) {
  constexpr int64_t hkv = 2, s = 3, d = 4;
  std::vector<int8_t> cache(static_cast<size_t>(hkv * s * d), int8_t{55});
  std::vector<float> scale(static_cast<size_t>(hkv * s), 9.0f);
  const float rows[] = {127, -3.5f, 2.5f, 0.5f, 0, 0, 0, 0,          // t = 0 (slot 2)
                        254, -1, 0, 1, 63.5f, -63.5f, 0.5f, -0.5f,   // t = 1 (slot 0)
                        1, 2, 3, 4, 5, 6, 7, 8};                     // t = 2: pad (slot −1)
  int32_t slots[] = {2, 0, -1};
  TensorView sv(scale.data(), DType::kF32, {1, hkv, s}), cv(cache.data(), DType::kI8, {1, hkv, s, d});
  const TensorView rv(rows, DType::kF32, {1, 3, hkv, d}), slv(slots, DType::kI32, {3});
  ASSERT_TRUE(run("kv_scale_write", {}, {sv, rv, slv}, {sv}).ok());
  EXPECT_EQ(scale, (std::vector<float>{2.0f, 9.0f, 1.0f, 0.5f, 9.0f, 0.0f}));
  ASSERT_TRUE(run("kv_cache_write", {}, {cv, rv, slv, sv}, {cv}).ok());
  std::vector<int8_t> want(cache.size(), int8_t{55});
  const int8_t h0s2[] = {127, -4, 2, 0}, h1s2[] = {0, 0, 0, 0}, h0s0[] = {127, 0, 0, 0}, h1s0[] = {127, -127, 1, -1};
  auto put = [&](int64_t h, int64_t slot, const int8_t* q) {
    std::copy(q, q + d, want.begin() + (h * s + slot) * d);
  };
  put(0, 2, h0s2), put(1, 2, h1s2), put(0, 0, h0s0), put(1, 0, h1s0);
  EXPECT_EQ(cache, want);
}

TEST(KvCacheWrite, Int8CacheRuleWantsItsScale) {
  const TensorType cache{DType::kI8, {1, 2, 16, 8}}, rows{DType::kF32, {1, 3, 2, 8}}, slots{DType::kI32, {3}};
  const TensorType scale{DType::kF32, {1, 2, 16}};
  EXPECT_TRUE(infer("kv_cache_write", {cache, rows, slots, scale}).ok());
  EXPECT_TRUE(infer("kv_scale_write", {scale, rows, slots}).ok());
  auto r = infer("kv_cache_write", {cache, rows, slots});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("scale"), std::string::npos) << r.error().to_string();
  EXPECT_FALSE(infer("kv_cache_write", {TensorType{DType::kF32, {1, 2, 16, 8}}, rows, slots, scale}).ok());
  EXPECT_FALSE(infer("kv_cache_write", {cache, rows, slots, TensorType{DType::kF32, {1, 2, 15}}}).ok());
}

}  // namespace
}  // namespace hfs
