// Portable kernels: the layout reference for the SIMD paths and the fallback on pre-AVX2 CPUs.
#include <cmath>

#include "backends/cpu_fast/half.h"
#include "backends/cpu_fast/linear_kernels.h"

namespace hfs::cpu_fast::detail {
namespace {

inline float load_w(const PackedWeight& w, int64_t i) {
  switch (w.format) {
    case DType::kF16: return f16_to_f32(static_cast<const uint16_t*>(w.raw)[i]);
    case DType::kBF16: return bf16_to_f32(static_cast<const uint16_t*>(w.raw)[i]);
    default: return static_cast<const float*>(w.raw)[i];
  }
}

}  // namespace

void linear_float_scalar(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, int64_t n0,
                         int64_t n1) {
  const int64_t k = w.k;
  for (int64_t n = n0; n < n1; ++n) {
    for (int64_t i = 0; i < m; ++i) {
      // Four partial sums so the compiler can keep several FMAs in flight.
      float s[4] = {0, 0, 0, 0};
      int64_t j = 0;
      for (; j + 4 <= k; j += 4)
        for (int u = 0; u < 4; ++u) s[u] += x[i * k + j + u] * load_w(w, n * k + j + u);
      for (; j < k; ++j) s[0] += x[i * k + j] * load_w(w, n * k + j);
      y[i * w.n + n] = (s[0] + s[1]) + (s[2] + s[3]) + (bias ? bias[n] : 0.0f);
    }
  }
}

// Tiles of 16 rows with the rows along the lanes (linear.h); weights are used as signed values.
void linear_int_scalar(const PackedWeight& w, const QuantizedActs& a, int64_t m, const float* bias, float* y,
                       int64_t t0, int64_t t1) {
  const int64_t kp = w.k_padded, blocks = kp / 32, steps = steps_per_block(w.format);
  const bool q4 = w.format == DType::kQ4_0;
  for (int64_t t = t0; t < t1; ++t) {
    const uint8_t* tile = w.q.data() + t * tile_bytes(w);
    for (int r = 0; r < kTileRows; ++r) {
      const int64_t n = t * kTileRows + r;
      if (n >= w.n) break;
      for (int64_t i = 0; i < m; ++i) {
        const int8_t* xq = a.xq.data() + i * kp;
        float acc = 0;
        for (int64_t b = 0; b < blocks; ++b) {
          int32_t dot = 0;
          for (int64_t v = 0; v < steps; ++v)
            for (int j = 0; j < 4; ++j) {
              const uint8_t byte = tile[(b * steps + v) * 64 + 4 * r + j];
              const int8_t* xb = xq + 32 * b + 4 * v + j;
              if (q4)
                dot += ((byte & 15) - 8) * xb[0] + ((byte >> 4) - 8) * xb[16];
              else
                dot += (static_cast<int>(byte) - 128) * xb[0];
            }
          float s = a.block_scale.data()[i * blocks + b];
          if (w.format != DType::kI8) s *= f16_to_f32(w.block_scales.data()[(t * blocks + b) * kTileRows + r]);
          acc += static_cast<float>(dot) * s;
        }
        if (w.format == DType::kI8) acc *= w.channel_scales.data()[n];
        y[i * w.n + n] = acc + (bias ? bias[n] : 0.0f);
      }
    }
  }
}

}  // namespace hfs::cpu_fast::detail
