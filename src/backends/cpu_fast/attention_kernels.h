// cpu_fast/attention_kernels.h — per-ISA inner loops of attention (internal).
#pragma once

#include <cstdint>

#include "hfstatic/dtype.h"

namespace hfs::cpu_fast::detail {

// out[j][i] = q_j · k[slots[i]] for j < g (q_j = q + j·d), i < n; k rows are d long.
using ScoresFn = void (*)(const float* q, int g, const void* k, bool f16, int64_t d, const int32_t* slots, int64_t n,
                          float* out);
// out_j += Σ_i p[j][i] · v[slots[i]] for j < g (out_j = out + j·d).
using AccumFn = void (*)(const float* p, int g, const void* v, bool f16, int64_t d, const int32_t* slots, int64_t n,
                         float* out);
// s[i] = exp(s[i]·scale + mask[slots[i]] - max) over i < n, where max is that of the scaled and masked
// scores (returned in *max); returns Σ s[i]. No softcap (that path stays scalar).
using SoftmaxFn = float (*)(float* s, int64_t n, const float* mask, const int32_t* slots, float scale, float* max);
// Live-slot scan (see attention.h).
using LiveFn = int64_t (*)(const float* mask, int64_t t, int64_t s, int32_t* slots);

void attn_scores_scalar(const float*, int, const void*, bool, int64_t, const int32_t*, int64_t, float*);
void attn_scores_avx2(const float*, int, const void*, bool, int64_t, const int32_t*, int64_t, float*);
void attn_scores_avx512(const float*, int, const void*, bool, int64_t, const int32_t*, int64_t, float*);
void attn_accum_scalar(const float*, int, const void*, bool, int64_t, const int32_t*, int64_t, float*);
void attn_accum_avx2(const float*, int, const void*, bool, int64_t, const int32_t*, int64_t, float*);
void attn_accum_avx512(const float*, int, const void*, bool, int64_t, const int32_t*, int64_t, float*);
float attn_softmax_scalar(float*, int64_t, const float*, const int32_t*, float, float*);
float attn_softmax_avx512(float*, int64_t, const float*, const int32_t*, float, float*);
int64_t live_slots_scalar(const float*, int64_t, int64_t, int32_t*);
int64_t live_slots_avx512(const float*, int64_t, int64_t, int32_t*);

}  // namespace hfs::cpu_fast::detail
