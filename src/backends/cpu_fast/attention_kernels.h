// cpu_fast/attention_kernels.h — per-ISA inner loops of attention (internal).
#pragma once

#include <cstdint>

#include "backends/cpu_fast/cpu_features.h"
#include "hfstatic/dtype.h"

namespace hfs::cpu_fast::detail {

// out[j][i] = q_j · k[slots[i]] for j < g (q_j = q + j·d), i < n; k rows are d long. `then` (may be
// null): the cache read next over the same slots (V), whose rows a kernel may prefetch with K's.
using ScoresFn = void (*)(const float* q, int g, const void* k, const void* then, bool f16, int64_t d,
                          const int32_t* slots, int64_t n, float* out);
// out_j += Σ_i p[j][i] · v[slots[i]] for j < g (out_j = out + j·d).
using AccumFn = void (*)(const float* p, int g, const void* v, bool f16, int64_t d, const int32_t* slots, int64_t n,
                         float* out);
// int8 caches: the same over int8 rows widened to f32, with the kv head's per-slot scales ([S]):
// out[j][i] = (q_j · k[slots[i]]) · ks[slots[i]], and out_j += Σ_i (p[j][i] · vs[slots[i]]) · v[slots[i]]
// (attention_int8.cpp).
using ScoresI8Fn = void (*)(const float* q, int g, const int8_t* k, const float* ks, int64_t d, const int32_t* slots,
                            int64_t n, float* out);
using AccumI8Fn = void (*)(const float* p, int g, const int8_t* v, const float* vs, int64_t d, const int32_t* slots,
                           int64_t n, float* out);
// s[i] = exp(s[i]·scale + mask[slots[i]] - max) over i < n, where max is that of the scaled and masked
// scores (returned in *max); returns Σ s[i]. No softcap (that path stays scalar).
using SoftmaxFn = float (*)(float* s, int64_t n, const float* mask, const int32_t* slots, float scale, float* max);
// Live-slot scan (see attention.h).
using LiveFn = int64_t (*)(const float* mask, int64_t t, int64_t s, int32_t* slots);
// Per-row scan of mask [t, s]: row r's visible slots, ascending, to row_slots + r·s, their count to
// row_n[r], and each visible slot's bit or-ed into bits[slot / 64] (the caller zeroes bits).
using ScanRowsFn = void (*)(const float* mask, int64_t t, int64_t s, int32_t* row_slots, int64_t* row_n, uint64_t* bits);

// Prefill attention of `rows` consecutive query rows × the g heads of one kv head at once, rows·g ≤ 32:
// the (row, head) pairs lie along the lanes of one or two vectors, so a score for all of them is one FMA
// chain over D per vector with each K element broadcast once for both (no horizontal sums), the softmax
// runs on 16 heads per instruction, and every K/V row is loaded (and widened from f16) once for all rows·g
// heads instead of once per row. Where every row's mask is exactly 0 (the prefix a causal chunk shares)
// the scores skip the mask gather. Writes out for every row that sees a slot among slots[0, n); the
// caller handles rows that see none.
struct AttnBlock {
  const float* q = nullptr;     // row r0's first head of the group; row r at q + r·q_stride, head j at + j·d
  int64_t q_stride = 0;
  float* out = nullptr;         // same layout as q
  int64_t out_stride = 0;
  int rows = 0, g = 0;
  int64_t d = 0;                // multiple of 16, ≤ 256
  const void* k = nullptr;      // this kv head's [S, d] rows
  const void* v = nullptr;
  bool f16 = false;
  const float* mask = nullptr;  // row r0's mask row; row r at mask + r·mask_stride
  int64_t mask_stride = 0;
  const int32_t* slots = nullptr;
  int64_t n = 0;
  float scale = 1.0f;
  float* scratch = nullptr;     // attn_block_scratch_floats(n, d), 64-byte aligned
};
// f16 V rows are widened this many floats at a time (32 KiB: L1-resident while every pass of lanes reads them).
inline constexpr int64_t kAttnVChunkFloats = 8192;
inline int64_t attn_block_scratch_floats(int64_t n, int64_t d) { return 32 * n + 32 * d + 8 * d + kAttnVChunkFloats; }
// The head dims attn_block_avx512 is instantiated for (D/16 vectors: 1-8, 12, 16).
inline bool attn_block_supports(int64_t d) {
  const int64_t nd = d / 16;
  return d % 16 == 0 && ((nd >= 1 && nd <= 8) || nd == 12 || nd == 16);
}
HFS_X86_KERNEL void attn_block_avx512(const AttnBlock& b);

void attn_scores_scalar(const float*, int, const void*, const void*, bool, int64_t, const int32_t*, int64_t, float*);
HFS_X86_KERNEL void attn_scores_avx2(const float*, int, const void*, const void*, bool, int64_t, const int32_t*, int64_t, float*);
HFS_X86_KERNEL void attn_scores_avx512(const float*, int, const void*, const void*, bool, int64_t, const int32_t*, int64_t, float*);
void attn_accum_scalar(const float*, int, const void*, bool, int64_t, const int32_t*, int64_t, float*);
HFS_X86_KERNEL void attn_accum_avx2(const float*, int, const void*, bool, int64_t, const int32_t*, int64_t, float*);
HFS_X86_KERNEL void attn_accum_avx512(const float*, int, const void*, bool, int64_t, const int32_t*, int64_t, float*);
void attn_scores_i8_scalar(const float*, int, const int8_t*, const float*, int64_t, const int32_t*, int64_t, float*);
HFS_X86_KERNEL void attn_scores_i8_avx2(const float*, int, const int8_t*, const float*, int64_t, const int32_t*, int64_t, float*);
HFS_X86_KERNEL void attn_scores_i8_avx512(const float*, int, const int8_t*, const float*, int64_t, const int32_t*, int64_t, float*);
void attn_accum_i8_scalar(const float*, int, const int8_t*, const float*, int64_t, const int32_t*, int64_t, float*);
HFS_X86_KERNEL void attn_accum_i8_avx2(const float*, int, const int8_t*, const float*, int64_t, const int32_t*, int64_t, float*);
HFS_X86_KERNEL void attn_accum_i8_avx512(const float*, int, const int8_t*, const float*, int64_t, const int32_t*, int64_t, float*);
float attn_softmax_scalar(float*, int64_t, const float*, const int32_t*, float, float*);
HFS_X86_KERNEL float attn_softmax_avx2(float*, int64_t, const float*, const int32_t*, float, float*);
HFS_X86_KERNEL float attn_softmax_avx512(float*, int64_t, const float*, const int32_t*, float, float*);
int64_t live_slots_scalar(const float*, int64_t, int64_t, int32_t*);
HFS_X86_KERNEL int64_t live_slots_avx2(const float*, int64_t, int64_t, int32_t*);
HFS_X86_KERNEL int64_t live_slots_avx512(const float*, int64_t, int64_t, int32_t*);
void scan_rows_scalar(const float*, int64_t, int64_t, int32_t*, int64_t*, uint64_t*);
HFS_X86_KERNEL void scan_rows_avx2(const float*, int64_t, int64_t, int32_t*, int64_t*, uint64_t*);
HFS_X86_KERNEL void scan_rows_avx512(const float*, int64_t, int64_t, int32_t*, int64_t*, uint64_t*);

}  // namespace hfs::cpu_fast::detail
