// AVX2+FMA+F16C attention kernels (CPUs without AVX-512). The AVX-512 file's decode structure on 8-lane
// vectors and 16 registers: scores for blocks of 8 slots reduced by one add tree (no horizontal sum per
// score), V accumulation with a head's whole output row in registers, and a vector softmax.
#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "backends/cpu_fast/attention.h"
#include "backends/cpu_fast/attention_kernels.h"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

#include "backends/cpu_fast/vec_exp_avx2.h"

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

// Decode streams a kv head's K and V rows once per step: prefetch them this many slots ahead, as the
// AVX-512 kernels do.
constexpr int64_t kSlotsAhead = 32;
inline void prefetch_row(const void* base, int64_t row_bytes, int32_t slot) {
  const char* row = static_cast<const char*>(base) + static_cast<int64_t>(slot) * row_bytes;
  for (int64_t off = 0; off < row_bytes; off += 64) _mm_prefetch(row + off, _MM_HINT_T0);
}

// Sums of 8 vectors → one vector (lane i = Σ a[i]): hadd tree, then the two 128-bit halves.
inline __m256 reduce8(const __m256 a[8]) {
  const __m256 t0 = _mm256_hadd_ps(a[0], a[1]), t1 = _mm256_hadd_ps(a[2], a[3]);
  const __m256 t2 = _mm256_hadd_ps(a[4], a[5]), t3 = _mm256_hadd_ps(a[6], a[7]);
  const __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
  return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

// One head × 8 slots, D = 8·ND: 8 accumulators, each K vector loaded once and used at once.
template <int ND>
inline __m256 scores_block8(const float* q, const void* k, bool f16, const int32_t* slots) {
  constexpr int64_t d = 8 * ND;
  __m256 acc[8];
  for (int s = 0; s < 8; ++s) acc[s] = _mm256_setzero_ps();
  for (int e = 0; e < ND; ++e) {
    const __m256 qv = _mm256_loadu_ps(q + 8 * e);
    for (int s = 0; s < 8; ++s) acc[s] = _mm256_fmadd_ps(qv, load8(k, f16, static_cast<int64_t>(slots[s]) * d + 8 * e), acc[s]);
  }
  return reduce8(acc);
}

template <int ND>
void scores_nd(const float* q, int g, const void* k, bool f16, const int32_t* slots, int64_t n, float* out) {
  constexpr int64_t d = 8 * ND;
  const int64_t row_bytes = d * (f16 ? 2 : 4);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    if (i + kSlotsAhead + 8 <= n)
      for (int s = 0; s < 8; ++s) prefetch_row(k, row_bytes, slots[i + kSlotsAhead + s]);
    for (int j = 0; j < g; ++j) _mm256_storeu_ps(out + j * n + i, scores_block8<ND>(q + j * d, k, f16, slots + i));
  }
  for (; i < n; ++i) {
    const int64_t base = static_cast<int64_t>(slots[i]) * d;
    for (int j = 0; j < g; ++j) {
      __m256 acc = _mm256_setzero_ps();
      for (int e = 0; e < ND; ++e) acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + j * d + 8 * e), load8(k, f16, base + 8 * e), acc);
      out[j * n + i] = hsum(acc);
    }
  }
}

// One head's D = 8·ND output floats stay in registers across all slots (ND ≤ 8 leaves room for the
// weight and the V vector); a V row is loaded once per head, from L1 after the first.
template <int ND>
void accum_nd(const float* p, int g, const void* v, bool f16, const int32_t* slots, int64_t n, float* out) {
  constexpr int64_t d = 8 * ND;
  const int64_t row_bytes = d * (f16 ? 2 : 4);
  for (int j = 0; j < g; ++j) {
    __m256 acc[ND];
    for (int e = 0; e < ND; ++e) acc[e] = _mm256_loadu_ps(out + j * d + 8 * e);
    const float* pj = p + j * n;
    for (int64_t i = 0; i < n; ++i) {
      if (j == 0 && i + kSlotsAhead < n) prefetch_row(v, row_bytes, slots[i + kSlotsAhead]);
      const int64_t base = static_cast<int64_t>(slots[i]) * d;
      const __m256 w = _mm256_set1_ps(pj[i]);
      for (int e = 0; e < ND; ++e) acc[e] = _mm256_fmadd_ps(w, load8(v, f16, base + 8 * e), acc[e]);
    }
    for (int e = 0; e < ND; ++e) _mm256_storeu_ps(out + j * d + 8 * e, acc[e]);
  }
}

// exp(x) for x ≤ 0 (scores minus their max); below -87.3 it returns 0, which is what a hidden slot
// must contribute.
inline __m256 exp_nonpositive(__m256 x) {
  const __m256 keep = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_GE_OQ);
  return _mm256_and_ps(keep, exp256(x));
}

}  // namespace

void attn_scores_avx2(const float* q, int g, const void* k, bool f16, int64_t d, const int32_t* slots, int64_t n,
                      float* out) {
  switch (d) {
    case 32: return scores_nd<4>(q, g, k, f16, slots, n, out);
    case 64: return scores_nd<8>(q, g, k, f16, slots, n, out);
    case 128: return scores_nd<16>(q, g, k, f16, slots, n, out);
    case 256: return scores_nd<32>(q, g, k, f16, slots, n, out);
    default: break;
  }
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
  switch (d) {
    case 32: return accum_nd<4>(p, g, v, f16, slots, n, out);
    case 64: return accum_nd<8>(p, g, v, f16, slots, n, out);
    case 128:  // two halves of 64, each with its accumulators in registers
      for (int j = 0; j < g; ++j) {
        // Half h of head j is a "head" of 64 floats at out + j·128 + 64h, reading V at the same offset.
        for (int h = 0; h < 2; ++h) {
          __m256 acc[8];
          float* o = out + j * 128 + 64 * h;
          for (int e = 0; e < 8; ++e) acc[e] = _mm256_loadu_ps(o + 8 * e);
          for (int64_t i = 0; i < n; ++i) {
            const int64_t base = static_cast<int64_t>(slots[i]) * 128 + 64 * h;
            const __m256 w = _mm256_set1_ps(p[j * n + i]);
            for (int e = 0; e < 8; ++e) acc[e] = _mm256_fmadd_ps(w, load8(v, f16, base + 8 * e), acc[e]);
          }
          for (int e = 0; e < 8; ++e) _mm256_storeu_ps(o + 8 * e, acc[e]);
        }
      }
      return;
    default: break;
  }
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

float attn_softmax_avx2(float* s, int64_t n, const float* mask, const int32_t* slots, float scale, float* max) {
  const __m256 sc = _mm256_set1_ps(scale);
  __m256 m = _mm256_set1_ps(-INFINITY);
  // Live slots are ascending and distinct, so first..last spanning n entries means a contiguous run
  // (every prefill and most decode steps): plain loads instead of a gather.
  const bool contiguous = n > 0 && slots[n - 1] - slots[0] == n - 1;
  const float* mrun = n > 0 ? mask + slots[0] : mask;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 mv = contiguous ? _mm256_loadu_ps(mrun + i)
                                 : _mm256_i32gather_ps(mask, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(slots + i)), 4);
    const __m256 v = _mm256_fmadd_ps(_mm256_loadu_ps(s + i), sc, mv);
    _mm256_storeu_ps(s + i, v);
    m = _mm256_max_ps(m, v);
  }
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  float mx = _mm_cvtss_f32(_mm_max_ss(m4, _mm_movehdup_ps(m4)));
  for (; i < n; ++i) {  // the tail with the vector loop's operation (one fma)
    s[i] = std::fma(s[i], scale, mask[slots[i]]);
    mx = s[i] > mx ? s[i] : mx;
  }
  *max = mx;
  if (mx <= kHiddenThreshold) return 0.0f;  // the caller discards the range
  const __m256 mxv = _mm256_set1_ps(mx);
  __m256 sum = _mm256_setzero_ps();
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(s + i), mxv));
    _mm256_storeu_ps(s + i, e);
    sum = _mm256_add_ps(sum, e);
  }
  if (i < n) {
    const __m256i mk = tail_mask8(n - i);
    const __m256 e = _mm256_and_ps(_mm256_castsi256_ps(mk),
                                   exp_nonpositive(_mm256_sub_ps(_mm256_maskload_ps(s + i, mk), mxv)));
    _mm256_maskstore_ps(s + i, mk, e);
    sum = _mm256_add_ps(sum, e);
  }
  return hsum(sum);
}

int64_t live_slots_avx2(const float* mask, int64_t t, int64_t s, int32_t* slots) {
  int64_t n = 0;
  const __m256 thr = _mm256_set1_ps(kHiddenThreshold);
  int64_t j = 0;
  for (; j + 8 <= s; j += 8) {
    int any = 0;
    for (int64_t r = 0; r < t && any != 0xff; ++r)
      any |= _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(mask + r * s + j), thr, _CMP_GT_OQ));
    for (; any != 0; any &= any - 1) slots[n++] = static_cast<int32_t>(j + __builtin_ctz(static_cast<unsigned>(any)));
  }
  for (; j < s; ++j) {
    bool live = false;
    for (int64_t r = 0; r < t && !live; ++r) live = mask[r * s + j] > kHiddenThreshold;
    if (live) slots[n++] = static_cast<int32_t>(j);
  }
  return n;
}

}  // namespace hfs::cpu_fast::detail

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
