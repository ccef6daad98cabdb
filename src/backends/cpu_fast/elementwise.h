// cpu_fast/elementwise.h — the small ops of a decoder step, with the fusions that save a pass.
//
// These are bandwidth-trivial at decode (vectors of a few thousand floats); what matters is not adding
// passes: silu_mul fuses silu(gate)·up, RoPE's angles are computed once per step for every layer, and
// the backend quantizes one normalized activation once for every integer linear that reads it. The
// loops a baseline x86-64 build cannot vectorize well (float reductions, exp, f16 conversion, RoPE)
// have AVX-512 and AVX2 versions chosen at run time; results match the portable loops (tests compare both with
// double-precision definitions, and the f16 conversion bit for bit).
// Semantics match the reference ops in ops.h.
#pragma once

#include <cstdint>

#include "backends/cpu_fast/cpu_features.h"
#include "hfstatic/dtype.h"

namespace hfs::cpu_fast {

// y[r] = x[r] / sqrt(mean(x[r]²) + eps) * (unit_offset ? 1 + w : w), rows of d.
void rms_norm(const float* x, const float* w, int64_t rows, int64_t d, float eps, bool unit_offset, float* y);
void silu(const float* x, int64_t n, float* y);
void silu_mul(const float* gate, const float* up, int64_t n, float* y);  // silu(gate) · up

namespace detail {
HFS_X86_KERNEL void silu_mul_avx512(const float* gate, const float* up, int64_t n, float* y);
HFS_X86_KERNEL void rms_norm_avx512(const float* x, const float* w, int64_t rows, int64_t d, float eps, bool unit_offset, float* y);
HFS_X86_KERNEL void rope_apply_avx512(const float* x, const float* cs, int64_t t, int64_t h, int64_t d, int64_t r, float* y);
HFS_X86_KERNEL void f32_to_f16_avx512(const float* src, uint16_t* dst, int64_t n);
HFS_X86_KERNEL void silu_mul_avx2(const float* gate, const float* up, int64_t n, float* y);
HFS_X86_KERNEL void rms_norm_avx2(const float* x, const float* w, int64_t rows, int64_t d, float eps, bool unit_offset, float* y);
HFS_X86_KERNEL void rope_apply_avx2(const float* x, const float* cs, int64_t t, int64_t h, int64_t d, int64_t r, float* y);
HFS_X86_KERNEL void f32_to_f16_avx2(const float* src, uint16_t* dst, int64_t n);
}  // namespace detail
void gelu_tanh(const float* x, int64_t n, float* y);
void add(const float* a, const float* b, int64_t n, float* y);
void mul(const float* a, const float* b, int64_t n, float* y);
void scale(const float* x, float value, int64_t n, float* y);
void softcap(const float* x, float cap, int64_t n, float* y);
// RoPE, x [T, H, D] → y: HF half rotation of the first r dims (r ≤ d, even), the rest copied. In two
// parts, so the angles of one step are computed once for the q and k of every layer:
// cs [T, r] = per row, cos(pos·inv_freq[i])·scaling for i < r/2, then the sines likewise.
void rope_angles(const int32_t* positions, const float* inv_freq, int64_t t, int64_t r, float attention_scaling,
                 float* cs);
void rope_apply(const float* x, const float* cs, int64_t t, int64_t h, int64_t d, int64_t r, float* y);
// f32 → f16, round to nearest even, NaN → canonical quiet NaN (bit-identical to core/half.h).
void f32_to_f16_row(const float* src, uint16_t* dst, int64_t n);
// table [V, H] in f32/f16/bf16; ids [T] (checked by the caller against V) → y [T, H] f32.
// Rows ids[i] of table [V, h] (f32/f16/bf16, or i8 with per-row `scale` [V]) as f32; ids are checked by the caller.
void embedding(const void* table, DType dtype, const float* scale, const int32_t* ids, int64_t t, int64_t h, float* y);
// cache [Hkv, S, D] f32|f16, rows [T, Hkv, D] f32: row t → slot slots[t] (skipped when < 0 or ≥ S).
// i8 caches: `scale` [Hkv, S] holds the rows' scales (kv_scale_write, already written for these rows);
// q = clamp(round_half_even(x / scale), ±127), 0 where the scale is 0 — the reference op's bytes.
void kv_cache_write(void* cache, DType dtype, const float* rows, const int32_t* slots, int64_t t, int64_t hkv, int64_t s,
                    int64_t d, const float* scale = nullptr);
// scale[h · s + slots[i]] = max |rows[i, h, :]| / 127 for rows with a slot in [0, s) (an int8 cache's row scales).
void kv_scale_write(float* scale, const float* rows, const int32_t* slots, int64_t t, int64_t hkv, int64_t s, int64_t d);

}  // namespace hfs::cpu_fast
