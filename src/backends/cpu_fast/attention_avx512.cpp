#if defined(__x86_64__)  // x86 kernels only: elsewhere the scalar path runs (cpu_features.h)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backends/cpu_fast/attention.h"
#include "backends/cpu_fast/attention_kernels.h"
#include "backends/cpu_fast/isa_target.h"

HFS_TARGET_AVX512_BEGIN

#include "backends/cpu_fast/avx512_mask.h"
#include "backends/cpu_fast/avx512_transpose.h"
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

// Kernels take the head count of a pass and the cache's element type as template parameters, so that their
// accumulators stay in registers and no branch sits in the inner loop: f(integral_constant<int, hb>) for
// hb = 1..kPassHeads, and f(true_type) for an f16 cache, f(false_type) for f32. kPassHeads: the most heads
// one pass of the scores (beside the 16 transposed K vectors) or of P·V keeps in registers.
constexpr int kPassHeads = 8;
template <typename F>
inline void with_heads(int hb, F&& f) {
  static_assert(kPassHeads == 8, "with_heads has a case for each head count up to kPassHeads");
  switch (hb) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 5: return f(std::integral_constant<int, 5>{});
    case 6: return f(std::integral_constant<int, 6>{});
    case 7: return f(std::integral_constant<int, 7>{});
    default: return f(std::integral_constant<int, 8>{});
  }
}
// f(j0, hb) for the passes over g heads: heads [j0, j0 + hb), hb ≤ kPassHeads as an integral_constant.
template <typename F>
inline void each_pass(int g, F&& f) {
  for (int j0 = 0; j0 < g; j0 += kPassHeads) with_heads(std::min(kPassHeads, g - j0), [&](auto hb) { f(j0, hb); });
}
template <typename F>
inline void with_f16(bool f16, F&& f) {
  if (f16)
    f(std::true_type{});
  else
    f(std::false_type{});
}

// The D = 16·ND floats of the row at element `base` of a K/V cache, widened to f32 into dst (aligned).
template <int ND>
inline void widen_row(const void* cache, bool f16, int64_t base, float* dst) {
  for (int e = 0; e < ND; ++e) _mm512_store_ps(dst + 16 * e, load_row(cache, f16, base + 16 * e));
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


// HB heads' scores of the block of m ≤ 16 slots at slots[0, m): out row h at out + h·n.
template <int ND, int HB, bool F16>
inline void scores_block16(const float* q, const void* k, const int32_t* slots, int m, int64_t n, float* out) {
  constexpr int64_t d = 16 * ND;
  __m512 acc[HB];
#pragma GCC unroll 16
  for (int h = 0; h < HB; ++h) acc[h] = _mm512_setzero_ps();
#pragma GCC unroll 1
  for (int c = 0; c < ND; ++c) {
    __m512 kt[16];
    if (m == 16) {
#pragma GCC unroll 16
      for (int r = 0; r < 16; ++r) kt[r] = load_row(k, F16, static_cast<int64_t>(slots[r]) * d + 16 * c);
    } else {
#pragma GCC unroll 16
      for (int r = 0; r < 16; ++r)
        kt[r] = r < m ? load_row(k, F16, static_cast<int64_t>(slots[r]) * d + 16 * c) : _mm512_setzero_ps();
    }
    transpose16(kt);
    const float* qc = q + 16 * c;
#pragma GCC unroll 16
    for (int e = 0; e < 16; ++e)
#pragma GCC unroll 16
      for (int h = 0; h < HB; ++h) acc[h] = _mm512_fmadd_ps(_mm512_set1_ps(qc[h * d + e]), kt[e], acc[h]);
  }
  const __mmask16 mk = tail_mask(m);
#pragma GCC unroll 16
  for (int h = 0; h < HB; ++h) _mm512_mask_storeu_ps(out + h * n, mk, acc[h]);
}

// The V rows (`then`) are prefetched with the K rows: P·V reads them right after the scores, and one
// stream's prefetch running ahead of the other keeps more of the row's K/V in flight than K's alone.
template <int ND, int HB, bool F16>
void scores_heads(const float* q, const void* k, const void* then, const int32_t* slots, int64_t n, float* out) {
  for (int64_t i = 0; i < n; i += 16) {
    if (i + kSlotsAhead + 16 <= n) {
      prefetch_rows<ND>(k, F16, slots + i + kSlotsAhead, 16);
      if (then != nullptr) prefetch_rows<ND>(then, F16, slots + i + kSlotsAhead, 16);
    }
    scores_block16<ND, HB, F16>(q, k, slots + i, static_cast<int>(std::min<int64_t>(16, n - i)), n, out + i);
  }
}

// D = 16·ND, slots along the lanes: a block of 16 K rows is widened and transposed once (per 16-float
// column chunk) and every head's 16 scores grow by one FMA per dimension with the query element broadcast.
// Each score is then the plain FMA chain q[0]·k[0], + q[1]·k[1], ... over d in order — no horizontal sums —
// the same number whichever lanes (slots, heads or rows) a kernel lays it along.
template <int ND>
void scores_nd(const float* q, int g, const void* k, const void* then, bool f16, const int32_t* slots, int64_t n,
               float* out) {
  constexpr int64_t d = 16 * ND;
  each_pass(g, [&](int j0, auto hb) {
    with_f16(f16, [&](auto h16) {
      // V is prefetched on the first pass only.
      scores_heads<ND, decltype(hb)::value, decltype(h16)::value>(q + j0 * d, k, j0 == 0 ? then : nullptr, slots, n,
                                                                  out + j0 * n);
    });
  });
}

// Any other D (SmolLM-style small heads, D = 8 on stories260K): the same slots-along-the-lanes scores,
// each 16-column chunk of the K rows loaded masked (the last one partial) and transposed, and only the
// chunk's real columns taking an FMA: every score is still the plain chain over D in order.
template <int HB, bool F16>
void scores_any(const float* q, const void* k, int64_t d, const int32_t* slots, int64_t n, float* out) {
  for (int64_t i = 0; i < n; i += 16) {
    const int m = static_cast<int>(std::min<int64_t>(16, n - i));
    __m512 acc[HB];
#pragma GCC unroll 16
    for (int h = 0; h < HB; ++h) acc[h] = _mm512_setzero_ps();
    for (int64_t c0 = 0; c0 < d; c0 += 16) {
      const int ec = static_cast<int>(std::min<int64_t>(16, d - c0));
      const __mmask16 mk = tail_mask(ec);
      __m512 kt[16];
#pragma GCC unroll 16
      for (int r = 0; r < 16; ++r)
        kt[r] = r < m ? load16(k, F16, static_cast<int64_t>(slots[i + r]) * d + c0, mk) : _mm512_setzero_ps();
      transpose16(kt);
#pragma GCC unroll 16
      for (int e = 0; e < 16; ++e) {
        if (e >= ec) break;
#pragma GCC unroll 16
        for (int h = 0; h < HB; ++h) acc[h] = _mm512_fmadd_ps(_mm512_set1_ps(q[h * d + c0 + e]), kt[e], acc[h]);
      }
    }
    const __mmask16 om = tail_mask(m);
#pragma GCC unroll 16
    for (int h = 0; h < HB; ++h) _mm512_mask_storeu_ps(out + h * n + i, om, acc[h]);
  }
}

// Any other D: per 16-column chunk (the last one masked), HB heads' accumulators in registers over all
// slots, each V chunk loaded once for them.
template <int HB, bool F16>
void accum_any(const float* p, const void* v, int64_t d, const int32_t* slots, int64_t n, float* out) {
  for (int64_t c0 = 0; c0 < d; c0 += 16) {
    const __mmask16 mk = tail_mask(d - c0);
    __m512 acc[HB];
#pragma GCC unroll 16
    for (int h = 0; h < HB; ++h) acc[h] = _mm512_maskz_loadu_ps(mk, out + h * d + c0);
    for (int64_t i = 0; i < n; ++i) {
      const __m512 vv = load16(v, F16, static_cast<int64_t>(slots[i]) * d + c0, mk);
#pragma GCC unroll 16
      for (int h = 0; h < HB; ++h) acc[h] = _mm512_fmadd_ps(_mm512_set1_ps(p[h * n + i]), vv, acc[h]);
    }
#pragma GCC unroll 16
    for (int h = 0; h < HB; ++h) _mm512_mask_storeu_ps(out + h * d + c0, mk, acc[h]);
  }
}

// HB heads' sums out_h += Σ_i p[h][i]·V[slots[i]] over the EC column chunks [c0, c0 + EC) of D (p rows n
// apart): the HB × EC accumulators and the HB weights of a slot stay in registers across all slots, and
// each V vector is loaded once for the HB heads.
template <int ND, int HB, int EC, bool F16>
void accum_tile(const float* p, const void* v, const int32_t* slots, int64_t n, int c0, float* out) {
  constexpr int64_t d = 16 * ND;
  __m512 acc[HB][EC];
#pragma GCC unroll 16
  for (int h = 0; h < HB; ++h)
#pragma GCC unroll 16
    for (int e = 0; e < EC; ++e) acc[h][e] = _mm512_loadu_ps(out + h * d + 16 * (c0 + e));
  for (int64_t i = 0; i < n; ++i) {
    if (c0 == 0 && i + kSlotsAhead < n) prefetch_rows<ND>(v, F16, slots + i + kSlotsAhead, 1);  // whole rows, once
    const int64_t base = static_cast<int64_t>(slots[i]) * d + 16 * c0;
    __m512 w[HB];
#pragma GCC unroll 16
    for (int h = 0; h < HB; ++h) w[h] = _mm512_set1_ps(p[h * n + i]);
#pragma GCC unroll 16
    for (int e = 0; e < EC; ++e) {
      const __m512 vv = load_row(v, F16, base + 16 * e);
#pragma GCC unroll 16
      for (int h = 0; h < HB; ++h) acc[h][e] = _mm512_fmadd_ps(w[h], vv, acc[h][e]);
    }
  }
#pragma GCC unroll 16
  for (int h = 0; h < HB; ++h)
#pragma GCC unroll 16
    for (int e = 0; e < EC; ++e) _mm512_storeu_ps(out + h * d + 16 * (c0 + e), acc[h][e]);
}

// Column chunks per pass for HB heads: HB·EC accumulators, HB weights and a V vector within the 32
// registers, EC dividing ND.
template <int ND, int HB>
constexpr int chunks_per_pass() {
  int ec = ND;
  while (HB * ec + HB + 1 > 32 || ND % ec != 0) --ec;
  return ec;
}

// Up to kPassHeads heads per pass over the slots, split into passes over column chunks when their
// accumulators would not fit the registers (Qwen2.5's 7 heads × 64: two passes of 32 columns, each reading
// its own half of every V row).
template <int ND, int HB>
void accum_heads(const float* p, const void* v, bool f16, const int32_t* slots, int64_t n, float* out) {
  constexpr int EC = chunks_per_pass<ND, HB>();
  for (int c0 = 0; c0 < ND; c0 += EC) {
    with_f16(f16, [&](auto h16) { accum_tile<ND, HB, EC, decltype(h16)::value>(p, v, slots, n, c0, out); });
  }
}

template <int ND>
void accum_nd(const float* p, int g, const void* v, bool f16, const int32_t* slots, int64_t n, float* out) {
  constexpr int64_t d = 16 * ND;
  each_pass(g, [&](int j0, auto hb) {
    accum_heads<ND, decltype(hb)::value>(p + j0 * n, v, f16, slots, n, out + j0 * d);
  });
}

// exp(x) for x ≤ 0 (scores minus their max); below -87.3 (where expf is denormal or 0) it returns 0,
// which is what a hidden slot must contribute.
inline __m512 exp_nonpositive(__m512 x) {
  const __mmask16 tiny = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.3f), _CMP_LT_OQ);
  return _mm512_maskz_mov_ps(static_cast<__mmask16>(~tiny), exp512(x));
}

}  // namespace

void attn_scores_avx512(const float* q, int g, const void* k, const void* then, bool f16, int64_t d,
                        const int32_t* slots, int64_t n, float* out) {
  switch (d) {
    case 64: return scores_nd<4>(q, g, k, then, f16, slots, n, out);
    case 128: return scores_nd<8>(q, g, k, then, f16, slots, n, out);
    case 256: return scores_nd<16>(q, g, k, then, f16, slots, n, out);
    default: break;
  }
  each_pass(g, [&](int j0, auto hb) {
    with_f16(f16, [&](auto h16) {
      scores_any<decltype(hb)::value, decltype(h16)::value>(q + j0 * d, k, d, slots, n, out + j0 * n);
    });
  });
}

void attn_accum_avx512(const float* p, int g, const void* v, bool f16, int64_t d, const int32_t* slots, int64_t n,
                       float* out) {
  switch (d) {
    case 64: return accum_nd<4>(p, g, v, f16, slots, n, out);
    case 128: return accum_nd<8>(p, g, v, f16, slots, n, out);
    case 256: return accum_nd<16>(p, g, v, f16, slots, n, out);
    default: break;
  }
  each_pass(g, [&](int j0, auto hb) {
    with_f16(f16, [&](auto h16) {
      accum_any<decltype(hb)::value, decltype(h16)::value>(p + j0 * n, v, d, slots, n, out + j0 * d);
    });
  });
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

// V rows of slots [i0, i1) accumulated into HB lanes' outputs at once: acc[h] (ND vectors = one head's D)
// += p[slot][lane] · V[slot]; each V row is loaded once per pass of HB lanes. p rows are `stride` floats
// (the block's lane count rounded up to whole vectors). V rows come from `vrows` (row i at vrows +
// (i - i0)·D: f16 rows widened once for all passes) or, when null, straight from the f32 cache. The sums
// live in the lanes' output rows between calls: `first` starts them at 0, `inv` (non-null on the last
// call) normalizes them.
template <int ND, int HB>
void block_accum(const AttnBlock& b, const float* p, int64_t stride, int l0, int hb, int64_t i0, int64_t i1,
                 const float* vrows, bool first, const float* inv) {
  constexpr int64_t d = 16 * ND;
  __m512 acc[HB][ND];
  float* o[HB];
  for (int h = 0; h < HB; ++h) {
    const int l = l0 + std::min(h, hb - 1), r = l / b.g, j = l % b.g;
    o[h] = b.out + r * b.out_stride + j * d;
    for (int e = 0; e < ND; ++e) acc[h][e] = first || h >= hb ? _mm512_setzero_ps() : _mm512_loadu_ps(o[h] + 16 * e);
  }
  for (int64_t i = i0; i < i1; ++i) {
    const float* vr = vrows != nullptr ? vrows + (i - i0) * d : static_cast<const float*>(b.v) + static_cast<int64_t>(b.slots[i]) * d;
    __m512 vv[ND];
    for (int e = 0; e < ND; ++e) vv[e] = _mm512_loadu_ps(vr + 16 * e);
    const float* pi = p + i * stride + l0;
    for (int h = 0; h < HB; ++h) {
      if (h >= hb) break;
      const __m512 w = _mm512_set1_ps(pi[h]);
      for (int e = 0; e < ND; ++e) acc[h][e] = _mm512_fmadd_ps(w, vv[e], acc[h][e]);
    }
  }
  for (int h = 0; h < hb; ++h) {
    if (inv != nullptr) {
      const __m512 s = _mm512_set1_ps(inv[l0 + h]);
      for (int e = 0; e < ND; ++e) acc[h][e] = _mm512_mul_ps(acc[h][e], s);
    }
    for (int e = 0; e < ND; ++e) _mm512_storeu_ps(o[h] + 16 * e, acc[h][e]);
  }
}

// How many leading slots every row of the block sees with a mask of exactly 0 (a causal chunk's shared
// prefix): their scores skip the per-slot mask gather. Only for a contiguous run of slots (every prefill
// chunk), where each row's mask is a plain load; 0 otherwise.
int64_t clear_prefix(const AttnBlock& b) {
  if (b.n == 0 || b.slots[b.n - 1] - b.slots[0] != b.n - 1) return 0;
  int64_t clear = b.n;
  for (int r = 0; r < b.rows && clear > 0; ++r) {
    const float* m = b.mask + r * b.mask_stride + b.slots[0];
    int64_t i = 0;
    for (; i < clear; i += 16) {
      const __mmask16 tail = tail_mask(clear - i);  // the masked load never reads past the row's clear range
      const __mmask16 nz = _mm512_mask_cmp_ps_mask(tail, _mm512_maskz_loadu_ps(tail, m + i), _mm512_setzero_ps(), _CMP_NEQ_UQ);
      if (nz != 0) {
        i += __builtin_ctz(nz);
        break;
      }
    }
    clear = std::min(clear, i);
  }
  return clear;
}

// LV vectors of lanes (rows·g ≤ 16·LV). Two vectors let every K element broadcast for the scores feed two
// FMAs instead of one (10 loads per 16 FMAs instead of 9 per 8) and share the per-slot work around them.
template <int ND, int LV>
void attn_block_nd(const AttnBlock& b) {
  constexpr int64_t d = 16 * ND;
  constexpr int64_t L = 16 * LV;
  const int lanes = b.rows * b.g;
  float* sc = b.scratch;             // [n][L]: scores, then probabilities, of every lane per slot
  float* qt = sc + L * b.n;          // [d][L]: the lanes' query vectors, transposed
  float* kbuf = qt + L * d;          // [8][d]: f16 K rows widened (vbuf, f16 V rows, follows it)
  alignas(64) int32_t lane_row[L];
  for (int l = 0; l < L; ++l) lane_row[l] = l < lanes ? l / b.g : 0;
  for (int64_t e = 0; e < d; ++e)
    for (int l = 0; l < L; ++l)
      qt[e * L + l] = l < lanes ? b.q[(l / b.g) * b.q_stride + (l % b.g) * d + e] : 0.0f;
  // Mask of slot s for every lane: mask[row(lane)][s], one gather per slot and vector past the clear prefix.
  __m512i mask_idx[LV];
  for (int v = 0; v < LV; ++v)
    mask_idx[v] = _mm512_mullo_epi32(_mm512_load_si512(lane_row + 16 * v), _mm512_set1_epi32(static_cast<int32_t>(b.mask_stride)));
  const int64_t clear = clear_prefix(b);
  const __m512 scale = _mm512_set1_ps(b.scale);
  __m512 vmax[LV];
  for (int v = 0; v < LV; ++v) vmax[v] = _mm512_set1_ps(-INFINITY);
  auto finish = [&](int64_t i, const __m512* acc) {
    for (int v = 0; v < LV; ++v) {
      // fma(acc, scale, 0) and acc·scale round alike: the clear prefix gives the reference's scores.
      const __m512 s = i < clear ? _mm512_mul_ps(acc[v], scale)
                                 : _mm512_fmadd_ps(acc[v], scale, _mm512_i32gather_ps(mask_idx[v], b.mask + b.slots[i], 4));
      _mm512_store_ps(sc + i * L + 16 * v, s);
      vmax[v] = _mm512_max_ps(vmax[v], s);
    }
  };
  int64_t i = 0;
  for (; i + 8 <= b.n; i += 8) {
    const float* kr[8];
    for (int s = 0; s < 8; ++s) {
      const int64_t base = static_cast<int64_t>(b.slots[i + s]) * d;
      if (b.f16) {
        widen_row<ND>(b.k, true, base, kbuf + s * d);
        kr[s] = kbuf + s * d;
      } else {
        kr[s] = static_cast<const float*>(b.k) + base;
      }
    }
    __m512 acc[8][LV];
    for (int s = 0; s < 8; ++s)
      for (int v = 0; v < LV; ++v) acc[s][v] = _mm512_setzero_ps();
    for (int64_t e = 0; e < d; ++e) {
      __m512 qv[LV];
      for (int v = 0; v < LV; ++v) qv[v] = _mm512_load_ps(qt + e * L + 16 * v);
      for (int s = 0; s < 8; ++s) {
        const __m512 kb = _mm512_set1_ps(kr[s][e]);
        for (int v = 0; v < LV; ++v) acc[s][v] = _mm512_fmadd_ps(kb, qv[v], acc[s][v]);
      }
    }
    for (int s = 0; s < 8; ++s) finish(i + s, acc[s]);
  }
  for (; i < b.n; ++i) {
    const int64_t base = static_cast<int64_t>(b.slots[i]) * d;
    widen_row<ND>(b.k, b.f16, base, kbuf);
    __m512 acc[LV];
    for (int v = 0; v < LV; ++v) acc[v] = _mm512_setzero_ps();
    for (int64_t e = 0; e < d; ++e) {
      const __m512 kb = _mm512_set1_ps(kbuf[e]);
      for (int v = 0; v < LV; ++v) acc[v] = _mm512_fmadd_ps(kb, _mm512_load_ps(qt + e * L + 16 * v), acc[v]);
    }
    finish(i, acc);
  }
  // A lane whose row sees nothing here keeps max ≤ the hidden threshold: use 0 so its exps are 0, not 1
  // (the caller replaces that row's output).
  __mmask16 seen[LV];
  __m512 vsum[LV];
  for (int v = 0; v < LV; ++v) {
    seen[v] = _mm512_cmp_ps_mask(vmax[v], _mm512_set1_ps(kHiddenThreshold), _CMP_GT_OQ);
    vmax[v] = _mm512_maskz_mov_ps(seen[v], vmax[v]);
    vsum[v] = _mm512_setzero_ps();
  }
  for (int64_t j = 0; j < b.n; ++j)
    for (int v = 0; v < LV; ++v) {
      const __m512 p = exp_nonpositive(_mm512_sub_ps(_mm512_load_ps(sc + j * L + 16 * v), vmax[v]));
      _mm512_store_ps(sc + j * L + 16 * v, p);
      vsum[v] = _mm512_add_ps(vsum[v], p);
    }
  alignas(64) float inv[L];
  for (int v = 0; v < LV; ++v) _mm512_store_ps(inv + 16 * v, _mm512_maskz_div_ps(seen[v], _mm512_set1_ps(1.0f), vsum[v]));
  constexpr int HB = ND <= 4 ? 24 / ND : ND <= 6 ? 3 : ND <= 8 ? 2 : 1;  // HB·ND + ND registers ≤ 32
  if (!b.f16) {
    for (int l0 = 0; l0 < lanes; l0 += HB) block_accum<ND, HB>(b, sc, L, l0, std::min(HB, lanes - l0), 0, b.n, nullptr, true, inv);
    return;
  }
  // f16 V: widen a chunk of rows once, then run every pass of lanes over it.
  float* vbuf = kbuf + 8 * d;        // [chunk][d]
  constexpr int64_t chunk = kAttnVChunkFloats / d;
  for (int64_t i0 = 0; i0 < b.n; i0 += chunk) {
    const int64_t i1 = std::min(b.n, i0 + chunk);
    for (int64_t i = i0; i < i1; ++i) widen_row<ND>(b.v, true, static_cast<int64_t>(b.slots[i]) * d, vbuf + (i - i0) * d);
    for (int l0 = 0; l0 < lanes; l0 += HB)
      block_accum<ND, HB>(b, sc, L, l0, std::min(HB, lanes - l0), i0, i1, vbuf, i0 == 0, i1 == b.n ? inv : nullptr);
  }
}

template <int ND>
void attn_block_lanes(const AttnBlock& b) {
  if (b.rows * b.g > 16) return attn_block_nd<ND, 2>(b);
  attn_block_nd<ND, 1>(b);
}

}  // namespace

void attn_block_avx512(const AttnBlock& b) {
  switch (b.d / 16) {
    case 1: return attn_block_lanes<1>(b);
    case 2: return attn_block_lanes<2>(b);
    case 3: return attn_block_lanes<3>(b);
    case 4: return attn_block_lanes<4>(b);
    case 5: return attn_block_lanes<5>(b);
    case 6: return attn_block_lanes<6>(b);
    case 7: return attn_block_lanes<7>(b);
    case 8: return attn_block_lanes<8>(b);
    case 12: return attn_block_lanes<12>(b);
    case 16: return attn_block_lanes<16>(b);
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

// A row's 64 slots at a time: four compares make one bitmap word; a word with nothing visible (most of a
// pool's slots for a row of one sequence) costs no stores, the others compress-store their slots.
void scan_rows_avx512(const float* mask, int64_t t, int64_t s, int32_t* row_slots, int64_t* row_n, uint64_t* bits) {
  const __m512 thr = _mm512_set1_ps(kHiddenThreshold);
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (int64_t r = 0; r < t; ++r) {
    const float* m = mask + r * s;
    int32_t* out = row_slots + r * s;
    int64_t n = 0;
    for (int64_t j = 0; j < s; j += 64) {
      __mmask16 k[4];
      for (int v = 0; v < 4; ++v) {
        const __mmask16 mk = tail_mask(s - j - 16 * v);
        k[v] = _mm512_mask_cmp_ps_mask(mk, _mm512_maskz_loadu_ps(mk, m + j + 16 * v), thr, _CMP_GT_OQ);
      }
      const uint64_t w = uint64_t{k[0]} | uint64_t{k[1]} << 16 | uint64_t{k[2]} << 32 | uint64_t{k[3]} << 48;
      if (w == 0) continue;
      bits[j / 64] |= w;
      for (int v = 0; v < 4; ++v) {
        if (k[v] == 0) continue;
        _mm512_mask_compressstoreu_epi32(out + n, k[v], _mm512_add_epi32(iota, _mm512_set1_epi32(static_cast<int32_t>(j + 16 * v))));
        n += __builtin_popcount(k[v]);
      }
    }
    row_n[r] = n;
  }
}

}  // namespace hfs::cpu_fast::detail

HFS_TARGET_END

#endif  // defined(__x86_64__)
