// int8 KV cache kernels (io contract minor 1) for every dispatch level: scores q · k_q and P·V sums over
// int8 rows, each row widened to f32 once for all heads of the group (never a dequantized cache). The
// row scales are applied per slot, in the reference's order: a slot's integer score (the chain over D) times
// its K scale, and its probability times its V scale before that row's FMAs into the sums.
// Every output element is one chain over D (scores) or over the slots in order (sums): a row's bits do not
// depend on the rows or heads beside it.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backends/cpu_fast/attention_kernels.h"

namespace hfs::cpu_fast::detail {

void attn_scores_i8_scalar(const float* q, int g, const int8_t* k, const float* ks, int64_t d, const int32_t* slots,
                           int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const int8_t* row = k + static_cast<int64_t>(slots[i]) * d;
    for (int j = 0; j < g; ++j) {
      float s = 0;
      for (int64_t e = 0; e < d; ++e) s += q[j * d + e] * static_cast<float>(row[e]);
      out[j * n + i] = s * ks[slots[i]];
    }
  }
}

void attn_accum_i8_scalar(const float* p, int g, const int8_t* v, const float* vs, int64_t d, const int32_t* slots,
                          int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const int8_t* row = v + static_cast<int64_t>(slots[i]) * d;
    for (int j = 0; j < g; ++j) {
      const float w = p[j * n + i] * vs[slots[i]];
      for (int64_t e = 0; e < d; ++e) out[j * d + e] += w * static_cast<float>(row[e]);
    }
  }
}

}  // namespace hfs::cpu_fast::detail

#if defined(__x86_64__)  // x86 kernels only: elsewhere the scalar path runs (cpu_features.h)
#include <immintrin.h>

#include "backends/cpu_fast/isa_target.h"

HFS_TARGET_AVX2_BEGIN

namespace hfs::cpu_fast::detail {
namespace {

__m256 widen8(const int8_t* x) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x))));
}

float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}


// D = 8·ND: the row widened once into registers for every head of the group.
template <int ND>
void scores_i8_nd_avx2(const float* q, int g, const int8_t* k, const float* ks, const int32_t* slots, int64_t n,
                       float* out) {
  constexpr int64_t d = 8 * ND;
  for (int64_t i = 0; i < n; ++i) {
    const int8_t* row = k + static_cast<int64_t>(slots[i]) * d;
    __m256 kf[ND];
    for (int c = 0; c < ND; ++c) kf[c] = widen8(row + 8 * c);
    for (int j = 0; j < g; ++j) {
      __m256 acc = _mm256_setzero_ps();
      for (int c = 0; c < ND; ++c) acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + j * d + 8 * c), kf[c], acc);
      out[j * n + i] = hsum8(acc) * ks[slots[i]];
    }
  }
}

}  // namespace

void attn_scores_i8_avx2(const float* q, int g, const int8_t* k, const float* ks, int64_t d, const int32_t* slots,
                         int64_t n, float* out) {
  switch (d) {  // the same chain over D as the generic loop below, so the bits do not depend on the path
    case 32: return scores_i8_nd_avx2<4>(q, g, k, ks, slots, n, out);
    case 64: return scores_i8_nd_avx2<8>(q, g, k, ks, slots, n, out);
    case 128: return scores_i8_nd_avx2<16>(q, g, k, ks, slots, n, out);
    default: break;
  }
  for (int64_t i = 0; i < n; ++i) {
    const int8_t* row = k + static_cast<int64_t>(slots[i]) * d;
    for (int j = 0; j < g; ++j) {
      const float* qj = q + j * d;
      __m256 acc = _mm256_setzero_ps();
      int64_t e = 0;
      for (; e + 8 <= d; e += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(qj + e), widen8(row + e), acc);
      float s = hsum8(acc);
      for (; e < d; ++e) s += qj[e] * static_cast<float>(row[e]);
      out[j * n + i] = s * ks[slots[i]];
    }
  }
}

void attn_accum_i8_avx2(const float* p, int g, const int8_t* v, const float* vs, int64_t d, const int32_t* slots,
                        int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const int8_t* row = v + static_cast<int64_t>(slots[i]) * d;
    int64_t e = 0;
    for (; e + 8 <= d; e += 8) {
      const __m256 x = widen8(row + e);  // once for every head of the group
      for (int j = 0; j < g; ++j) {
        float* o = out + j * d + e;
        _mm256_storeu_ps(o, _mm256_fmadd_ps(_mm256_set1_ps(p[j * n + i] * vs[slots[i]]), x, _mm256_loadu_ps(o)));
      }
    }
    for (; e < d; ++e)
      for (int j = 0; j < g; ++j) out[j * d + e] += p[j * n + i] * vs[slots[i]] * static_cast<float>(row[e]);
  }
}

}  // namespace hfs::cpu_fast::detail

HFS_TARGET_END

HFS_TARGET_AVX512_BEGIN

#include "backends/cpu_fast/avx512_transpose.h"

namespace hfs::cpu_fast::detail {
namespace {

__m512 widen16(const int8_t* x) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x))));
}

// Decode streams a kv head's int8 K and V rows once per step; prefetching them this many slots ahead keeps
// more of that stream in flight (as the f16 kernels do, attention_avx512.cpp).
constexpr int64_t kSlotsAhead = 32;
template <int ND>
inline void prefetch_i8_rows(const int8_t* base, const int32_t* slots, int count) {
  constexpr int64_t row_bytes = 16 * ND;
  for (int s = 0; s < count; ++s) {
    const int8_t* row = base + static_cast<int64_t>(slots[s]) * row_bytes;
    for (int64_t off = 0; off < row_bytes; off += 64)
      _mm_prefetch(reinterpret_cast<const char*>(row + off), _MM_HINT_T0);
  }
}

// HB heads' scores of the block of m ≤ 16 slots at slots[0, m), slots along the lanes: each 16-column chunk
// of the 16 K rows widened and transposed once, then every head's 16 scores grow by one FMA per dimension
// with the query element broadcast. Each score is the plain FMA chain over D in order (no horizontal sum),
// the same number whichever lanes or heads share the block. out row h at out + h·n.
template <int ND, int HB>
inline void scores_i8_block16(const float* q, const int8_t* k, const float* ks, const int32_t* slots, int m, int64_t n,
                              float* out) {
  constexpr int64_t d = 16 * ND;
  __m512 acc[HB];
  for (int h = 0; h < HB; ++h) acc[h] = _mm512_setzero_ps();
#pragma GCC unroll 1
  for (int c = 0; c < ND; ++c) {
    __m512 kt[16];
#pragma GCC unroll 16
    for (int r = 0; r < 16; ++r)
      kt[r] = r < m ? widen16(k + static_cast<int64_t>(slots[r]) * d + 16 * c) : _mm512_setzero_ps();
    transpose16(kt);
    const float* qc = q + 16 * c;
#pragma GCC unroll 16
    for (int e = 0; e < 16; ++e)
#pragma GCC unroll 8
      for (int h = 0; h < HB; ++h) acc[h] = _mm512_fmadd_ps(_mm512_set1_ps(qc[h * d + e]), kt[e], acc[h]);
  }
  const __mmask16 mk = static_cast<__mmask16>(m >= 16 ? 0xFFFF : (1u << m) - 1);
  const __m512i idx = _mm512_maskz_loadu_epi32(mk, slots);
  const __m512 sc = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mk, idx, ks, 4);  // the slots' K scales
  for (int h = 0; h < HB; ++h) _mm512_mask_storeu_ps(out + h * n, mk, _mm512_mul_ps(acc[h], sc));
}

template <int ND, int HB>
void scores_i8_heads(const float* q, const int8_t* k, const float* ks, const int32_t* slots, int64_t n, float* out) {
  for (int64_t i = 0; i < n; i += 16) {
    if (i + kSlotsAhead + 16 <= n) prefetch_i8_rows<ND>(k, slots + i + kSlotsAhead, 16);
    scores_i8_block16<ND, HB>(q, k, ks, slots + i, static_cast<int>(std::min<int64_t>(16, n - i)), n, out + i);
  }
}

// D = 16·ND: passes of up to 8 heads, each K block read once per pass (once for a group of ≤ 8 heads).
template <int ND>
void scores_i8_nd_avx512(const float* q, int g, const int8_t* k, const float* ks, const int32_t* slots, int64_t n,
                         float* out) {
  constexpr int64_t d = 16 * ND;
  for (int j0 = 0; j0 < g; j0 += 8) {
    const float* qj = q + j0 * d;
    float* oj = out + j0 * n;
    switch (std::min(8, g - j0)) {
      case 1: scores_i8_heads<ND, 1>(qj, k, ks, slots, n, oj); break;
      case 2: scores_i8_heads<ND, 2>(qj, k, ks, slots, n, oj); break;
      case 3: scores_i8_heads<ND, 3>(qj, k, ks, slots, n, oj); break;
      case 4: scores_i8_heads<ND, 4>(qj, k, ks, slots, n, oj); break;
      case 5: scores_i8_heads<ND, 5>(qj, k, ks, slots, n, oj); break;
      case 6: scores_i8_heads<ND, 6>(qj, k, ks, slots, n, oj); break;
      case 7: scores_i8_heads<ND, 7>(qj, k, ks, slots, n, oj); break;
      default: scores_i8_heads<ND, 8>(qj, k, ks, slots, n, oj); break;
    }
  }
}

// P·V of heads [j0, j0 + G) with D = 16·ND: their output slices stay in registers over all n slots (each
// V row widened once for them); the same FMA per slot in slot order as the generic loop, so the same bits.
template <int ND, int G>
void accum_i8_block_avx512(const float* p, int j0, const int8_t* v, const float* vs, const int32_t* slots, int64_t n,
                           float* out) {
  constexpr int64_t d = 16 * ND;
  __m512 acc[G][ND];
  for (int j = 0; j < G; ++j)
    for (int c = 0; c < ND; ++c) acc[j][c] = _mm512_loadu_ps(out + (j0 + j) * d + 16 * c);
  for (int64_t i = 0; i < n; ++i) {
    if (j0 == 0 && (i & 15) == 0 && i + kSlotsAhead + 16 <= n) prefetch_i8_rows<ND>(v, slots + i + kSlotsAhead, 16);
    const int8_t* row = v + static_cast<int64_t>(slots[i]) * d;
    __m512 x[ND];
    for (int c = 0; c < ND; ++c) x[c] = widen16(row + 16 * c);
    for (int j = 0; j < G; ++j) {
      const __m512 w = _mm512_set1_ps(p[(j0 + j) * n + i] * vs[slots[i]]);
      for (int c = 0; c < ND; ++c) acc[j][c] = _mm512_fmadd_ps(w, x[c], acc[j][c]);
    }
  }
  for (int j = 0; j < G; ++j)
    for (int c = 0; c < ND; ++c) _mm512_storeu_ps(out + (j0 + j) * d + 16 * c, acc[j][c]);
}

// Heads in blocks of up to kG (kG·ND + ND ≤ 28 registers); the last, smaller block takes its heads
// together too (SmolLM2's g = 3 at D = 64 is one block, each V row widened once).
template <int ND>
void accum_i8_nd_avx512(const float* p, int g, const int8_t* v, const float* vs, const int32_t* slots, int64_t n,
                        float* out) {
  constexpr int kG = ND >= 8 ? 2 : ND >= 4 ? 4 : 6;
  int j0 = 0;
  for (; j0 + kG <= g; j0 += kG) accum_i8_block_avx512<ND, kG>(p, j0, v, vs, slots, n, out);
  switch (g - j0) {
    case 0: return;
    case 1: return accum_i8_block_avx512<ND, 1>(p, j0, v, vs, slots, n, out);
    case 2: if constexpr (kG > 2) return accum_i8_block_avx512<ND, 2>(p, j0, v, vs, slots, n, out); break;
    case 3: if constexpr (kG > 3) return accum_i8_block_avx512<ND, 3>(p, j0, v, vs, slots, n, out); break;
    case 4: if constexpr (kG > 4) return accum_i8_block_avx512<ND, 4>(p, j0, v, vs, slots, n, out); break;
    case 5: if constexpr (kG > 5) return accum_i8_block_avx512<ND, 5>(p, j0, v, vs, slots, n, out); break;
    default: break;
  }
}

}  // namespace

void attn_scores_i8_avx512(const float* q, int g, const int8_t* k, const float* ks, int64_t d, const int32_t* slots,
                           int64_t n, float* out) {
  switch (d) {  // one path per D (a row's bits never depend on which): the lanes kernel, else the loop below
    case 32: return scores_i8_nd_avx512<2>(q, g, k, ks, slots, n, out);
    case 64: return scores_i8_nd_avx512<4>(q, g, k, ks, slots, n, out);
    case 128: return scores_i8_nd_avx512<8>(q, g, k, ks, slots, n, out);
    case 256: return scores_i8_nd_avx512<16>(q, g, k, ks, slots, n, out);
    default: break;
  }
  for (int64_t i = 0; i < n; ++i) {
    const int8_t* row = k + static_cast<int64_t>(slots[i]) * d;
    for (int j = 0; j < g; ++j) {
      const float* qj = q + j * d;
      __m512 acc = _mm512_setzero_ps();
      int64_t e = 0;
      for (; e + 16 <= d; e += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(qj + e), widen16(row + e), acc);
      float s = _mm512_reduce_add_ps(acc);
      for (; e < d; ++e) s += qj[e] * static_cast<float>(row[e]);
      out[j * n + i] = s * ks[slots[i]];
    }
  }
}

void attn_accum_i8_avx512(const float* p, int g, const int8_t* v, const float* vs, int64_t d, const int32_t* slots,
                          int64_t n, float* out) {
  switch (d) {
    case 32: return accum_i8_nd_avx512<2>(p, g, v, vs, slots, n, out);
    case 64: return accum_i8_nd_avx512<4>(p, g, v, vs, slots, n, out);
    case 128: return accum_i8_nd_avx512<8>(p, g, v, vs, slots, n, out);
    default: break;
  }
  for (int64_t i = 0; i < n; ++i) {
    const int8_t* row = v + static_cast<int64_t>(slots[i]) * d;
    int64_t e = 0;
    for (; e + 16 <= d; e += 16) {
      const __m512 x = widen16(row + e);
      for (int j = 0; j < g; ++j) {
        float* o = out + j * d + e;
        _mm512_storeu_ps(o, _mm512_fmadd_ps(_mm512_set1_ps(p[j * n + i] * vs[slots[i]]), x, _mm512_loadu_ps(o)));
      }
    }
    for (; e < d; ++e)
      for (int j = 0; j < g; ++j) out[j * d + e] += p[j * n + i] * vs[slots[i]] * static_cast<float>(row[e]);
  }
}

}  // namespace hfs::cpu_fast::detail

HFS_TARGET_END

#endif  // defined(__x86_64__)
