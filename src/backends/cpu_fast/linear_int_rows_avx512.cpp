// AVX-512 VNNI kernel for integer weights (i8 / q8_0 / q4_0) against 2..16 activation rows: a multi-row
// step (several sequences' decode rows, or draft tokens being verified). Compiled with the AVX-512 target
// like linear_avx512.cpp, so safe in a baseline x86-64 binary.
//
// One tile (16 outputs) at a time, or from kPairMinRows rows two, the weight stream prefetched ahead as
// decode's: each 32-block's vectors are loaded once into registers and every row's int32 block sum is
// taken from them, so a weight byte is read from memory once for all rows and never again from cache.
// Per row the arithmetic is decode's (int_tile_decode): exact int32 block sums started at the row's
// -offset·Σx, then convert, × the 16 block scales (q8_0/q4_0), one FMA with the row's block scale, in
// block order; × the channel scales (i8) and + bias at the end. So every row is bit for bit what decode
// gives it.
#if defined(__x86_64__)  // x86 kernels only: elsewhere the scalar path runs (cpu_features.h)
#include <immintrin.h>

#include <cstdint>

#include "backends/cpu_fast/isa_target.h"
#include "backends/cpu_fast/linear_kernels.h"

HFS_TARGET_AVX512_BEGIN

#include "backends/cpu_fast/avx512_mask.h"

namespace hfs::cpu_fast::detail {
namespace {

enum class IntFmt { kI8, kQ8, kQ4 };

// Software prefetch distance: twice decode's (linear_float_driver.h's kPrefetchAhead). With 8 rows a block
// takes 8 times decode's arithmetic, so the weight stream comes in bursts between long stretches of
// vpdpbusd, and a core 4 KiB ahead sat in its prefetches waiting for fill buffers (the distances tried:
// bench/results/log/cpu-fast-experiments.md).
constexpr int64_t kRowsPrefetchAhead = 8192;

// MR rows × one tile. Fewer than 4 rows keep the low and high half of each block in separate sums (two
// vpdpbusd chains a row), as decode does, so the latency overlaps; the int32 results are the same.
template <IntFmt F, int MR>
inline void rows_tile(const PackedWeight& w, const QuantizedActs& a, int64_t t, const float* bias, float* y) {
  constexpr bool kSplit = MR < 4;
  constexpr int64_t kBlockBytes = F == IntFmt::kQ4 ? 256 : 512;
  const int64_t kp = w.k_padded, blocks = kp / 32;
  const uint8_t* wq = w.q.data() + t * tile_bytes(w);
  const uint16_t* sc = F == IntFmt::kI8 ? nullptr : w.block_scales.data() + t * blocks * kTileRows;
  const int8_t* xq = a.xq.data();
  const int32_t* xb = a.block_bias.data();
  const float* xs = a.block_scale.data();
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  __m512 acc[MR];
  for (int i = 0; i < MR; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* p = wq + b * kBlockBytes;
    for (int64_t off = 0; off < kBlockBytes; off += 64)
      _mm_prefetch(reinterpret_cast<const char*>(p + kRowsPrefetchAhead + off), _MM_HINT_T0);
    __m512i lo[4], hi[4];
    for (int v = 0; v < 4; ++v) {
      if constexpr (F == IntFmt::kQ4) {
        const __m512i raw = _mm512_loadu_si512(p + v * 64);
        lo[v] = _mm512_and_si512(raw, low4);
        hi[v] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
      } else {
        lo[v] = _mm512_loadu_si512(p + v * 64);
        hi[v] = _mm512_loadu_si512(p + (v + 4) * 64);
      }
    }
    __m512 ws = _mm512_set1_ps(1.0f);
    if constexpr (F != IntFmt::kI8)
      ws = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc + b * kTileRows)));
    for (int i = 0; i < MR; ++i) {
      const int8_t* xr = xq + i * kp + 32 * b;
      __m512i s0 = _mm512_set1_epi32(xb[i * blocks + b]);
      __m512i s1 = kSplit ? _mm512_setzero_si512() : s0;
      for (int v = 0; v < 4; ++v) {
        int32_t xl, xh;
        __builtin_memcpy(&xl, xr + 4 * v, 4);
        __builtin_memcpy(&xh, xr + 16 + 4 * v, 4);
        s0 = _mm512_dpbusd_epi32(s0, lo[v], _mm512_set1_epi32(xl));
        if constexpr (kSplit)
          s1 = _mm512_dpbusd_epi32(s1, hi[v], _mm512_set1_epi32(xh));
        else
          s0 = _mm512_dpbusd_epi32(s0, hi[v], _mm512_set1_epi32(xh));
      }
      if constexpr (kSplit) s0 = _mm512_add_epi32(s0, s1);
      __m512 df = _mm512_cvtepi32_ps(s0);
      if constexpr (F != IntFmt::kI8) df = _mm512_mul_ps(df, ws);
      acc[i] = _mm512_fmadd_ps(df, _mm512_set1_ps(xs[i * blocks + b]), acc[i]);
    }
  }
  const int64_t n0 = t * kTileRows;
  const __mmask16 mk = tail_mask(w.n - n0);
  const __m512 bv = bias ? _mm512_maskz_loadu_ps(mk, bias + n0) : _mm512_setzero_ps();
  __m512 cs = _mm512_set1_ps(1.0f);
  if constexpr (F == IntFmt::kI8) cs = _mm512_loadu_ps(w.channel_scales.data() + n0);
  for (int i = 0; i < MR; ++i) {
    __m512 out = acc[i];
    if constexpr (F == IntFmt::kI8) out = _mm512_mul_ps(out, cs);
    _mm512_mask_storeu_ps(y + i * w.n + n0, mk, _mm512_add_ps(out, bv));
  }
}

// From this many rows a task's tiles go through in pairs (rows_tile_pair): below, the broadcasts do not
// bound a block and the pair's second weight stream gains nothing (a 3-row step takes the same time either
// way, a 5-row one less in pairs; bench/results/log/cpu-fast-experiments.md).
constexpr int kPairMinRows = static_cast<int>(kIntRowsPairMinRows);
// A pair reads two streams, a tile apart; each is prefetched this far ahead, so the bytes in flight are the
// one-tile kernel's kRowsPrefetchAhead.
constexpr int64_t kPairPrefetchAhead = kRowsPrefetchAhead / 2;

// MR rows × two adjacent tiles (t, t + 1, 32 outputs). Each row's activation dwords are broadcast once for
// both tiles' weight vectors: in rows_tile a row-block takes 10 broadcast loads for 8 vpdpbusd, and those
// loads, more than the vpdpbusd, bound a block of many rows (`kernel_bench rows T i8 hot` shows the
// compute ceiling per row count). The 16 weight vectors stay in registers; the 2·MR accumulators are the
// compiler's to spill, an L1 load and store each per block. Per row and tile the arithmetic is rows_tile's
// in the same order, so every output keeps decode's bits.
template <IntFmt F, int MR>
inline void rows_tile_pair(const PackedWeight& w, const QuantizedActs& a, int64_t t, const float* bias, float* y) {
  constexpr int64_t kBlockBytes = F == IntFmt::kQ4 ? 256 : 512;
  const int64_t kp = w.k_padded, blocks = kp / 32, tb = tile_bytes(w);
  const uint8_t* wq = w.q.data() + t * tb;
  const uint16_t* sc = F == IntFmt::kI8 ? nullptr : w.block_scales.data() + t * blocks * kTileRows;
  const int8_t* xq = a.xq.data();
  const int32_t* xb = a.block_bias.data();
  const float* xs = a.block_scale.data();
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  __m512 acc[MR][2];
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    __m512i lo[2][4], hi[2][4];
    __m512 ws[2] = {_mm512_set1_ps(1.0f), _mm512_set1_ps(1.0f)};
    for (int u = 0; u < 2; ++u) {
      // Tile t's stream, once past its own end, runs on into tile t + 3 (the next pair's second tile,
      // which no other stream reaches early); tile t + 1's runs on into t + 2 by itself.
      const int64_t ahead = b * kBlockBytes + kPairPrefetchAhead;
      const uint8_t* pf = u == 0 && ahead >= tb ? wq + 2 * tb + ahead : wq + u * tb + ahead;
      for (int64_t off = 0; off < kBlockBytes; off += 64)
        _mm_prefetch(reinterpret_cast<const char*>(pf + off), _MM_HINT_T0);
      const uint8_t* p = wq + u * tb + b * kBlockBytes;
      for (int v = 0; v < 4; ++v) {
        if constexpr (F == IntFmt::kQ4) {
          const __m512i raw = _mm512_loadu_si512(p + v * 64);
          lo[u][v] = _mm512_and_si512(raw, low4);
          hi[u][v] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
        } else {
          lo[u][v] = _mm512_loadu_si512(p + v * 64);
          hi[u][v] = _mm512_loadu_si512(p + (v + 4) * 64);
        }
      }
      if constexpr (F != IntFmt::kI8)
        ws[u] = _mm512_cvtph_ps(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc + (u * blocks + b) * kTileRows)));
    }
    for (int i = 0; i < MR; ++i) {
      const int8_t* xr = xq + i * kp + 32 * b;
      __m512i s0 = _mm512_set1_epi32(xb[i * blocks + b]), s1 = s0;
      for (int v = 0; v < 4; ++v) {
        int32_t xl, xh;
        __builtin_memcpy(&xl, xr + 4 * v, 4);
        __builtin_memcpy(&xh, xr + 16 + 4 * v, 4);
        const __m512i bl = _mm512_set1_epi32(xl), bh = _mm512_set1_epi32(xh);
        s0 = _mm512_dpbusd_epi32(s0, lo[0][v], bl);
        s1 = _mm512_dpbusd_epi32(s1, lo[1][v], bl);
        s0 = _mm512_dpbusd_epi32(s0, hi[0][v], bh);
        s1 = _mm512_dpbusd_epi32(s1, hi[1][v], bh);
      }
      const __m512 xsv = _mm512_set1_ps(xs[i * blocks + b]);
      __m512 d0 = _mm512_cvtepi32_ps(s0), d1 = _mm512_cvtepi32_ps(s1);
      if constexpr (F != IntFmt::kI8) {
        d0 = _mm512_mul_ps(d0, ws[0]);
        d1 = _mm512_mul_ps(d1, ws[1]);
      }
      acc[i][0] = _mm512_fmadd_ps(d0, xsv, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(d1, xsv, acc[i][1]);
    }
  }
  for (int u = 0; u < 2; ++u) {
    const int64_t n0 = (t + u) * kTileRows;
    const __mmask16 mk = tail_mask(w.n - n0);
    const __m512 bv = bias ? _mm512_maskz_loadu_ps(mk, bias + n0) : _mm512_setzero_ps();
    __m512 cs = _mm512_set1_ps(1.0f);
    if constexpr (F == IntFmt::kI8) cs = _mm512_loadu_ps(w.channel_scales.data() + n0);
    for (int i = 0; i < MR; ++i) {
      __m512 out = acc[i][u];
      if constexpr (F == IntFmt::kI8) out = _mm512_mul_ps(out, cs);
      _mm512_mask_storeu_ps(y + i * w.n + n0, mk, _mm512_add_ps(out, bv));
    }
  }
}

template <IntFmt F, int MR>
void rows_range(const PackedWeight& w, const QuantizedActs& a, const float* bias, float* y, int64_t t0, int64_t t1) {
  int64_t t = t0;
  if constexpr (MR >= kPairMinRows)
    for (; t + 1 < t1; t += 2) rows_tile_pair<F, MR>(w, a, t, bias, y);
  for (; t < t1; ++t) rows_tile<F, MR>(w, a, t, bias, y);
}

template <IntFmt F>
void rows_any(const PackedWeight& w, const QuantizedActs& a, int64_t m, const float* bias, float* y, int64_t t0,
              int64_t t1) {
  switch (m) {
    case 2: return rows_range<F, 2>(w, a, bias, y, t0, t1);
    case 3: return rows_range<F, 3>(w, a, bias, y, t0, t1);
    case 4: return rows_range<F, 4>(w, a, bias, y, t0, t1);
    case 5: return rows_range<F, 5>(w, a, bias, y, t0, t1);
    case 6: return rows_range<F, 6>(w, a, bias, y, t0, t1);
    case 7: return rows_range<F, 7>(w, a, bias, y, t0, t1);
    case 8: return rows_range<F, 8>(w, a, bias, y, t0, t1);
    case 9: return rows_range<F, 9>(w, a, bias, y, t0, t1);
    case 10: return rows_range<F, 10>(w, a, bias, y, t0, t1);
    case 11: return rows_range<F, 11>(w, a, bias, y, t0, t1);
    case 12: return rows_range<F, 12>(w, a, bias, y, t0, t1);
    case 13: return rows_range<F, 13>(w, a, bias, y, t0, t1);
    case 14: return rows_range<F, 14>(w, a, bias, y, t0, t1);
    case 15: return rows_range<F, 15>(w, a, bias, y, t0, t1);
    default: return rows_range<F, 16>(w, a, bias, y, t0, t1);
  }
}

}  // namespace

void linear_int_rows_avx512(const PackedWeight& w, const QuantizedActs& a, int64_t m, const float* bias, float* y,
                            int64_t t0, int64_t t1) {
  switch (w.format) {
    case DType::kI8: rows_any<IntFmt::kI8>(w, a, m, bias, y, t0, t1); break;
    case DType::kQ8_0: rows_any<IntFmt::kQ8>(w, a, m, bias, y, t0, t1); break;
    default: rows_any<IntFmt::kQ4>(w, a, m, bias, y, t0, t1); break;
  }
}

}  // namespace hfs::cpu_fast::detail

HFS_TARGET_END

#endif  // defined(__x86_64__)
