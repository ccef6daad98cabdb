// core/half.h — f16 / bf16 <-> f32 conversions, bit-exact with PyTorch's CPU casts.
//
// f32 -> f16 and f32 -> bf16 round to nearest, ties to even (PyTorch: c10::Half(float), c10::BFloat16(float));
// f16/bf16 -> f32 are exact. NaN stays NaN (quiet); overflow becomes ±inf; f16 subnormals are kept.
//
//   uint16_t h = hfs::f32_to_f16(1.0f);      // 0x3C00
//   float f = hfs::f16_to_f32(h);             // 1.0f
//   uint16_t b = hfs::f32_to_bf16(1.0f);      // 0x3F80
#pragma once

#include <bit>
#include <cstdint>

namespace hfs {

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13));  // inf / NaN
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return std::bit_cast<float>(sign);  // ±0
  // Subnormal f16: renormalize. Value = mant * 2^-24; shift the leading 1 up to the implicit-bit position.
  int e = -1;
  do {
    mant <<= 1;
    ++e;
  } while ((mant & 0x400u) == 0);
  return std::bit_cast<float>(sign | (static_cast<uint32_t>(112 - e) << 23) | ((mant & 0x3FFu) << 13));
}

inline uint16_t f32_to_f16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);  // NaN -> canonical quiet NaN
  // 65520 = 65504 + half an f16 ulp: it and everything above round to inf.
  if (ax >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);
  if (ax < 0x38800000u) {
    // Result is an f16 subnormal (or zero): its unit is 2^-24. Values below 2^-25 round to zero; exactly
    // 2^-25 is a tie and rounds to even (zero).
    if (ax < 0x33000000u) return sign;
    const uint32_t exp = ax >> 23;                     // 102..112
    const uint32_t mant = (ax & 0x7FFFFFu) | 0x800000u;  // 24-bit significand
    const uint32_t shift = 126u - exp;                 // mant * 2^(exp-150) / 2^-24 = mant >> (126-exp)
    uint32_t q = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) ++q;  // q may carry into the smallest normal: correct
    return static_cast<uint16_t>(sign | q);
  }
  // Normal range: rebias the exponent (127 -> 15) and round the 23-bit mantissa to 10 bits.
  uint32_t v = ax - (112u << 23);
  const uint32_t rem = v & 0x1FFFu;
  v >>= 13;
  if (rem > 0x1000u || (rem == 0x1000u && (v & 1u))) ++v;  // a carry into the exponent is correct too
  return static_cast<uint16_t>(sign | v);
}

inline float bf16_to_f32(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

inline uint16_t f32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>(((x >> 16) & 0x8000u) | 0x7FC0u);
  const uint32_t rounding_bias = 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding_bias) >> 16);
}

}  // namespace hfs
