// Shared by the cpu_fast linear tests: weights in every format with what their bytes mean, and a check of
// linear() against a double-precision loop over those dequantized weights.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu_fast/cpu_features.h"
#include "backends/cpu_fast/half.h"
#include "backends/cpu_fast/linear.h"
#include "backends/cpu_fast/thread_pool.h"
#include "backends/cpu_fast/weight_formats.h"
#include "support/random_floats.h"

namespace hfs::cpu_fast {

struct Weight {
  std::vector<uint8_t> bytes;  // in `format`
  std::vector<float> scale;    // i8
  std::vector<float> deq;      // what the bytes mean, [n, k]
};

inline Weight make_weight(DType f, int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  hfs::test::Normal<float> d(0.0f, 0.5f);
  std::vector<float> w(static_cast<size_t>(n * k));
  for (auto& v : w) v = d(rng);
  Weight out;
  out.deq.resize(w.size());
  switch (f) {
    case DType::kF32:
      out.bytes.resize(w.size() * 4);
      std::memcpy(out.bytes.data(), w.data(), w.size() * 4);
      out.deq = w;
      break;
    case DType::kF16:
    case DType::kBF16: {
      out.bytes.resize(w.size() * 2);
      auto* h = reinterpret_cast<uint16_t*>(out.bytes.data());
      for (size_t i = 0; i < w.size(); ++i) {
        h[i] = f == DType::kF16 ? f32_to_f16(w[i]) : f32_to_bf16(w[i]);
        out.deq[i] = f == DType::kF16 ? f16_to_f32(h[i]) : bf16_to_f32(h[i]);
      }
      break;
    }
    case DType::kI8:
      out.bytes.resize(w.size());
      out.scale.resize(static_cast<size_t>(n));
      quantize_i8_per_channel(w.data(), n, k, reinterpret_cast<int8_t*>(out.bytes.data()), out.scale.data());
      dequantize_i8_per_channel(reinterpret_cast<int8_t*>(out.bytes.data()), out.scale.data(), n, k, out.deq.data());
      break;
    case DType::kQ8_0:
      out.bytes.resize(static_cast<size_t>(q8_0_bytes(n, k)));
      EXPECT_TRUE(quantize_q8_0(w.data(), n, k, out.bytes.data()).ok());
      dequantize_q8_0(out.bytes.data(), n, k, out.deq.data());
      break;
    default:
      out.bytes.resize(static_cast<size_t>(q4_0_bytes(n, k)));
      EXPECT_TRUE(quantize_q4_0(w.data(), n, k, out.bytes.data()).ok());
      dequantize_q4_0(out.bytes.data(), n, k, out.deq.data());
      break;
  }
  return out;
}

// Checks y against Σ x·deq(w) (+ bias) in double. Float formats: f32 rounding only. Integer formats: each
// activation is rounded to its 32-block's int8 grid (error ≤ step/2 = amax/254), so the bound is
// Σ |w| · amax_block / 254 plus f32 rounding.
// `mode`: how float weights run more than kFloatRowsMax rows (linear.h).
inline void check(DType f, int64_t m, int64_t n, int64_t k, ThreadPool& pool, bool with_bias = true,
                  FloatRows mode = FloatRows::kRowInvariant) {
  SCOPED_TRACE(std::string(dtype_name(f)) + " m=" + std::to_string(m) + " n=" + std::to_string(n) +
               " k=" + std::to_string(k) + " threads=" + std::to_string(pool.size()) + (with_bias ? "" : " no bias") +
               " isa=" + std::string(isa_name(active_isa())) + (mode == FloatRows::kPanelGemm ? " panel GEMM" : ""));
  Weight w = make_weight(f, n, k, static_cast<uint32_t>(n * 7 + k));
  std::mt19937 rng(static_cast<uint32_t>(m + 3));
  hfs::test::Normal<float> d(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(m * k)), bias(static_cast<size_t>(n));
  for (auto& v : x) v = d(rng);
  for (auto& v : bias) v = with_bias ? d(rng) : 0.0f;
  auto pw = pack_weight(f, w.bytes.data(), n, k, w.scale.empty() ? nullptr : w.scale.data());
  ASSERT_TRUE(pw.ok()) << pw.error().to_string();
  LinearScratch scratch(pw->k_padded, m);
  std::vector<float> y(static_cast<size_t>(m * n), -7.0f);
  linear(*pw, x.data(), m, with_bias ? bias.data() : nullptr, y.data(), scratch, &pool, mode);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double ref = bias[static_cast<size_t>(j)], mag = 0, qbound = 0;
      for (int64_t b0 = 0; b0 < k; b0 += 32) {
        double amax = 0;
        for (int64_t e = b0; e < std::min(k, b0 + 32); ++e) amax = std::max(amax, std::fabs(double(x[i * k + e])));
        for (int64_t e = b0; e < std::min(k, b0 + 32); ++e) {
          const double wv = w.deq[static_cast<size_t>(j * k + e)];
          ref += double(x[i * k + e]) * wv;
          mag += std::fabs(double(x[i * k + e]) * wv);
          qbound += std::fabs(wv) * amax / 254.0;
        }
      }
      double tol = 1e-5 * (mag + 1.0);
      if (pw->is_integer()) tol += qbound * 1.001;
      ASSERT_NEAR(y[static_cast<size_t>(i * n + j)], ref, tol) << "row " << i << " col " << j;
    }
  }
}

inline void check(DType f, int64_t m, int64_t n, int64_t k, int threads, FloatRows mode = FloatRows::kRowInvariant) {
  ThreadPool pool(threads);
  check(f, m, n, k, pool, true, mode);
}

}  // namespace hfs::cpu_fast
