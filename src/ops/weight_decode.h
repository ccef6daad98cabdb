// ops/weight_decode.h — turns one row of a [N, K] weight into f32, whatever its storage dtype.
//
// Storage layouts (row-major; the formats and their decoders are core/quant.h's, the ones the exporter
// writes and the cpu_fast kernels read):
//   f32 | f16 | bf16 : K elements.
//   i8               : K signed bytes; the real value is scale[n] * w[n, k] (per-output-channel scale,
//                      passed separately).
//   q4_0             : K / 32 llama.cpp Q4_0 blocks (f16 scale d, then 16 bytes of nibbles).
//
//   std::vector<float> row(K);
//   hfs::ops::decode_weight_row(weight, n, scale_or_null, row.data());
#pragma once

#include <cstdint>
#include <cstring>

#include "core/quant.h"
#include "hfstatic/tensor.h"

namespace hfs::ops {

// Row `n` of weight `w` ([N, K]) as K floats. `scale` ([N] f32) is used only for i8 weights.
inline void decode_weight_row(const TensorView& w, int64_t n, const float* scale, float* out) {
  const int64_t k = w.shape[1];
  switch (w.dtype) {
    case DType::kF32: std::memcpy(out, w.data<const float>() + n * k, static_cast<size_t>(k) * sizeof(float)); break;
    case DType::kF16: quant::dequantize_f16(w.data<const uint16_t>() + n * k, out, k); break;
    case DType::kBF16: quant::dequantize_bf16(w.data<const uint16_t>() + n * k, out, k); break;
    case DType::kI8: quant::dequantize_i8_per_channel(w.data<const int8_t>() + n * k, scale + n, 1, k, out); break;
    case DType::kQ4_0: quant::dequantize_q4_0(w.data<const uint8_t>() + n * quant::q4_0_bytes(1, k), 1, k, out); break;
    default: break;  // rejected by the rule
  }
}

}  // namespace hfs::ops
