// cpu_fast/avx512_mask.h — the lane mask for the last, partial vector of a 16-float loop (internal).
// Include it AFTER a file's HFS_TARGET_AVX512_BEGIN (isa_target.h), like vec_exp_avx512.h.
//
//   for (int64_t i = 0; i < n; i += 16) {
//     const __mmask16 mk = tail_mask(n - i);   // all 16 lanes until the tail, then the first n - i
//     _mm512_mask_storeu_ps(y + i, mk, _mm512_maskz_loadu_ps(mk, x + i));
//   }
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace hfs::cpu_fast::detail {
namespace {

// The first `left` lanes (none when left ≤ 0, all 16 when left ≥ 16).
inline __mmask16 tail_mask(int64_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xffff) : left <= 0 ? static_cast<__mmask16>(0)
                                                                 : static_cast<__mmask16>((1u << left) - 1);
}

}  // namespace
}  // namespace hfs::cpu_fast::detail
