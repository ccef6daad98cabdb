// core/quant.h — the weight formats, defined once: block geometry, f32 → format quantizers, their inverses
// and an error report. The exporter writes weights with these, the reference ops (ops/weight_decode.h)
// decode them, and the cpu_fast kernels read exactly these layouts (backends/cpu_fast/weight_formats.h).
//   f16 / bf16  : IEEE half / bfloat16, round to nearest even.
//   i8 per-channel: weight [N,K] int8 + f32 scale [N]; symmetric, scale = max|w_n|/127,
//                 q = round(w / scale) in [-127, 127]; w ≈ q * scale[n].
//   q4_0        : llama.cpp Q4_0, blocks of 32 along K, 18 bytes each: f16 d, then 16 bytes qs;
//                 element j<16 = ((qs[j] & 15) - 8) * d, element j+16 = ((qs[j] >> 4) - 8) * d;
//                 d = (value of largest magnitude, with its sign) / -8, exactly as quantize_row_q4_0_ref.
//   q8_0        : llama.cpp Q8_0, blocks of 32 along K, 34 bytes each: f16 d = max|w|/127, 32 int8.
//
//   std::vector<float> w(N * K);  ...
//   std::vector<uint8_t> q(hfs::quant::q4_0_bytes(N, K));
//   HFS_TRY(hfs::quant::quantize_q4_0(w.data(), N, K, q.data()));
//   auto rep = hfs::quant::quantization_error(hfs::DType::kQ4_0, w.data(), N, K);  // rep->rel_rms ≈ 0.1
#pragma once

#include <cstddef>
#include <cstdint>

#include "hfstatic/dtype.h"
#include "hfstatic/error.h"

namespace hfs::quant {

inline constexpr int64_t kQBlock = 32;                          // elements per q4_0 / q8_0 block
inline constexpr int64_t kQScaleBytes = sizeof(uint16_t);       // the f16 scale d that opens each block
inline constexpr int64_t kQ4Bytes = kQScaleBytes + kQBlock / 2;  // bytes per q4_0 block: d, two nibbles a byte
inline constexpr int64_t kQ8Bytes = kQScaleBytes + kQBlock;      // bytes per q8_0 block: d, one int8 a value

// Files are interchangeable with llama.cpp's block_q4_0 / block_q8_0 only with exactly this geometry, and
// the kernels' packers and the decoders assume it (the scale first, then the payload, no padding).
static_assert(kQBlock == 32, "llama.cpp QK4_0 / QK8_0");
static_assert(kQBlock % 2 == 0, "q4_0 stores two elements per byte");
static_assert(kQ4Bytes == 18, "sizeof(block_q4_0): f16 d + 16 bytes of nibbles");
static_assert(kQ8Bytes == 34, "sizeof(block_q8_0): f16 d + 32 int8");

inline int64_t q4_0_bytes(int64_t rows, int64_t k) { return rows * (k / kQBlock) * kQ4Bytes; }
inline int64_t q8_0_bytes(int64_t rows, int64_t k) { return rows * (k / kQBlock) * kQ8Bytes; }

void quantize_f16(const float* src, uint16_t* dst, int64_t n);
void quantize_bf16(const float* src, uint16_t* dst, int64_t n);
void dequantize_f16(const uint16_t* src, float* dst, int64_t n);
void dequantize_bf16(const uint16_t* src, float* dst, int64_t n);

// w [rows, k] → q [rows, k], scale [rows]. An all-zero row gets scale 0 and q = 0.
void quantize_i8_per_channel(const float* w, int64_t rows, int64_t k, int8_t* q, float* scale);
void dequantize_i8_per_channel(const int8_t* q, const float* scale, int64_t rows, int64_t k, float* w);

// k must be a multiple of 32 (kInvalidArgument otherwise, naming k).
[[nodiscard]] Status quantize_q4_0(const float* w, int64_t rows, int64_t k, uint8_t* dst);
[[nodiscard]] Status quantize_q8_0(const float* w, int64_t rows, int64_t k, uint8_t* dst);
void dequantize_q4_0(const uint8_t* src, int64_t rows, int64_t k, float* w);
void dequantize_q8_0(const uint8_t* src, int64_t rows, int64_t k, float* w);

// sqrt(Σ(approx-ref)²) / sqrt(Σ ref²); 0 when both are all zero.
double relative_rms_error(const float* ref, const float* approx, int64_t n);

struct QuantReport {
  double rel_rms = 0;      // relative RMS error of the round trip
  double max_abs = 0;      // largest absolute element error
};
// Quantizes w [rows, k] to `format` (f32, f16, bf16, i8 = per-channel, q4_0, q8_0), dequantizes and
// compares. kUnsupported for other dtypes; kInvalidArgument for a k the format cannot hold.
[[nodiscard]] Result<QuantReport> quantization_error(DType format, const float* w, int64_t rows, int64_t k);

}  // namespace hfs::quant
