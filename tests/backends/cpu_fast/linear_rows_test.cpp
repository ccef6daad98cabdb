// A few activation rows through one weight pass: 2..16 rows, as a multi-sequence engine packs the decode
// rows of several sequences (or draft tokens) into one step. Float weights take the row-wise kernels of
// linear_float_driver.h up to float_rows_max rows (16; 8 for f16 on AVX2) and the panel GEMM above,
// integer weights the tile loops of their prefill kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu_fast/cpu_features.h"
#include "backends/cpu_fast/linear.h"
#include "backends/cpu_fast/linear_kernels.h"
#include "backends/cpu_fast/thread_pool.h"
#include "isa_fixture.h"
#include "linear_reference.h"

namespace hfs::cpu_fast {
namespace {

constexpr DType kFormats[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kI8, DType::kQ8_0, DType::kQ4_0};

bool is_float(DType f) { return f == DType::kF32 || f == DType::kF16 || f == DType::kBF16; }

class CpuFastLinearRows : public IsaTest {};

// Every format × R × bias or none × 1 and 2 threads, against the double-precision loop. N = 37 ends on a
// weight group of 1 after groups of 4 (integer: a 16-row tile that is mostly padding); float K = 203 has
// whole 4-vector steps, leftover whole vectors on AVX2 and a 3- or 11-element tail, K = 1000 f16/bf16 rows
// are shorter than the prefetch distance (the prefetch moves on to the next group's rows) and K = 9 has no
// whole step; integer K = 160 is 5 blocks, padded to 192 (i8 also takes K = 203, which q8_0/q4_0 cannot).
TEST_P(CpuFastLinearRows, EveryFormatMatchesDoubleReference) {
  ThreadPool pools[2] = {ThreadPool(1), ThreadPool(2)};
  for (DType f : kFormats) {
    std::vector<std::pair<int64_t, int64_t>> shapes = {{37, 160}, {21, 1024}};
    if (is_float(f)) shapes = {{37, 203}, {9, 1000}, {6, 9}};
    if (f == DType::kI8) shapes.emplace_back(37, 203);
    for (int64_t m : {2, 3, 4, 5, 7, 8, 9, 15, 16})
      for (auto [n, k] : shapes)
        for (bool bias : {true, false})
          for (ThreadPool& pool : pools) check(f, m, n, k, pool, bias);
  }
}

// Decode (R = 1) adds a row's products in the same order as the multi-row kernels for integer weights
// (exact int32 block sums, then one float accumulation per block) and on the portable path. Float decode
// on AVX2 and AVX-512 keeps one weight row at a time with four chains (float_gemv): a different rounding.
bool decode_shares_row_order(DType f) { return !is_float(f) || active_isa() == Isa::kScalar; }

// A row's outputs do not depend on which other rows share its call (batch invariance): for every format,
// R rows taken at several offsets give, bit for bit, what one call over all the rows of the same kernel
// gives them: R = 2..float_rows_max against a float_rows_max-row call (the row-wise kernels), and for
// float weights float_rows_max + 1..24 against a 24-row call (the panel GEMM, which adds each output's
// products in plain K order whatever the rows). 1 and 2 threads (a pool task's range changes where the
// weight groups start). Decode matches the row-wise kernels bit for bit where it shares their order
// (decode_shares_row_order), and to rounding elsewhere.
TEST_P(CpuFastLinearRows, RowsDoNotDependOnTheRowsBesideThem) {
  constexpr int64_t kRows = 24;
  ThreadPool pools[2] = {ThreadPool(1), ThreadPool(2)};
  for (DType f : kFormats) {
    const int64_t n = 37, k = is_float(f) ? 203 : 160;
    Weight w = make_weight(f, n, k, 5);
    auto pw = pack_weight(f, w.bytes.data(), n, k, w.scale.empty() ? nullptr : w.scale.data());
    ASSERT_TRUE(pw.ok()) << pw.error().to_string();
    std::mt19937 rng(9);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(kRows * k)), bias(static_cast<size_t>(n));
    for (auto& v : x) v = d(rng);
    for (auto& v : bias) v = d(rng);
    LinearScratch scratch(pw->k_padded, kRows);
    // Row counts [lo, hi] and the call over hi rows they are compared with.
    const int64_t rows_max = is_float(f) ? detail::float_rows_max(active_isa(), f) : 16;
    std::vector<std::pair<int64_t, int64_t>> groups = {{1, rows_max}};
    if (is_float(f)) groups.emplace_back(rows_max + 1, kRows);
    for (auto [lo, hi] : groups) {
      std::vector<float> all(static_cast<size_t>(hi * n));
      linear(*pw, x.data(), hi, bias.data(), all.data(), scratch, &pools[0]);
      for (ThreadPool& pool : pools)
        for (int64_t r = lo; r <= hi; ++r)
          for (int64_t off : {int64_t{0}, (hi - r) / 2, hi - r}) {
            SCOPED_TRACE(std::string(dtype_name(f)) + " R=" + std::to_string(r) + " rows from " + std::to_string(off) +
                         " of " + std::to_string(hi) + " threads=" + std::to_string(pool.size()) +
                         " isa=" + std::string(isa_name(active_isa())));
            std::vector<float> y(static_cast<size_t>(r * n), -7.0f);
            linear(*pw, x.data() + off * k, r, bias.data(), y.data(), scratch, &pool);
            const float* want = all.data() + off * n;
            if (r > 1 || decode_shares_row_order(f)) {
              ASSERT_EQ(0, std::memcmp(y.data(), want, y.size() * sizeof(float)));
              continue;
            }
            for (int64_t j = 0; j < n; ++j)
              ASSERT_NEAR(y[static_cast<size_t>(j)], want[j], 1e-4f * (1 + std::fabs(want[j])));
          }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, CpuFastLinearRows, all_isas(), isa_test_name);

}  // namespace
}  // namespace hfs::cpu_fast
