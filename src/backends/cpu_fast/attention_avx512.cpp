#include <immintrin.h>

#include <cstdint>

#include "backends/cpu_fast/attention.h"
#include "backends/cpu_fast/attention_kernels.h"

#pragma GCC push_options
// GCC 12 flags the deliberately undefined lanes of _mm512_undefined_* inside its own headers.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")

namespace hfs::cpu_fast::detail {
namespace {

inline __m512 load16(const void* base, bool f16, int64_t i, __mmask16 mk) {
  if (f16) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mk, static_cast<const uint16_t*>(base) + i));
  return _mm512_maskz_loadu_ps(mk, static_cast<const float*>(base) + i);
}
inline __mmask16 tail_mask(int64_t left) { return left >= 16 ? 0xffff : static_cast<__mmask16>((1u << left) - 1); }

}  // namespace

void attn_scores_avx512(const float* q, int g, const void* k, bool f16, int64_t d, const int32_t* slots, int64_t n,
                        float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t base = static_cast<int64_t>(slots[i]) * d;
    if (i + 1 < n) _mm_prefetch(reinterpret_cast<const char*>(k) + slots[i + 1] * d * (f16 ? 2 : 4), _MM_HINT_T0);
    for (int j = 0; j < g; ++j) {
      __m512 acc = _mm512_setzero_ps();
      for (int64_t e = 0; e < d; e += 16) {
        const __mmask16 mk = tail_mask(d - e);
        acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mk, q + j * d + e), load16(k, f16, base + e, mk), acc);
      }
      out[j * n + i] = _mm512_reduce_add_ps(acc);
    }
  }
}

void attn_accum_avx512(const float* p, int g, const void* v, bool f16, int64_t d, const int32_t* slots, int64_t n,
                       float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t base = static_cast<int64_t>(slots[i]) * d;
    for (int64_t e = 0; e < d; e += 16) {
      const __mmask16 mk = tail_mask(d - e);
      const __m512 vv = load16(v, f16, base + e, mk);
      for (int j = 0; j < g; ++j) {
        float* o = out + j * d + e;
        _mm512_mask_storeu_ps(o, mk, _mm512_fmadd_ps(_mm512_set1_ps(p[j * n + i]), vv, _mm512_maskz_loadu_ps(mk, o)));
      }
    }
  }
}

int64_t live_slots_avx512(const float* mask, int64_t t, int64_t s, int32_t* slots) {
  int64_t n = 0;
  const __m512 thr = _mm512_set1_ps(kHiddenThreshold);
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (int64_t j = 0; j < s; j += 16) {
    const __mmask16 mk = tail_mask(s - j);
    __mmask16 any = 0;
    for (int64_t r = 0; r < t; ++r)
      any |= _mm512_mask_cmp_ps_mask(mk, _mm512_maskz_loadu_ps(mk, mask + r * s + j), thr, _CMP_GT_OQ);
    if (any == 0) continue;
    _mm512_mask_compressstoreu_epi32(slots + n, any, _mm512_add_epi32(iota, _mm512_set1_epi32(static_cast<int32_t>(j))));
    n += __builtin_popcount(any);
  }
  return n;
}

}  // namespace hfs::cpu_fast::detail

#pragma GCC pop_options
