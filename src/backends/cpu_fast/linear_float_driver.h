// cpu_fast/linear_float_driver.h — the float-weight (f32/f16/bf16) linear kernels, written once over a
// vector-traits struct and instantiated by linear_avx2.cpp (Avx2: 8 lanes, 16 registers) and
// linear_avx512.cpp (Avx512: 16 lanes, 32 registers) (internal).
//
// Include it AFTER the file's HFS_TARGET_..._BEGIN (isa_target.h): every instantiation then carries that
// file's target, and everything here has internal linkage, so the two files' instantiations never meet.
// It includes nothing itself: what it uses (<immintrin.h>, <algorithm>, <utility>, linear_kernels.h) the
// file includes before the target switch, so that no shared inline code is compiled for the ISA.
// What differs genuinely per ISA stays in the traits: how a weight vector is loaded and widened, the
// panel transpose, the GEMV's prefetch policy and tail, the panel sizes the register file allows, and
// whether full vectors take plain stores. The traits struct provides:
//
//   V, Mask                       a float vector; a lane mask for partial vectors
//   kLanes                        floats per V
//   kPanelCols, kPanelK, kPanelRows   prefill panel: outputs (2·kLanes) × K, activation rows per pass
//   kPlainFullStores              full vectors of a panel row take plain stores, not masked ones
//   zero(), load(p), load_aligned(p), bcast(p), fma(a, b, c), add(a, b), store(p, v)
//   mask(n), full(mask), load_mask(p, mask), store_mask(p, mask, v)   lanes [0, n) (all for n ≥ kLanes)
//   wload(Fmt{}, base, i)         kLanes weights of format Fmt at element i, as floats
//   gemv_prefetch<Fmt>()          whether the GEMV prefetches the weight stream
//   gemv_tail(k)                  what the sums below need for the last k % kLanes elements (once per call)
//   gemv_sum<Fmt>(a0, a1, a2, a3, x, wr, j, k, tail)   a GEMV row's sum: the accumulators + elements [j, k)
//   pack_panel<Fmt>(w, n, n_end, k0, kc, p)      p[kk][kPanelCols] = W[n + c][k0 + kk], 0 past n_end
#pragma once

namespace hfs::cpu_fast::detail {
namespace {

// Decode GEMVs (float and integer) prefetch the weight stream this far ahead. The hardware prefetcher
// alone leaves a core with as many bytes in flight as its reorder window covers: q4_0 (8 bytes of
// weights per instruction) reads 10-11 GB/s per core where the core can pull 15-16, i8/q8_0 13-14. With
// it (kernel_bench, DRAM-resident weights, AVX-512): q4_0 14.5-15.4 GB/s on one thread, 20-29 on two
// (17-19 without); i8/q8_0 15-16 and 25-30 (20-26 without). 2, 4 and 8 KiB ahead measure the same.
constexpr int64_t kPrefetchAhead = 4096;

struct F16 {};
struct BF16 {};
struct F32 {};

constexpr int64_t elem_size(F32) { return 4; }
constexpr int64_t elem_size(F16) { return 2; }
constexpr int64_t elem_size(BF16) { return 2; }

// Calls run(F16{}), run(BF16{}) or run(F32{}) for a float weight format.
template <class Run>
inline void with_float_format(DType format, Run&& run) {
  switch (format) {
    case DType::kF16: run(F16{}); break;
    case DType::kBF16: run(BF16{}); break;
    default: run(F32{}); break;
  }
}

// Decode (one activation row): weight rows one after another with four accumulators, so the read is a
// single sequential stream the prefetchers follow. Interleaving 4 rows (the prefill tile) splits it into 4
// short strided streams, which the hardware prefetcher follows far worse (AVX-512 f16: 17 vs 28 GB/s per
// core; AVX2, two interleaved rows: 0.6-0.7x). Four independent FMA chains instead of two let the core run
// further ahead of the loads (AVX-512, DRAM-resident weights: f16/bf16 read 17-20 GB/s on 2 threads with
// four, 15-18 with two, and 9.5-10.5 against 8-9 on one; f32 reads the same either way).
// Decode's four chains of one weight row wr against x over the row's whole vectors [0, kv) (kv a multiple
// of kLanes): chain c takes vector c of every 4-vector step, chain 0 also the leftover whole vectors. The
// accumulators start at 0. PF: prefetch the weight stream kPrefetchAhead ahead. The multi-row kernels that
// must give each row decode's bits (float_rows_short) run these same chains.
template <class Isa, class Fmt, bool PF>
inline void gemv_chains(const float* x, const char* wr, int64_t kv, typename Isa::V& a0, typename Isa::V& a1,
                        typename Isa::V& a2, typename Isa::V& a3) {
  constexpr int64_t L = Isa::kLanes, es = elem_size(Fmt{});
  a0 = a1 = a2 = a3 = Isa::zero();
  int64_t j = 0;
  for (; j + 4 * L <= kv; j += 4 * L) {
    if constexpr (PF)
      for (int64_t off = 0; off < 4 * L * es; off += 64) _mm_prefetch(wr + j * es + kPrefetchAhead + off, _MM_HINT_T0);
    a0 = Isa::fma(Isa::load(x + j), Isa::wload(Fmt{}, wr, j), a0);
    a1 = Isa::fma(Isa::load(x + j + L), Isa::wload(Fmt{}, wr, j + L), a1);
    a2 = Isa::fma(Isa::load(x + j + 2 * L), Isa::wload(Fmt{}, wr, j + 2 * L), a2);
    a3 = Isa::fma(Isa::load(x + j + 3 * L), Isa::wload(Fmt{}, wr, j + 3 * L), a3);
  }
  for (; j < kv; j += L) a0 = Isa::fma(Isa::load(x + j), Isa::wload(Fmt{}, wr, j), a0);
}

template <class Isa, class Fmt>
void float_gemv(const PackedWeight& w, const float* x, const float* bias, float* y, int64_t n0, int64_t n1) {
  using V = typename Isa::V;
  constexpr int64_t L = Isa::kLanes;
  const int64_t k = w.k, es = elem_size(Fmt{}), kv = k / L * L;
  const char* base = static_cast<const char*>(w.raw);
  const auto tail = Isa::gemv_tail(k);
  for (int64_t n = n0; n < n1; ++n) {
    const char* wr = base + n * k * es;
    V a0, a1, a2, a3;
    gemv_chains<Isa, Fmt, Isa::template gemv_prefetch<Fmt>()>(x, wr, kv, a0, a1, a2, a3);
    y[n] = Isa::template gemv_sum<Fmt>(a0, a1, a2, a3, x, wr, kv, k, tail) + (bias ? bias[n] : 0.0f);
  }
}

// MR activation rows × the panel's kPanelCols outputs (two vectors) over kc K; acc starts at 0 (first
// panel) or y, and ends in y (+ bias after the last panel). mk0/mk1: which of the outputs exist.
template <class Isa, int MR, size_t... I>
inline void panel_rows(const float* p, int64_t kc, const float* x, int64_t ldx, float* y, int64_t ldy, bool first,
                       const float* bias_last, typename Isa::Mask mk0, typename Isa::Mask mk1,
                       std::index_sequence<I...>) {
  using V = typename Isa::V;
  constexpr int64_t L = Isa::kLanes, C = Isa::kPanelCols;
  V a0[MR], a1[MR];
  ((a0[I] = first ? Isa::zero() : Isa::load_mask(y + I * ldy, mk0)), ...);
  ((a1[I] = first ? Isa::zero() : Isa::load_mask(y + I * ldy + L, mk1)), ...);
  for (int64_t kk = 0; kk < kc; ++kk) {
    const V w0 = Isa::load_aligned(p + kk * C), w1 = Isa::load_aligned(p + kk * C + L);
    ((a0[I] = Isa::fma(Isa::bcast(x + I * ldx + kk), w0, a0[I])), ...);
    ((a1[I] = Isa::fma(Isa::bcast(x + I * ldx + kk), w1, a1[I])), ...);
  }
  if (bias_last != nullptr) {
    const V b0 = Isa::load_mask(bias_last, mk0), b1 = Isa::load_mask(bias_last + L, mk1);
    ((a0[I] = Isa::add(a0[I], b0)), ...);
    ((a1[I] = Isa::add(a1[I], b1)), ...);
  }
  if constexpr (Isa::kPlainFullStores) {
    if (Isa::full(mk1)) {
      ((Isa::store(y + I * ldy, a0[I])), ...);
      ((Isa::store(y + I * ldy + L, a1[I])), ...);
      return;
    }
  }
  ((Isa::store_mask(y + I * ldy, mk0, a0[I])), ...);
  ((Isa::store_mask(y + I * ldy + L, mk1, a1[I])), ...);
}

// The rows < kPanelRows a pass leaves over (rows ≥ 1): panel_rows for exactly that many.
template <class Isa, size_t... R>
inline void panel_tail_rows(int64_t rows, const float* p, int64_t kc, const float* x, int64_t ldx, float* y, int64_t ldy,
                            bool first, const float* bias_last, typename Isa::Mask mk0, typename Isa::Mask mk1,
                            std::index_sequence<R...>) {
  ((rows == static_cast<int64_t>(R + 1)
        ? panel_rows<Isa, R + 1>(p, kc, x, ldx, y, ldy, first, bias_last, mk0, mk1, std::make_index_sequence<R + 1>{})
        : void()),
   ...);
}

// Prefill (m > 1): panels of kPanelCols output rows × kPanelK K are widened to f32 and transposed once per
// call into p[k][kPanelCols] (L1-resident), then every group of kPanelRows activation rows passes over the
// panel: per k, two panel vectors × kPanelRows broadcast activations, no horizontal sums. A K panel's
// partial sums wait in y for the next one (stored and reloaded exactly, so the additions run in plain k
// order).
template <class Isa, class Fmt>
void float_gemm(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, int64_t n0, int64_t n1) {
  constexpr int64_t kCols = Isa::kPanelCols, kK = Isa::kPanelK, kRows = Isa::kPanelRows;
  static_assert(kCols == 2 * Isa::kLanes, "a panel row is two vectors");
  static_assert(32 % kCols == 0, "float_unit_rows (linear_kernels.h) splits at multiples of 32 rows");
  alignas(64) float panel[kK * kCols];
  const int64_t k = w.k;
  PanelPrefetch::first_of_range(w, elem_size(Fmt{}), kCols, kK, n0, n1).issue(1);
  for (int64_t n = n0; n < n1; n += kCols) {
    const typename Isa::Mask mk0 = Isa::mask(n1 - n), mk1 = Isa::mask(n1 - n - Isa::kLanes);
    for (int64_t k0 = 0; k0 < k; k0 += kK) {
      const int64_t kc = std::min(kK, k - k0);
      Isa::template pack_panel<Fmt>(w, n, n1, k0, kc, panel);
      PanelPrefetch next(w, elem_size(Fmt{}), kCols, kK, n, n1, k0);
      const int64_t sweeps = (m + kRows - 1) / kRows;
      const bool first = k0 == 0;
      const float* bias_last = bias != nullptr && k0 + kc == k ? bias + n : nullptr;
      int64_t i = 0;
      for (; i + kRows <= m; i += kRows) {
        next.issue(sweeps);
        panel_rows<Isa, kRows>(panel, kc, x + i * k + k0, k, y + i * w.n + n, w.n, first, bias_last, mk0, mk1,
                               std::make_index_sequence<kRows>{});
      }
      next.issue(1);
      panel_tail_rows<Isa>(m - i, panel, kc, x + i * k + k0, k, y + i * w.n + n, w.n, first, bias_last, mk0, mk1,
                           std::make_index_sequence<kRows - 1>{});
    }
  }
}

// linear_float_<isa>: the columns [n0, n1) of every row, any float format.
template <class Isa>
void linear_float(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, int64_t n0,
                  int64_t n1) {
  auto run = [&](auto fmt) {
    using Fmt = decltype(fmt);
    if (m == 1)
      float_gemv<Isa, Fmt>(w, x, bias, y, n0, n1);
    else
      float_gemm<Isa, Fmt>(w, x, m, bias, y, n0, n1);
  };
  with_float_format(w.format, run);
}

}  // namespace
}  // namespace hfs::cpu_fast::detail
