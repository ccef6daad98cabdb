// ops/weight_decode.h — turns one row of a [N, K] weight into f32, whatever its storage dtype.
//
// Storage layouts (row-major, row n starts at n * row_bytes):
//   f32 | f16 | bf16 : K elements.
//   i8               : K signed bytes; the real value is scale[n] * w[n, k] (per-output-channel scale,
//                      passed separately).
//   q4_0             : K / 32 llama.cpp Q4_0 blocks of 18 bytes: f16 scale d, then 16 bytes qs. Element
//                      j < 16 of a block is ((qs[j] & 0x0F) - 8) * d, element j + 16 is ((qs[j] >> 4) - 8) * d.
//
//   std::vector<float> row(K);
//   hfs::ops::decode_weight_row(weight, n, scale_or_null, row.data());
#pragma once

#include <cstdint>
#include <cstring>

#include "core/half.h"
#include "hfstatic/tensor.h"

namespace hfs::ops {

inline constexpr int kQ4_0BlockElems = 32;
inline constexpr int kQ4_0BlockBytes = 18;

// Decodes one Q4_0 block (18 bytes) into 32 floats.
inline void decode_q4_0_block(const uint8_t* block, float* out) {
  uint16_t d_bits;
  std::memcpy(&d_bits, block, 2);  // little-endian f16, possibly unaligned
  const float d = f16_to_f32(d_bits);
  const uint8_t* qs = block + 2;
  for (int j = 0; j < 16; ++j) {
    out[j] = static_cast<float>((qs[j] & 0x0F) - 8) * d;
    out[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
  }
}

// Row `n` of weight `w` ([N, K]) as K floats. `scale` ([N] f32) is used only for i8 weights.
inline void decode_weight_row(const TensorView& w, int64_t n, const float* scale, float* out) {
  const int64_t k = w.shape[1];
  switch (w.dtype) {
    case DType::kF32: std::memcpy(out, w.data<const float>() + n * k, static_cast<size_t>(k) * sizeof(float)); break;
    case DType::kF16: {
      const uint16_t* p = w.data<const uint16_t>() + n * k;
      for (int64_t i = 0; i < k; ++i) out[i] = f16_to_f32(p[i]);
      break;
    }
    case DType::kBF16: {
      const uint16_t* p = w.data<const uint16_t>() + n * k;
      for (int64_t i = 0; i < k; ++i) out[i] = bf16_to_f32(p[i]);
      break;
    }
    case DType::kI8: {
      const int8_t* p = w.data<const int8_t>() + n * k;
      const float s = scale[n];
      for (int64_t i = 0; i < k; ++i) out[i] = s * static_cast<float>(p[i]);
      break;
    }
    case DType::kQ4_0: {
      const int64_t blocks = k / kQ4_0BlockElems;
      const uint8_t* p = w.data<const uint8_t>() + n * blocks * kQ4_0BlockBytes;
      for (int64_t b = 0; b < blocks; ++b) decode_q4_0_block(p + b * kQ4_0BlockBytes, out + b * kQ4_0BlockElems);
      break;
    }
    default: break;  // rejected by the rule
  }
}

}  // namespace hfs::ops
