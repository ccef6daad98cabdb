// AVX2+FMA+F16C elementwise kernels, the AVX-512 file's loops on 8 lanes (CPUs without AVX-512, such as
// Zen 2/3 and Intel client cores). silu·up is the one that matters: with scalar expf it ran over [T, I]
// once per MLP and cost more than the attention of a prefill chunk.
#if defined(__x86_64__)  // x86 kernels only: elsewhere the scalar path runs (cpu_features.h)
#include <immintrin.h>

#include <cstdint>

#include "backends/cpu_fast/elementwise.h"
#include "backends/cpu_fast/isa_target.h"

HFS_TARGET_AVX2_BEGIN

#include "backends/cpu_fast/vec_exp_avx2.h"

namespace hfs::cpu_fast::detail {

namespace {
inline __m256 silu_mul8(__m256 g, __m256 u) {
  const __m256 s = _mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), exp256(_mm256_sub_ps(_mm256_setzero_ps(), g))));
  return _mm256_mul_ps(s, u);
}
}  // namespace

// Full vectors with plain stores: masked stores are microcoded on AMD cores (tens of cycles each), so
// only the tail takes one. The same in the loops below.
void silu_mul_avx2(const float* gate, const float* up, int64_t n, float* y) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, silu_mul8(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
  if (i < n) {
    const __m256i mk = tail_mask8(n - i);
    _mm256_maskstore_ps(y + i, mk, silu_mul8(_mm256_maskload_ps(gate + i, mk), _mm256_maskload_ps(up + i, mk)));
  }
}

void rms_norm_avx2(const float* x, const float* w, int64_t rows, int64_t d, float eps, bool unit_offset, float* y) {
  const __m256 one = _mm256_set1_ps(1.0f);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * d;
    float* yr = y + r * d;
    // Σx² in double, like the portable path (4 double lanes per half vector).
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    for (int64_t i = 0; i < d; i += 8) {
      const __m256 v = _mm256_maskload_ps(xr + i, tail_mask8(d - i));
      const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v)), hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
      s0 = _mm256_fmadd_pd(lo, lo, s0);
      s1 = _mm256_fmadd_pd(hi, hi, s1);
    }
    const __m256d s = _mm256_add_pd(s0, s1);
    const __m128d h = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
    const double ss = _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
    const __m256 inv = _mm256_set1_ps(static_cast<float>(1.0 / __builtin_sqrt(ss / static_cast<double>(d) + eps)));
    // (x · inv) · w, the portable path's order.
    int64_t i = 0;
    for (; i + 8 <= d; i += 8) {
      __m256 wv = _mm256_loadu_ps(w + i);
      if (unit_offset) wv = _mm256_add_ps(one, wv);
      _mm256_storeu_ps(yr + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(xr + i), inv), wv));
    }
    if (i < d) {
      const __m256i mk = tail_mask8(d - i);
      __m256 wv = _mm256_maskload_ps(w + i, mk);
      if (unit_offset) wv = _mm256_add_ps(one, wv);
      _mm256_maskstore_ps(yr + i, mk, _mm256_mul_ps(_mm256_mul_ps(_mm256_maskload_ps(xr + i, mk), inv), wv));
    }
  }
}

void rope_apply_avx2(const float* x, const float* cs, int64_t t, int64_t h, int64_t d, int64_t r, float* y) {
  const int64_t half = r / 2;
  for (int64_t ti = 0; ti < t; ++ti) {
    const float* c = cs + ti * r;  // [cos × half, sin × half]
    const float* sn = c + half;
    for (int64_t hi = 0; hi < h; ++hi) {
      const float* xr = x + (ti * h + hi) * d;
      float* yr = y + (ti * h + hi) * d;
      int64_t i = 0;
      for (; i + 8 <= half; i += 8) {
        const __m256 x1 = _mm256_loadu_ps(xr + i), x2 = _mm256_loadu_ps(xr + half + i);
        const __m256 cv = _mm256_loadu_ps(c + i), sv = _mm256_loadu_ps(sn + i);
        // x1·c − x2·s and x2·c + x1·s, each product rounded before the add as in the portable path.
        _mm256_storeu_ps(yr + i, _mm256_sub_ps(_mm256_mul_ps(x1, cv), _mm256_mul_ps(x2, sv)));
        _mm256_storeu_ps(yr + half + i, _mm256_add_ps(_mm256_mul_ps(x2, cv), _mm256_mul_ps(x1, sv)));
      }
      for (; i < half; ++i) {
        const float x1 = xr[i], x2 = xr[i + half];
        yr[i] = x1 * c[i] - x2 * sn[i];
        yr[i + half] = x2 * c[i] + x1 * sn[i];
      }
      for (i = r; i < d; ++i) yr[i] = xr[i];
    }
  }
}

void f32_to_f16_avx2(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(src + i);
    __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    // The hardware keeps a NaN's payload; the portable conversion returns the canonical quiet NaN.
    const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    if (_mm256_movemask_ps(nan) != 0) {
      alignas(16) uint16_t lanes[8];
      _mm_store_si128(reinterpret_cast<__m128i*>(lanes), h);
      const int bits = _mm256_movemask_ps(nan);
      for (int j = 0; j < 8; ++j) {
        uint32_t u;
        __builtin_memcpy(&u, src + i + j, 4);
        if (bits >> j & 1) lanes[j] = static_cast<uint16_t>((u >> 16 & 0x8000u) | 0x7E00u);
      }
      h = _mm_load_si128(reinterpret_cast<const __m128i*>(lanes));
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  if (i < n) {  // the tail through a zero-padded vector: same conversion, same NaN rule
    alignas(32) float in[8] = {};
    alignas(16) uint16_t out[8];
    __builtin_memcpy(in, src + i, static_cast<size_t>(n - i) * sizeof(float));
    f32_to_f16_avx2(in, out, 8);
    for (int64_t j = i; j < n; ++j) dst[j] = out[j - i];
  }
}

}  // namespace hfs::cpu_fast::detail

HFS_TARGET_END

#endif  // defined(__x86_64__)
