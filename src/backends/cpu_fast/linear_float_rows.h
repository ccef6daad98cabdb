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
// exactly those additions for every activation row, but with the rows side by side: per weight row,
// groups of up to kMaxX activation rows hold 4 accumulators each, and every weight vector loaded and
// widened once feeds the whole group. Only the first group streams the weight row from memory (with the
// decode GEMV's software prefetch); the other groups re-read it from L1. The groups are balanced (8 rows on
// AVX-512: two groups of 4), so that each widening feeds as many FMAs as the registers allow.
#pragma once

namespace hfs::cpu_fast::detail {
namespace {

// One weight row `wr` against X activation rows (x, ldx apart) → y[r·ldy] = sum(row r's chains) + b.
// PF: software-prefetch the weight stream (the first group only).
template <class Isa, class Fmt, int X, bool PF, class Sum, size_t... R>
inline void float_rows_tile(const char* wr, int64_t k, const float* x, int64_t ldx, float* y, int64_t ldy, float b,
                            const Sum& sum, std::index_sequence<R...>) {
  using V = typename Isa::V;
  constexpr int64_t L = Isa::kLanes;
  constexpr int64_t es = elem_size(Fmt{});
  V a0[X], a1[X], a2[X], a3[X];
  ((a0[R] = a1[R] = a2[R] = a3[R] = Isa::zero()), ...);
  int64_t j = 0;
  for (; j + 4 * L <= k; j += 4 * L) {
    if constexpr (PF)
      for (int64_t off = 0; off < 4 * L * es; off += 64) _mm_prefetch(wr + j * es + kPrefetchAhead + off, _MM_HINT_T0);
    const V w0 = Isa::wload(Fmt{}, wr, j);
    ((a0[R] = Isa::fma(Isa::load(x + R * ldx + j), w0, a0[R])), ...);
    const V w1 = Isa::wload(Fmt{}, wr, j + L);
    ((a1[R] = Isa::fma(Isa::load(x + R * ldx + j + L), w1, a1[R])), ...);
    const V w2 = Isa::wload(Fmt{}, wr, j + 2 * L);
    ((a2[R] = Isa::fma(Isa::load(x + R * ldx + j + 2 * L), w2, a2[R])), ...);
    const V w3 = Isa::wload(Fmt{}, wr, j + 3 * L);
    ((a3[R] = Isa::fma(Isa::load(x + R * ldx + j + 3 * L), w3, a3[R])), ...);
  }
  for (; j + L <= k; j += L) {
    const V w0 = Isa::wload(Fmt{}, wr, j);
    ((a0[R] = Isa::fma(Isa::load(x + R * ldx + j), w0, a0[R])), ...);
  }
  ((y[R * ldy] = sum(a0[R], a1[R], a2[R], a3[R], x + R * ldx, wr, j, k) + b), ...);
}

// Group sizes 1..Isa::kRowsMaxX, picked at run time.
template <class Isa, class Fmt, bool PF, class Sum, size_t... G>
inline void float_rows_group(int64_t rows, const char* wr, int64_t k, const float* x, int64_t ldx, float* y,
                             int64_t ldy, float b, const Sum& sum, std::index_sequence<G...>) {
  ((rows == static_cast<int64_t>(G + 1)
        ? float_rows_tile<Isa, Fmt, G + 1, PF>(wr, k, x, ldx, y, ldy, b, sum, std::make_index_sequence<G + 1>{})
        : void()),
   ...);
}

// Rows [0, m) × outputs [n0, n1): weight row by weight row, each against every group of activation rows.
// sum(a0, a1, a2, a3, x, wr, j, k): the decode kernel's finish for one row from element j (its tail, its
// reduction), without the bias.
template <class Isa, class Fmt, class Sum>
void float_rows(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, int64_t n0, int64_t n1,
                const Sum& sum) {
  constexpr int64_t kMaxX = Isa::kRowsMaxX;
  constexpr bool kPf = Isa::template gemv_prefetch<Fmt>();
  const int64_t k = w.k, ld = w.n, es = elem_size(Fmt{});
  const int64_t groups = (m + kMaxX - 1) / kMaxX, per = m / groups, extra = m % groups;  // the first `extra` get one more
  const char* base = static_cast<const char*>(w.raw);
  for (int64_t n = n0; n < n1; ++n) {
    const char* wr = base + n * k * es;
    const float b = bias ? bias[n] : 0.0f;
    int64_t i = 0;
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t rows = per + (g < extra ? 1 : 0);
      if (g == 0)
        float_rows_group<Isa, Fmt, kPf>(rows, wr, k, x + i * k, k, y + i * ld + n, ld, b, sum,
                                        std::make_index_sequence<kMaxX>{});
      else
        float_rows_group<Isa, Fmt, false>(rows, wr, k, x + i * k, k, y + i * ld + n, ld, b, sum,
                                          std::make_index_sequence<kMaxX>{});
      i += rows;
    }
  }
}

// float_rows finishing as float_gemv does (the traits' gemv_sum): the ISA's own decode kernel.
template <class Isa>
void linear_float_rows(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, int64_t n0,
                       int64_t n1) {
  auto run = [&](auto fmt) {
    using Fmt = decltype(fmt);
    const auto tail = Isa::gemv_tail(w.k);
    float_rows<Isa, Fmt>(w, x, m, bias, y, n0, n1,
                         [tail](typename Isa::V a0, typename Isa::V a1, typename Isa::V a2, typename Isa::V a3,
                                const float* xr, const char* wr, int64_t j, int64_t k) {
                           return Isa::template gemv_sum<Fmt>(a0, a1, a2, a3, xr, wr, j, k, tail);
                         });
  };
  switch (w.format) {
    case DType::kF16: run(F16{}); break;
    case DType::kBF16: run(BF16{}); break;
    default: run(F32{}); break;
  }
}

}  // namespace
}  // namespace hfs::cpu_fast::detail
