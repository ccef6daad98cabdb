// AMX-INT8 kernel for the integer formats (prefill: m ≥ 16 activation rows). Like linear_avx512.cpp,
// every function carries its target through HFS_TARGET_AMX_BEGIN (isa_target.h), so the file is safe
// in a baseline x86-64 binary: nothing here runs unless dispatch found AMX and the kernel granted this process the tile state.
//
// The packed layout (linear.h) already is AMX's B operand: one 32-block of a 16-row tile is 8 rows of
// 64 bytes, row v holding K steps 4v..4v+3 of all 16 outputs (i8/q8_0 as stored; q4_0 after splitting
// the nibbles of its 4 vectors into 8). The quantized activation rows are the A operand as they are
// (16 rows × the block's 32 bytes, stride k_padded). So a block is one 16×16×32 tile multiply giving
// exactly the int32 sums the VNNI kernel builds with 8 vpdpbusd per row: TDPBSUD (signed activations ×
// unsigned stored weights, then + the offset's bias) for i8/q8_0, TDPBSSD on q4_0 nibbles unpacked as
// q − 8 (no bias needed). The float epilogue repeats the VNNI kernel's operations in the same order
// (convert, × block scales, fma with the activation scale), so the result is bit-identical to
// linear_int_avx512. The epilogue, not the tile multiply, bounds the kernel: a ring of four C tiles
// keeps the next blocks' multiplies running while this block's sums are scaled.
#if defined(__x86_64__)  // x86 kernels only: elsewhere the scalar path runs (cpu_features.h)
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "backends/cpu_fast/isa_target.h"
#include "backends/cpu_fast/linear_kernels.h"

HFS_TARGET_AMX_BEGIN

#include "backends/cpu_fast/avx512_mask.h"

namespace hfs::cpu_fast::detail {
namespace {

enum class Fmt { kI8, kQ8, kQ4 };

// LDTILECFG's 64-byte operand (palette 1).
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Tiles: 0-3 = C (mr × 16 int32), a ring of four so that three blocks' multiplies are in flight while
// one block's sums are scaled (with two the kernel ran at the latency of multiply → store → reload);
// 4/5 = A (mr × 32 int8) and 6/7 = B (8 × 64 bytes), alternating by block parity.
void configure(int mr) {
  TileConfig c;
  for (int t = 0; t < 4; ++t) {
    c.rows[t] = static_cast<uint8_t>(mr);
    c.colsb[t] = 64;
  }
  for (int t = 4; t < 6; ++t) {
    c.rows[t] = static_cast<uint8_t>(mr);
    c.colsb[t] = 32;
    c.rows[t + 2] = 8;
    c.colsb[t + 2] = 64;
  }
  _tile_loadconfig(&c);
}

// GCC's AMX intrinsics paste the tile number into the asm text, so it must be a literal: one branch per
// tile the kernel uses. Signed: TDPBSSD (q4_0's B holds signed weights), else TDPBSUD.
template <int C, bool Signed>
__attribute__((always_inline)) inline void multiply(const void* a, int64_t lda, const void* b) {
  if constexpr (C == 0) {
    _tile_zero(0);
    _tile_loadd(4, a, lda);
    _tile_loadd(6, b, 64);
    if constexpr (Signed) _tile_dpbssd(0, 4, 6); else _tile_dpbsud(0, 4, 6);
  } else if constexpr (C == 1) {
    _tile_zero(1);
    _tile_loadd(5, a, lda);
    _tile_loadd(7, b, 64);
    if constexpr (Signed) _tile_dpbssd(1, 5, 7); else _tile_dpbsud(1, 5, 7);
  } else if constexpr (C == 2) {
    _tile_zero(2);
    _tile_loadd(4, a, lda);
    _tile_loadd(6, b, 64);
    if constexpr (Signed) _tile_dpbssd(2, 4, 6); else _tile_dpbsud(2, 4, 6);
  } else {
    _tile_zero(3);
    _tile_loadd(5, a, lda);
    _tile_loadd(7, b, 64);
    if constexpr (Signed) _tile_dpbssd(3, 5, 7); else _tile_dpbsud(3, 5, 7);
  }
}
template <int C>
__attribute__((always_inline)) inline void store_c(int32_t* dst) {
  if constexpr (C == 0)
    _tile_stored(0, dst, 64);
  else if constexpr (C == 1)
    _tile_stored(1, dst, 64);
  else if constexpr (C == 2)
    _tile_stored(2, dst, 64);
  else
    _tile_stored(3, dst, 64);
}

// Per-call operands of one 16-column tile t against activation rows from i0.
template <Fmt F>
struct TileArgs {
  const uint8_t* wq;      // tile t's packed blocks
  const uint16_t* sc;     // its f16 block scales [blocks][16] (q8_0/q4_0)
  const int8_t* xq;       // row i0's quantized activations; rows kp apart
  const int32_t* xb;      // row i0's block biases; rows `blocks` apart
  const float* xs;        // row i0's block scales
  int64_t kp, blocks;
  int32_t (*cbuf)[256];   // [4][16 × 16] C tiles as stored
  uint8_t (*bbuf)[512];   // [4][512] q4_0: blocks' nibbles as bytes, slot = block mod 4
};

// q4_0: block b's 4 vectors of nibble pairs as the 8 byte vectors of a B tile, into `buf`, as signed
// weights (nibble − 8). The subtraction here replaces the per-row bias add of the epilogue: 8 byte
// subtractions per block instead of 16 int32 adds (one per row), and Σ x·(q − 8) is exactly the
// VNNI kernel's Σ x·q − 8·Σx, so the sums stay bit-identical.
inline void unpack_q4(const uint8_t* wq, int64_t b, uint8_t* buf) {
  const uint8_t* wb = wq + b * 256;
  const __m512i low4 = _mm512_set1_epi8(0x0f), eight = _mm512_set1_epi8(8);
  for (int v = 0; v < 4; ++v) {
    const __m512i raw = _mm512_load_si512(wb + v * 64);
    _mm512_store_si512(buf + v * 64, _mm512_sub_epi8(_mm512_and_si512(raw, low4), eight));
    _mm512_store_si512(buf + (v + 4) * 64, _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(raw, 4), low4), eight));
  }
}

// Loads block b's operands and multiplies them into C tile C (C = b mod 4; A/B tiles by b's parity).
// q4_0 blocks are unpacked two blocks ahead into a ring of four buffers (slot = block mod 4): a tile load
// cannot take bytes from the store buffer, so loading a block right after unpacking it waited for its
// stores to reach L1 (that wait cost as much as the whole float epilogue).
template <Fmt F, int C>
__attribute__((always_inline)) inline void issue(const TileArgs<F>& t, int64_t b) {
  if constexpr (F == Fmt::kQ4) {
    if (b + 2 < t.blocks) unpack_q4(t.wq, b + 2, t.bbuf[(C + 2) & 3]);
    // GCC's tileloadd is an asm statement without a memory operand: keep the stores above it.
    asm volatile("" ::: "memory");
    multiply<C, true>(t.xq + 32 * b, t.kp, t.bbuf[C]);
  } else {
    multiply<C, false>(t.xq + 32 * b, t.kp, t.wq + b * 512);
  }
}

// C tile P's sums of block b into the accumulators of rows < mr, as the VNNI kernel's epilogue does:
// + the offset's bias, convert, × the 16 block scales, fma with the row's activation scale. The 16
// accumulators are only ever indexed by template constants (these fold expressions are always inlined),
// which is what lets GCC keep them in registers: a loop over rows leaves them in memory, reloaded
// around every tile store.
template <Fmt F, int P, size_t... I>
__attribute__((always_inline)) inline void drain(const TileArgs<F>& t, int64_t b, int mr, __m512 (&acc)[16],
                                                 std::index_sequence<I...>) {
  store_c<P>(t.cbuf[P]);
  __m512 ws = _mm512_set1_ps(1.0f);
  if constexpr (F != Fmt::kI8) ws = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.sc + b * kTileRows)));
  const int32_t* c = t.cbuf[P];
  const int32_t* xb = t.xb + b;
  const float* xs = t.xs + b;
  auto row = [&](size_t i) __attribute__((always_inline)) {
    const __m512i sum = _mm512_load_si512(c + i * 16);
    __m512 df = _mm512_cvtepi32_ps(F == Fmt::kQ4 ? sum : _mm512_add_epi32(sum, _mm512_set1_epi32(xb[i * t.blocks])));
    if constexpr (F != Fmt::kI8) df = _mm512_mul_ps(df, ws);
    return _mm512_fmadd_ps(df, _mm512_set1_ps(xs[i * t.blocks]), acc[i]);
  };
  ((acc[I] = static_cast<int>(I) < mr ? row(I) : acc[I]), ...);
}

template <Fmt F, size_t... I>
__attribute__((always_inline)) inline void store_rows(const PackedWeight& w, int64_t i0, int mr, int64_t t, float* y,
                                                      const float* bias, const __m512 (&acc)[16],
                                                      std::index_sequence<I...>) {
  const int64_t n0 = t * kTileRows;
  const __mmask16 mk = tail_mask(w.n - n0);
  const __m512 bv = bias ? _mm512_maskz_loadu_ps(mk, bias + n0) : _mm512_setzero_ps();
  const __m512 cs = F == Fmt::kI8 ? _mm512_loadu_ps(w.channel_scales.data() + n0) : _mm512_set1_ps(1.0f);
  ((static_cast<int>(I) < mr ? _mm512_mask_storeu_ps(y + (i0 + static_cast<int64_t>(I)) * w.n + n0, mk,
                                                     _mm512_add_ps(F == Fmt::kI8 ? _mm512_mul_ps(acc[I], cs) : acc[I], bv))
                             : void()),
   ...);
}

// One 16-column tile × mr (≤ 16) activation rows from row i0, all blocks. Rows ≥ mr (a chunk that is not
// a multiple of 16, rare) are guarded off, not computed.
template <Fmt F>
void tile_rows(const PackedWeight& w, const QuantizedActs& a, int64_t i0, int mr, int64_t t, float* y,
               const float* bias) {
  const int64_t kp = w.k_padded, blocks = kp / 32;
  alignas(64) int32_t cbuf[4][256];
  alignas(64) uint8_t bbuf[4][512];
  const TileArgs<F> ta{w.q.data() + t * tile_bytes(w),
                       F == Fmt::kI8 ? nullptr : w.block_scales.data() + t * blocks * kTileRows,
                       a.xq.data() + i0 * kp,
                       a.block_bias.data() + i0 * blocks,
                       a.block_scale.data() + i0 * blocks,
                       kp,
                       blocks,
                       cbuf,
                       bbuf};
  constexpr auto kRows = std::make_index_sequence<16>{};
  __m512 acc[16];
  [&]<size_t... I>(std::index_sequence<I...>) __attribute__((always_inline)) { ((acc[I] = _mm512_setzero_ps()), ...); }(kRows);
  // Block b's multiply is issued three blocks before its sums are drained (tile b mod 4).
  if constexpr (F == Fmt::kQ4) {
    unpack_q4(ta.wq, 0, bbuf[0]);
    if (blocks > 1) unpack_q4(ta.wq, 1, bbuf[1]);
  }
  issue<F, 0>(ta, 0);
  if (blocks > 1) issue<F, 1>(ta, 1);
  if (blocks > 2) issue<F, 2>(ta, 2);
  for (int64_t b = 0; b < blocks; b += 4) {
    if (b + 3 < blocks) issue<F, 3>(ta, b + 3);
    drain<F, 0>(ta, b, mr, acc, kRows);
    if (b + 1 >= blocks) break;
    if (b + 4 < blocks) issue<F, 0>(ta, b + 4);
    drain<F, 1>(ta, b + 1, mr, acc, kRows);
    if (b + 2 >= blocks) break;
    if (b + 5 < blocks) issue<F, 1>(ta, b + 5);
    drain<F, 2>(ta, b + 2, mr, acc, kRows);
    if (b + 3 >= blocks) break;
    if (b + 6 < blocks) issue<F, 2>(ta, b + 6);
    drain<F, 3>(ta, b + 3, mr, acc, kRows);
  }
  store_rows<F>(w, i0, mr, t, y, bias, acc, kRows);
}

template <Fmt F>
void amx_range(const PackedWeight& w, const QuantizedActs& a, int64_t m, const float* bias, float* y, int64_t t0,
               int64_t t1) {
  const int64_t full = m / 16 * 16;
  if (full > 0) {
    configure(16);
    for (int64_t t = t0; t < t1; ++t)
      for (int64_t i = 0; i < full; i += 16) tile_rows<F>(w, a, i, 16, t, y, bias);
  }
  if (full < m) {
    configure(static_cast<int>(m - full));
    for (int64_t t = t0; t < t1; ++t) tile_rows<F>(w, a, full, static_cast<int>(m - full), t, y, bias);
  }
  // Back to the init state: the kernel saves no 8 KiB tile state on this thread's context switches.
  _tile_release();
}

}  // namespace

void linear_int_amx(const PackedWeight& w, const QuantizedActs& a, int64_t m, const float* bias, float* y, int64_t t0,
                    int64_t t1) {
  switch (w.format) {
    case DType::kI8: amx_range<Fmt::kI8>(w, a, m, bias, y, t0, t1); break;
    case DType::kQ8_0: amx_range<Fmt::kQ8>(w, a, m, bias, y, t0, t1); break;
    default: amx_range<Fmt::kQ4>(w, a, m, bias, y, t0, t1); break;
  }
}

}  // namespace hfs::cpu_fast::detail

HFS_TARGET_END

#endif  // defined(__x86_64__)
