#include <immintrin.h>

#include <cstdint>

#include "backends/cpu_fast/attention_kernels.h"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

namespace hfs::cpu_fast::detail {
namespace {

inline __m256 load8(const void* base, bool f16, int64_t i) {
  if (f16) return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + i)));
  return _mm256_loadu_ps(static_cast<const float*>(base) + i);
}
inline float load1(const void* base, bool f16, int64_t i) {
  return f16 ? _cvtsh_ss(static_cast<const uint16_t*>(base)[i]) : static_cast<const float*>(base)[i];
}
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace

void attn_scores_avx2(const float* q, int g, const void* k, bool f16, int64_t d, const int32_t* slots, int64_t n,
                      float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t base = static_cast<int64_t>(slots[i]) * d;
    for (int j = 0; j < g; ++j) {
      __m256 acc = _mm256_setzero_ps();
      int64_t e = 0;
      for (; e + 8 <= d; e += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + j * d + e), load8(k, f16, base + e), acc);
      float s = hsum(acc);
      for (; e < d; ++e) s += q[j * d + e] * load1(k, f16, base + e);
      out[j * n + i] = s;
    }
  }
}

void attn_accum_avx2(const float* p, int g, const void* v, bool f16, int64_t d, const int32_t* slots, int64_t n,
                     float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t base = static_cast<int64_t>(slots[i]) * d;
    for (int j = 0; j < g; ++j) {
      const float w = p[j * n + i];
      const __m256 wv = _mm256_set1_ps(w);
      int64_t e = 0;
      for (; e + 8 <= d; e += 8)
        _mm256_storeu_ps(out + j * d + e, _mm256_fmadd_ps(wv, load8(v, f16, base + e), _mm256_loadu_ps(out + j * d + e)));
      for (; e < d; ++e) out[j * d + e] += w * load1(v, f16, base + e);
    }
  }
}

}  // namespace hfs::cpu_fast::detail

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
