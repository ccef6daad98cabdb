#if defined(__x86_64__)  // x86 kernels only: elsewhere the scalar path runs (cpu_features.h)

// "default" is the AVX-512 float kernel itself, so the tuning can only keep or beat it.
#include <immintrin.h>

#include <cstdint>
#include <span>

#include "backends/cpu_fast/half.h"
#include "backends/cpu_fast/isa_target.h"
#include "backends/cpu_fast/linear_half.h"

HFS_TARGET_AVX512_BEGIN

#include "backends/cpu_fast/linear_half_gemv.h"

namespace hfs::cpu_fast::detail {
namespace {

struct Zmm {
  using V = __m512;
  static constexpr int64_t kLanes = 16;
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static float hsum(V v) { return _mm512_reduce_add_ps(v); }
  static V wload(HalfF16, const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static V wload(HalfBF16, const uint16_t* p) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
  }
};

template <int NR, int64_t PF, int LOC>
void either(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, int64_t n0, int64_t n1) {
  if (w.format == DType::kF16)
    half_gemv<Zmm, HalfF16, NR, PF, LOC>(w, x, m, bias, y, n0, n1);
  else
    half_gemv<Zmm, HalfBF16, NR, PF, LOC>(w, x, m, bias, y, n0, n1);
}

// Prefetch distances in bytes; locality 3 fills L1 (prefetcht0), 2 fills L2 (prefetcht1). Plain functions
// here, so that every instantiation is compiled under this file's target.
#define HFS_HALF_VARIANT_(name, body) \
  void name(const PackedWeight& w, const float* x, int64_t m, const float* b, float* y, int64_t n0, int64_t n1) { body(w, x, m, b, y, n0, n1); }
HFS_HALF_VARIANT_(zmm_r1_nopf, (either<1, 0, 3>))
HFS_HALF_VARIANT_(zmm_r1_pf8k_l2, (either<1, 8192, 2>))
#undef HFS_HALF_VARIANT_

}  // namespace
}  // namespace hfs::cpu_fast::detail

HFS_TARGET_END

// The table is data: built outside the target region, so nothing that runs on every CPU is compiled for AVX-512.
namespace hfs::cpu_fast::detail {
namespace {
constexpr Isa kZ = Isa::kAvx512;
constexpr HalfGemvVariant kVariants[] = {
    {"zmm-default", kZ, true, true, linear_float_avx512, linear_float_rows_avx512},
    {"zmm-r1-nopf", kZ, true, true, zmm_r1_nopf, linear_half_rows_r1_avx512},
    {"zmm-r1-pf8k-l2", kZ, true, true, zmm_r1_pf8k_l2, linear_half_rows_r1_avx512},
};
}  // namespace

std::span<const HalfGemvVariant> half_gemv_variants_avx512() { return kVariants; }

}  // namespace hfs::cpu_fast::detail

#endif  // defined(__x86_64__)
