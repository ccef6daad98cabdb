// AVX2 decode GEMV variants for f16 / bf16 weights (linear_half.h): 256-bit vectors, eligible on AVX2 and
// AVX-512 CPUs alike (on a Zen 4, which runs each 512-bit op as two 256-bit halves, the narrower loop
// may stream as fast with half the decode work in flight). "ymm-default" is the AVX2 float kernel itself.
#if defined(__x86_64__)  // x86 kernels only: elsewhere the scalar path runs (cpu_features.h)
#include <immintrin.h>

#include <cstdint>
#include <span>

#include "backends/cpu_fast/half.h"
#include "backends/cpu_fast/isa_target.h"
#include "backends/cpu_fast/linear_half.h"

HFS_TARGET_AVX2_BEGIN

#include "backends/cpu_fast/linear_half_gemv.h"

namespace hfs::cpu_fast::detail {
namespace {

struct Ymm {
  using V = __m256;
  static constexpr int64_t kLanes = 8;
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static float hsum(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static V wload(HalfF16, const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static V wload(HalfBF16, const uint16_t* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
  }
  static void wsplit(const uint16_t* p, V& even, V& odd) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    even = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    odd = _mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32(static_cast<int32_t>(0xffff0000u))));
  }
  static void xsplit(const float* x, float* xs) {
    const __m256 a = _mm256_loadu_ps(x), b = _mm256_loadu_ps(x + 8);
    // Within each 128-bit half: a0 a2 b0 b2 | a4 a6 b4 b6; the 64-bit permute puts them in order.
    const __m256 ev = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)), od = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    _mm256_store_ps(xs, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(ev), _MM_SHUFFLE(3, 1, 2, 0))));
    _mm256_store_ps(xs + 8, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(od), _MM_SHUFFLE(3, 1, 2, 0))));
  }
};

template <int NR, int64_t PF, int LOC>
void either(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, int64_t n0, int64_t n1) {
  if (w.format == DType::kF16)
    half_gemv<Ymm, HalfF16, NR, PF, LOC>(w, x, m, bias, y, n0, n1);
  else
    half_gemv<Ymm, HalfBF16, NR, PF, LOC>(w, x, m, bias, y, n0, n1);
}

// Plain functions, so that every instantiation is compiled under this file's target.
#define HFS_HALF_VARIANT_(name, body) \
  void name(const PackedWeight& w, const float* x, int64_t m, const float* b, float* y, int64_t n0, int64_t n1) { body(w, x, m, b, y, n0, n1); }
HFS_HALF_VARIANT_(ymm_r1_nopf, (either<1, 0, 3>))
HFS_HALF_VARIANT_(ymm_r1_pf8k_l2, (either<1, 8192, 2>))
HFS_HALF_VARIANT_(ymm_split_pf4k, (half_gemv_split<Ymm, 4096, 3>))
#undef HFS_HALF_VARIANT_

}  // namespace
}  // namespace hfs::cpu_fast::detail

HFS_TARGET_END

// The table is data: built outside the target region, so nothing that runs on every CPU is compiled for AVX2.
namespace hfs::cpu_fast::detail {
namespace {
constexpr Isa kY = Isa::kAvx2;
constexpr HalfGemvVariant kVariants[] = {
    {"ymm-default", kY, true, true, linear_float_avx2, linear_float_rows_avx2},
    {"ymm-r1-nopf", kY, true, true, ymm_r1_nopf, linear_float_rows_avx2},
    {"ymm-r1-pf8k-l2", kY, true, true, ymm_r1_pf8k_l2, linear_float_rows_avx2},
    {"ymm-split-pf4k", kY, false, true, ymm_split_pf4k, nullptr},
};
}  // namespace

std::span<const HalfGemvVariant> half_gemv_variants_avx2() { return kVariants; }

}  // namespace hfs::cpu_fast::detail

#endif  // defined(__x86_64__)
