// cpu_fast/avx512_transpose.h — a 16×16 float transpose in registers (internal). Include only inside an
// HFS_TARGET_AVX512 region (isa_target.h), like avx512_mask.h.
#pragma once

#include <immintrin.h>

namespace hfs::cpu_fast::detail {
namespace {

// 16 vectors → their transpose (r[j] lane i = old r[i] lane j): 32-bit, 64-bit, then 128-bit interleaves.
inline void transpose16(__m512 r[16]) {
  __m512 a[16], b[16];
  for (int i = 0; i < 8; ++i) {
    a[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j) {
      const __m512d lo = _mm512_castps_pd(a[4 * i + j]), hi = _mm512_castps_pd(a[4 * i + j + 2]);
      b[4 * i + 2 * j] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo, hi));
      b[4 * i + 2 * j + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo, hi));
    }
  // b[4i + j], 128-bit lane L: column 4L + j of rows 4i..4i+3.
  for (int j = 0; j < 4; ++j) {
    const __m512 s0 = _mm512_shuffle_f32x4(b[j], b[4 + j], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 u0 = _mm512_shuffle_f32x4(b[j], b[4 + j], _MM_SHUFFLE(3, 1, 3, 1));
    const __m512 s1 = _mm512_shuffle_f32x4(b[8 + j], b[12 + j], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 u1 = _mm512_shuffle_f32x4(b[8 + j], b[12 + j], _MM_SHUFFLE(3, 1, 3, 1));
    r[j] = _mm512_shuffle_f32x4(s0, s1, _MM_SHUFFLE(2, 0, 2, 0));
    r[8 + j] = _mm512_shuffle_f32x4(s0, s1, _MM_SHUFFLE(3, 1, 3, 1));
    r[4 + j] = _mm512_shuffle_f32x4(u0, u1, _MM_SHUFFLE(2, 0, 2, 0));
    r[12 + j] = _mm512_shuffle_f32x4(u0, u1, _MM_SHUFFLE(3, 1, 3, 1));
  }
}

}  // namespace
}  // namespace hfs::cpu_fast::detail
