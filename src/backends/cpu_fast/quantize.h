// cpu_fast/quantize.h — f32 → weight-format quantizers, their inverses, and an error report.
//
// The exporter calls these to write weights; the kernels read exactly these layouts.
//   f16 / bf16  : IEEE half / bfloat16, round to nearest even.
//   i8 per-channel: weight [N,K] int8 + f32 scale [N]; symmetric, scale = max|w_n|/127,
//                 q = round(w / scale) in [-127, 127]; w ≈ q * scale[n].
//   q4_0        : llama.cpp Q4_0, blocks of 32 along K, 18 bytes each: f16 d, then 16 bytes qs;
//                 element j<16 = ((qs[j] & 15) - 8) * d, element j+16 = ((qs[j] >> 4) - 8) * d;
//                 d = (value of largest magnitude, with its sign) / -8, exactly as quantize_row_q4_0_ref.
//   q8_0        : llama.cpp Q8_0, blocks of 32 along K, 34 bytes each: f16 d = max|w|/127, 32 int8.
//
//   std::vector<float> w(N * K);  ...
//   std::vector<uint8_t> q(hfs::cpu_fast::q4_0_bytes(N, K));
//   HFS_TRY(hfs::cpu_fast::quantize_q4_0(w.data(), N, K, q.data()));
//   auto rep = hfs::cpu_fast::quantization_error(hfs::DType::kQ4_0, w.data(), N, K);  // rep->rel_rms ≈ 0.1
#pragma once

#include <cstddef>
#include <cstdint>

#include "hfstatic/dtype.h"
#include "hfstatic/error.h"

namespace hfs::cpu_fast {

inline constexpr int64_t kQBlock = 32;      // elements per q4_0 / q8_0 block
inline constexpr int64_t kQ4Bytes = 18;     // bytes per q4_0 block
inline constexpr int64_t kQ8Bytes = 34;     // bytes per q8_0 block

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

}  // namespace hfs::cpu_fast
