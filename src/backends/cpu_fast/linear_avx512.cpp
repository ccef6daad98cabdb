// AVX-512 kernels (F/BW/VL/VNNI/BF16). Every function here carries the target through
// HFS_TARGET_AVX512_BEGIN (isa_target.h), so the file is safe to compile into a baseline x86-64 binary:
// nothing runs unless dispatch picked it.
#if defined(__x86_64__)  // x86 kernels only: elsewhere the scalar path runs (cpu_features.h)
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "backends/cpu_fast/half.h"
#include "backends/cpu_fast/isa_target.h"
#include "backends/cpu_fast/linear_kernels.h"

HFS_TARGET_AVX512_BEGIN

#include "backends/cpu_fast/avx512_mask.h"
#include "backends/cpu_fast/avx512_transpose.h"
#include "backends/cpu_fast/linear_float_driver.h"
#include "backends/cpu_fast/linear_float_rows.h"

namespace hfs::cpu_fast::detail {
namespace {

// Weight rows up to this many elements take float_rows_short in a multi-row step (16 of them, f32, fill
// 32 KB: L1).
constexpr int64_t kShortRowK = 512;

// ---- float weights: linear_float_driver.h over these traits -----------------------------------------

struct Avx512 {
  using V = __m512;
  using Mask = __mmask16;
  static constexpr int64_t kLanes = 16;
  // Prefill: panels of 32 output rows × 256 K (p[k][32], 32 KiB, L1-resident), 8 activation rows per pass:
  // per k, two panel vectors times 8 broadcast activations — 16 FMAs. A row-wise tile widens each f16
  // weight once per 4 activation rows and reduces 16 accumulators per 4×4 outputs, and runs at 30-50 % of
  // the FMA peak.
  static constexpr int64_t kPanelCols = 32, kPanelK = 256, kPanelRows = 8;
  static constexpr bool kPlainFullStores = false;
  // Multi-row steps (linear_float_rows.h): tiles of up to 6 activation rows × 4 weight rows (24
  // accumulators, 4 weight vectors, one activation vector at a time: no spills).
  static constexpr int64_t kRowsMaxX = 6, kRowsNW = 4;
  // Prefill chunks in decode's order (float_rows_wide): the same tiles. (All four chains in registers,
  // 3 rows × 2 weight rows × 4 chains, measured 0.6-0.8x of this: 32 loads per 24 FMAs once GCC folds the
  // activation loads into the FMAs.)
  static constexpr int64_t kWideX = 6, kWideNW = 4;

  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V load_aligned(const float* p) { return _mm512_load_ps(p); }
  static V bcast(const float* p) { return _mm512_set1_ps(*p); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static Mask mask(int64_t n) { return tail_mask(n); }
  static bool full(Mask m) { return m == 0xffff; }
  static V load_mask(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store_mask(float* p, Mask m, V v) { _mm512_mask_storeu_ps(p, m, v); }

  static V wload(F32, const void* base, int64_t i) { return _mm512_loadu_ps(static_cast<const float*>(base) + i); }
  static V wload(F16, const void* base, int64_t i) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(base) + i)));
  }
  static V wload(BF16, const void* base, int64_t i) {
    __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(base) + i));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static V wload_mask(F32, const void* base, int64_t i, Mask mk) {
    return _mm512_maskz_loadu_ps(mk, static_cast<const float*>(base) + i);
  }
  static V wload_mask(F16, const void* base, int64_t i, Mask mk) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mk, static_cast<const uint16_t*>(base) + i));
  }
  static V wload_mask(BF16, const void* base, int64_t i, Mask mk) {
    __m256i h = _mm256_maskz_loadu_epi16(mk, static_cast<const uint16_t*>(base) + i);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }

  template <class Fmt>
  static constexpr bool gemv_prefetch() { return true; }
  // The last k % 16 elements as one masked FMA into a1, then the lane sum.
  static Mask gemv_tail(int64_t k) { return tail_mask(k % 16); }
  template <class Fmt>
  static float gemv_sum(V a0, V a1, V a2, V a3, const float* x, const char* wr, int64_t j, int64_t k, Mask tail) {
    return _mm512_reduce_add_ps(gemv_chain_sum<Fmt>(a0, a1, a2, a3, x, wr, j, k, tail));
  }
  // gemv_sum before its lane sum: the tail into chain 1, then the chains added pairwise.
  template <class Fmt>
  static V gemv_chain_sum(V a0, V a1, V a2, V a3, const float* x, const char* wr, int64_t j, int64_t k, Mask tail) {
    if (j < k) a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, x + j), wload_mask(Fmt{}, wr, j, tail), a1);
    return _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3));
  }
  // The tail is in the chain sum: nothing follows the lane sum.
  template <class Fmt>
  static float gemv_post_tail(float t, const float*, const char*, int64_t, int64_t) { return t; }
  // Lane o: _mm512_reduce_add_ps(s[o]) bit for bit, 16 at once (reduce_add16 below).
  static V reduce_lanes(const V s[16]);
  // How the half_group GEMV variants ("zmm-r1-*", linear_half_gemv.h) finish instead: the lane sum, then
  // the last k % 16 elements one by one.
  template <class Fmt>
  static float gemv_sum_scalar_tail(V a0, V a1, V a2, V a3, const float* x, const char* wr, int64_t j, int64_t k) {
    float t = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
    const auto* w16 = reinterpret_cast<const uint16_t*>(wr);
    for (; j < k; ++j) t += x[j] * (std::is_same_v<Fmt, F16> ? f16_to_f32(w16[j]) : bf16_to_f32(w16[j]));
    return t;
  }

  // 16×16 blocks of W rows loaded (masked past kc) and transposed.
  template <class Fmt>
  static void pack_panel(const PackedWeight& w, int64_t n, int64_t n_end, int64_t k0, int64_t kc, float* p) {
    const int64_t k = w.k, es = elem_size(Fmt{});
    const char* base = static_cast<const char*>(w.raw);
    for (int64_t half = 0; half < 2; ++half)
      for (int64_t kk = 0; kk < kc; kk += 16) {
        const Mask mk = tail_mask(kc - kk);
        __m512 r[16];
        for (int64_t i = 0; i < 16; ++i) {
          const int64_t row = n + 16 * half + i;
          r[i] = row < n_end ? wload_mask(Fmt{}, base + row * k * es, k0 + kk, mk) : _mm512_setzero_ps();
        }
        transpose16(r);
        for (int64_t j = 0; j < 16 && kk + j < kc; ++j) _mm512_store_ps(p + (kk + j) * kPanelCols + 16 * half, r[j]);
      }
  }
};

// ---- float weights, short rows, several activation rows: 16 decode sums at once ----------------------

// Lane sums of v[0..16), lane o of the result holding v[o]'s: each pairs the lanes exactly as
// _mm512_reduce_add_ps does — (i, i + 8), then (i, i + 4), (i, i + 2), (i, i + 1) — and float addition
// commutes exactly, so lane o is bit for bit _mm512_reduce_add_ps(v[o]). Each level adds two vectors' halves
// (then quarters, pairs, neighbours) side by side: 15 adds for 16 sums instead of 4 per sum, plus shuffles.
inline __m512 reduce_add16(const __m512 v[16]) {
  __m512 w[8], u[4], t[2];
  for (int p = 0; p < 8; ++p)  // outputs 2p, 2p + 1: 8 partials each, one per 256-bit half
    w[p] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * p], v[2 * p + 1], 0x44), _mm512_shuffle_f32x4(v[2 * p], v[2 * p + 1], 0xEE));
  for (int q = 0; q < 4; ++q)  // outputs 4q + j: 4 partials each, in 128-bit quarter j
    u[q] = _mm512_add_ps(_mm512_shuffle_f32x4(w[2 * q], w[2 * q + 1], 0x88), _mm512_shuffle_f32x4(w[2 * q], w[2 * q + 1], 0xDD));
  for (int r = 0; r < 2; ++r)  // quarter j: outputs 8r + j and 8r + 4 + j, two partials each
    t[r] = _mm512_add_ps(_mm512_shuffle_ps(u[2 * r], u[2 * r + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(u[2 * r], u[2 * r + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  // Lane 4j + e: output 4e + j.
  const __m512 sums = _mm512_add_ps(_mm512_shuffle_ps(t[0], t[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                    _mm512_shuffle_ps(t[0], t[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(order, sums);
}

inline __m512 Avx512::reduce_lanes(const __m512 s[16]) { return reduce_add16(s); }

// Rows [0, m) × outputs [n0, n1) of a weight whose rows are at most kShortRowK elements: each output's four
// chains, tail and chain sum through float_gemv's own gemv_chains and gemv_chain_sum, then the lane sums of
// 16 outputs at once (reduce_add16) and decode's bias add as one vector. A weight row this short costs
// decode more in its lane sum (about 10 instructions) than in its FMAs (4 for K = 64), and float_rows' tiles
// keep their chains' sums in memory between passes: for stories260K (K = 64, 172) an 8-row step took 11x a
// decode step's GLU. 16 weight rows of at most kShortRowK f32 stay in L1 while every activation row passes
// over them.
// NV ≥ 0: the row's whole 16-element vectors, known at compile time (the loops then unroll without the
// branches a run-time K takes: an 8-row step of stories260K 10 % faster); -1: K at run time.
template <class Fmt, int NV>
void float_rows_short(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, int64_t n0,
                      int64_t n1) {
  const int64_t k = w.k, es = elem_size(Fmt{}), kv = NV >= 0 ? 16 * NV : k / 16 * 16;
  const char* base = static_cast<const char*>(w.raw);
  const __mmask16 tail = Avx512::gemv_tail(k);
  for (int64_t g = n0; g < n1; g += 16) {
    const int64_t outs = std::min<int64_t>(16, n1 - g);
    const __mmask16 om = tail_mask(outs);
    const __m512 bv = bias != nullptr ? _mm512_maskz_loadu_ps(om, bias + g) : _mm512_setzero_ps();
    for (int64_t r = 0; r < m; ++r) {
      const float* xr = x + r * k;
      __m512 s[16];
      for (int64_t o = 0; o < 16; ++o) {
        if (o >= outs) {
          s[o] = _mm512_setzero_ps();
          continue;
        }
        const char* wr = base + (g + o) * k * es;
        __m512 a0, a1, a2, a3;
        gemv_chains<Avx512, Fmt, false>(xr, wr, kv, a0, a1, a2, a3);
        s[o] = Avx512::gemv_chain_sum<Fmt>(a0, a1, a2, a3, xr, wr, kv, k, tail);
      }
      _mm512_mask_storeu_ps(y + r * w.n + g, om, _mm512_add_ps(reduce_add16(s), bv));
    }
  }
}

// float_rows_short with f32 rows of up to kShortRowK elements specialized on their whole vectors.
template <class Fmt, int... NV>
void float_rows_short_any(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, int64_t n0,
                          int64_t n1, std::integer_sequence<int, NV...>) {
  if constexpr (!std::is_same_v<Fmt, F32>) {
    float_rows_short<Fmt, -1>(w, x, m, bias, y, n0, n1);
  } else {
    const int64_t nv = w.k / 16;
    if (!((nv == NV) || ...)) return float_rows_short<Fmt, -1>(w, x, m, bias, y, n0, n1);
    ((nv == NV ? float_rows_short<Fmt, NV>(w, x, m, bias, y, n0, n1) : void()), ...);
  }
}

// ---- f32 weights of short rows, transposed (add_short_transpose): 16 outputs along the lanes ---------

// R activation rows × NB blocks of 16 outputs from g (outputs past n1 masked off): per k, the NB weight
// vectors t[k][g..] once for the R rows, each row's x[k] broadcast. Every output lane is one chain
// acc = fma(x[k], w[n][k], acc) over k = 0..K-1, then + bias: its bits do not depend on R, NB or where the
// call's range starts, so decode (R = 1) and every row of a multi-row step agree bit for bit.
template <int R, int NB>
void short_t_pass(const float* t, int64_t np, int64_t k, const float* x, const float* bias, float* y, int64_t n,
                  int64_t g, int64_t n1) {
  __m512 acc[R][NB];
  __mmask16 mk[NB];
#pragma GCC unroll 8
  for (int b = 0; b < NB; ++b) {
    mk[b] = tail_mask(std::max<int64_t>(0, n1 - (g + 16 * b)));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r][b] = _mm512_setzero_ps();
  }
  const float* tp = t + g;
  for (int64_t kk = 0; kk < k; ++kk, tp += np) {
    __m512 wv[NB];
#pragma GCC unroll 8
    for (int b = 0; b < NB; ++b) wv[b] = _mm512_maskz_loadu_ps(mk[b], tp + 16 * b);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 xb = _mm512_set1_ps(x[r * k + kk]);
#pragma GCC unroll 8
      for (int b = 0; b < NB; ++b) acc[r][b] = _mm512_fmadd_ps(xb, wv[b], acc[r][b]);
    }
  }
#pragma GCC unroll 8
  for (int b = 0; b < NB; ++b) {
    const __m512 bv = bias != nullptr ? _mm512_maskz_loadu_ps(mk[b], bias + g + 16 * b) : _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(y + r * n + g + 16 * b, mk[b], _mm512_add_ps(acc[r][b], bv));
  }
}

// Outputs [n0, n1) of m ≤ kFloatRowsMax rows: 8 rows at a time (24 accumulators, 3 weight vectors), then 4,
// 2, 1. One row takes 8 blocks, so 8 independent chains cover the FMA latency. K ≤ 512 keeps a block
// column of t (K × 64 bytes) in L1 while the rows pass.
template <int R, int NB>
void short_t_rows(const PackedWeight& w, const float* x, const float* bias, float* y, int64_t n0, int64_t n1) {
  const int64_t np = static_cast<int64_t>(w.short_t.size()) / w.k;  // t's row stride: n rounded up to 16
  for (int64_t g = n0; g < n1; g += 16 * NB) short_t_pass<R, NB>(w.short_t.data(), np, w.k, x, bias, y, w.n, g, n1);
}
void float_short_t(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, int64_t n0,
                   int64_t n1) {
  for (int64_t r = 0; r < m;) {
    const float* xr = x + r * w.k;
    float* yr = y + r * w.n;
    const int64_t left = m - r;
    if (left >= 8) {
      short_t_rows<8, 3>(w, xr, bias, yr, n0, n1);
      r += 8;
    } else if (left >= 4) {
      short_t_rows<4, 4>(w, xr, bias, yr, n0, n1);
      r += 4;
    } else if (left >= 2) {
      short_t_rows<2, 4>(w, xr, bias, yr, n0, n1);
      r += 2;
    } else {
      short_t_rows<1, 8>(w, xr, bias, yr, n0, n1);
      r += 1;
    }
  }
}

// ---- integer weights: 16 output rows along the lanes (linear.h) -------------------------------------

enum class IntFmt { kI8, kQ8, kQ4 };

// MR activation rows × NR tiles of 16 outputs. Per 32-block each int32 lane sums its output's whole
// block — 8 vpdpbusd, each 4 K for 16 outputs against 4 broadcast activation bytes — started at the
// row's -offset·Σx; then one convert, one multiply by the 16 block scales (q8_0/q4_0) and one FMA with
// the activation scale. With MR·NR < 4 (the 2-3 tail rows of a prefill chunk; a single row goes to
// int_tile_decode) the low and high halves of the block get separate sums so the vpdpbusd latency overlaps.
template <IntFmt F, int MR, int NR>
inline void int_tile(const PackedWeight& w, const QuantizedActs& a, int64_t i0, int64_t t, float* y, int64_t ldy,
                     const float* bias) {
  constexpr bool kSplit = MR * NR < 4;
  constexpr int kHi = kSplit ? 1 : 0;  // which sum the high half of the block goes to
  const int64_t kp = w.k_padded, blocks = kp / 32, tb = tile_bytes(w);
  constexpr int64_t kBlockBytes = F == IntFmt::kQ4 ? 256 : 512;
  const uint8_t* wq = w.q.data() + t * tb;
  const uint16_t* sc = F == IntFmt::kI8 ? nullptr : w.block_scales.data() + t * blocks * kTileRows;
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  __m512 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < NR; ++r) acc[i][r] = _mm512_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    __m512i isum[MR][NR][kHi + 1];
    for (int i = 0; i < MR; ++i)
      for (int r = 0; r < NR; ++r) {
        isum[i][r][0] = _mm512_set1_epi32(a.block_bias.data()[(i0 + i) * blocks + b]);
        if constexpr (kSplit) isum[i][r][kHi] = _mm512_setzero_si512();
      }
    for (int v = 0; v < 4; ++v) {
      // Weights of K steps v (elements 32b+4v..) and v+4 (32b+16+4v..) for each tile.
      __m512i lo[NR], hi[NR];
      for (int r = 0; r < NR; ++r) {
        const uint8_t* p = wq + r * tb + b * kBlockBytes + v * 64;
        if constexpr (F == IntFmt::kQ4) {
          const __m512i raw = _mm512_loadu_si512(p);
          lo[r] = _mm512_and_si512(raw, low4);
          hi[r] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
        } else {
          lo[r] = _mm512_loadu_si512(p);
          hi[r] = _mm512_loadu_si512(p + 4 * 64);
        }
      }
      for (int i = 0; i < MR; ++i) {
        const int8_t* xr = a.xq.data() + (i0 + i) * kp + 32 * b + 4 * v;
        int32_t xl, xh;
        __builtin_memcpy(&xl, xr, 4);
        __builtin_memcpy(&xh, xr + 16, 4);
        const __m512i bl = _mm512_set1_epi32(xl), bh = _mm512_set1_epi32(xh);
        for (int r = 0; r < NR; ++r) {
          isum[i][r][0] = _mm512_dpbusd_epi32(isum[i][r][0], lo[r], bl);
          isum[i][r][kHi] = _mm512_dpbusd_epi32(isum[i][r][kHi], hi[r], bh);
        }
      }
    }
    for (int r = 0; r < NR; ++r) {
      __m512 ws = _mm512_set1_ps(1.0f);
      if constexpr (F != IntFmt::kI8)
        ws = _mm512_cvtph_ps(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc + r * blocks * kTileRows + b * kTileRows)));
      for (int i = 0; i < MR; ++i) {
        __m512i d = isum[i][r][0];
        if constexpr (kSplit) d = _mm512_add_epi32(d, isum[i][r][kHi]);
        const __m512 xs = _mm512_set1_ps(a.block_scale.data()[(i0 + i) * blocks + b]);
        __m512 df = _mm512_cvtepi32_ps(d);
        if constexpr (F != IntFmt::kI8) df = _mm512_mul_ps(df, ws);
        acc[i][r] = _mm512_fmadd_ps(df, xs, acc[i][r]);
      }
    }
  }
  for (int r = 0; r < NR; ++r) {
    const int64_t n0 = (t + r) * kTileRows;
    const int64_t left = w.n - n0;
    const __mmask16 mk = tail_mask(left);
    const __m512 bv = bias ? _mm512_maskz_loadu_ps(mk, bias + n0) : _mm512_setzero_ps();
    for (int i = 0; i < MR; ++i) {
      __m512 out = acc[i][r];
      if constexpr (F == IntFmt::kI8) out = _mm512_mul_ps(out, _mm512_loadu_ps(w.channel_scales.data() + n0));
      _mm512_mask_storeu_ps(y + i * ldy + n0, mk, _mm512_add_ps(out, bv));
    }
  }
}

// One activation row (decode, and a prefill tail row), one tile: two blocks per iteration, each with its
// low and high half in separate int32 sums, so four vpdpbusd chains are in flight and the core runs
// further ahead of the weight loads than with two (2 threads, kernel_bench: i8 23-25 GB/s against 21-23,
// q8_0 22-24 against 19-21, q4_0 the same). Sums, conversions and the float
// accumulation order are int_tile<F, 1, 1>'s, so the result is too.
template <IntFmt F>
inline void int_tile_decode(const PackedWeight& w, const QuantizedActs& a, int64_t i, int64_t t, float* y,
                            const float* bias) {
  const int64_t kp = w.k_padded, blocks = kp / 32, tb = tile_bytes(w);
  const int8_t* xq = a.xq.data() + i * kp;
  const int32_t* xb = a.block_bias.data() + i * blocks;
  const float* xs = a.block_scale.data() + i * blocks;
  constexpr int64_t kBlockBytes = F == IntFmt::kQ4 ? 256 : 512;
  const uint8_t* wq = w.q.data() + t * tb;
  const uint16_t* sc = F == IntFmt::kI8 ? nullptr : w.block_scales.data() + t * blocks * kTileRows;
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  __m512 acc = _mm512_setzero_ps();
  // Block b's int32 sums (bias + low half, high half) for the 16 outputs.
  auto block_sum = [&](int64_t b, __m512i& lo_sum, __m512i& hi_sum) {
    lo_sum = _mm512_set1_epi32(xb[b]);
    hi_sum = _mm512_setzero_si512();
    for (int v = 0; v < 4; ++v) {
      const uint8_t* p = wq + b * kBlockBytes + v * 64;
      __m512i lo, hi;
      if constexpr (F == IntFmt::kQ4) {
        const __m512i raw = _mm512_loadu_si512(p);
        lo = _mm512_and_si512(raw, low4);
        hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
      } else {
        lo = _mm512_loadu_si512(p);
        hi = _mm512_loadu_si512(p + 4 * 64);
      }
      const int8_t* xr = xq + 32 * b + 4 * v;
      int32_t xl, xh;
      __builtin_memcpy(&xl, xr, 4);
      __builtin_memcpy(&xh, xr + 16, 4);
      lo_sum = _mm512_dpbusd_epi32(lo_sum, lo, _mm512_set1_epi32(xl));
      hi_sum = _mm512_dpbusd_epi32(hi_sum, hi, _mm512_set1_epi32(xh));
    }
  };
  auto accumulate = [&](int64_t b, __m512i lo_sum, __m512i hi_sum) {
    __m512 df = _mm512_cvtepi32_ps(_mm512_add_epi32(lo_sum, hi_sum));
    if constexpr (F != IntFmt::kI8)
      df = _mm512_mul_ps(df, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc + b * kTileRows))));
    acc = _mm512_fmadd_ps(df, _mm512_set1_ps(xs[b]), acc);
  };
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    __m512i l0, h0, l1, h1;
    for (int64_t off = 0; off < 2 * kBlockBytes; off += 64)
      _mm_prefetch(reinterpret_cast<const char*>(wq + b * kBlockBytes + kPrefetchAhead + off), _MM_HINT_T0);
    block_sum(b, l0, h0);
    block_sum(b + 1, l1, h1);
    accumulate(b, l0, h0);
    accumulate(b + 1, l1, h1);
  }
  if (b < blocks) {
    __m512i l0, h0;
    block_sum(b, l0, h0);
    accumulate(b, l0, h0);
  }
  const int64_t n0 = t * kTileRows;
  const __mmask16 mk = tail_mask(w.n - n0);
  const __m512 bv = bias ? _mm512_maskz_loadu_ps(mk, bias + n0) : _mm512_setzero_ps();
  if constexpr (F == IntFmt::kI8) acc = _mm512_mul_ps(acc, _mm512_loadu_ps(w.channel_scales.data() + n0));
  _mm512_mask_storeu_ps(y + i * w.n + n0, mk, _mm512_add_ps(acc, bv));
}

template <IntFmt F, int MR>
inline void int_rows(const PackedWeight& w, const QuantizedActs& a, int64_t i, int64_t t0, int64_t t1, float* y,
                     const float* bias) {
  int64_t t = t0;
  if constexpr (MR == 1) {
    // Decode: one tile at a time keeps the weight read a single sequential stream.
    for (; t < t1; ++t) int_tile_decode<F>(w, a, i, t, y, bias);
  } else {
    for (; t + 2 <= t1; t += 2) int_tile<F, MR, 2>(w, a, i, t, y + i * w.n, w.n, bias);
    if (t < t1) int_tile<F, MR, 1>(w, a, i, t, y + i * w.n, w.n, bias);
  }
}

// Tiles in pairs, all activation rows per pair: the pair's weights (24 KiB of q4_0 or 48 KiB of int8
// for K = 1536) stay in L1/L2 while the activation rows stream past them.
template <IntFmt F>
void int_range(const PackedWeight& w, const QuantizedActs& a, int64_t m, const float* bias, float* y, int64_t t0,
               int64_t t1) {
  for (int64_t tp = t0; tp < t1; tp += 2) {
    const int64_t te = std::min(t1, tp + 2);
    if (m == 1) {
      int_rows<F, 1>(w, a, 0, tp, te, y, bias);
      continue;
    }
    int64_t i = 0;
    for (; i + 4 <= m; i += 4) int_rows<F, 4>(w, a, i, tp, te, y, bias);
    switch (m - i) {
      case 3: int_rows<F, 3>(w, a, i, tp, te, y, bias); break;
      case 2: int_rows<F, 2>(w, a, i, tp, te, y, bias); break;
      case 1: int_rows<F, 1>(w, a, i, tp, te, y, bias); break;
      default: break;
    }
  }
}

}  // namespace

void quantize_acts_avx512(const float* x, int64_t i0, int64_t i1, int64_t k, int offset, QuantizedActs& a) {
  const int64_t kp = a.k_padded, blocks = kp / 32;
  const __m512i off = _mm512_set1_epi8(static_cast<char>(offset));
  for (int64_t i = i0; i < i1; ++i) {
    const float* xr = x + i * k;
    int8_t* xq = a.xq.data() + i * kp;
    float* bs = a.block_scale.data() + i * blocks;
    int32_t* bb = a.block_bias.data() + i * blocks;
    for (int64_t b = 0; b < blocks; ++b) {
      __m512 v[2];
      for (int h = 0; h < 2; ++h) {
        const int64_t e = b * 32 + h * 16;
        const int64_t left = k - e;
        const __mmask16 mk = tail_mask(left);
        v[h] = _mm512_maskz_loadu_ps(mk, xr + e);
      }
      const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v[0]), _mm512_abs_ps(v[1])));
      const float s = amax / 127.0f, inv = s != 0 ? 1.0f / s : 0.0f;
      const __m512 iv = _mm512_set1_ps(inv);
      // cvtps rounds to nearest even (default MXCSR), as the scalar path does.
      const __m128i q0 = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v[0], iv)));
      const __m128i q1 = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v[1], iv)));
      const __m256i q = _mm256_set_m128i(q1, q0);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(xq + b * 32), q);
      bs[b] = s;
      // Σ offset·x over the block: vpdpbusd of the offset bytes against the 32 values, then a lane sum.
      const __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), off, _mm512_zextsi256_si512(q));
      bb[b] = -_mm512_reduce_add_epi32(_mm512_maskz_mov_epi32(0x00ff, sums));
    }
  }
}

void linear_float_avx512(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, int64_t n0,
                         int64_t n1) {
  if (m == 1 && w.short_t.size() != 0) return float_short_t(w, x, m, bias, y, n0, n1);
  linear_float<Avx512>(w, x, m, bias, y, n0, n1);
}

void linear_float_rows_avx512(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, int64_t n0,
                              int64_t n1) {
  if (w.short_t.size() != 0) return float_short_t(w, x, m, bias, y, n0, n1);
  if (w.k > kShortRowK)
    return m > kFloatRowsMax ? linear_float_rows_wide<Avx512>(w, x, m, bias, y, n0, n1)
                             : linear_float_rows<Avx512>(w, x, m, bias, y, n0, n1);
  with_float_format(w.format, [&](auto fmt) {
    float_rows_short_any<decltype(fmt)>(w, x, m, bias, y, n0, n1, std::make_integer_sequence<int, kShortRowK / 16 + 1>{});
  });
}

void linear_half_rows_r1_avx512(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y,
                                int64_t n0, int64_t n1) {
  auto run = [&](auto fmt) {
    using Fmt = decltype(fmt);
    float_rows<Avx512, Fmt>(w, x, m, bias, y, n0, n1,
                            [](__m512 a0, __m512 a1, __m512 a2, __m512 a3, const float* xr, const char* wr, int64_t j,
                               int64_t k) { return Avx512::gemv_sum_scalar_tail<Fmt>(a0, a1, a2, a3, xr, wr, j, k); });
  };
  if (w.format == DType::kF16)
    run(F16{});
  else
    run(BF16{});
}

void linear_int_avx512(const PackedWeight& w, const QuantizedActs& a, int64_t m, const float* bias, float* y,
                       int64_t t0, int64_t t1) {
  switch (w.format) {
    case DType::kI8: int_range<IntFmt::kI8>(w, a, m, bias, y, t0, t1); break;
    case DType::kQ8_0: int_range<IntFmt::kQ8>(w, a, m, bias, y, t0, t1); break;
    default: int_range<IntFmt::kQ4>(w, a, m, bias, y, t0, t1); break;
  }
}

// Vector v of a block is dword v of each of the 16 rows: one 16-lane gather per vector.
void pack_tile_avx512(const uint8_t* src, int64_t row_bytes, int64_t block_bytes, int64_t qs_offset, int64_t blocks,
                      int64_t steps, uint32_t flip, uint8_t* dst, uint16_t* scales) {
  const __m512i rows = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32(static_cast<int32_t>(row_bytes)));
  const __m512i fl = _mm512_set1_epi32(static_cast<int32_t>(flip));
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* blk = src + b * block_bytes;
    for (int64_t v = 0; v < steps; ++v) {
      const __m512i w = _mm512_i32gather_epi32(rows, blk + qs_offset + 4 * v, 1);
      _mm512_storeu_si512(dst + (b * steps + v) * 64, _mm512_xor_si512(w, fl));
    }
    // The scale's 2 bytes are the low half of the dword at the block's start.
    if (scales != nullptr)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(scales + b * kTileRows),
                          _mm512_cvtepi32_epi16(_mm512_i32gather_epi32(rows, blk, 1)));
  }
}

}  // namespace hfs::cpu_fast::detail

HFS_TARGET_END

#endif  // defined(__x86_64__)
