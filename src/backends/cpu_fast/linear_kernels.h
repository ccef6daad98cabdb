// cpu_fast/linear_kernels.h — per-ISA entry points behind linear() (internal).
//
// Each computes the output columns of one contiguous range for all m rows: float kernels take
// [n0, n1) in output columns, integer kernels [t0, t1) in packed tiles (kTileRows columns each).
#pragma once

#include <cstdint>

#include "backends/cpu_fast/cpu_features.h"
#include "backends/cpu_fast/linear.h"

namespace hfs::cpu_fast::detail {

using FloatKernel = void (*)(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, int64_t n0,
                             int64_t n1);
using IntKernel = void (*)(const PackedWeight& w, const QuantizedActs& a, int64_t m, const float* bias, float* y,
                           int64_t t0, int64_t t1);

void linear_float_scalar(const PackedWeight&, const float*, int64_t, const float*, float*, int64_t, int64_t);
HFS_X86_KERNEL void linear_float_avx2(const PackedWeight&, const float*, int64_t, const float*, float*, int64_t, int64_t);
HFS_X86_KERNEL void linear_float_avx512(const PackedWeight&, const float*, int64_t, const float*, float*, int64_t, int64_t);

void linear_int_scalar(const PackedWeight&, const QuantizedActs&, int64_t, const float*, float*, int64_t, int64_t);
HFS_X86_KERNEL void linear_int_avx2(const PackedWeight&, const QuantizedActs&, int64_t, const float*, float*, int64_t, int64_t);
HFS_X86_KERNEL void linear_int_avx512(const PackedWeight&, const QuantizedActs&, int64_t, const float*, float*, int64_t, int64_t);
// 2..kIntRowsMax rows (multi-row steps): each weight block loaded once into registers for every row
// (linear_int_rows_avx512.cpp); bit-identical to linear_int_avx512, decode included.
HFS_X86_KERNEL void linear_int_rows_avx512(const PackedWeight&, const QuantizedActs&, int64_t, const float*, float*, int64_t, int64_t);
inline constexpr int64_t kIntRowsMax = 16;
// From this many rows it takes two adjacent tiles per pass: a task's range should hold whole pairs.
inline constexpr int64_t kIntRowsPairMinRows = 4;
// AMX tiles, for m ≥ 16 (prefill); bit-identical to linear_int_avx512 (linear_amx.cpp).
HFS_X86_KERNEL void linear_int_amx(const PackedWeight&, const QuantizedActs&, int64_t, const float*, float*, int64_t, int64_t);
inline constexpr int64_t kAmxMinRows = 16;

// Rows [i0, i1) of x [m, k] into a (quantize_acts splits the rows over the pool).
HFS_X86_KERNEL void quantize_acts_avx512(const float* x, int64_t i0, int64_t i1, int64_t k, int offset, QuantizedActs& a);
HFS_X86_KERNEL void quantize_acts_avx2(const float* x, int64_t i0, int64_t i1, int64_t k, int offset, QuantizedActs& a);

// Packs the whole 32-blocks of one tile whose 16 rows are all real (pack_weight's load-time fast path;
// the same bytes as its portable loop). `src` is row 0's first block, rows `row_bytes` apart, blocks
// `block_bytes` apart, each block's values `qs_offset` bytes in (after a q8_0/q4_0 block's f16 scale);
// every 4 value bytes are XORed with `flip` (0x80808080: i8/q8_0's +128; 0 for q4_0's nibble pairs).
// Writes `blocks` × `steps` 64-byte vectors at `dst` and, if `scales` is non-null, the blocks' f16
// scales [blocks][16] (read at each block's start).
HFS_X86_KERNEL void pack_tile_avx512(const uint8_t* src, int64_t row_bytes, int64_t block_bytes, int64_t qs_offset, int64_t blocks,
                      int64_t steps, uint32_t flip, uint8_t* dst, uint16_t* scales);

// Packed-layout geometry shared by the packer and the kernels (see linear.h).
inline constexpr int64_t kTileRows = 16;
inline int64_t steps_per_block(DType f) { return f == DType::kQ4_0 ? 4 : 8; }  // 64-byte vectors per block
inline int64_t tile_bytes(const PackedWeight& w) { return (w.k_padded / 32) * steps_per_block(w.format) * 64; }
// Float weights, up to this many activation rows (16: the multi-sequence engine's and the draft
// verifier's largest step): every row gets, bit for bit, what decode's GEMV gives it, so a row's outputs
// do not depend on the rows beside it. The decode kernel's rows kernel does that (linear_float_rows.h:
// decode's additions in decode's order for every row, each weight vector widened once for up to 6
// (AVX-512) or 2 (AVX2) rows); a GEMV variant without one (linear_half.h) runs each row through the
// GEMV itself, a few weight rows at a time (linear.cpp, float_rows_as_decode). From one row more, the
// prefill panel GEMM (linear_float_<isa>, which itself runs the GEMV for one row and the GEMM for any
// other count).
inline constexpr int64_t kFloatRowsMax = 16;
// 2 or more rows, each bit for bit what linear_float_<isa> gives it alone (its float_gemv): float_rows up to
// kFloatRowsMax rows, float_rows_wide above (a prefill chunk in one call: linear_float_rows.h).
HFS_X86_KERNEL void linear_float_rows_avx2(const PackedWeight&, const float*, int64_t, const float*, float*, int64_t, int64_t);
HFS_X86_KERNEL void linear_float_rows_avx512(const PackedWeight&, const float*, int64_t, const float*, float*, int64_t, int64_t);
// The same for the AVX-512 half_group variants of linear_half_gemv.h ("zmm-r1-*"; f16 / bf16 only), which
// finish with the lane sum and then the k % 16 tail one element at a time. (The AVX2 ones, "ymm-r1-*",
// add exactly what float_gemv does, so linear_float_rows_avx2 serves them.)
HFS_X86_KERNEL void linear_half_rows_r1_avx512(const PackedWeight&, const float*, int64_t, const float*, float*, int64_t, int64_t);
// Float weights: the output rows a pool task's range is a multiple of — 4 up to kFloatRowsMax rows (the
// GEMV's weight groups), and the AVX-512 prefill GEMM's 32-row panel otherwise (a range ending mid-panel
// would compute a whole panel for a few rows).
inline int64_t float_unit_rows(Isa, DType, int64_t m) { return m <= kFloatRowsMax ? 4 : 32; }

// Float prefill GEMMs (AVX-512, AVX2) pack panels of `cols` weight rows × `kpanel` K, the panels in order
// (n, k0), (n, k0 + kpanel), ..., then (n + cols, 0). A panel is `cols` row segments of ≤ 1 KiB some KiB
// apart: short strided streams that the hardware prefetcher barely ramps up on, so the packing of each
// panel waited on DRAM. This names the cache lines of the panel after (n, k0) (none past row n1) and
// prefetches them a few at a time, spread over the current panel's row sweeps. Qwen2.5-0.5B / SmolLM2-135M
// 512-token prefills with it against without: f32 1 thread +37 % / +16 %, 2 threads +10 % / +22 %;
// Qwen2.5 f16 +26 % / +24 % (AVX-512 kernels). The AVX2 kernels, whose FMA rate leaves more time per
// panel, gain less: Qwen2.5 f16 +4 % / +8 %, SmolLM2 f16 +9 % / +6 %.
// A range's first panel has no panel before it to hide its reads behind: a pool task starting cold
// waited on DRAM for it, about 3 µs a task. `first_of_range` names that panel, and the kernels issue all of
// it at once before packing it, so its misses overlap instead of following one another. SmolLM2-135M f16
// weights (from memory, 1 thread, one GEMM as 16 consecutive ranges against one): [576, 576] costs 22 µs
// over its 416 µs instead of 50, [576, 1536] 6 µs over 1100 instead of 27-46; 512-token prefills on 2
// threads (16 pool tasks per GEMM): SmolLM2 f16 +2.1 %, Qwen2.5 f16 +1.8 %, 1 thread (one range per GEMM)
// unchanged. The AVX2 kernels do the same (their range starts cost too little to measure: twice the FMA
// time per panel hides more of the wait).
struct PanelPrefetch {
  PanelPrefetch(const PackedWeight& w, int64_t elem_bytes, int64_t cols, int64_t kpanel, int64_t n, int64_t n1,
                int64_t k0) {
    int64_t nn = n, kk = k0 + kpanel;
    if (kk >= w.k) {
      nn = n + cols;
      kk = 0;
    }
    init(w, elem_bytes, cols, kpanel, nn, n1, kk);
  }
  // Panel (n0, 0) itself, where a range [n0, n1) starts.
  static PanelPrefetch first_of_range(const PackedWeight& w, int64_t elem_bytes, int64_t cols, int64_t kpanel,
                                      int64_t n0, int64_t n1) {
    PanelPrefetch p;
    p.init(w, elem_bytes, cols, kpanel, n0, n1, 0);
    return p;
  }
  // Prefetch lines for one of `sweeps` row sweeps (the last sweep's call takes what is left).
  void issue(int64_t sweeps) {
    const int64_t end = sweeps <= 1 ? lines_ : line_ + (lines_ + sweeps - 1) / sweeps;
    for (; line_ < end && line_ < lines_; ++line_)
      __builtin_prefetch(base_ + line_ / per_row_ * row_bytes_ + line_ % per_row_ * 64, 0, 3);
  }

 private:
  PanelPrefetch() = default;
  // The panel of rows [nn, min(nn + cols, n1)) × K [kk, kk + kpanel); none when nn ≥ n1.
  void init(const PackedWeight& w, int64_t elem_bytes, int64_t cols, int64_t kpanel, int64_t nn, int64_t n1,
            int64_t kk) {
    if (nn >= n1) return;
    row_bytes_ = w.k * elem_bytes;
    per_row_ = ((w.k - kk < kpanel ? w.k - kk : kpanel) * elem_bytes + 63) / 64;
    base_ = static_cast<const char*>(w.raw) + nn * row_bytes_ + kk * elem_bytes;
    lines_ = (n1 - nn < cols ? n1 - nn : cols) * per_row_;
  }

  const char* base_ = nullptr;
  int64_t row_bytes_ = 0, per_row_ = 1, line_ = 0, lines_ = 0;
};

}  // namespace hfs::cpu_fast::detail
