#include "core/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/half.h"

namespace hfs::quant {
namespace {

// q4_0 packs element j and element j + 16 of a block into byte j.
constexpr int kHalfBlock = static_cast<int>(kQBlock / 2);

Status check_blocks(const char* format, int64_t k) {
  if (k <= 0 || k % kQBlock != 0)
    return make_error(ErrorCode::kInvalidArgument, std::string(format) + ": row length k = " + std::to_string(k) +
                                                       " must be a positive multiple of 32");
  return Ok{};
}

}  // namespace

void quantize_f16(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}
void quantize_bf16(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
}
void dequantize_f16(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}
void dequantize_bf16(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(src[i]);
}

void quantize_i8_per_channel(const float* w, int64_t rows, int64_t k, int8_t* q, float* scale) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = w + r * k;
    float amax = 0;
    for (int64_t j = 0; j < k; ++j) amax = std::max(amax, std::fabs(x[j]));
    float s = amax / 127.0f;
    float inv = s != 0 ? 1.0f / s : 0.0f;
    scale[r] = s;
    for (int64_t j = 0; j < k; ++j) {
      float v = std::nearbyint(x[j] * inv);
      q[r * k + j] = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
    }
  }
}

void dequantize_i8_per_channel(const int8_t* q, const float* scale, int64_t rows, int64_t k, float* w) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) w[r * k + j] = static_cast<float>(q[r * k + j]) * scale[r];
}

// Mirrors llama.cpp quantize_row_q4_0_ref so files are interchangeable bit for bit.
Status quantize_q4_0(const float* w, int64_t rows, int64_t k, uint8_t* dst) {
  HFS_TRY(check_blocks("q4_0", k));
  const int64_t nb = rows * (k / kQBlock);
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = w + i * kQBlock;
    uint8_t* blk = dst + i * kQ4Bytes;
    float amax = 0, max = 0;
    for (int j = 0; j < kQBlock; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    uint16_t dh = f32_to_f16(d);
    std::memcpy(blk, &dh, kQScaleBytes);
    for (int j = 0; j < kHalfBlock; ++j) {
      const float x0 = x[j] * id, x1 = x[kHalfBlock + j] * id;
      const uint8_t xi0 = static_cast<uint8_t>(std::min<int8_t>(15, static_cast<int8_t>(x0 + 8.5f)));
      const uint8_t xi1 = static_cast<uint8_t>(std::min<int8_t>(15, static_cast<int8_t>(x1 + 8.5f)));
      blk[kQScaleBytes + j] = static_cast<uint8_t>(xi0 | (xi1 << 4));
    }
  }
  return Ok{};
}

// Mirrors llama.cpp quantize_row_q8_0_ref.
Status quantize_q8_0(const float* w, int64_t rows, int64_t k, uint8_t* dst) {
  HFS_TRY(check_blocks("q8_0", k));
  const int64_t nb = rows * (k / kQBlock);
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = w + i * kQBlock;
    uint8_t* blk = dst + i * kQ8Bytes;
    float amax = 0;
    for (int j = 0; j < kQBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    uint16_t dh = f32_to_f16(d);
    std::memcpy(blk, &dh, kQScaleBytes);
    for (int j = 0; j < kQBlock; ++j) blk[kQScaleBytes + j] = static_cast<uint8_t>(static_cast<int8_t>(std::roundf(x[j] * id)));
  }
  return Ok{};
}

void dequantize_q4_0(const uint8_t* src, int64_t rows, int64_t k, float* w) {
  const int64_t nb = rows * (k / kQBlock);
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* blk = src + i * kQ4Bytes;
    uint16_t dh;
    std::memcpy(&dh, blk, kQScaleBytes);
    const float d = f16_to_f32(dh);
    for (int j = 0; j < kHalfBlock; ++j) {
      w[i * kQBlock + j] = static_cast<float>((blk[kQScaleBytes + j] & 15) - 8) * d;
      w[i * kQBlock + j + kHalfBlock] = static_cast<float>((blk[kQScaleBytes + j] >> 4) - 8) * d;
    }
  }
}

void dequantize_q8_0(const uint8_t* src, int64_t rows, int64_t k, float* w) {
  const int64_t nb = rows * (k / kQBlock);
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* blk = src + i * kQ8Bytes;
    uint16_t dh;
    std::memcpy(&dh, blk, kQScaleBytes);
    const float d = f16_to_f32(dh);
    for (int j = 0; j < kQBlock; ++j) w[i * kQBlock + j] = static_cast<float>(static_cast<int8_t>(blk[kQScaleBytes + j])) * d;
  }
}

double relative_rms_error(const float* ref, const float* approx, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(approx[i]) - ref[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  if (den == 0) return num == 0 ? 0.0 : INFINITY;
  return std::sqrt(num / den);
}

Result<QuantReport> quantization_error(DType format, const float* w, int64_t rows, int64_t k) {
  const int64_t n = rows * k;
  std::vector<float> back(static_cast<size_t>(n));
  switch (format) {
    case DType::kF32:
      std::copy(w, w + n, back.begin());
      break;
    case DType::kF16: {
      std::vector<uint16_t> h(static_cast<size_t>(n));
      quantize_f16(w, h.data(), n);
      dequantize_f16(h.data(), back.data(), n);
      break;
    }
    case DType::kBF16: {
      std::vector<uint16_t> h(static_cast<size_t>(n));
      quantize_bf16(w, h.data(), n);
      dequantize_bf16(h.data(), back.data(), n);
      break;
    }
    case DType::kI8: {
      std::vector<int8_t> q(static_cast<size_t>(n));
      std::vector<float> s(static_cast<size_t>(rows));
      quantize_i8_per_channel(w, rows, k, q.data(), s.data());
      dequantize_i8_per_channel(q.data(), s.data(), rows, k, back.data());
      break;
    }
    case DType::kQ4_0: {
      HFS_TRY(check_blocks("q4_0", k));
      std::vector<uint8_t> q(static_cast<size_t>(q4_0_bytes(rows, k)));
      HFS_TRY(quantize_q4_0(w, rows, k, q.data()));
      dequantize_q4_0(q.data(), rows, k, back.data());
      break;
    }
    case DType::kQ8_0: {
      HFS_TRY(check_blocks("q8_0", k));
      std::vector<uint8_t> q(static_cast<size_t>(q8_0_bytes(rows, k)));
      HFS_TRY(quantize_q8_0(w, rows, k, q.data()));
      dequantize_q8_0(q.data(), rows, k, back.data());
      break;
    }
    default:
      return make_error(ErrorCode::kUnsupported, "quantization_error: no weight format '" +
                                                     std::string(dtype_name(format)) +
                                                     "' (supported: f32, f16, bf16, i8, q4_0, q8_0)");
  }
  QuantReport rep;
  rep.rel_rms = relative_rms_error(w, back.data(), n);
  for (int64_t i = 0; i < n; ++i) rep.max_abs = std::max(rep.max_abs, std::fabs(static_cast<double>(back[i]) - w[i]));
  return rep;
}

}  // namespace hfs::quant
