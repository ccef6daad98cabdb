// AVX2+FMA+F16C kernels (x86-64 CPUs without AVX-512). Same structure as the AVX-512 file; the int8
// dot uses vpmaddubsw on |x| and sign(w, x) (exact: |x|,|w| ≤ 127 keeps the 16-bit pair sums in range).
#include <immintrin.h>

#include <cstdint>

#include "backends/cpu_fast/linear_kernels.h"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

namespace hfs::cpu_fast::detail {
namespace {

struct F16 {};
struct BF16 {};
struct F32 {};

inline __m256 wload(F32, const void* base, int64_t i) { return _mm256_loadu_ps(static_cast<const float*>(base) + i); }
inline __m256 wload(F16, const void* base, int64_t i) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + i)));
}
inline __m256 wload(BF16, const void* base, int64_t i) {
  __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + i));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
inline float wscalar(F32, const void* base, int64_t i) { return static_cast<const float*>(base)[i]; }
inline float wscalar(F16, const void* base, int64_t i) {
  return _cvtsh_ss(static_cast<const uint16_t*>(base)[i]);
}
inline float wscalar(BF16, const void* base, int64_t i) {
  uint32_t u = static_cast<uint32_t>(static_cast<const uint16_t*>(base)[i]) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}
inline int64_t elem_size(F32) { return 4; }
inline int64_t elem_size(F16) { return 2; }
inline int64_t elem_size(BF16) { return 2; }

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <typename Fmt, int MR, int NR>
inline void float_tile(const void* w, int64_t k, const float* x, int64_t ldx, float* y, int64_t ldy,
                       const float* bias) {
  __m256 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < NR; ++r) acc[i][r] = _mm256_setzero_ps();
  const char* wb = static_cast<const char*>(w);
  const int64_t es = elem_size(Fmt{});
  int64_t j = 0;
  for (; j + 8 <= k; j += 8) {
    __m256 wv[NR];
    for (int r = 0; r < NR; ++r) wv[r] = wload(Fmt{}, wb + r * k * es, j);
    for (int i = 0; i < MR; ++i) {
      const __m256 xv = _mm256_loadu_ps(x + i * ldx + j);
      for (int r = 0; r < NR; ++r) acc[i][r] = _mm256_fmadd_ps(xv, wv[r], acc[i][r]);
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int r = 0; r < NR; ++r) {
      float s = hsum(acc[i][r]);
      for (int64_t jj = j; jj < k; ++jj) s += x[i * ldx + jj] * wscalar(Fmt{}, wb + r * k * es, jj);
      y[i * ldy + r] = s + (bias ? bias[r] : 0.0f);
    }
  }
}

template <typename Fmt, int NR>
inline void float_rows(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, int64_t n) {
  const int64_t k = w.k, es = elem_size(Fmt{});
  const void* wp = static_cast<const char*>(w.raw) + n * k * es;
  const float* b = bias ? bias + n : nullptr;
  int64_t i = 0;
  for (; i + 2 <= m; i += 2) float_tile<Fmt, 2, NR>(wp, k, x + i * k, k, y + i * w.n + n, w.n, b);
  if (i < m) float_tile<Fmt, 1, NR>(wp, k, x + i * k, k, y + i * w.n + n, w.n, b);
}

template <typename Fmt>
void float_range(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, int64_t n0,
                 int64_t n1) {
  int64_t n = n0;
  // Decode reads one weight row after another: one sequential stream prefetches far better than 4
  // interleaved rows (see the AVX-512 float_gemv).
  if (m > 1)
    for (; n + 4 <= n1; n += 4) float_rows<Fmt, 4>(w, x, m, bias, y, n);
  for (; n < n1; ++n) float_rows<Fmt, 1>(w, x, m, bias, y, n);
}

enum class IntFmt { kI8, kQ8, kQ4 };

// Integer formats: 16 output rows along the lanes (linear.h); each 64-byte vector is two halves of 8
// outputs. AVX2 has no vpdpbusd, so each 4-K lane sum is vpmaddubsw + vpmaddwd:
//   q4_0: the unsigned nibble (0..15) against the signed activation byte, exact (pair sums ≤ 2·15·127);
//         the low- and high-nibble products add in int16 (≤ 7620); offset removed via the block bias.
//   i8/q8_0: |x| against sign(w, x) with w = stored ^ 0x80 (signed; exact since |x|, |w| ≤ 127), so no
//         offset to remove.
template <IntFmt F, int MR>
inline void int_tile(const PackedWeight& w, const QuantizedActs& a, int64_t i0, int64_t t, float* y, int64_t ldy,
                     const float* bias) {
  const int64_t kp = w.k_padded, blocks = kp / 32;
  constexpr int64_t kBlockBytes = F == IntFmt::kQ4 ? 256 : 512;
  const uint8_t* wq = w.q.data() + t * tile_bytes(w);
  const uint16_t* sc = F == IntFmt::kI8 ? nullptr : w.block_scales.data() + t * blocks * kTileRows;
  const __m256i low4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1), flip = _mm256_set1_epi8(-128);
  __m256 acc[MR][2];
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    __m256i isum[MR][2];
    for (int i = 0; i < MR; ++i)
      isum[i][0] = isum[i][1] =
          F == IntFmt::kQ4 ? _mm256_set1_epi32(a.block_bias.data()[(i0 + i) * blocks + b]) : _mm256_setzero_si256();
    for (int v = 0; v < 4; ++v) {
      __m256i lo[2], hi[2];
      for (int h = 0; h < 2; ++h) {
        const uint8_t* p = wq + b * kBlockBytes + v * 64 + h * 32;
        if constexpr (F == IntFmt::kQ4) {
          const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
          lo[h] = _mm256_and_si256(raw, low4);
          hi[h] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
        } else {
          lo[h] = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), flip);
          hi[h] = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 4 * 64)), flip);
        }
      }
      for (int i = 0; i < MR; ++i) {
        const int8_t* xr = a.xq.data() + (i0 + i) * kp + 32 * b + 4 * v;
        int32_t xl, xh;
        __builtin_memcpy(&xl, xr, 4);
        __builtin_memcpy(&xh, xr + 16, 4);
        const __m256i bl = _mm256_set1_epi32(xl), bh = _mm256_set1_epi32(xh);
        for (int h = 0; h < 2; ++h) {
          if constexpr (F == IntFmt::kQ4) {
            const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(lo[h], bl), _mm256_maddubs_epi16(hi[h], bh));
            isum[i][h] = _mm256_add_epi32(isum[i][h], _mm256_madd_epi16(p, ones));
          } else {
            const __m256i pl = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(bl), _mm256_sign_epi8(lo[h], bl)), ones);
            const __m256i ph = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(bh), _mm256_sign_epi8(hi[h], bh)), ones);
            isum[i][h] = _mm256_add_epi32(isum[i][h], _mm256_add_epi32(pl, ph));
          }
        }
      }
    }
    for (int h = 0; h < 2; ++h) {
      __m256 ws = _mm256_set1_ps(1.0f);
      if constexpr (F != IntFmt::kI8)
        ws = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + b * kTileRows + h * 8)));
      for (int i = 0; i < MR; ++i) {
        const __m256 xs = _mm256_set1_ps(a.block_scale.data()[(i0 + i) * blocks + b]);
        __m256 df = _mm256_cvtepi32_ps(isum[i][h]);
        if constexpr (F != IntFmt::kI8) df = _mm256_mul_ps(df, ws);
        acc[i][h] = _mm256_fmadd_ps(df, xs, acc[i][h]);
      }
    }
  }
  for (int h = 0; h < 2; ++h) {
    const int64_t n0 = t * kTileRows + h * 8;
    for (int i = 0; i < MR; ++i) {
      alignas(32) float out[8];
      _mm256_store_ps(out, acc[i][h]);
      for (int c = 0; c < 8 && n0 + c < w.n; ++c) {
        float v = out[c];
        if constexpr (F == IntFmt::kI8) v *= w.channel_scales.data()[n0 + c];
        y[i * ldy + n0 + c] = v + (bias ? bias[n0 + c] : 0.0f);
      }
    }
  }
}

template <IntFmt F>
void int_range(const PackedWeight& w, const QuantizedActs& a, int64_t m, const float* bias, float* y, int64_t t0,
               int64_t t1) {
  for (int64_t t = t0; t < t1; ++t) {
    int64_t i = 0;
    for (; i + 2 <= m; i += 2) int_tile<F, 2>(w, a, i, t, y + i * w.n, w.n, bias);
    if (i < m) int_tile<F, 1>(w, a, i, t, y + i * w.n, w.n, bias);
  }
}

}  // namespace

void linear_float_avx2(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, int64_t n0,
                       int64_t n1) {
  switch (w.format) {
    case DType::kF16: float_range<F16>(w, x, m, bias, y, n0, n1); break;
    case DType::kBF16: float_range<BF16>(w, x, m, bias, y, n0, n1); break;
    default: float_range<F32>(w, x, m, bias, y, n0, n1); break;
  }
}

void linear_int_avx2(const PackedWeight& w, const QuantizedActs& a, int64_t m, const float* bias, float* y, int64_t t0,
                     int64_t t1) {
  switch (w.format) {
    case DType::kI8: int_range<IntFmt::kI8>(w, a, m, bias, y, t0, t1); break;
    case DType::kQ8_0: int_range<IntFmt::kQ8>(w, a, m, bias, y, t0, t1); break;
    default: int_range<IntFmt::kQ4>(w, a, m, bias, y, t0, t1); break;
  }
}

}  // namespace hfs::cpu_fast::detail

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
