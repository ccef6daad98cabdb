// int8 KV cache kernels (io contract minor 1) for every dispatch level: scores q · k_q and P·V sums over
// int8 rows, each row widened to f32 once for all heads of the group (never a dequantized cache). The
// row scales stay with the caller (attention.cpp): it multiplies a slot's scores by its K scale before the
// softmax and its probabilities by its V scale before the sums, so these kernels see plain integers.
// Every output element is one chain over D (scores) or over the slots in order (sums): a row's bits do not
// depend on the rows or heads beside it.
#include <cstdint>
#include <cstring>

#include "backends/cpu_fast/attention_kernels.h"

namespace hfs::cpu_fast::detail {

void attn_scores_i8_scalar(const float* q, int g, const int8_t* k, int64_t d, const int32_t* slots, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const int8_t* row = k + static_cast<int64_t>(slots[i]) * d;
    for (int j = 0; j < g; ++j) {
      float s = 0;
      for (int64_t e = 0; e < d; ++e) s += q[j * d + e] * static_cast<float>(row[e]);
      out[j * n + i] = s;
    }
  }
}

void attn_accum_i8_scalar(const float* p, int g, const int8_t* v, int64_t d, const int32_t* slots, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const int8_t* row = v + static_cast<int64_t>(slots[i]) * d;
    for (int j = 0; j < g; ++j) {
      const float w = p[j * n + i];
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
void scores_i8_nd_avx2(const float* q, int g, const int8_t* k, const int32_t* slots, int64_t n, float* out) {
  constexpr int64_t d = 8 * ND;
  for (int64_t i = 0; i < n; ++i) {
    const int8_t* row = k + static_cast<int64_t>(slots[i]) * d;
    __m256 kf[ND];
    for (int c = 0; c < ND; ++c) kf[c] = widen8(row + 8 * c);
    for (int j = 0; j < g; ++j) {
      __m256 acc = _mm256_setzero_ps();
      for (int c = 0; c < ND; ++c) acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + j * d + 8 * c), kf[c], acc);
      out[j * n + i] = hsum8(acc);
    }
  }
}

}  // namespace

void attn_scores_i8_avx2(const float* q, int g, const int8_t* k, int64_t d, const int32_t* slots, int64_t n, float* out) {
  switch (d) {  // the same chain over D as the generic loop below, so the bits do not depend on the path
    case 32: return scores_i8_nd_avx2<4>(q, g, k, slots, n, out);
    case 64: return scores_i8_nd_avx2<8>(q, g, k, slots, n, out);
    case 128: return scores_i8_nd_avx2<16>(q, g, k, slots, n, out);
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
      out[j * n + i] = s;
    }
  }
}

void attn_accum_i8_avx2(const float* p, int g, const int8_t* v, int64_t d, const int32_t* slots, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const int8_t* row = v + static_cast<int64_t>(slots[i]) * d;
    int64_t e = 0;
    for (; e + 8 <= d; e += 8) {
      const __m256 x = widen8(row + e);  // once for every head of the group
      for (int j = 0; j < g; ++j) {
        float* o = out + j * d + e;
        _mm256_storeu_ps(o, _mm256_fmadd_ps(_mm256_set1_ps(p[j * n + i]), x, _mm256_loadu_ps(o)));
      }
    }
    for (; e < d; ++e)
      for (int j = 0; j < g; ++j) out[j * d + e] += p[j * n + i] * static_cast<float>(row[e]);
  }
}

}  // namespace hfs::cpu_fast::detail

HFS_TARGET_END

HFS_TARGET_AVX512_BEGIN

namespace hfs::cpu_fast::detail {
namespace {

__m512 widen16(const int8_t* x) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x))));
}

// D = 16·ND: the row widened once into registers for every head of the group.
template <int ND>
void scores_i8_nd_avx512(const float* q, int g, const int8_t* k, const int32_t* slots, int64_t n, float* out) {
  constexpr int64_t d = 16 * ND;
  for (int64_t i = 0; i < n; ++i) {
    const int8_t* row = k + static_cast<int64_t>(slots[i]) * d;
    __m512 kf[ND];
    for (int c = 0; c < ND; ++c) kf[c] = widen16(row + 16 * c);
    for (int j = 0; j < g; ++j) {
      __m512 acc = _mm512_setzero_ps();
      for (int c = 0; c < ND; ++c) acc = _mm512_fmadd_ps(_mm512_loadu_ps(q + j * d + 16 * c), kf[c], acc);
      out[j * n + i] = _mm512_reduce_add_ps(acc);
    }
  }
}

// P·V of heads [j0, j0 + G) with D = 16·ND: their output slices stay in registers over all n slots (each
// V row widened once for them); the same FMA per slot in slot order as the generic loop, so the same bits.
template <int ND, int G>
void accum_i8_block_avx512(const float* p, int j0, const int8_t* v, const int32_t* slots, int64_t n, float* out) {
  constexpr int64_t d = 16 * ND;
  __m512 acc[G][ND];
  for (int j = 0; j < G; ++j)
    for (int c = 0; c < ND; ++c) acc[j][c] = _mm512_loadu_ps(out + (j0 + j) * d + 16 * c);
  for (int64_t i = 0; i < n; ++i) {
    const int8_t* row = v + static_cast<int64_t>(slots[i]) * d;
    __m512 x[ND];
    for (int c = 0; c < ND; ++c) x[c] = widen16(row + 16 * c);
    for (int j = 0; j < G; ++j) {
      const __m512 w = _mm512_set1_ps(p[(j0 + j) * n + i]);
      for (int c = 0; c < ND; ++c) acc[j][c] = _mm512_fmadd_ps(w, x[c], acc[j][c]);
    }
  }
  for (int j = 0; j < G; ++j)
    for (int c = 0; c < ND; ++c) _mm512_storeu_ps(out + (j0 + j) * d + 16 * c, acc[j][c]);
}

// Heads in blocks of up to kG (kG·ND + ND ≤ 28 registers).
template <int ND>
void accum_i8_nd_avx512(const float* p, int g, const int8_t* v, const int32_t* slots, int64_t n, float* out) {
  constexpr int kG = ND >= 8 ? 2 : ND >= 4 ? 4 : 6;
  int j0 = 0;
  for (; j0 + kG <= g; j0 += kG) accum_i8_block_avx512<ND, kG>(p, j0, v, slots, n, out);
  for (; j0 < g; ++j0) accum_i8_block_avx512<ND, 1>(p, j0, v, slots, n, out);
}

}  // namespace

void attn_scores_i8_avx512(const float* q, int g, const int8_t* k, int64_t d, const int32_t* slots, int64_t n, float* out) {
  switch (d) {  // the same chain over D as the generic loop below, so the bits do not depend on the path
    case 32: return scores_i8_nd_avx512<2>(q, g, k, slots, n, out);
    case 64: return scores_i8_nd_avx512<4>(q, g, k, slots, n, out);
    case 128: return scores_i8_nd_avx512<8>(q, g, k, slots, n, out);
    case 256: return scores_i8_nd_avx512<16>(q, g, k, slots, n, out);
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
      out[j * n + i] = s;
    }
  }
}

void attn_accum_i8_avx512(const float* p, int g, const int8_t* v, int64_t d, const int32_t* slots, int64_t n, float* out) {
  switch (d) {
    case 32: return accum_i8_nd_avx512<2>(p, g, v, slots, n, out);
    case 64: return accum_i8_nd_avx512<4>(p, g, v, slots, n, out);
    case 128: return accum_i8_nd_avx512<8>(p, g, v, slots, n, out);
    default: break;
  }
  for (int64_t i = 0; i < n; ++i) {
    const int8_t* row = v + static_cast<int64_t>(slots[i]) * d;
    int64_t e = 0;
    for (; e + 16 <= d; e += 16) {
      const __m512 x = widen16(row + e);
      for (int j = 0; j < g; ++j) {
        float* o = out + j * d + e;
        _mm512_storeu_ps(o, _mm512_fmadd_ps(_mm512_set1_ps(p[j * n + i]), x, _mm512_loadu_ps(o)));
      }
    }
    for (; e < d; ++e)
      for (int j = 0; j < g; ++j) out[j * d + e] += p[j * n + i] * static_cast<float>(row[e]);
  }
}

}  // namespace hfs::cpu_fast::detail

HFS_TARGET_END

#endif  // defined(__x86_64__)
