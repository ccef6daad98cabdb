// cpu_fast/linear_float_rows.h — 2..kFloatRowsMax activation rows through float weights, every row bit for
// bit what a decode GEMV gives it, each weight vector widened once for several rows (internal).
//
// Included by linear_avx512.cpp and linear_avx2.cpp right after linear_float_driver.h (whose traits and
// rules it shares: it includes nothing, and everything here has internal linkage).
//
// A multi-row step (the multi-sequence engine's rows, a draft verification) must give each row the bits
// decode gives it. Decode's GEMVs (float_gemv, and the half_group variants of linear_half_gemv.h) sum a
// weight row's products in four chains a0..a3 over steps of 4·kLanes elements, a leftover whole vector
// into a0, then finish with a tail and a reduction that differs per kernel (`sum` below). float_rows runs
// exactly those additions for every activation row, in tiles of X activation rows × NW weight rows
// (the traits' kRowsMaxX, kRowsNW), one chain at a time (see float_rows_chain). The activation rows go in
// balanced groups (8 rows on AVX-512: two of 4); the first group prefetches the next weight block as one
// sequential stream, the others find the weights in L1/L2. Where two GEMVs add the same way for every K
// (float_gemv and half_group on AVX2: the same chains, lane sum and element-by-element tail) one rows kernel
// serves both (linear_kernels.h).
#pragma once

namespace hfs::cpu_fast::detail {
namespace {

// Decode sums each weight row's products in four chains, and the chains never meet before the finish:
// chain c takes the vectors at c·kLanes + 4·kLanes·i, chain 0 also the leftover whole vectors. So a tile
// can run one chain at a time for X activation rows × NW weight rows: X·NW accumulators, each activation
// vector loaded once for NW FMAs and each weight vector widened once for X, and every accumulator still
// sees its chain's products in decode's order.
// Vectors j, j + stride, .. < end of NW weight rows (rb bytes apart) against X activation rows (ldx
// apart): acc[r·NW + w] += x_r[j..] · w_w[j..]. PF: also prefetch one step's share of the weight block
// after this one per step, from pf on (advanced past it). Z: the sums start at zero, not from acc_io.
template <class Isa, class Fmt, int X, int NW, bool PF, size_t... I, bool Z = false>
inline void float_rows_chain(const char* wr, int64_t rb, int64_t j, int64_t end, int64_t stride, const float* x,
                             int64_t ldx, const char*& pf, typename Isa::V* acc_io, std::index_sequence<I...>,
                             std::bool_constant<Z> = {}) {
  using V = typename Isa::V;
  constexpr int64_t kPfBytes = NW * Isa::kLanes * elem_size(Fmt{});
  V acc[X * NW];
  ((acc[I] = Z ? Isa::zero() : acc_io[I]), ...);
  for (; j < end; j += stride) {
    if constexpr (PF) {
      for (int64_t off = 0; off < kPfBytes; off += 64) _mm_prefetch(pf + off, _MM_HINT_T0);
      pf += kPfBytes;
    }
    V w[NW];
#pragma GCC unroll 8
    for (int c = 0; c < NW; ++c) w[c] = Isa::wload(Fmt{}, wr + c * rb, j);
    ((acc[I] = Isa::fma(Isa::load(x + static_cast<int64_t>(I / NW) * ldx + j), w[I % NW], acc[I])), ...);
  }
  ((acc_io[I] = acc[I]), ...);
}

// Elements per K block of a tile: the NW weight rows' share of one stays in L1 while the four chains pass
// over it (a 64-byte line of 16-bit weights holds two chains' vectors; over the whole row, 4 rows of
// K = 4864 outgrew L1 and R = 8 took 3.1-3.6x a decode pass instead of 2.4x). The chains' sums wait in
// memory, exactly, for the next block.
constexpr int64_t kRowsKBlock = 1024;

// X activation rows × NW weight rows (y[r·ldy + w] = sum(row r's chains against weight row w) + b[w]).
// pf: the next weight block, prefetched over the tile's steps (nullptr: none).
template <class Isa, class Fmt, int X, int NW, class Sum>
inline void float_rows_tile(const char* wr, int64_t k, const float* x, int64_t ldx, float* y, int64_t ldy,
                            const float* b, const char* pf, const Sum& sum) {
  using V = typename Isa::V;
  constexpr int64_t L = Isa::kLanes;
  constexpr auto kTile = std::make_index_sequence<X * NW>{};
  const int64_t rb = k * elem_size(Fmt{}), k4 = k / (4 * L) * (4 * L), kv = k / L * L;
  V part[4][X * NW];
  constexpr std::true_type kZero{};
  if (k4 == 0) {  // no 4-vector step: chains 1-3 stay zero
    for (int c = 1; c < 4; ++c)
      for (V& v : part[c]) v = Isa::zero();
    float_rows_chain<Isa, Fmt, X, NW, false>(wr, rb, 0, kv, L, x, ldx, pf, part[0], kTile, kZero);
  }
  for (int64_t k0 = 0; k0 < k4; k0 += kRowsKBlock) {
    const int64_t k1 = std::min(k4, k0 + kRowsKBlock);
    // The first block's passes start at zero in registers (float_wide_tile says why).
    for (int c = 0; c < 4; ++c)
      if (pf != nullptr && k0 == 0)
        float_rows_chain<Isa, Fmt, X, NW, true>(wr, rb, c * L, k1, 4 * L, x, ldx, pf, part[c], kTile, kZero);
      else if (pf != nullptr)
        float_rows_chain<Isa, Fmt, X, NW, true>(wr, rb, k0 + c * L, k1, 4 * L, x, ldx, pf, part[c], kTile);
      else if (k0 == 0)
        float_rows_chain<Isa, Fmt, X, NW, false>(wr, rb, c * L, k1, 4 * L, x, ldx, pf, part[c], kTile, kZero);
      else
        float_rows_chain<Isa, Fmt, X, NW, false>(wr, rb, k0 + c * L, k1, 4 * L, x, ldx, pf, part[c], kTile);
  }
  if (k4 > 0) float_rows_chain<Isa, Fmt, X, NW, false>(wr, rb, k4, kv, L, x, ldx, pf, part[0], kTile);
  for (int i = 0; i < X * NW; ++i)
    y[i / NW * ldy + i % NW] =
        sum(part[0][i], part[1][i], part[2][i], part[3][i], x + i / NW * ldx, wr + i % NW * rb, kv, k) + b[i % NW];
}

// Group sizes 1..Isa::kRowsMaxX, picked at run time.
template <class Isa, class Fmt, int NW, class Sum, size_t... G>
inline void float_rows_group(int64_t rows, const char* wr, int64_t k, const float* x, int64_t ldx, float* y,
                             int64_t ldy, const float* b, const char* pf, const Sum& sum, std::index_sequence<G...>) {
  ((rows == static_cast<int64_t>(G + 1) ? float_rows_tile<Isa, Fmt, G + 1, NW>(wr, k, x, ldx, y, ldy, b, pf, sum)
                                        : void()),
   ...);
}

// Rows [0, m) × outputs [n0, n1): blocks of kRowsNW weight rows (then single rows), each against every
// group of activation rows. A block's rows are contiguous, so the prefetch of the next block during the
// first group's tile is one sequential stream. sum(a0, a1, a2, a3, x, wr, j, k): the decode kernel's
// finish for one row from element j (its tail, its reduction), without the bias.
template <class Isa, class Fmt, class Sum>
void float_rows(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, int64_t n0, int64_t n1,
                const Sum& sum) {
  constexpr int64_t kMaxX = Isa::kRowsMaxX, kNW = Isa::kRowsNW;
  constexpr bool kPf = Isa::template gemv_prefetch<Fmt>();
  const int64_t k = w.k, ld = w.n, rb = k * elem_size(Fmt{});
  // Balanced groups: `per` rows each, the first `extra` one more.
  const int64_t groups = (m + kMaxX - 1) / kMaxX, per = m / groups, extra = m % groups;
  const char* base = static_cast<const char*>(w.raw);
  float b[kNW];
  auto block = [&](auto nw, int64_t n) {
    constexpr int kN = decltype(nw)::value;
    for (int64_t c = 0; c < kN; ++c) b[c] = bias ? bias[n + c] : 0.0f;
    const char* wr = base + n * rb;
    int64_t i = 0;
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t rows = per + (g < extra ? 1 : 0);
      float_rows_group<Isa, Fmt, kN>(rows, wr, k, x + i * k, k, y + i * ld + n, ld, b,
                                     kPf && g == 0 ? wr + kN * rb : nullptr, sum, std::make_index_sequence<kMaxX>{});
      i += rows;
    }
  };
  int64_t n = n0;
  for (; n + kNW <= n1; n += kNW) block(std::integral_constant<int, kNW>{}, n);
  for (; n < n1; ++n) block(std::integral_constant<int, 1>{}, n);
}

// ---- many rows (a prefill chunk): the same sums, the lane sums kLanes outputs at a time ---------------
//
// float_rows is built for a step of a few rows, which is memory-bound: it streams a weight block once for
// all of them. A prefill chunk is compute-bound, and there float_rows' finish dominated: decode's lane sum
// (about 10 instructions per output and row) against 9-24 FMAs per output and row at K = 576-1536, so a
// chunk ran at 0.5-0.6x the panel GEMM. float_rows_wide runs the same chains (float_rows_chain, so every
// accumulator sees decode's products in decode's order), then adds each output's chains with decode's
// gemv_chain_sum and does the lane sums of kLanes outputs of a row at once (the traits' reduce_lanes: the
// lane pairs of decode's own lane sum, so each lane is that sum bit for bit), then decode's scalar tail
// (gemv_post_tail, AVX2 only) and bias add. A block of kLanes weight rows stays in L1/L2 while every
// activation row of the call passes over it, so the weights are read from memory once per call.

// X activation rows × NW weight rows (from weight row o0 of the block): each output's chains, tail and chain
// sum, into s[r][o0 + w]: float_rows_tile's chain passes (K blocks of kRowsKBlock), the finish left out.
template <class Isa, class Fmt, int X, int NW>
inline void float_wide_tile(const char* wr, int64_t rb, int64_t k, const float* x, int64_t ldx,
                            typename Isa::V (*s)[Isa::kLanes], int o0, const decltype(Isa::gemv_tail(0))& tail) {
  using V = typename Isa::V;
  constexpr int64_t L = Isa::kLanes;
  constexpr auto kTile = std::make_index_sequence<X * NW>{};
  const int64_t k4 = k / (4 * L) * (4 * L), kv = k / L * L;
  const char* pf = nullptr;
  // The first K block's passes start their sums at zero in registers: zeroing the parked sums in memory
  // first (a 6 KiB `rep stos` per tile on AVX-512) took the 128-row kernel at K = 576 from 0.68-0.74x the
  // panel GEMM's speed down to 0.48x.
  V part[4][X * NW];
  constexpr std::true_type kZero{};
  if (k4 == 0) {
    for (int c = 1; c < 4; ++c)
      for (V& v : part[c]) v = Isa::zero();
    float_rows_chain<Isa, Fmt, X, NW, false>(wr, rb, 0, kv, L, x, ldx, pf, part[0], kTile, kZero);
  } else {
    for (int64_t k0 = 0; k0 < k4; k0 += kRowsKBlock) {
      const int64_t k1 = std::min(k4, k0 + kRowsKBlock);
      for (int c = 0; c < 4; ++c)
        if (k0 == 0)
          float_rows_chain<Isa, Fmt, X, NW, false>(wr, rb, c * L, k1, 4 * L, x, ldx, pf, part[c], kTile, kZero);
        else
          float_rows_chain<Isa, Fmt, X, NW, false>(wr, rb, k0 + c * L, k1, 4 * L, x, ldx, pf, part[c], kTile);
    }
    float_rows_chain<Isa, Fmt, X, NW, false>(wr, rb, k4, kv, L, x, ldx, pf, part[0], kTile);
  }
  for (int i = 0; i < X * NW; ++i)
    s[i / NW][o0 + i % NW] = Isa::template gemv_chain_sum<Fmt>(part[0][i], part[1][i], part[2][i], part[3][i],
                                                               x + i / NW * ldx, wr + i % NW * rb, kv, k, tail);
}

// X activation rows × the `outs` (≤ kLanes) weight rows from wr: tiles of kRowsNW weight rows, then single
// ones; y[r·ldy + o] = lane sum + tail + b[o].
template <class Isa, class Fmt, int X>
inline void float_wide_rows(const char* wr, int64_t rb, int64_t k, int64_t outs, const float* x, int64_t ldx,
                            float* y, int64_t ldy, const float* b) {
  using V = typename Isa::V;
  constexpr int64_t L = Isa::kLanes, kNW = Isa::kWideNW;
  const auto tail = Isa::gemv_tail(k);
  alignas(64) V s[X][L];
  int64_t o = 0;
  for (; o + kNW <= outs; o += kNW)
    float_wide_tile<Isa, Fmt, X, kNW>(wr + o * rb, rb, k, x, ldx, s, static_cast<int>(o), tail);
  for (; o < outs; ++o) float_wide_tile<Isa, Fmt, X, 1>(wr + o * rb, rb, k, x, ldx, s, static_cast<int>(o), tail);
  for (; o < L; ++o)
    for (int r = 0; r < X; ++r) s[r][o] = Isa::zero();
  const int64_t kv = k / L * L;
  for (int r = 0; r < X; ++r) {
    alignas(64) float t[L];
    Isa::store(t, Isa::reduce_lanes(s[r]));
    for (int64_t c = 0; c < outs; ++c)
      y[r * ldy + c] = Isa::template gemv_post_tail<Fmt>(t[c], x + r * ldx, wr + c * rb, kv, k) + b[c];
  }
}

template <class Isa, class Fmt, size_t... G>
inline void float_wide_group(int64_t rows, const char* wr, int64_t rb, int64_t k, int64_t outs, const float* x,
                             int64_t ldx, float* y, int64_t ldy, const float* b, std::index_sequence<G...>) {
  ((rows == static_cast<int64_t>(G + 1) ? float_wide_rows<Isa, Fmt, G + 1>(wr, rb, k, outs, x, ldx, y, ldy, b)
                                        : void()),
   ...);
}

// Rows [0, m) × outputs [n0, n1), every row bit for bit what float_gemv gives it: blocks of kLanes weight
// rows, each against every balanced group of ≤ kRowsMaxX activation rows.
template <class Isa, class Fmt>
void float_rows_wide(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, int64_t n0,
                     int64_t n1) {
  constexpr int64_t L = Isa::kLanes, kMaxX = Isa::kWideX;
  const int64_t k = w.k, ld = w.n, rb = k * elem_size(Fmt{});
  const int64_t groups = (m + kMaxX - 1) / kMaxX, per = m / groups, extra = m % groups;
  const char* base = static_cast<const char*>(w.raw);
  for (int64_t g = n0; g < n1; g += L) {
    const int64_t outs = std::min(L, n1 - g);
    float b[L];
    for (int64_t c = 0; c < outs; ++c) b[c] = bias ? bias[g + c] : 0.0f;
    int64_t i = 0;
    for (int64_t q = 0; q < groups; ++q) {
      const int64_t rows = per + (q < extra ? 1 : 0);
      float_wide_group<Isa, Fmt>(rows, base + g * rb, rb, k, outs, x + i * k, k, y + i * ld + g, ld, b,
                                 std::make_index_sequence<kMaxX>{});
      i += rows;
    }
  }
}

template <class Isa>
void linear_float_rows_wide(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y,
                            int64_t n0, int64_t n1) {
  with_float_format(w.format, [&](auto fmt) { float_rows_wide<Isa, decltype(fmt)>(w, x, m, bias, y, n0, n1); });
}

// float_rows finishing as float_gemv does (the traits' gemv_sum): the ISA's own decode kernel.
template <class Isa>
void linear_float_rows(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, int64_t n0,
                       int64_t n1) {
  auto run = [&](auto fmt) {
    using Fmt = decltype(fmt);
    using V = typename Isa::V;
    const auto tail = Isa::gemv_tail(w.k);
    const auto sum = [tail](V a0, V a1, V a2, V a3, const float* xr, const char* wr, int64_t j, int64_t k) {
      return Isa::template gemv_sum<Fmt>(a0, a1, a2, a3, xr, wr, j, k, tail);
    };
    float_rows<Isa, Fmt>(w, x, m, bias, y, n0, n1, sum);
  };
  with_float_format(w.format, run);
}

}  // namespace
}  // namespace hfs::cpu_fast::detail
