// Several activation rows in one call: 2..16 rows, as a multi-sequence engine packs the decode rows of
// several sequences (or draft tokens) into one step, and prefill chunks. Float weights run decode's GEMV
// additions for every row (up to kFloatRowsMax rows at a time; the panel GEMM only when asked for,
// FloatRows::kPanelGemm), integer weights the tile loops of their prefill kernels; either way every row is
// bit for bit what decode gives it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu_fast/cpu_features.h"
#include "backends/cpu_fast/linear.h"
#include "backends/cpu_fast/linear_half.h"
#include "backends/cpu_fast/linear_kernels.h"
#include "backends/cpu_fast/thread_pool.h"
#include "isa_fixture.h"
#include "linear_reference.h"
#include "support/random_floats.h"

namespace hfs::cpu_fast {
namespace {

constexpr DType kFormats[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kI8, DType::kQ8_0, DType::kQ4_0};

bool is_float(DType f) { return f == DType::kF32 || f == DType::kF16 || f == DType::kBF16; }

class CpuFastLinearRows : public IsaTest {};

// `rows` activation rows [rows, k] and a bias [n], normal(0, 1) from `seed`.
struct RowsInput {
  std::vector<float> x, bias;
};
RowsInput random_rows(int64_t rows, int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  hfs::test::Normal<float> d(0.0f, 1.0f);
  RowsInput in{std::vector<float>(static_cast<size_t>(rows * k)), std::vector<float>(static_cast<size_t>(n))};
  for (auto& v : in.x) v = d(rng);
  for (auto& v : in.bias) v = d(rng);
  return in;
}

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

// A row's outputs do not depend on which other rows share its call (batch invariance): for every format,
// R rows taken at several offsets give, bit for bit, what one call over all the rows of the same kernel
// gives them: R = 1..16 against a 16-row call (decode's kernels), and for
// float weights 17..24 against a 24-row call, by default and through the panel GEMM (which adds each
// output's products in plain K order whatever the rows). 1 and 2 threads (a pool task's range changes where the
// weight groups start). Decode (R = 1) included: a draft row verified in a multi-row step must get the
// logits decode gives it.
TEST_P(CpuFastLinearRows, RowsDoNotDependOnTheRowsBesideThem) {
  constexpr int64_t kRows = 24;
  ThreadPool pools[2] = {ThreadPool(1), ThreadPool(2)};
  for (DType f : kFormats) {
    const int64_t n = 37, k = is_float(f) ? 203 : 160;
    Weight w = make_weight(f, n, k, 5);
    auto pw = pack_weight(f, w.bytes.data(), n, k, w.scale.empty() ? nullptr : w.scale.data());
    ASSERT_TRUE(pw.ok()) << pw.error().to_string();
    const auto [x, bias] = random_rows(kRows, n, k, 9);
    LinearScratch scratch(pw->k_padded, kRows);
    // Row counts [lo, hi] and the call over hi rows they are compared with.
    const int64_t rows_max = detail::kFloatRowsMax;
    std::vector<std::pair<int64_t, int64_t>> groups = {{1, rows_max}};
    if (is_float(f)) groups.emplace_back(rows_max + 1, kRows);
    for (FloatRows mode : {FloatRows::kRowInvariant, FloatRows::kPanelGemm})
    for (auto [lo, hi] : groups) {
      std::vector<float> all(static_cast<size_t>(hi * n));
      linear(*pw, x.data(), hi, bias.data(), all.data(), scratch, &pools[0], mode);
      for (ThreadPool& pool : pools)
        for (int64_t r = lo; r <= hi; ++r)
          for (int64_t off : {int64_t{0}, (hi - r) / 2, hi - r}) {
            SCOPED_TRACE(std::string(dtype_name(f)) + " R=" + std::to_string(r) + " rows from " + std::to_string(off) +
                         " of " + std::to_string(hi) + " threads=" + std::to_string(pool.size()) +
                         " isa=" + std::string(isa_name(active_isa())));
            std::vector<float> y(static_cast<size_t>(r * n), -7.0f);
            linear(*pw, x.data() + off * k, r, bias.data(), y.data(), scratch, &pool, mode);
            const float* want = all.data() + off * n;
            ASSERT_EQ(0, std::memcmp(y.data(), want, y.size() * sizeof(float)));
          }
    }
  }
}

// Each row of an R-row call (R = 2..16) is bit for bit that row alone (decode), for every weight format
// and, for f16/bf16, every decode GEMV variant the CPU runs (the one tuning picks at load is what decode
// runs, so the R-row call must follow it). Shapes: K = 896 and 4864 (Qwen2.5-0.5B's); for float weights
// also K = 203 (after the 4-vector steps: AVX-512 an 11-element tail, AVX2 a whole vector and 3), K = 1000
// (AVX-512 two whole vectors and 8, AVX2 one whole vector and no tail), K = 9 (no whole vector) and
// stories260K's K = 64 and 172 with N = 512 and 172 (AVX-512 runs weight rows up to 512 through the short-row
// kernel, 16 lane sums at once); N = 37 (a partial weight group and integer tile); with and without a bias;
// 1 and 2 threads. f32 weights of K ≤ 512 run a second time with their transposed copy (add_short_transpose:
// what a program's constants get on an AVX-512 machine).
TEST_P(CpuFastLinearRows, EveryRowIsWhatDecodeGivesIt) {
  ThreadPool pools[2] = {ThreadPool(1), ThreadPool(2)};
  for (DType f : kFormats) {
    std::vector<std::pair<int64_t, int64_t>> shapes = {{37, 896}, {21, 4864}};
    if (f != DType::kQ8_0 && f != DType::kQ4_0) shapes.emplace_back(37, 203);
    if (is_float(f)) shapes.insert(shapes.end(), {{37, 1000}, {6, 9}, {512, 64}, {172, 172}});
    std::vector<int> variants = {-1};
    if (f == DType::kF16 || f == DType::kBF16)
      for (int v : eligible_half_gemv(f)) variants.push_back(v);
    for (auto [n, k] : shapes) {
      for (bool transposed : {false, true}) {
        if (transposed && (f != DType::kF32 || k > kShortTransposeK)) continue;
        Weight wt = make_weight(f, n, k, 11);
        auto pw = pack_weight(f, wt.bytes.data(), n, k, wt.scale.empty() ? nullptr : wt.scale.data());
        ASSERT_TRUE(pw.ok()) << pw.error().to_string();
        if (transposed) {
          ASSERT_TRUE(add_short_transpose(*pw).ok());
        }
        constexpr int64_t kRows = 16;
        const auto [x, bias] = random_rows(kRows, n, k, 3);
        LinearScratch scratch(pw->k_padded, kRows);
        for (int variant : variants) {
          pw->gemv_variant = variant;
          for (ThreadPool& pool : pools) {
            for (const float* b : std::initializer_list<const float*>{bias.data(), nullptr}) {
              std::vector<float> alone(static_cast<size_t>(kRows * n));
              for (int64_t i = 0; i < kRows; ++i) linear(*pw, x.data() + i * k, 1, b, alone.data() + i * n, scratch, &pool);
              for (int64_t r = 2; r <= kRows; ++r) {
                SCOPED_TRACE(std::string(dtype_name(f)) + " [" + std::to_string(n) + ", " + std::to_string(k) +
                             "] R=" + std::to_string(r) + " variant=" +
                             (variant < 0 ? std::string("isa") : std::string(half_gemv_variants()[static_cast<size_t>(variant)].name)) +
                             " threads=" + std::to_string(pool.size()) + " bias=" + (b ? "yes" : "no") +
                             " transposed=" + (transposed ? "yes" : "no") + " isa=" + std::string(isa_name(active_isa())));
                std::vector<float> y(static_cast<size_t>(r * n), -7.0f);
                linear(*pw, x.data(), r, b, y.data(), scratch, &pool);
                for (int64_t i = 0; i < r; ++i)
                  ASSERT_EQ(0, std::memcmp(y.data() + i * n, alone.data() + i * n, static_cast<size_t>(n) * sizeof(float)))
                      << "row " << i;
              }
            }
          }
        }
      }
    }
  }
}

// An f32 weight of short rows with its transposed copy, on AVX-512: every output of every row, decode's
// included, is exactly one FMA chain along K from zero, then the bias added — computed here with std::fma in
// the same order, so the comparison is exact. Shapes: N = 37 and 172 (partial blocks of 16 outputs), K = 9,
// 64, 172 and 512 (the longest row transposed); R = 1..16 (the kernel's 8-, 4-, 2- and 1-row passes); 1 and
// 2 threads (ranges that start inside a block of 16 outputs).
TEST_P(CpuFastLinearRows, ShortF32RowsSumEachOutputInOneChainAlongK) {
  if (active_isa() < Isa::kAvx512 || detected_isa() < Isa::kAvx512) GTEST_SKIP() << "AVX-512 only";
  ThreadPool pools[2] = {ThreadPool(1), ThreadPool(2)};
  for (auto [n, k] : std::vector<std::pair<int64_t, int64_t>>{{37, 9}, {172, 64}, {37, 172}, {172, 512}}) {
    Weight wt = make_weight(DType::kF32, n, k, 13);
    auto pw = pack_weight(DType::kF32, wt.bytes.data(), n, k, nullptr);
    ASSERT_TRUE(pw.ok()) << pw.error().to_string();
    ASSERT_TRUE(add_short_transpose(*pw).ok());
    ASSERT_EQ(pw->short_t.size(), static_cast<size_t>(k * ((n + 15) / 16 * 16)));
    const auto* w = reinterpret_cast<const float*>(wt.bytes.data());
    constexpr int64_t kRows = 16;
    const auto [x, bias] = random_rows(kRows, n, k, 17);
    LinearScratch scratch(pw->k_padded, kRows);
    for (ThreadPool& pool : pools)
      for (const float* b : std::initializer_list<const float*>{bias.data(), nullptr})
        for (int64_t r = 1; r <= kRows; ++r) {
          SCOPED_TRACE("[" + std::to_string(n) + ", " + std::to_string(k) + "] R=" + std::to_string(r) +
                       " threads=" + std::to_string(pool.size()) + " bias=" + (b ? "yes" : "no"));
          std::vector<float> y(static_cast<size_t>(r * n), -7.0f);
          linear(*pw, x.data(), r, b, y.data(), scratch, &pool);
          for (int64_t i = 0; i < r; ++i)
            for (int64_t o = 0; o < n; ++o) {
              float acc = 0.0f;
              for (int64_t j = 0; j < k; ++j) acc = std::fma(x[static_cast<size_t>(i * k + j)], w[o * k + j], acc);
              ASSERT_EQ(y[static_cast<size_t>(i * n + o)], acc + (b ? b[o] : 0.0f)) << "row " << i << " output " << o;
            }
        }
  }
}

// Row invariance up to a prefill chunk: for every weight format, each row of a 1-row (decode), 3-row (a
// multi-sequence step) and 40-row call (a prefill chunk: two blocks of 16 and one of 8 through float
// weights' rows kernel, the integer kernels' 4-row passes, AMX where the CPU has it) is memcmp-equal to that
// row alone on 1 thread, on 1, 2 and 3 threads (a pool task's range of output columns never changes a
// sum). Shapes: Qwen2.5-0.5B's K = 896; float K = 203 (a tail after the 4-vector steps), integer K = 160
// (padded blocks); N = 37 (partial weight groups and tiles). f16/bf16 weights also with each GEMV variant
// the CPU runs recorded (a variant forced by HFS_CPU_FAST_HALF_GEMV sets the bits of every row count).
// About 0.2 s per ISA level.
TEST_P(CpuFastLinearRows, PrefillChunkRowsAreWhatDecodeGivesThemOnAnyThreadCount) {
  constexpr int64_t kChunk = 40;
  ThreadPool pools[3] = {ThreadPool(1), ThreadPool(2), ThreadPool(3)};
  for (DType f : kFormats) {
    std::vector<int> variants = {-1};
    if (f == DType::kF16 || f == DType::kBF16)
      for (int v : eligible_half_gemv(f)) variants.push_back(v);
    for (int64_t k : {is_float(f) ? int64_t{203} : int64_t{160}, int64_t{896}}) {
      const int64_t n = 37;
      Weight wt = make_weight(f, n, k, 19);
      auto pw = pack_weight(f, wt.bytes.data(), n, k, wt.scale.empty() ? nullptr : wt.scale.data());
      ASSERT_TRUE(pw.ok()) << pw.error().to_string();
      const auto [x, bias] = random_rows(kChunk, n, k, 23);
      LinearScratch scratch(pw->k_padded, kChunk);
      for (int variant : variants) {
        pw->gemv_variant = variant;
        std::vector<float> alone(static_cast<size_t>(kChunk * n));
        for (int64_t i = 0; i < kChunk; ++i)
          linear(*pw, x.data() + i * k, 1, bias.data(), alone.data() + i * n, scratch, &pools[0]);
        for (ThreadPool& pool : pools)
          for (int64_t m : {int64_t{1}, int64_t{3}, kChunk}) {
            SCOPED_TRACE(std::string(dtype_name(f)) + " K=" + std::to_string(k) + " M=" + std::to_string(m) +
                         " variant=" + std::to_string(variant) + " threads=" + std::to_string(pool.size()) +
                         " isa=" + std::string(isa_name(active_isa())));
            std::vector<float> y(static_cast<size_t>(m * n), -7.0f);
            linear(*pw, x.data(), m, bias.data(), y.data(), scratch, &pool);
            for (int64_t i = 0; i < m; ++i)
              ASSERT_EQ(0, std::memcmp(y.data() + i * n, alone.data() + i * n, static_cast<size_t>(n) * sizeof(float)))
                  << "row " << i;
          }
      }
    }
  }
}

// One K order per float format, shared by the GEMV and the GEMM: for every M = 1..40 (decode's GEMV, the
// few-row kernel up to 16 rows, the many-row prefill kernel above) every row of the M-row call is memcmp-equal
// to the GEMV over that row alone. K = 7 (no whole vector), 64, 65 (a 1-element tail) and 513 (past AVX-512's
// short-row kernel, so the many-row kernel runs: 8 four-vector steps, 1 vector and 1 element on AVX-512, 0
// vectors and 1 element on AVX2); N = 1, 17 (a partial block of lane sums) and 130 (M = 1, 2, 16, 17, 40 only);
// 2 threads (ranges that start inside a block). The 40-row results also against the double reference.
// About 0.15 s per SIMD level, 0.3 s scalar (measured on a busy 2-vCPU guest).
TEST_P(CpuFastLinearRows, GemmRowsAreTheGemvBitsForEveryRowCount) {
  constexpr int64_t kMaxM = 40;
  ThreadPool pool(2);
  for (DType f : {DType::kF32, DType::kF16, DType::kBF16})
    for (int64_t k : {7, 64, 65, 513})
      for (int64_t n : {1, 17, 130}) {
        Weight wt = make_weight(f, n, k, static_cast<uint32_t>(29 + k + n));
        auto pw = pack_weight(f, wt.bytes.data(), n, k, nullptr);
        ASSERT_TRUE(pw.ok()) << pw.error().to_string();
        const auto [x, bias] = random_rows(kMaxM, n, k, 31);
        LinearScratch scratch(pw->k_padded, kMaxM);
        std::vector<float> alone(static_cast<size_t>(kMaxM * n));
        for (int64_t i = 0; i < kMaxM; ++i)
          linear(*pw, x.data() + i * k, 1, bias.data(), alone.data() + i * n, scratch, &pool);
        for (int64_t m = 1; m <= kMaxM; ++m) {
          // N = 130 (the costly shape) at the row counts where the kernels change: 1, 2, 16, 17, 40.
          if (n > 17 && m > 2 && m != 16 && m != 17 && m != kMaxM) continue;
          SCOPED_TRACE(std::string(dtype_name(f)) + " [" + std::to_string(n) + ", " + std::to_string(k) +
                       "] M=" + std::to_string(m) + " isa=" + std::string(isa_name(active_isa())));
          // Start each call at another row, so that a row's position in the call changes too.
          const int64_t off = (m * 7) % (kMaxM - m + 1);
          std::vector<float> y(static_cast<size_t>(m * n), -7.0f);
          linear(*pw, x.data() + off * k, m, bias.data(), y.data(), scratch, &pool);
          for (int64_t i = 0; i < m; ++i)
            ASSERT_EQ(0, std::memcmp(y.data() + i * n, alone.data() + (off + i) * n, static_cast<size_t>(n) * sizeof(float)))
                << "row " << i;
          if (m != kMaxM) continue;
          for (int64_t i = 0; i < m; ++i)
            for (int64_t o = 0; o < n; ++o) {
              double want = bias[static_cast<size_t>(o)];
              for (int64_t j = 0; j < k; ++j)
                want += static_cast<double>(x[static_cast<size_t>((off + i) * k + j)]) * wt.deq[static_cast<size_t>(o * k + j)];
              ASSERT_NEAR(y[static_cast<size_t>(i * n + o)], want, 1e-4 * (1.0 + std::sqrt(static_cast<double>(k))))
                  << "row " << i << " output " << o;
            }
        }
      }
}

INSTANTIATE_TEST_SUITE_P(Isa, CpuFastLinearRows, all_isas(), isa_test_name);

}  // namespace
}  // namespace hfs::cpu_fast
