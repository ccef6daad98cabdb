// AVX2+FMA+F16C attention kernels (CPUs without AVX-512). The AVX-512 file's decode structure on 8-lane
// vectors and 16 registers: scores for blocks of 8 slots reduced by one add tree (no horizontal sum per
// score), V accumulation with a head's output slice in registers, a vector softmax; f16 K/V rows are
// widened once per chunk for all heads of the group.
#if defined(__x86_64__)  // x86 kernels only: elsewhere the scalar path runs (cpu_features.h)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backends/cpu_fast/attention.h"
#include "backends/cpu_fast/attention_kernels.h"
#include "backends/cpu_fast/isa_target.h"

HFS_TARGET_AVX2_BEGIN

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

// f16 caches are widened to f32 a chunk of rows at a time (32 KiB on the stack, L1-resident) and every
// head of the group then reads the chunk: converting each K/V element once per head (g = 3-7) instead of
// once kept vcvtph2ps the busiest instruction of decode attention.
constexpr int64_t kWidenFloats = 8192;

inline __m256 vload(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 vload(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

// Rows slots[i0, i0 + cn) of an f16 cache [.., d] → buf [cn][d] f32, prefetching the rows kSlotsAhead on.
inline void widen_rows(const void* cache, int64_t d, const int32_t* slots, int64_t i0, int64_t cn, int64_t n,
                       float* buf) {
  const uint16_t* c = static_cast<const uint16_t*>(cache);
  for (int64_t i = 0; i < cn; ++i) {
    if (i0 + i + kSlotsAhead < n) prefetch_row(cache, d * 2, slots[i0 + i + kSlotsAhead]);
    const uint16_t* src = c + static_cast<int64_t>(slots[i0 + i]) * d;
    for (int64_t e = 0; e < d; e += 8)
      _mm256_store_ps(buf + i * d + e, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + e))));
  }
}

// body(i0, cn, buf) for consecutive chunks of the live rows slots[0, n) of an f16 cache, buf holding rows
// i0 .. i0 + cn - 1 widened to f32 ([cn][d], in one 32 KiB stack buffer reused for every chunk).
template <typename Body>
void for_widened_chunks(const void* cache, int64_t d, const int32_t* slots, int64_t n, const Body& body) {
  alignas(32) float buf[kWidenFloats];
  const int64_t chunk = kWidenFloats / d;
  for (int64_t i0 = 0; i0 < n; i0 += chunk) {
    const int64_t cn = std::min(chunk, n - i0);
    widen_rows(cache, d, slots, i0, cn, n, buf);
    body(i0, cn, static_cast<const float*>(buf));
  }
}

// out[j·ldo + i] = q_j · row(i) for i < n, j < g; D = 8·ND. Blocks of 8 rows per head: 8 accumulators,
// each row vector loaded once per head and used at once, reduced by one add tree.
// pf(i) is called once per block of 8 rows, before the block (prefetching what comes later).
template <int ND, typename Row, typename Prefetch>
void scores_rows(const float* q, int g, Row row, int64_t n, float* out, int64_t ldo, Prefetch pf) {
  constexpr int64_t d = 8 * ND;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    pf(i);
    decltype(row(0)) r[8];
    for (int s = 0; s < 8; ++s) r[s] = row(i + s);
    for (int j = 0; j < g; ++j) {
      __m256 acc[8];
      for (int s = 0; s < 8; ++s) acc[s] = _mm256_setzero_ps();
      for (int e = 0; e < ND; ++e) {
        const __m256 qv = _mm256_loadu_ps(q + j * d + 8 * e);
        for (int s = 0; s < 8; ++s) acc[s] = _mm256_fmadd_ps(qv, vload(r[s] + 8 * e), acc[s]);
      }
      _mm256_storeu_ps(out + j * ldo + i, reduce8(acc));
    }
  }
  for (; i < n; ++i) {
    const auto ri = row(i);
    for (int j = 0; j < g; ++j) {
      __m256 acc = _mm256_setzero_ps();
      for (int e = 0; e < ND; ++e) acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + j * d + 8 * e), vload(ri + 8 * e), acc);
      out[j * ldo + i] = hsum(acc);
    }
  }
}

// out_j += Σ_i p[j·ldp + i] · row(i) for j < g; D = 8·ND. A head's output slice of up to 64 floats stays
// in registers across all rows (8 accumulators, the weight and the row vector fit the 16 registers).
// pf(i) is called before row i in the first pass only (later passes find the rows in cache).
template <int ND, typename Row, typename Prefetch>
void accum_rows(const float* p, int64_t ldp, int g, Row row, int64_t n, float* out, Prefetch pf) {
  constexpr int64_t d = 8 * ND;
  constexpr int kSlice = ND < 8 ? ND : 8;
  for (int j = 0; j < g; ++j)
    for (int e0 = 0; e0 < ND; e0 += kSlice) {
      float* o = out + j * d + 8 * e0;
      __m256 acc[kSlice];
      for (int e = 0; e < kSlice; ++e) acc[e] = _mm256_loadu_ps(o + 8 * e);
      for (int64_t i = 0; i < n; ++i) {
        if (j == 0 && e0 == 0) pf(i);
        const auto ri = row(i) + 8 * e0;
        const __m256 w = _mm256_set1_ps(p[j * ldp + i]);
        for (int e = 0; e < kSlice; ++e) acc[e] = _mm256_fmadd_ps(w, vload(ri + 8 * e), acc[e]);
      }
      for (int e = 0; e < kSlice; ++e) _mm256_storeu_ps(o + 8 * e, acc[e]);
    }
}

// Widening pays for itself from 4 heads per kv head on (Qwen2.5's 7: 20-25 % faster); with SmolLM2's 3 the
// store and reload cost what the saved conversions do, and the rows are read in place.
constexpr int kWidenMinHeads = 4;

// Before the block of 8 rows at i: the 8 rows kSlotsAhead on.
inline void prefetch_block_ahead(const void* cache, int64_t row_bytes, const int32_t* slots, int64_t i, int64_t n) {
  for (int64_t s = i + kSlotsAhead; s < std::min(n, i + kSlotsAhead + 8); ++s) prefetch_row(cache, row_bytes, slots[s]);
}

template <typename T>
inline const T* cache_row(const void* cache, int64_t d, int32_t slot) {
  return static_cast<const T*>(cache) + static_cast<int64_t>(slot) * d;
}

template <int ND, typename T>
void scores_direct(const float* q, int g, const void* k, const int32_t* slots, int64_t n, float* out) {
  constexpr int64_t d = 8 * ND;
  scores_rows<ND>(
      q, g, [&](int64_t i) { return cache_row<T>(k, d, slots[i]); }, n, out, n,
      [&](int64_t i) { prefetch_block_ahead(k, d * sizeof(T), slots, i, n); });
}

// f16 rows read in place by 2 or 3 heads (SmolLM2's 3 per kv head): each row slice is converted once and
// feeds every head, where scores_direct/accum_direct convert it once per head — vcvtph2ps then bounded
// the kernel (one per cycle on Zen 3, against two FMAs).
// Scores: R = 8/G rows at a time, G·R accumulators (head j, row s in lane-sum j·R + s), one reduce8 for
// all G·R scores. Used for G = 2 (4-row blocks).
template <int ND, int G>
void scores_grouped(const float* q, const void* k, const int32_t* slots, int64_t n, float* out) {
  constexpr int64_t d = 8 * ND;
  constexpr int R = 8 / G;
  int64_t i = 0;
  for (; i + R <= n; i += R) {
    if (i % 8 < R) prefetch_block_ahead(k, d * 2, slots, i, n);  // once per 8 rows
    const uint16_t* r[R];
    for (int s = 0; s < R; ++s) r[s] = cache_row<uint16_t>(k, d, slots[i + s]);
    __m256 acc[8];
    for (int a = 0; a < 8; ++a) acc[a] = _mm256_setzero_ps();
    for (int e = 0; e < ND; ++e) {
      __m256 x[R];
      for (int s = 0; s < R; ++s) x[s] = vload(r[s] + 8 * e);
      for (int j = 0; j < G; ++j) {
        const __m256 qv = _mm256_loadu_ps(q + j * d + 8 * e);
        for (int s = 0; s < R; ++s) acc[j * R + s] = _mm256_fmadd_ps(qv, x[s], acc[j * R + s]);
      }
    }
    alignas(32) float sums[8];
    _mm256_store_ps(sums, reduce8(acc));
    for (int j = 0; j < G; ++j)
      for (int s = 0; s < R; ++s) out[j * n + i + s] = sums[j * R + s];
  }
  // The last < R rows: fewer than 8, so scores_rows takes them one by one.
  scores_rows<ND>(
      q, G, [&](int64_t t) { return cache_row<uint16_t>(k, d, slots[i + t]); }, n - i, out + i, n, [](int64_t) {});
}

// out_j += Σ_i p[j·n + i] · row(i) for the G heads: passes over 4 output vectors (32 floats of D) with
// G·4 accumulators, each row slice converted once for all heads.
template <int ND, int G>
void accum_grouped(const float* p, const void* v, const int32_t* slots, int64_t n, float* out) {
  constexpr int64_t d = 8 * ND;
  constexpr int kSlice = 4;
  static_assert(ND % kSlice == 0, "D is a multiple of 32 here");
  for (int e0 = 0; e0 < ND; e0 += kSlice) {
    __m256 acc[G][kSlice];
    for (int j = 0; j < G; ++j)
      for (int e = 0; e < kSlice; ++e) acc[j][e] = _mm256_loadu_ps(out + j * d + 8 * (e0 + e));
    for (int64_t i = 0; i < n; ++i) {
      if (e0 == 0 && i + kSlotsAhead < n) prefetch_row(v, d * 2, slots[i + kSlotsAhead]);
      const uint16_t* ri = cache_row<uint16_t>(v, d, slots[i]) + 8 * e0;
      __m256 w[G];
      for (int j = 0; j < G; ++j) w[j] = _mm256_broadcast_ss(p + j * n + i);
      for (int e = 0; e < kSlice; ++e) {
        const __m256 x = vload(ri + 8 * e);
        for (int j = 0; j < G; ++j) acc[j][e] = _mm256_fmadd_ps(w[j], x, acc[j][e]);
      }
    }
    for (int j = 0; j < G; ++j)
      for (int e = 0; e < kSlice; ++e) _mm256_storeu_ps(out + j * d + 8 * (e0 + e), acc[j][e]);
  }
}

template <int ND>
void scores_nd(const float* q, int g, const void* k, bool f16, const int32_t* slots, int64_t n, float* out) {
  constexpr int64_t d = 8 * ND;
  if (!f16) return scores_direct<ND, float>(q, g, k, slots, n, out);
  // g = 3 keeps scores_direct: 8-row blocks converting per head beat 2-row blocks (3-6 %) and 4-row blocks
  // with 12 accumulators (1-2 % at D = 64, 7-9 % at 128; those win only at D = 32).
  if (g == 2) return scores_grouped<ND, 2>(q, k, slots, n, out);
  if (g < kWidenMinHeads) return scores_direct<ND, uint16_t>(q, g, k, slots, n, out);
  for_widened_chunks(k, d, slots, n, [&](int64_t i0, int64_t cn, const float* buf) {
    scores_rows<ND>(q, g, [&](int64_t i) { return buf + i * d; }, cn, out + i0, n, [](int64_t) {});
  });
}

template <int ND, typename T>
void accum_direct(const float* p, int g, const void* v, const int32_t* slots, int64_t n, float* out) {
  constexpr int64_t d = 8 * ND;
  accum_rows<ND>(
      p, n, g, [&](int64_t i) { return cache_row<T>(v, d, slots[i]); }, n, out,
      [&](int64_t i) {
        if (i + kSlotsAhead < n) prefetch_row(v, d * sizeof(T), slots[i + kSlotsAhead]);
      });
}

template <int ND>
void accum_nd(const float* p, int g, const void* v, bool f16, const int32_t* slots, int64_t n, float* out) {
  constexpr int64_t d = 8 * ND;
  if (!f16) return accum_direct<ND, float>(p, g, v, slots, n, out);
  if (g == 2) return accum_grouped<ND, 2>(p, v, slots, n, out);
  if (g == 3) return accum_grouped<ND, 3>(p, v, slots, n, out);
  if (g < kWidenMinHeads) return accum_direct<ND, uint16_t>(p, g, v, slots, n, out);
  for_widened_chunks(v, d, slots, n, [&](int64_t i0, int64_t cn, const float* buf) {
    accum_rows<ND>(p + i0, n, g, [&](int64_t i) { return buf + i * d; }, cn, out, [](int64_t) {});
  });
}

// exp(x) for x ≤ 0 (scores minus their max); below -87.3 it returns 0, which is what a hidden slot
// must contribute.
inline __m256 exp_nonpositive(__m256 x) {
  const __m256 keep = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_GE_OQ);
  return _mm256_and_ps(keep, exp256(x));
}

}  // namespace

void attn_scores_avx2(const float* q, int g, const void* k, const void* /*then*/, bool f16, int64_t d,
                      const int32_t* slots, int64_t n, float* out) {
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
    case 128: return accum_nd<16>(p, g, v, f16, slots, n, out);
    case 256: return accum_nd<32>(p, g, v, f16, slots, n, out);
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

// A row's 64 slots at a time: 8 compares whose movemasks make one bitmap word; a word with nothing visible
// (most of a pool's slots for a row of one sequence) costs no stores.
void scan_rows_avx2(const float* mask, int64_t t, int64_t s, int32_t* row_slots, int64_t* row_n, uint64_t* bits) {
  const __m256 thr = _mm256_set1_ps(kHiddenThreshold);
  for (int64_t r = 0; r < t; ++r) {
    const float* m = mask + r * s;
    int32_t* out = row_slots + r * s;
    int64_t n = 0;
    for (int64_t j = 0; j < s; j += 64) {
      uint64_t w = 0;
      if (j + 64 <= s) {
        for (int v = 0; v < 8; ++v)
          w |= static_cast<uint64_t>(_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(m + j + 8 * v), thr, _CMP_GT_OQ)))
               << (8 * v);
      } else {
        for (int64_t i = j; i < s; ++i) w |= static_cast<uint64_t>(m[i] > kHiddenThreshold) << (i - j);
      }
      if (w == 0) continue;
      bits[j / 64] |= w;
      for (; w != 0; w &= w - 1) out[n++] = static_cast<int32_t>(j + __builtin_ctzll(w));
    }
    row_n[r] = n;
  }
}

}  // namespace hfs::cpu_fast::detail

HFS_TARGET_END

#endif  // defined(__x86_64__)
