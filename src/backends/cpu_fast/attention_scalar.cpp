#include <cmath>
#include <cstdint>

#include "backends/cpu_fast/attention.h"
#include "backends/cpu_fast/attention_kernels.h"
#include "backends/cpu_fast/half.h"

namespace hfs::cpu_fast::detail {

void attn_scores_scalar(const float* q, int g, const void* k, const void* /*then*/, bool f16, int64_t d,
                        const int32_t* slots, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t base = static_cast<int64_t>(slots[i]) * d;
    for (int j = 0; j < g; ++j) {
      float s = 0;
      for (int64_t e = 0; e < d; ++e) {
        const float kv = f16 ? f16_to_f32(static_cast<const uint16_t*>(k)[base + e]) : static_cast<const float*>(k)[base + e];
        s += q[j * d + e] * kv;
      }
      out[j * n + i] = s;
    }
  }
}

void attn_accum_scalar(const float* p, int g, const void* v, bool f16, int64_t d, const int32_t* slots, int64_t n,
                       float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t base = static_cast<int64_t>(slots[i]) * d;
    for (int j = 0; j < g; ++j) {
      const float w = p[j * n + i];
      for (int64_t e = 0; e < d; ++e) {
        const float vv = f16 ? f16_to_f32(static_cast<const uint16_t*>(v)[base + e]) : static_cast<const float*>(v)[base + e];
        out[j * d + e] += w * vv;
      }
    }
  }
}

float attn_softmax_scalar(float* s, int64_t n, const float* mask, const int32_t* slots, float scale, float* max) {
  float m = -INFINITY;
  for (int64_t i = 0; i < n; ++i) {
    s[i] = s[i] * scale + mask[slots[i]];
    m = s[i] > m ? s[i] : m;
  }
  *max = m;
  if (m <= kHiddenThreshold) return 0.0f;  // the caller discards the range
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += (s[i] = std::exp(s[i] - m));
  return sum;
}

int64_t live_slots_scalar(const float* mask, int64_t t, int64_t s, int32_t* slots) {
  int64_t n = 0;
  for (int64_t j = 0; j < s; ++j) {
    bool live = false;
    for (int64_t r = 0; r < t && !live; ++r) live = mask[r * s + j] > kHiddenThreshold;
    if (live) slots[n++] = static_cast<int32_t>(j);
  }
  return n;
}

void scan_rows_scalar(const float* mask, int64_t t, int64_t s, int32_t* row_slots, int64_t* row_n, uint64_t* bits) {
  for (int64_t r = 0; r < t; ++r) {
    const float* m = mask + r * s;
    int32_t* out = row_slots + r * s;
    int64_t n = 0;
    for (int64_t j = 0; j < s; ++j)
      if (m[j] > kHiddenThreshold) {
        out[n++] = static_cast<int32_t>(j);
        bits[j / 64] |= uint64_t{1} << (j % 64);
      }
    row_n[r] = n;
  }
}

}  // namespace hfs::cpu_fast::detail
