// cpu_fast/linear_half_gemv.h — the decode GEMV variants for 16-bit (f16 / bf16) weights (internal).
//
// Included by linear_half_avx512.cpp and linear_half_avx2.cpp after their target switch (isa_target.h),
// over a vector-ops struct O that provides:
//
//   V, kLanes                 a float vector and its lanes
//   zero(), load(p), fma(a, b, c), add(a, b), hsum(v)
//   wload(HalfF16 / HalfBF16, p)   kLanes weights at p (uint16_t) as floats
// and, for half_gemv_split only:
//   wsplit(p, even, odd)      2·kLanes bf16 weights at p: elements 0, 2, 4, .. and 1, 3, 5, .. as floats
//   xsplit(x, xs)             2·kLanes floats at x → xs[0, kLanes) = x[0, 2, ..], xs[kLanes, 2·kLanes) = x[1, 3, ..]
//
// Which variant runs a weight is decided at load by measuring them (linear_half.h); every variant
// computes the same sums (up to f32 rounding: the order of the additions differs), so the choice only
// changes the speed. What the variants vary is what decides how close a core gets to the memory's speed
// and what differs between x86 generations: the vector width (Zen 4 splits every 512-bit op in two
// 256-bit halves), the software prefetch (distance and the cache level it fills, against the hardware
// prefetchers' own ramp) and, for bf16, how the weights are widened (a zero-extension and a shift per
// kLanes weights, or a shift for the even and a mask for the odd elements of 2·kLanes, against activations
// split into even and odd halves once per call). half_gemv also streams NR rows side by side; on the Zen 5
// it was measured on, 2 and 4 rows read 0.5-1.0x as fast as one, so no variant in the tables uses it.
#pragma once

namespace hfs::cpu_fast::detail {
namespace {

struct HalfF16 {};
struct HalfBF16 {};

inline float half_scalar(HalfF16, const uint16_t* p) { return f16_to_f32(*p); }
inline float half_scalar(HalfBF16, const uint16_t* p) { return bf16_to_f32(*p); }

// The split bf16 kernel keeps the activation's even/odd halves on the stack up to this K (larger K takes the
// widening kernel).
constexpr int64_t kSplitMaxK = 16384;

// NR weight rows side by side, C chains per row, K along the lanes: each step reads C vectors of each row.
// PF: software prefetch distance in bytes (0: none), LOC its locality (3: L1, 2: L2). Rows past a group's
// end prefetch the next group's rows (rows are contiguous: address + (NR - 1) rows).
template <class O, class Fmt, int NR, int C, int64_t PF, int LOC>
inline void half_group(const char* wr, int64_t rb, int64_t k, const float* x, const float* bias, float* y) {
  using V = typename O::V;
  constexpr int64_t L = O::kLanes, S = C * L;
  V acc[NR][C];
#pragma GCC unroll 8
  for (int r = 0; r < NR; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) acc[r][c] = O::zero();
  int64_t j = 0;
  for (; j + S <= k; j += S) {
    if constexpr (PF > 0) {
      const int64_t ahead = 2 * j + PF;
      const int64_t past = NR > 1 && ahead + 2 * S > rb ? (NR - 1) * rb : 0;
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r)
        for (int64_t off = 0; off < 2 * S; off += 64) __builtin_prefetch(wr + r * rb + ahead + past + off, 0, LOC);
    }
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      const V xv = O::load(x + j + c * L);
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r)
        acc[r][c] = O::fma(xv, O::wload(Fmt{}, reinterpret_cast<const uint16_t*>(wr + r * rb) + j + c * L), acc[r][c]);
    }
  }
  for (; j + L <= k; j += L) {
    const V xv = O::load(x + j);
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r)
      acc[r][0] = O::fma(xv, O::wload(Fmt{}, reinterpret_cast<const uint16_t*>(wr + r * rb) + j), acc[r][0]);
  }
#pragma GCC unroll 8
  for (int r = 0; r < NR; ++r) {
    V s = acc[r][0];
    if constexpr (C == 4) s = O::add(O::add(acc[r][0], acc[r][1]), O::add(acc[r][2], acc[r][3]));
    if constexpr (C == 2) s = O::add(acc[r][0], acc[r][1]);
    float t = O::hsum(s);
    const auto* w16 = reinterpret_cast<const uint16_t*>(wr + r * rb);
    for (int64_t e = j; e < k; ++e) t += x[e] * half_scalar(Fmt{}, w16 + e);
    y[r] = t + (bias ? bias[r] : 0.0f);
  }
}

// Rows [n0, n1) of y = W x (+ bias): groups of NR rows, the rest one at a time with four chains.
template <class O, class Fmt, int NR, int64_t PF, int LOC>
void half_gemv(const PackedWeight& w, const float* x, int64_t /*m = 1*/, const float* bias, float* y, int64_t n0,
               int64_t n1) {
  constexpr int C = NR == 1 ? 4 : NR == 2 ? 2 : 1;
  const int64_t k = w.k, rb = 2 * k;
  const char* base = static_cast<const char*>(w.raw);
  int64_t n = n0;
  for (; n + NR <= n1; n += NR) half_group<O, Fmt, NR, C, PF, LOC>(base + n * rb, rb, k, x, bias ? bias + n : nullptr, y + n);
  for (; n < n1; ++n) half_group<O, Fmt, 1, 4, PF, LOC>(base + n * rb, rb, k, x, bias ? bias + n : nullptr, y + n);
}

// bf16 with the weights widened in pairs: one 2·kLanes-element vector gives the even elements by a shift
// and the odd ones by a mask (two operations per 2·kLanes weights where the zero-extension and shift take
// four), against the activation's even and odd elements (split once per call into xs). One row at a time,
// four chains (two vectors per step, each an even and an odd chain).
template <class O, int64_t PF, int LOC>
void half_gemv_split(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, int64_t n0,
                     int64_t n1) {
  using V = typename O::V;
  constexpr int64_t L = O::kLanes, B = 2 * L, S = 2 * B;
  const int64_t k = w.k, rb = 2 * k;
  if (k > kSplitMaxK) return half_gemv<O, HalfBF16, 1, PF, LOC>(w, x, m, bias, y, n0, n1);
  alignas(64) float xs[kSplitMaxK];
  const int64_t ks = k / S * S;  // the elements the split steps cover; the rest as half_group's tail
  for (int64_t j = 0; j < ks; j += B) O::xsplit(x + j, xs + j);
  const char* base = static_cast<const char*>(w.raw);
  for (int64_t n = n0; n < n1; ++n) {
    const char* wr = base + n * rb;
    const auto* w16 = reinterpret_cast<const uint16_t*>(wr);
    V a0 = O::zero(), a1 = O::zero(), a2 = O::zero(), a3 = O::zero();
    for (int64_t j = 0; j < ks; j += S) {
      if constexpr (PF > 0)
        for (int64_t off = 0; off < 2 * S; off += 64) __builtin_prefetch(wr + 2 * j + PF + off, 0, LOC);
      V e0, o0, e1, o1;
      O::wsplit(w16 + j, e0, o0);
      O::wsplit(w16 + j + B, e1, o1);
      a0 = O::fma(O::load(xs + j), e0, a0);
      a1 = O::fma(O::load(xs + j + L), o0, a1);
      a2 = O::fma(O::load(xs + j + B), e1, a2);
      a3 = O::fma(O::load(xs + j + B + L), o1, a3);
    }
    int64_t j = ks;
    for (; j + L <= k; j += L) a0 = O::fma(O::load(x + j), O::wload(HalfBF16{}, w16 + j), a0);
    float t = O::hsum(O::add(O::add(a0, a1), O::add(a2, a3)));
    for (; j < k; ++j) t += x[j] * bf16_to_f32(w16[j]);
    y[n] = t + (bias ? bias[n] : 0.0f);
  }
}

}  // namespace
}  // namespace hfs::cpu_fast::detail
