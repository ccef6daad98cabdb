#include "backends/cpu_fast/elementwise.h"

#include <cmath>
#include <algorithm>
#include <cstring>

#include "backends/cpu_fast/cpu_features.h"
#include "backends/cpu_fast/half.h"

namespace hfs::cpu_fast {

void rms_norm(const float* x, const float* w, int64_t rows, int64_t d, float eps, bool unit_offset, float* y) {
  if (active_isa() >= Isa::kAvx512) return detail::rms_norm_avx512(x, w, rows, d, eps, unit_offset, y);
  if (active_isa() >= Isa::kAvx2) return detail::rms_norm_avx2(x, w, rows, d, eps, unit_offset, y);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * d;
    float* yr = y + r * d;
    double ss = 0;  // double: d up to ~10^4 squares, and it is one pass either way
    for (int64_t i = 0; i < d; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(d) + eps));
    if (unit_offset)
      for (int64_t i = 0; i < d; ++i) yr[i] = xr[i] * inv * (1.0f + w[i]);
    else
      for (int64_t i = 0; i < d; ++i) yr[i] = xr[i] * inv * w[i];
  }
}

void silu(const float* x, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
}
void silu_mul(const float* gate, const float* up, int64_t n, float* y) {
  if (active_isa() >= Isa::kAvx512) return detail::silu_mul_avx512(gate, up, n, y);
  if (active_isa() >= Isa::kAvx2) return detail::silu_mul_avx2(gate, up, n, y);
  for (int64_t i = 0; i < n; ++i) y[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}
void gelu_tanh(const float* x, int64_t n, float* y) {
  constexpr float kC = 0.7978845608028654f;  // sqrt(2/pi)
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + std::tanh(kC * (v + 0.044715f * v * v * v)));
  }
}
void add(const float* a, const float* b, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}
void mul(const float* a, const float* b, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}
void scale(const float* x, float value, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * value;
}
void softcap(const float* x, float cap, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i] / cap) * cap;
}

void rope_angles(const int32_t* positions, const float* inv_freq, int64_t t, int64_t r, float attention_scaling,
                 float* cs) {
  const int64_t half = r / 2;
  for (int64_t ti = 0; ti < t; ++ti) {
    const float pos = static_cast<float>(positions[ti]);
    for (int64_t i = 0; i < half; ++i) {
      // f32 angle, as HF computes (inv_freq · position) in f32.
      const float ang = pos * inv_freq[i];
      cs[ti * r + i] = std::cos(ang) * attention_scaling;
      cs[ti * r + half + i] = std::sin(ang) * attention_scaling;
    }
  }
}

void rope_apply(const float* x, const float* cs, int64_t t, int64_t h, int64_t d, int64_t r, float* y) {
  if (active_isa() >= Isa::kAvx512) return detail::rope_apply_avx512(x, cs, t, h, d, r, y);
  if (active_isa() >= Isa::kAvx2) return detail::rope_apply_avx2(x, cs, t, h, d, r, y);
  const int64_t half = r / 2;
  for (int64_t ti = 0; ti < t; ++ti) {
    const float* c = cs + ti * r;
    const float* sn = c + half;
    for (int64_t hi = 0; hi < h; ++hi) {
      const float* xr = x + (ti * h + hi) * d;
      float* yr = y + (ti * h + hi) * d;
      for (int64_t i = 0; i < half; ++i) {
        const float x1 = xr[i], x2 = xr[i + half];
        yr[i] = x1 * c[i] - x2 * sn[i];
        yr[i + half] = x2 * c[i] + x1 * sn[i];
      }
      if (r < d) std::memmove(yr + r, xr + r, static_cast<size_t>(d - r) * sizeof(float));
    }
  }
}

void f32_to_f16_row(const float* src, uint16_t* dst, int64_t n) {
  if (active_isa() >= Isa::kAvx512) return detail::f32_to_f16_avx512(src, dst, n);
  if (active_isa() >= Isa::kAvx2) return detail::f32_to_f16_avx2(src, dst, n);
  for (int64_t e = 0; e < n; ++e) dst[e] = f32_to_f16(src[e]);
}

void embedding(const void* table, DType dtype, const float* scale, const int32_t* ids, int64_t t, int64_t h, float* y) {
  for (int64_t i = 0; i < t; ++i) {
    const int64_t row = ids[i];
    float* yr = y + i * h;
    switch (dtype) {
      case DType::kF16: {
        const uint16_t* src = static_cast<const uint16_t*>(table) + row * h;
        for (int64_t j = 0; j < h; ++j) yr[j] = f16_to_f32(src[j]);
        break;
      }
      case DType::kBF16: {
        const uint16_t* src = static_cast<const uint16_t*>(table) + row * h;
        for (int64_t j = 0; j < h; ++j) yr[j] = bf16_to_f32(src[j]);
        break;
      }
      case DType::kI8: {
        const int8_t* src = static_cast<const int8_t*>(table) + row * h;
        const float s = scale[row];
        for (int64_t j = 0; j < h; ++j) yr[j] = s * static_cast<float>(src[j]);
        break;
      }
      default:
        std::memcpy(yr, static_cast<const float*>(table) + row * h, static_cast<size_t>(h) * sizeof(float));
    }
  }
}

void kv_scale_write(float* scale, const float* rows, const int32_t* slots, int64_t t, int64_t hkv, int64_t s, int64_t d) {
  for (int64_t i = 0; i < t; ++i) {
    const int64_t slot = slots[i];
    if (slot < 0 || slot >= s) continue;
    for (int64_t h = 0; h < hkv; ++h) {
      const float* src = rows + (i * hkv + h) * d;
      float amax = 0.0f;
      for (int64_t e = 0; e < d; ++e) amax = std::max(amax, std::fabs(src[e]));
      scale[h * s + slot] = amax / 127.0f;
    }
  }
}

void kv_cache_write(void* cache, DType dtype, const float* rows, const int32_t* slots, int64_t t, int64_t hkv, int64_t s,
                    int64_t d, const float* scale) {
  for (int64_t i = 0; i < t; ++i) {
    const int64_t slot = slots[i];
    if (slot < 0 || slot >= s) continue;
    for (int64_t h = 0; h < hkv; ++h) {
      const float* src = rows + (i * hkv + h) * d;
      const int64_t off = (h * s + slot) * d;
      if (dtype == DType::kI8) {
        const float sc = scale[h * s + slot];
        int8_t* q = static_cast<int8_t*>(cache) + off;
        for (int64_t e = 0; e < d; ++e)  // the division and rounding of the reference op
          q[e] = sc == 0.0f ? int8_t{0} : static_cast<int8_t>(std::clamp(std::nearbyint(src[e] / sc), -127.0f, 127.0f));
      } else if (dtype == DType::kF16) {
        f32_to_f16_row(src, static_cast<uint16_t*>(cache) + off, d);
      } else {
        std::memcpy(static_cast<float*>(cache) + off, src, static_cast<size_t>(d) * sizeof(float));
      }
    }
  }
}

}  // namespace hfs::cpu_fast
