// f32 -> f16 bits, round to nearest even, as core/half.h's f32_to_f16 (GLSL's packHalf2x16 leaves the
// rounding to the implementation, so the caches would differ between devices).
uint f32_to_f16(float f) {
  uint x = floatBitsToUint(f);
  uint sign = (x >> 16) & 0x8000u;
  uint ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | 0x7e00u;  // NaN -> canonical quiet NaN
  if (ax >= 0x477ff000u) return sign | 0x7c00u;  // 65520 and above round to inf
  if (ax < 0x38800000u) {                        // an f16 subnormal or zero
    if (ax < 0x33000000u) return sign;
    uint e = ax >> 23;
    uint mant = (ax & 0x7fffffu) | 0x800000u;
    uint shift = 126u - e;
    uint q = mant >> shift;
    uint rem = mant & ((1u << shift) - 1u);
    uint half_unit = 1u << (shift - 1u);
    if (rem > half_unit || (rem == half_unit && (q & 1u) != 0u)) ++q;
    return sign | q;
  }
  uint v = ax - (112u << 23);
  uint rem = v & 0x1fffu;
  v >>= 13;
  if (rem > 0x1000u || (rem == 0x1000u && (v & 1u) != 0u)) ++v;
  return sign | v;
}
