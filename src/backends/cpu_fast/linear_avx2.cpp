// AVX2+FMA+F16C kernels (x86-64 CPUs without AVX-512: Zen 2/3, Intel client cores). The AVX-512 file's
// structure on 8-lane vectors and 16 registers:
//   - decode GEMVs stream one weight row (or tile) after another with four FMA chains and (but for f32)
//     a software prefetch 4 KiB ahead;
//   - float prefill transposes panels of 16 output rows × 256 K into L1 once per call and runs 4
//     activation rows × 16 outputs per pass (8 accumulators, no horizontal sums);
//   - integer prefill runs 4 (q4_0) or 3 (i8/q8_0) activation rows against one 8-output half tile.
// AVX2 has no vpdpbusd: a 4-K lane sum is vpmaddubsw + vpmaddwd.
//   q4_0: the unsigned nibble (0..15) against the signed activation byte; a 16-bit lane's pair sums of
//         a whole block stay exact in int16 (16 products ≤ 15·127: 30480), so one vpmaddwd per block;
//         the +8 offset is removed by the block bias.
//   i8/q8_0: |w| against sign(x, w) with w = stored ^ 0x80 (signed; |−128| = 128 is exact as the unsigned
//         operand, and |x| ≤ 127); the pair sums reach 32512, so every vpmaddubsw is widened at once; no
//         offset to remove.
#if defined(__x86_64__)  // x86 kernels only: elsewhere the scalar path runs (cpu_features.h)
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "backends/cpu_fast/isa_target.h"
#include "backends/cpu_fast/linear_kernels.h"

HFS_TARGET_AVX2_BEGIN

#include "backends/cpu_fast/linear_float_driver.h"
#include "backends/cpu_fast/linear_float_rows.h"
#include "backends/cpu_fast/vec_exp_avx2.h"

namespace hfs::cpu_fast::detail {
namespace {

// ---- float weights: linear_float_driver.h over these traits -----------------------------------------

struct Avx2 {
  using V = __m256;
  using Mask = __m256i;
  static constexpr int64_t kLanes = 8;
  // Prefill: panels of 16 output rows × 256 K (p[k][16], 16 KiB, L1-resident), 4 activation rows per pass:
  // 8 accumulators, two panel vectors and four broadcasts per k. (BLAS libraries' 6×16 micro-kernel needs
  // all 16 registers; GCC then spilled accumulators, and 5 or 6 rows ran at half the speed of 4.)
  static constexpr int64_t kPanelCols = 16, kPanelK = 256, kPanelRows = 4;
  // Masked stores are microcoded on AMD cores (tens of cycles each): only a partial panel takes them.
  static constexpr bool kPlainFullStores = true;
  // Multi-row steps (linear_float_rows.h): tiles of up to 2 activation rows × 4 weight rows (8
  // accumulators, 4 weight vectors: 4 × 2 measured the same).
  static constexpr int64_t kRowsMaxX = 2, kRowsNW = 4;
  // Prefill chunks in decode's order (float_rows_wide): the same tiles.
  static constexpr int64_t kWideX = 2, kWideNW = 4;

  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V load_aligned(const float* p) { return _mm256_load_ps(p); }
  static V bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static Mask mask(int64_t n) { return tail_mask8(n); }
  static bool full(Mask m) { return _mm256_movemask_ps(_mm256_castsi256_ps(m)) == 0xff; }
  static V load_mask(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
  static void store_mask(float* p, Mask m, V v) { _mm256_maskstore_ps(p, m, v); }

  static V wload(F32, const void* base, int64_t i) { return _mm256_loadu_ps(static_cast<const float*>(base) + i); }
  static V wload(F16, const void* base, int64_t i) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + i)));
  }
  static V wload(BF16, const void* base, int64_t i) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static float wscalar(F32, const void* base, int64_t i) { return static_cast<const float*>(base)[i]; }
  static float wscalar(F16, const void* base, int64_t i) { return _cvtsh_ss(static_cast<const uint16_t*>(base)[i]); }
  static float wscalar(BF16, const void* base, int64_t i) {
    uint32_t u = static_cast<uint32_t>(static_cast<const uint16_t*>(base)[i]) << 16;
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
  }

  // f32 takes no software prefetch: it streams 5-15 % slower with it (two prefetches per four loads;
  // 2 threads, [4864, 896], [896, 4864] and the [151936, 896] LM head: 16.3-17.2 vs 17.9-19.7 GB/s),
  // f16 the same either way.
  template <class Fmt>
  static constexpr bool gemv_prefetch() { return !std::is_same_v<Fmt, F32>; }
  // The last k % 8 elements one by one, after the lane sum.
  static int gemv_tail(int64_t) { return 0; }
  template <class Fmt>
  static float gemv_sum(V a0, V a1, V a2, V a3, const float* x, const char* wr, int64_t j, int64_t k, int tail) {
    return gemv_post_tail<Fmt>(hsum(gemv_chain_sum<Fmt>(a0, a1, a2, a3, x, wr, j, k, tail)), x, wr, j, k);
  }
  // gemv_sum before its lane sum: the chains added pairwise.
  template <class Fmt>
  static V gemv_chain_sum(V a0, V a1, V a2, V a3, const float*, const char*, int64_t, int64_t, int) {
    return _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
  }
  // gemv_sum after its lane sum: the last k % 8 elements one by one.
  template <class Fmt>
  static float gemv_post_tail(float t, const float* x, const char* wr, int64_t j, int64_t k) {
    for (; j < k; ++j) t += x[j] * wscalar(Fmt{}, wr, j);
    return t;
  }
  // Lane o: hsum(s[o]) bit for bit, 8 at once. hsum adds lanes (i, i + 4), then (i, i + 2), then (0, 1);
  // each level here makes those same additions for several outputs side by side (float addition commutes
  // exactly): 7 adds for 8 sums instead of 3 per sum, plus shuffles.
  static V reduce_lanes(const V s[8]) {
    __m256 w[4], u[2];
    for (int p = 0; p < 4; ++p)  // half h: output 2p + h, lanes (i, i + 4) added
      w[p] = _mm256_add_ps(_mm256_permute2f128_ps(s[2 * p], s[2 * p + 1], 0x20),
                           _mm256_permute2f128_ps(s[2 * p], s[2 * p + 1], 0x31));
    for (int q = 0; q < 2; ++q)  // half h: outputs 4q + h (lanes 0, 1) and 4q + 2 + h (lanes 2, 3)
      u[q] = _mm256_add_ps(_mm256_shuffle_ps(w[2 * q], w[2 * q + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm256_shuffle_ps(w[2 * q], w[2 * q + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    // Half h: outputs h, 2 + h, 4 + h, 6 + h.
    const __m256 t = _mm256_add_ps(_mm256_shuffle_ps(u[0], u[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm256_shuffle_ps(u[0], u[1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm256_permutevar8x32_ps(t, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  }

  // 8×8 blocks of W rows loaded and transposed (the last kc % 8 K one by one).
  template <class Fmt>
  static void pack_panel(const PackedWeight& w, int64_t n, int64_t n_end, int64_t k0, int64_t kc, float* p) {
    const int64_t k = w.k, es = elem_size(Fmt{});
    const char* base = static_cast<const char*>(w.raw);
    for (int64_t half = 0; half < 2; ++half) {
      int64_t kk = 0;
      for (; kk + 8 <= kc; kk += 8) {
        __m256 r[8];
        for (int64_t i = 0; i < 8; ++i) {
          const int64_t row = n + 8 * half + i;
          r[i] = row < n_end ? wload(Fmt{}, base + row * k * es, k0 + kk) : _mm256_setzero_ps();
        }
        transpose8(r);
        for (int64_t j = 0; j < 8; ++j) _mm256_store_ps(p + (kk + j) * kPanelCols + 8 * half, r[j]);
      }
      for (; kk < kc; ++kk)
        for (int64_t i = 0; i < 8; ++i) {
          const int64_t row = n + 8 * half + i;
          p[kk * kPanelCols + 8 * half + i] = row < n_end ? wscalar(Fmt{}, base + row * k * es, k0 + kk) : 0.0f;
        }
    }
  }

  static void transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; ++i) {
      t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; ++i) {
      u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
      u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
      u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
      u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int j = 0; j < 4; ++j) {
      r[j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x20);
      r[4 + j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x31);
    }
  }
};

// ---- integer weights: 16 output rows along the lanes (linear.h), a 64-byte vector = two 8-output halves --

enum class IntFmt { kI8, kQ8, kQ4 };

template <IntFmt F>
constexpr int64_t block_bytes() { return F == IntFmt::kQ4 ? 256 : 512; }

// Integer additions are associative, so GCC regroups a block's sums into a tree of all its products
// first — 4·MR live vectors, spilled to the stack (q4_0 prefill ran 10-15 % slower than with 2 rows).
// An empty asm that "modifies" the sum pins each step's running total in a register, in program order.
inline void pin(__m256i& v) { asm("" : "+x"(v)); }

inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// The weights of one half (8 outputs) of one 4-K step v of a 32-block at wb, loaded once for every
// activation row: q4_0 the low and high nibbles (K 4v.. and 16+4v..); i8/q8_0 the bytes of both K groups
// and their magnitudes, so that each row's product is |w|·(x·sgn w) = w·x (maddubs takes unsigned × signed;
// |−128| = 128 stays exact as an unsigned byte).
template <IntFmt F>
struct HalfStep {
  __m256i lo, hi;
};
template <>
struct HalfStep<IntFmt::kI8> {
  __m256i lo, hi, alo, ahi;
};
template <>
struct HalfStep<IntFmt::kQ8> : HalfStep<IntFmt::kI8> {};

template <IntFmt F>
inline HalfStep<F> load_half_step(const uint8_t* wb, int v, int h) {
  HalfStep<F> s;
  if constexpr (F == IntFmt::kQ4) {
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb + v * 64 + h * 32));
    s.lo = _mm256_and_si256(raw, low4);
    s.hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
  } else {
    const __m256i flip = _mm256_set1_epi8(-128);
    s.lo = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb + v * 64 + h * 32)), flip);
    s.hi = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb + (v + 4) * 64 + h * 32)), flip);
    s.alo = _mm256_abs_epi8(s.lo);
    s.ahi = _mm256_abs_epi8(s.hi);
  }
  return s;
}

// One row's products for one half step, x at the row's K 4v of the block: q4_0 int16 lanes (added up over
// the block's 4 steps a lane holds 16 products of at most 15·127: 30480 < 2^15), i8/q8_0 int32 lanes.
template <IntFmt F>
inline __m256i half_step_dot(const HalfStep<F>& w, const int8_t* x) {
  if constexpr (F == IntFmt::kQ4) {
    return _mm256_add_epi16(_mm256_maddubs_epi16(w.lo, bcast4(x)), _mm256_maddubs_epi16(w.hi, bcast4(x + 16)));
  } else {
    const __m256i xl = bcast4(x), xh = bcast4(x + 16), ones = _mm256_set1_epi16(1);
    const __m256i pl = _mm256_madd_epi16(_mm256_maddubs_epi16(w.alo, _mm256_sign_epi8(xl, w.lo)), ones);
    const __m256i ph = _mm256_madd_epi16(_mm256_maddubs_epi16(w.ahi, _mm256_sign_epi8(xh, w.hi)), ones);
    return _mm256_add_epi32(pl, ph);
  }
}

template <IntFmt F>
inline __m256i add_step(__m256i sum, __m256i step) {
  return F == IntFmt::kQ4 ? _mm256_add_epi16(sum, step) : _mm256_add_epi32(sum, step);
}

// A block's int32 sums from its step sums: q4_0 widens its int16 pairs and adds the activation offset's
// correction (the row's block bias); i8/q8_0 sums are final.
template <IntFmt F>
inline __m256i finish_block(__m256i sum, int32_t bias) {
  if constexpr (F == IntFmt::kQ4)
    return _mm256_add_epi32(_mm256_madd_epi16(sum, _mm256_set1_epi16(1)), _mm256_set1_epi32(bias));
  else
    return sum;
}

// The int32 sums of one 32-block of 8 outputs (half h of the tile's vectors at wb) for one activation row.
template <IntFmt F>
inline __m256i block_sum(const uint8_t* wb, int h, const int8_t* xr, int32_t bias) {
  __m256i s = half_step_dot<F>(load_half_step<F>(wb, 0, h), xr);
  for (int v = 1; v < 4; ++v) s = add_step<F>(s, half_step_dot<F>(load_half_step<F>(wb, v, h), xr + 4 * v));
  return finish_block<F>(s, bias);
}

// acc += (block sums → float) × block scales × activation scale, the AVX-512 kernel's order.
template <IntFmt F>
inline __m256 block_accumulate(__m256 acc, __m256i isum, __m256 ws, float xs) {
  __m256 df = _mm256_cvtepi32_ps(isum);
  if constexpr (F != IntFmt::kI8) df = _mm256_mul_ps(df, ws);
  return _mm256_fmadd_ps(df, _mm256_set1_ps(xs), acc);
}

template <IntFmt F>
inline __m256 half_scales(const PackedWeight& w, int64_t t, int64_t b, int h) {
  if constexpr (F == IntFmt::kI8) return _mm256_set1_ps(1.0f);
  const uint16_t* sc = w.block_scales.data() + (t * (w.k_padded / 32) + b) * kTileRows + h * 8;
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc)));
}

// Outputs 16t + 8h .. +7 of row i: acc (× the channel scale for i8) + bias, the columns that exist.
template <IntFmt F>
inline void store_half(const PackedWeight& w, int64_t t, int h, __m256 acc, const float* bias, float* yrow) {
  const int64_t n0 = t * kTileRows + h * 8;
  if constexpr (F == IntFmt::kI8) acc = _mm256_mul_ps(acc, _mm256_loadu_ps(w.channel_scales.data() + n0));
  if (w.n - n0 >= 8) {  // masked stores are microcoded on AMD cores: only a partial half takes them
    if (bias != nullptr) acc = _mm256_add_ps(acc, _mm256_loadu_ps(bias + n0));
    _mm256_storeu_ps(yrow + n0, acc);
    return;
  }
  const __m256i mk = tail_mask8(w.n - n0);
  if (bias != nullptr) acc = _mm256_add_ps(acc, _mm256_maskload_ps(bias + n0, mk));
  _mm256_maskstore_ps(yrow + n0, mk, acc);
}

// Prefill: MR activation rows × one half tile (8 outputs). The half's weights are loaded once per block
// for all MR rows; MR int32 (or int16) sums and MR float accumulators stay in registers.
template <IntFmt F, int MR, size_t... I>
inline void int_rows_half(const PackedWeight& w, const QuantizedActs& a, int64_t i0, int64_t t, int h, float* y,
                          const float* bias, std::index_sequence<I...>) {
  const int64_t kp = w.k_padded, blocks = kp / 32;
  const uint8_t* wq = w.q.data() + t * tile_bytes(w);
  const int8_t* xq = a.xq.data() + i0 * kp;
  const int32_t* xb = a.block_bias.data() + i0 * blocks;
  const float* xs = a.block_scale.data() + i0 * blocks;
  __m256 acc[MR];
  ((acc[I] = _mm256_setzero_ps()), ...);
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* wb = wq + b * block_bytes<F>();
    __m256i s[MR];
    ((s[I] = _mm256_setzero_si256()), ...);
    for (int v = 0; v < 4; ++v) {
      const HalfStep<F> wv = load_half_step<F>(wb, v, h);
      ((s[I] = add_step<F>(s[I], half_step_dot<F>(wv, xq + I * kp + 32 * b + 4 * v))), ...);
      (pin(s[I]), ...);
    }
    ((s[I] = finish_block<F>(s[I], xb[I * blocks + b])), ...);
    const __m256 ws = half_scales<F>(w, t, b, h);
    ((acc[I] = block_accumulate<F>(acc[I], s[I], ws, xs[I * blocks + b])), ...);
  }
  ((store_half<F>(w, t, h, acc[I], bias, y + (i0 + I) * w.n)), ...);
}

template <IntFmt F, int MR>
inline void int_rows_half(const PackedWeight& w, const QuantizedActs& a, int64_t i0, int64_t t, int h, float* y,
                          const float* bias) {
  int_rows_half<F, MR>(w, a, i0, t, h, y, bias, std::make_index_sequence<MR>{});
}

// Decode (one activation row): one tile at a time, both halves per block, so the weight read stays one
// sequential stream, prefetched kPrefetchAhead bytes ahead.
template <IntFmt F>
void int_decode(const PackedWeight& w, const QuantizedActs& a, int64_t row, int64_t t0, int64_t t1, float* y,
                const float* bias) {
  const int64_t kp = w.k_padded, blocks = kp / 32, tb = tile_bytes(w);
  const int8_t* xq = a.xq.data() + row * kp;
  const int32_t* xb = a.block_bias.data() + row * blocks;
  const float* xs = a.block_scale.data() + row * blocks;
  for (int64_t t = t0; t < t1; ++t) {
    const uint8_t* wq = w.q.data() + t * tb;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* wb = wq + b * block_bytes<F>();
      for (int64_t off = 0; off < block_bytes<F>(); off += 64)
        _mm_prefetch(reinterpret_cast<const char*>(wb + kPrefetchAhead + off), _MM_HINT_T0);
      const __m256i s0 = block_sum<F>(wb, 0, xq + 32 * b, xb[b]), s1 = block_sum<F>(wb, 1, xq + 32 * b, xb[b]);
      acc0 = block_accumulate<F>(acc0, s0, half_scales<F>(w, t, b, 0), xs[b]);
      acc1 = block_accumulate<F>(acc1, s1, half_scales<F>(w, t, b, 1), xs[b]);
    }
    store_half<F>(w, t, 0, acc0, bias, y + row * w.n);
    store_half<F>(w, t, 1, acc1, bias, y + row * w.n);
  }
}

// Rows per pass: the sums, accumulators, weights and broadcasts of q4_0's 4 rows fit the 16 registers;
// i8/q8_0 hold the weights' magnitudes too and sign each row's activations, so 3.
template <IntFmt F>
constexpr int int_rows_per_pass() { return F == IntFmt::kQ4 ? 4 : 3; }

template <IntFmt F>
void int_range(const PackedWeight& w, const QuantizedActs& a, int64_t m, const float* bias, float* y, int64_t t0,
               int64_t t1) {
  if (m == 1) return int_decode<F>(w, a, 0, t0, t1, y, bias);
  constexpr int MR = int_rows_per_pass<F>();
  // Half tiles outermost: the half's weights (K/2 bytes of q4_0, K of int8) stay in L1/L2 while every
  // activation row streams past them.
  for (int64_t t = t0; t < t1; ++t)
    for (int h = 0; h < 2; ++h) {
      int64_t i = 0;
      for (; i + MR <= m; i += MR) int_rows_half<F, MR>(w, a, i, t, h, y, bias);
      switch (m - i) {
        case 3: int_rows_half<F, 3>(w, a, i, t, h, y, bias); break;
        case 2: int_rows_half<F, 2>(w, a, i, t, h, y, bias); break;
        case 1: int_rows_half<F, 1>(w, a, i, t, h, y, bias); break;
        default: break;
      }
    }
}

}  // namespace

void linear_float_avx2(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, int64_t n0,
                       int64_t n1) {
  linear_float<Avx2>(w, x, m, bias, y, n0, n1);
}

void linear_float_rows_avx2(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, int64_t n0,
                            int64_t n1) {
  if (m > kFloatRowsMax) return linear_float_rows_wide<Avx2>(w, x, m, bias, y, n0, n1);
  linear_float_rows<Avx2>(w, x, m, bias, y, n0, n1);
}

void linear_int_avx2(const PackedWeight& w, const QuantizedActs& a, int64_t m, const float* bias, float* y, int64_t t0,
                     int64_t t1) {
  switch (w.format) {
    case DType::kI8: int_range<IntFmt::kI8>(w, a, m, bias, y, t0, t1); break;
    case DType::kQ8_0: int_range<IntFmt::kQ8>(w, a, m, bias, y, t0, t1); break;
    default: int_range<IntFmt::kQ4>(w, a, m, bias, y, t0, t1); break;
  }
}

void quantize_acts_avx2(const float* x, int64_t i0, int64_t i1, int64_t k, int offset, QuantizedActs& a) {
  const int64_t kp = a.k_padded, blocks = kp / 32;
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256i off = _mm256_set1_epi16(static_cast<int16_t>(offset));
  for (int64_t i = i0; i < i1; ++i) {
    const float* xr = x + i * k;
    int8_t* xq = a.xq.data() + i * kp;
    float* bs = a.block_scale.data() + i * blocks;
    int32_t* bb = a.block_bias.data() + i * blocks;
    for (int64_t b = 0; b < blocks; ++b) {
      __m256 v[4];
      for (int q = 0; q < 4; ++q) v[q] = _mm256_maskload_ps(xr + b * 32 + q * 8, tail_mask8(k - b * 32 - q * 8));
      const __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                                     _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
      __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
      m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
      const float amax = _mm_cvtss_f32(_mm_max_ss(m4, _mm_movehdup_ps(m4)));
      const float s = amax / 127.0f, inv = s != 0 ? 1.0f / s : 0.0f;
      const __m256 iv = _mm256_set1_ps(inv);
      // cvtps rounds to nearest even (default MXCSR), as the portable path does; |x·inv| ≤ 127, so the
      // saturating packs are exact. packs interleave 128-bit lanes; the permute puts them back in order.
      const __m256i c0 = _mm256_cvtps_epi32(_mm256_mul_ps(v[0], iv)), c1 = _mm256_cvtps_epi32(_mm256_mul_ps(v[1], iv));
      const __m256i c2 = _mm256_cvtps_epi32(_mm256_mul_ps(v[2], iv)), c3 = _mm256_cvtps_epi32(_mm256_mul_ps(v[3], iv));
      const __m256i w01 = _mm256_packs_epi32(c0, c1), w23 = _mm256_packs_epi32(c2, c3);  // int16, lanes interleaved
      const __m256i q = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(w01, w23), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(xq + b * 32), q);
      bs[b] = s;
      // Σ of the 32 values (the int16 lanes hold them in pairs' order; the sum does not care).
      const __m256i s32 = _mm256_madd_epi16(_mm256_add_epi16(w01, w23), off);
      __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
      h = _mm_add_epi32(h, _mm_unpackhi_epi64(h, h));
      h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 1));
      bb[b] = -_mm_cvtsi128_si32(h);
    }
  }
}

}  // namespace hfs::cpu_fast::detail

HFS_TARGET_END

#endif  // defined(__x86_64__)
