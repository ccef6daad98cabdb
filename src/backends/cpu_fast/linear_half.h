// cpu_fast/linear_half.h — decode GEMV variants for f16 / bf16 weights (internal).
//
// A decode step streams every weight once, so a 16-bit model decodes at the speed its GEMVs read memory.
// What gets a core closest to that speed differs between x86 generations (vector width, software
// prefetch distance and level, how bf16 is widened), and no single choice can be shown to win on all of
// them. So the kernels come in variants (linear_half_gemv.h). Every variant computes the same dot
// products, but not in the same order: their results differ in the last bits. A pick by timing would
// therefore change a program's output from one load to the next, so by default no variant is picked and
// every weight runs the ISA's own kernel (the one its multi-row and prefill steps match bit for bit,
// docs/determinism.md). The timing (tune_half_gemv, called by the compile step tune_linears) runs only
// when asked for:
//
//   HFS_CPU_FAST_HALF_GEMV=<name>  forces a variant for every 16-bit weight (an unknown name, or one the
//                                  CPU / the format cannot run, is a load error naming the choices)
//   HFS_CPU_FAST_HALF_GEMV=tune    times every eligible variant at load and keeps the fastest per
//                                  (format, K): not reproducible from load to load
//   HFS_PROFILE=1                  prints each tuning's choice and the variants' measured speeds to stderr
//
//   int v = tune_half_gemv(DType::kBF16, 896, weights, &pool).variant;   // at load
//   set_half_gemv(w, v);                                                 // linear() then runs it for m = 1
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/cpu_fast/cpu_features.h"
#include "backends/cpu_fast/linear.h"
#include "backends/cpu_fast/linear_kernels.h"
#include "hfstatic/error.h"

namespace hfs::cpu_fast {

struct HalfGemvVariant {
  std::string_view name;  // "zmm-r1-pf8k-l2": vector width, rows side by side, prefetch distance and level
  Isa isa;                // the lowest dispatch level that runs it
  bool f16, bf16;         // the formats it serves
  detail::FloatKernel fn;  // called with m = 1 only
  // 2..kFloatRowsMax rows, each bit for bit what fn gives it alone (linear_kernels.h); nullptr: none, the
  // rows then take turns through fn.
  detail::FloatKernel rows;
};

// Every variant compiled in (the AVX2 ones first); an index into this is what a weight records.
std::span<const HalfGemvVariant> half_gemv_variants();
// The indices of the variants that run weights of format f on the active ISA (empty for f32, integer
// formats and the scalar path). The first is "default", the ISA's built-in kernel.
std::vector<int> eligible_half_gemv(DType f);
// Whether HFS_CPU_FAST_HALF_GEMV=tune asks for the load-time timing.
bool half_gemv_tuning_requested();
// The variant HFS_CPU_FAST_HALF_GEMV forces for format f: -1 when unset or "tune"; an error for an unknown
// name or one that is not eligible for f.
[[nodiscard]] Result<int> forced_half_gemv(DType f);
// An error when HFS_CPU_FAST_HALF_GEMV names no variant at all (checked at every compile, 16-bit weights or
// not, so that a misspelt name never passes silently).
[[nodiscard]] Status check_half_gemv_env();

struct HalfGemvTuning {
  int variant = -1;                // index into half_gemv_variants()
  std::vector<int> candidates;     // what was timed
  std::vector<double> gbs;         // per candidate: the median of its samples' GB/s
  std::vector<double> score;       // per candidate: the median over the rounds of its GB/s ÷ the round's median
  double ms = 0;                   // what the tuning took
  bool cached = false;             // an earlier tuning's answer for the same (format, K, ISA, threads)
};
// Times every eligible variant for 16-bit weights of format f and row length k on `pool` (nullptr: the
// calling thread), streaming row ranges of `weights` (all of format f and row length k, float layout) in
// rounds that alternate the variants, and picks the highest score (GB/s relative to the round's median). Cached per (format, k,
// active ISA, threads) for the process. Returns variant -1 when nothing is eligible.
HalfGemvTuning tune_half_gemv(DType f, int64_t k, std::span<const PackedWeight* const> weights, ThreadPool* pool);
std::string describe(const HalfGemvTuning& t, DType f, int64_t k, int threads);

// The kernel linear() runs for m rows of w: its recorded variant for m = 1 when it has one the active ISA
// runs, else `fallback` (the ISA's float kernel).
inline detail::FloatKernel half_gemv_kernel(const PackedWeight& w, int64_t m, detail::FloatKernel fallback) {
  if (m != 1 || w.gemv_variant < 0) return fallback;
  const HalfGemvVariant& v = half_gemv_variants()[static_cast<size_t>(w.gemv_variant)];
  return v.isa <= active_isa() ? v.fn : fallback;
}

// The kernel linear() runs for 2..kFloatRowsMax rows of w: its recorded variant's rows kernel when the
// active ISA runs the variant (nullptr when the variant has none), else `fallback` (the ISA's).
inline detail::FloatKernel half_rows_kernel(const PackedWeight& w, detail::FloatKernel fallback) {
  if (w.gemv_variant < 0) return fallback;
  const HalfGemvVariant& v = half_gemv_variants()[static_cast<size_t>(w.gemv_variant)];
  return v.isa <= active_isa() ? v.rows : fallback;
}

namespace detail {
HFS_X86_KERNEL std::span<const HalfGemvVariant> half_gemv_variants_avx2();
HFS_X86_KERNEL std::span<const HalfGemvVariant> half_gemv_variants_avx512();
}  // namespace detail

}  // namespace hfs::cpu_fast
