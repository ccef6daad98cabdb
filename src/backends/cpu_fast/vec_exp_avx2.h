// cpu_fast/vec_exp_avx2.h — exp, a lane sum and tail masks over 8 floats (AVX2+FMA), for kernels compiled
// for AVX2: include it AFTER HFS_TARGET_AVX2_BEGIN (isa_target.h), so it inherits the target (internal).
//
// The same Cephes expf as vec_exp_avx512.h (x = n·ln2 + r, |r| ≤ ln2/2, degree-6 polynomial), ≈ 1 ulp
// over the clamped range [-87.3, 88.7]. AVX2 has no scalef, and n reaches 128 at the top of the range
// (2^128 has no float), so 2^n is applied as two exact power-of-two multiplies 2^(n>>1) · 2^(n - n>>1).
#pragma once

#include <immintrin.h>

namespace hfs::cpu_fast::detail {
namespace {

inline __m256 pow2i_avx2(__m256i n) {  // 2^n for n in [-63, 64]: the float with exponent field n + 127
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23));
}

inline __m256 exp256(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.7f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  return _mm256_mul_ps(_mm256_mul_ps(y, pow2i_avx2(n1)), pow2i_avx2(_mm256_sub_epi32(ni, n1)));
}

// Σ of the 8 lanes.
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Lanes [0, n) of a vector for a partial tail (n ≥ 8: all lanes).
inline __m256i tail_mask8(int64_t n) {
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const int32_t k = n >= 8 ? 8 : n <= 0 ? 0 : static_cast<int32_t>(n);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), iota);
}

}  // namespace
}  // namespace hfs::cpu_fast::detail
