#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "backends/cpu_fast/attention.h"
#include "backends/cpu_fast/attention_kernels.h"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
// GCC 12 flags the deliberately undefined lanes of _mm512_undefined_* inside its own headers.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")
#endif

#include "backends/cpu_fast/avx512_mask.h"
#include "backends/cpu_fast/vec_exp_avx512.h"

namespace hfs::cpu_fast::detail {
namespace {

inline __m512 load16(const void* base, bool f16, int64_t i, __mmask16 mk) {
  if (f16) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mk, static_cast<const uint16_t*>(base) + i));
  return _mm512_maskz_loadu_ps(mk, static_cast<const float*>(base) + i);
}

}  // namespace

namespace {

inline __m512 load_row(const void* base, bool f16, int64_t i) {
  if (f16) return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(base) + i)));
  return _mm512_loadu_ps(static_cast<const float*>(base) + i);
}

// Decode streams a kv head's K and V rows once per step; like the weight GEMVs (linear_avx512.cpp) a core
// keeps more of that stream in flight when it prefetches the rows this many slots ahead.
constexpr int64_t kSlotsAhead = 32;
template <int ND>
inline void prefetch_rows(const void* base, bool f16, const int32_t* slots, int count) {
  const int64_t row_bytes = 16 * ND * (f16 ? 2 : 4);
  for (int s = 0; s < count; ++s) {
    const char* row = static_cast<const char*>(base) + static_cast<int64_t>(slots[s]) * row_bytes;
    for (int64_t off = 0; off < row_bytes; off += 64) _mm_prefetch(row + off, _MM_HINT_T0);
  }
}

// Heads per pass so that HB·ND query (or accumulator) vectors plus ND K/V vectors fit the 32 registers.
template <int ND>
constexpr int heads_per_pass() { return ND <= 4 ? 4 : ND <= 8 ? 2 : 1; }

// Sums of 8 vectors → one 8-float vector (lane i = Σ a[i]): a transposing add tree of 24 shuffles/adds,
// 3 per sum, where _mm512_reduce_add_ps costs ~8 per sum.
inline __m256 reduce8(const __m512 a[8]) {
  __m512 b[4];
  for (int k = 0; k < 4; ++k)  // per 128-bit lane: (x, y, x, y) partials of a[2k] and a[2k+1]
    b[k] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * k], a[2 * k + 1]), _mm512_unpackhi_ps(a[2 * k], a[2 * k + 1]));
  __m512 c[2];
  for (int j = 0; j < 2; ++j) {  // per 128-bit lane: partials of a[4j..4j+3]
    const __m512d lo = _mm512_unpacklo_pd(_mm512_castps_pd(b[2 * j]), _mm512_castps_pd(b[2 * j + 1]));
    const __m512d hi = _mm512_unpackhi_pd(_mm512_castps_pd(b[2 * j]), _mm512_castps_pd(b[2 * j + 1]));
    c[j] = _mm512_add_ps(_mm512_castpd_ps(lo), _mm512_castpd_ps(hi));  // moved as pairs, added as floats
  }
  // 128-bit lanes: [c0.L0+c0.L1, c0.L2+c0.L3, c1.L0+c1.L1, c1.L2+c1.L3], then the two halves of each.
  const __m512 d = _mm512_add_ps(_mm512_shuffle_f32x4(c[0], c[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_f32x4(c[0], c[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512 e = _mm512_add_ps(_mm512_shuffle_f32x4(d, d, _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_f32x4(d, d, _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm512_castps512_ps256(e);
}

// HB heads × 8 slots: each K vector is loaded once for the HB heads, each head's q vector once for the 8
// slots, and the 8·HB dot products are reduced by the add tree (HB·8 accumulators + 8 K vectors fit
// the 32 registers for HB ≤ 2).
template <int ND, int HB>
inline void scores_block8(const float* q, const void* k, bool f16, const int32_t* slots, int64_t n, float* out) {
  constexpr int64_t d = 16 * ND;
  __m512 acc[HB][8];
  for (int h = 0; h < HB; ++h)
    for (int s = 0; s < 8; ++s) acc[h][s] = _mm512_setzero_ps();
  for (int e = 0; e < ND; ++e) {
    __m512 kv[8];
    for (int s = 0; s < 8; ++s) kv[s] = load_row(k, f16, static_cast<int64_t>(slots[s]) * d + 16 * e);
    for (int h = 0; h < HB; ++h) {
      const __m512 qv = _mm512_loadu_ps(q + h * d + 16 * e);
      for (int s = 0; s < 8; ++s) acc[h][s] = _mm512_fmadd_ps(qv, kv[s], acc[h][s]);
    }
  }
  for (int h = 0; h < HB; ++h) _mm256_storeu_ps(out + h * n, reduce8(acc[h]));
}

// D = 16·ND: blocks of 8 slots for pairs of heads; the last < 8 slots one at a time.
template <int ND>
void scores_nd(const float* q, int g, const void* k, bool f16, const int32_t* slots, int64_t n, float* out) {
  constexpr int64_t d = 16 * ND;
  for (int j0 = 0; j0 < g; j0 += 2) {
    const int hb = g - j0 < 2 ? 1 : 2;
    const float* qj = q + j0 * d;
    float* oj = out + j0 * n;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      if (i + kSlotsAhead + 8 <= n) prefetch_rows<ND>(k, f16, slots + i + kSlotsAhead, 8);
      if (hb == 2)
        scores_block8<ND, 2>(qj, k, f16, slots + i, n, oj + i);
      else
        scores_block8<ND, 1>(qj, k, f16, slots + i, n, oj + i);
    }
    for (; i < n; ++i) {
      const int64_t base = static_cast<int64_t>(slots[i]) * d;
      for (int h = 0; h < hb; ++h) {
        __m512 acc = _mm512_setzero_ps();
        for (int e = 0; e < ND; ++e) acc = _mm512_fmadd_ps(_mm512_loadu_ps(qj + h * d + 16 * e), load_row(k, f16, base + 16 * e), acc);
        oj[h * n + i] = _mm512_reduce_add_ps(acc);
      }
    }
  }
}

// Accumulators for HB heads × D stay in registers across all slots; each V row is loaded once per pass.
template <int ND>
void accum_nd(const float* p, int g, const void* v, bool f16, const int32_t* slots, int64_t n, float* out) {
  constexpr int HB = heads_per_pass<ND>();
  constexpr int64_t d = 16 * ND;
  for (int j0 = 0; j0 < g; j0 += HB) {
    const int hb = g - j0 < HB ? g - j0 : HB;
    __m512 acc[HB][ND];
    for (int h = 0; h < HB; ++h)
      for (int e = 0; e < ND; ++e) acc[h][e] = h < hb ? _mm512_loadu_ps(out + (j0 + h) * d + 16 * e) : _mm512_setzero_ps();
    for (int64_t i = 0; i < n; ++i) {
      if (i + kSlotsAhead < n) prefetch_rows<ND>(v, f16, slots + i + kSlotsAhead, 1);
      const int64_t base = static_cast<int64_t>(slots[i]) * d;
      __m512 vv[ND];
      for (int e = 0; e < ND; ++e) vv[e] = load_row(v, f16, base + 16 * e);
      for (int h = 0; h < HB; ++h) {
        if (h >= hb) break;
        const __m512 w = _mm512_set1_ps(p[(j0 + h) * n + i]);
        for (int e = 0; e < ND; ++e) acc[h][e] = _mm512_fmadd_ps(w, vv[e], acc[h][e]);
      }
    }
    for (int h = 0; h < hb; ++h)
      for (int e = 0; e < ND; ++e) _mm512_storeu_ps(out + (j0 + h) * d + 16 * e, acc[h][e]);
  }
}

// exp(x) for x ≤ 0 (scores minus their max); below -87.3 (where expf is denormal or 0) it returns 0,
// which is what a hidden slot must contribute.
inline __m512 exp_nonpositive(__m512 x) {
  const __mmask16 tiny = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.3f), _CMP_LT_OQ);
  return _mm512_maskz_mov_ps(static_cast<__mmask16>(~tiny), exp512(x));
}

}  // namespace

void attn_scores_avx512(const float* q, int g, const void* k, bool f16, int64_t d, const int32_t* slots, int64_t n,
                        float* out) {
  switch (d) {
    case 64: return scores_nd<4>(q, g, k, f16, slots, n, out);
    case 128: return scores_nd<8>(q, g, k, f16, slots, n, out);
    case 256: return scores_nd<16>(q, g, k, f16, slots, n, out);
    default: break;
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t base = static_cast<int64_t>(slots[i]) * d;
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
  switch (d) {
    case 64: return accum_nd<4>(p, g, v, f16, slots, n, out);
    case 128: return accum_nd<8>(p, g, v, f16, slots, n, out);
    case 256: return accum_nd<16>(p, g, v, f16, slots, n, out);
    default: break;
  }
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

float attn_softmax_avx512(float* s, int64_t n, const float* mask, const int32_t* slots, float scale, float* max) {
  const __m512 sc = _mm512_set1_ps(scale);
  __m512 m = _mm512_set1_ps(-INFINITY);
  // Live slots are ascending and distinct, so first..last spanning n entries means a contiguous run
  // (every prefill and most decode steps): plain loads instead of a gather.
  const bool contiguous = n > 0 && slots[n - 1] - slots[0] == n - 1;
  const float* mrun = n > 0 ? mask + slots[0] : mask;
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 mk = tail_mask(n - i);
    const __m512 mv = contiguous ? _mm512_maskz_loadu_ps(mk, mrun + i)
                                 : _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mk, _mm512_maskz_loadu_epi32(mk, slots + i),
                                                            mask, 4);
    const __m512 v = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mk, s + i), sc, mv);
    _mm512_mask_storeu_ps(s + i, mk, v);
    m = _mm512_mask_max_ps(m, mk, m, v);
  }
  const float mx = _mm512_reduce_max_ps(m);
  *max = mx;
  if (mx <= kHiddenThreshold) return 0.0f;  // the caller discards the range
  const __m512 mxv = _mm512_set1_ps(mx);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 mk = tail_mask(n - i);
    const __m512 e = exp_nonpositive(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, s + i), mxv));
    _mm512_mask_storeu_ps(s + i, mk, e);
    sum = _mm512_mask_add_ps(sum, mk, sum, e);
  }
  return _mm512_reduce_add_ps(sum);
}

namespace {

// V rows of `n` slots accumulated into HB lanes' outputs at once: acc[h] (ND vectors = one head's D)
// += p[slot][lane] · V[slot]; each V row is loaded and widened once per pass of HB lanes.
template <int ND, int HB>
void block_accum(const AttnBlock& b, const float* p, int l0, int hb, const float* inv) {
  constexpr int64_t d = 16 * ND;
  __m512 acc[HB][ND];
  for (int h = 0; h < HB; ++h)
    for (int e = 0; e < ND; ++e) acc[h][e] = _mm512_setzero_ps();
  for (int64_t i = 0; i < b.n; ++i) {
    const int64_t base = static_cast<int64_t>(b.slots[i]) * d;
    __m512 vv[ND];
    for (int e = 0; e < ND; ++e) vv[e] = load_row(b.v, b.f16, base + 16 * e);
    const float* pi = p + i * 16 + l0;
    for (int h = 0; h < HB; ++h) {
      if (h >= hb) break;
      const __m512 w = _mm512_set1_ps(pi[h]);
      for (int e = 0; e < ND; ++e) acc[h][e] = _mm512_fmadd_ps(w, vv[e], acc[h][e]);
    }
  }
  for (int h = 0; h < hb; ++h) {
    const int l = l0 + h, r = l / b.g, j = l % b.g;
    float* o = b.out + r * b.out_stride + j * d;
    const __m512 s = _mm512_set1_ps(inv[l]);
    for (int e = 0; e < ND; ++e) _mm512_storeu_ps(o + 16 * e, _mm512_mul_ps(acc[h][e], s));
  }
}

template <int ND>
void attn_block_nd(const AttnBlock& b) {
  constexpr int64_t d = 16 * ND;
  const int lanes = b.rows * b.g;
  float* sc = b.scratch;             // [n][16]: scores, then probabilities, of every lane per slot
  float* qt = sc + 16 * b.n;         // [d][16]: the lanes' query vectors, transposed
  float* kbuf = qt + 16 * d;         // [8][d]: f16 K rows widened
  alignas(64) int32_t lane_row[16];
  for (int l = 0; l < 16; ++l) lane_row[l] = l < lanes ? l / b.g : 0;
  for (int64_t e = 0; e < d; ++e)
    for (int l = 0; l < 16; ++l)
      qt[e * 16 + l] = l < lanes ? b.q[(l / b.g) * b.q_stride + (l % b.g) * d + e] : 0.0f;
  // Mask of slot s for every lane: mask[row(lane)][s], one gather per slot.
  const __m512i mask_idx = _mm512_mullo_epi32(_mm512_load_si512(lane_row), _mm512_set1_epi32(static_cast<int32_t>(b.mask_stride)));
  const __m512 scale = _mm512_set1_ps(b.scale);
  __m512 vmax = _mm512_set1_ps(-INFINITY);
  auto finish = [&](int64_t i, __m512 acc) {
    const __m512 m = _mm512_i32gather_ps(mask_idx, b.mask + b.slots[i], 4);
    const __m512 s = _mm512_fmadd_ps(acc, scale, m);
    _mm512_store_ps(sc + i * 16, s);
    vmax = _mm512_max_ps(vmax, s);
  };
  int64_t i = 0;
  for (; i + 8 <= b.n; i += 8) {
    const float* kr[8];
    for (int s = 0; s < 8; ++s) {
      const int64_t base = static_cast<int64_t>(b.slots[i + s]) * d;
      if (b.f16) {
        for (int e = 0; e < ND; ++e) _mm512_store_ps(kbuf + s * d + 16 * e, load_row(b.k, true, base + 16 * e));
        kr[s] = kbuf + s * d;
      } else {
        kr[s] = static_cast<const float*>(b.k) + base;
      }
    }
    __m512 acc[8];
    for (int s = 0; s < 8; ++s) acc[s] = _mm512_setzero_ps();
    for (int64_t e = 0; e < d; ++e) {
      const __m512 qv = _mm512_load_ps(qt + e * 16);
      for (int s = 0; s < 8; ++s) acc[s] = _mm512_fmadd_ps(_mm512_set1_ps(kr[s][e]), qv, acc[s]);
    }
    for (int s = 0; s < 8; ++s) finish(i + s, acc[s]);
  }
  for (; i < b.n; ++i) {
    const int64_t base = static_cast<int64_t>(b.slots[i]) * d;
    for (int e = 0; e < ND; ++e) _mm512_store_ps(kbuf + 16 * e, load_row(b.k, b.f16, base + 16 * e));
    __m512 acc = _mm512_setzero_ps();
    for (int64_t e = 0; e < d; ++e) acc = _mm512_fmadd_ps(_mm512_set1_ps(kbuf[e]), _mm512_load_ps(qt + e * 16), acc);
    finish(i, acc);
  }
  // A lane whose row sees nothing here keeps max ≤ the hidden threshold: use 0 so its exps are 0, not 1
  // (the caller replaces that row's output).
  const __mmask16 seen = _mm512_cmp_ps_mask(vmax, _mm512_set1_ps(kHiddenThreshold), _CMP_GT_OQ);
  vmax = _mm512_maskz_mov_ps(seen, vmax);
  __m512 vsum = _mm512_setzero_ps();
  for (int64_t j = 0; j < b.n; ++j) {
    const __m512 p = exp_nonpositive(_mm512_sub_ps(_mm512_load_ps(sc + j * 16), vmax));
    _mm512_store_ps(sc + j * 16, p);
    vsum = _mm512_add_ps(vsum, p);
  }
  alignas(64) float inv[16];
  _mm512_store_ps(inv, _mm512_maskz_div_ps(seen, _mm512_set1_ps(1.0f), vsum));
  constexpr int HB = ND <= 4 ? 24 / ND : ND <= 6 ? 3 : ND <= 8 ? 2 : 1;  // HB·ND + ND registers ≤ 32
  for (int l0 = 0; l0 < lanes; l0 += HB) block_accum<ND, HB>(b, sc, l0, std::min(HB, lanes - l0), inv);
}

}  // namespace

void attn_block_avx512(const AttnBlock& b) {
  switch (b.d / 16) {
    case 1: return attn_block_nd<1>(b);
    case 2: return attn_block_nd<2>(b);
    case 3: return attn_block_nd<3>(b);
    case 4: return attn_block_nd<4>(b);
    case 5: return attn_block_nd<5>(b);
    case 6: return attn_block_nd<6>(b);
    case 7: return attn_block_nd<7>(b);
    case 8: return attn_block_nd<8>(b);
    case 12: return attn_block_nd<12>(b);
    case 16: return attn_block_nd<16>(b);
    default: break;  // attention() only calls with the widths above (attn_block_supports)
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

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
