// cpu_fast/vec_exp_avx512.h — exp over 16 floats (AVX-512), for kernels compiled for AVX-512: include it
// AFTER HFS_TARGET_AVX512_BEGIN (isa_target.h), so it inherits the target (internal).
//
// Cephes expf: x = n·ln2 + r with |r| ≤ ln2/2 (ln2 split in two for exactness), a degree-6 polynomial
// for e^r, then scalef by 2^n; ≈ 1 ulp over the clamped range [-87.3, 88.7].
#pragma once

#include <immintrin.h>

namespace hfs::cpu_fast::detail {
namespace {

inline __m512 exp512(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.7f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 y = _mm512_set1_ps(1.9875691500e-4f);
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.3981999507e-3f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(8.3334519073e-3f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(4.1665795894e-2f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.6666665459e-1f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(5.0000001201e-1f));
  y = _mm512_fmadd_ps(y, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(y, n);
}

}  // namespace
}  // namespace hfs::cpu_fast::detail
