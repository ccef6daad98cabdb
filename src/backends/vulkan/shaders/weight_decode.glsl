// One weight value as f32, whatever its storage (src/ops/weight_decode.h, core/quant.h): the includer
// declares `uint w[]` and `float scale[]` and push constants w_off, s_off (in words), k (row length)
// and w_dtype. Rows are addressed by element, so f16/bf16/i8 rows need not start on a word.
const uint kF32 = 0u, kF16 = 1u, kBF16 = 2u, kI8 = 3u, kQ4_0 = 4u;

uint weight_byte(uint b) { return (w[p.w_off + (b >> 2)] >> ((b & 3u) * 8u)) & 0xffu; }

float weight_at(uint n, uint i) {
  uint e = n * p.k + i;
  if (p.w_dtype == kF32) return uintBitsToFloat(w[p.w_off + e]);
  if (p.w_dtype == kF16) return unpackHalf2x16(w[p.w_off + (e >> 1)] >> ((e & 1u) * 16u)).x;
  if (p.w_dtype == kBF16) return uintBitsToFloat(((w[p.w_off + (e >> 1)] >> ((e & 1u) * 16u)) & 0xffffu) << 16);
  if (p.w_dtype == kI8) return float(int(weight_byte(e) << 24) >> 24) * scale[p.s_off + n];
  // q4_0: per row K / 32 blocks of 18 bytes (f16 scale d, then 16 bytes: value j in the low nibble of
  // byte j, value j + 16 in the high nibble), w = (nibble - 8) * d.
  uint base = n * (p.k / 32u) * 18u + (i / 32u) * 18u;
  uint j = i % 32u;
  float d = unpackHalf2x16(weight_byte(base) | (weight_byte(base + 1u) << 8)).x;
  uint q = weight_byte(base + 2u + (j & 15u));
  uint nib = j < 16u ? (q & 15u) : (q >> 4);
  return float(int(nib) - 8) * d;
}
