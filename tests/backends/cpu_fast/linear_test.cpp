#include "backends/cpu_fast/linear.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backends/cpu_fast/cpu_features.h"
#include "backends/cpu_fast/elementwise.h"
#include "isa_fixture.h"
#include "linear_reference.h"
#include "backends/cpu_fast/half.h"
#include "backends/cpu_fast/thread_pool.h"
#include "backends/cpu_fast/weight_formats.h"
#include "support/random_floats.h"

namespace hfs::cpu_fast {
namespace {

class CpuFastLinear : public IsaTest {};

TEST_P(CpuFastLinear, FloatFormatsMatchDoubleReference) {
  for (DType f : {DType::kF32, DType::kF16, DType::kBF16})
    for (int64_t m : {1, 3, 6})
      for (auto nk : {std::pair<int64_t, int64_t>{13, 37}, {40, 128}, {9, 16}}) check(f, m, nk.first, nk.second, 2);
}

// Prefill, more than kFloatRowsMax (16) rows, both ways (linear.h FloatRows): the panel GEMMs (AVX-512: 32
// outputs × 256 K per panel, 8-row groups; AVX2: 16 outputs, 4-row groups): full row groups and every tail,
// several K panels (partial sums carried in y) with a K tail, partial output panels, bias; and the
// row-invariant default (blocks of 16 rows through the rows kernel, the last block short).
TEST_P(CpuFastLinear, FloatPrefillPanelsMatchDoubleReference) {
  for (FloatRows mode : {FloatRows::kPanelGemm, FloatRows::kRowInvariant})
    for (DType f : {DType::kF32, DType::kF16, DType::kBF16}) {
      for (int64_t m = 17; m <= 24; ++m) check(f, m, 70, 600, 2, mode);  // every row-group tail of both ISAs
      check(f, 32, 32, 256, 1, mode);  // exactly one panel
      check(f, 17, 33, 257, 1, mode);  // one row and one k past a panel
    }
}

TEST_P(CpuFastLinear, IntegerFormatsMatchDequantizedReference) {
  for (DType f : {DType::kI8, DType::kQ8_0, DType::kQ4_0})
    for (int64_t m : {1, 2, 5, 9})
      for (auto nk : {std::pair<int64_t, int64_t>{13, 96}, {40, 256}, {5, 32}}) check(f, m, nk.first, nk.second, 2);
  check(DType::kI8, 3, 7, 50, 1);  // per-channel i8 needs no 32-multiple
  // Several 16-row tiles (an odd count, the last one partly padding) under every row-block tail.
  for (DType f : {DType::kI8, DType::kQ8_0, DType::kQ4_0}) {
    for (int64_t m : {4, 7, 17}) check(f, m, 83, 160, 2);
    check(f, 6, 83, 160, 1);
  }
}

TEST_P(CpuFastLinear, DecodeShapesSingleAndTwoThreads) {
  for (DType f : {DType::kF16, DType::kQ4_0, DType::kI8}) {
    check(f, 1, 96, 896, 1);
    check(f, 1, 96, 896, 2);
  }
}

// Prefill chunks quantize their rows on the pool: the same bytes, scales and biases as one thread, for
// row counts that do and do not split evenly, a K tail, and both offsets. Rows are quantized
// independently, so every row is also checked against its own quantization alone.
TEST_P(CpuFastLinear, PooledActivationQuantizationEqualsSerial) {
  ThreadPool pool(2);
  for (auto [m, k] : {std::pair<int64_t, int64_t>{64, 1536}, {19, 900}, {7, 4864}})
    for (int offset : {128, 8}) {
      SCOPED_TRACE("m=" + std::to_string(m) + " k=" + std::to_string(k) + " offset=" + std::to_string(offset));
      const int64_t kp = (k + 63) / 64 * 64;
      std::vector<float> x(static_cast<size_t>(m * k));
      std::mt19937 rng(static_cast<uint32_t>(m * k));
      hfs::test::Normal<float> d(0.0f, 1.0f);
      for (auto& v : x) v = d(rng) * (1 + static_cast<float>(rng() % 8));
      LinearScratch serial(kp, m), pooled(kp, m), single(kp, 1);
      quantize_acts(x.data(), m, k, offset, serial.acts);
      quantize_acts(x.data(), m, k, offset, pooled.acts, &pool);
      ASSERT_EQ(0, std::memcmp(serial.acts.xq.data(), pooled.acts.xq.data(), serial.acts.xq.size()));
      ASSERT_EQ(0, std::memcmp(serial.acts.block_scale.data(), pooled.acts.block_scale.data(), serial.acts.block_scale.size() * 4));
      ASSERT_EQ(0, std::memcmp(serial.acts.block_bias.data(), pooled.acts.block_bias.data(), serial.acts.block_bias.size() * 4));
      for (int64_t i : {int64_t{0}, m / 2, m - 1}) {
        quantize_acts(x.data() + i * k, 1, k, offset, single.acts);
        ASSERT_EQ(0, std::memcmp(single.acts.xq.data(), pooled.acts.xq.data() + i * kp, static_cast<size_t>(kp))) << "row " << i;
        ASSERT_EQ(0, std::memcmp(single.acts.block_bias.data(), pooled.acts.block_bias.data() + i * (kp / 32), static_cast<size_t>(kp / 32) * 4));
      }
    }
}

// A row prologue (the residual add + RMSNorm the backend runs inside a linear's quantization job) runs
// once for every row, on the thread that then quantizes that row, before it does: the acts equal those of
// the serial prologue-then-quantize. The prologue writes x from two other buffers, so a row quantized
// before its prologue ran would read the NaNs x starts with.
TEST_P(CpuFastLinear, QuantizationRunsTheRowPrologueFirstOncePerRow) {
  ThreadPool pool(2);
  const int64_t m = 64, k = 576, kp = 576;
  std::vector<float> a(static_cast<size_t>(m * k)), b(a.size()), x(a.size()), expect(a.size());
  std::mt19937 rng(11);
  hfs::test::Normal<float> d(0.0f, 1.0f);
  for (auto& v : a) v = d(rng);
  for (auto& v : b) v = d(rng);
  for (size_t i = 0; i < a.size(); ++i) expect[i] = a[i] + 2 * b[i];
  LinearScratch serial(kp, m), fused(kp, m);
  quantize_acts(expect.data(), m, k, 8, serial.acts);
  struct Ctx {
    const float *a, *b;
    float* x;
    int64_t k;
    std::vector<std::atomic<int>>* seen;
  };
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    std::fill(x.begin(), x.end(), std::numeric_limits<float>::quiet_NaN());
    std::vector<std::atomic<int>> seen(static_cast<size_t>(m));
    Ctx c{a.data(), b.data(), x.data(), k, &seen};
    RowPrologue before{[](void* ctx, int64_t r0, int64_t r1) {
                         auto& c = *static_cast<Ctx*>(ctx);
                         for (int64_t r = r0; r < r1; ++r) {
                           (*c.seen)[static_cast<size_t>(r)].fetch_add(1);
                           for (int64_t j = 0; j < c.k; ++j) c.x[r * c.k + j] = c.a[r * c.k + j] + 2 * c.b[r * c.k + j];
                         }
                       },
                       &c};
    quantize_acts(x.data(), m, k, 8, fused.acts, p, before);
    for (auto& v : seen) ASSERT_EQ(v.load(), 1);
    ASSERT_EQ(0, std::memcmp(serial.acts.xq.data(), fused.acts.xq.data(), serial.acts.xq.size()));
    ASSERT_EQ(0, std::memcmp(serial.acts.block_scale.data(), fused.acts.block_scale.data(), serial.acts.block_scale.size() * 4));
    ASSERT_EQ(0, std::memcmp(serial.acts.block_bias.data(), fused.acts.block_bias.data(), serial.acts.block_bias.size() * 4));
  }
}

// Integer dot products at the edge of their intermediate ranges: every activation byte ±127 against the
// largest weights (q4_0 nibbles 15 and 0, i8 and q8_0 values ±127 and -128), where the AVX2 kernels' 16-bit
// pair sums reach 30480 (q4_0, summed over a whole block) and 32512 (i8/q8_0) — one more product would wrap.
// Our exporter's quantizers stop at ±127, but a program file may hold -128: a kernel that negates it in
// int8 (wrapping back to -128) gets the sign wrong against negative activations.
// The sums are integers, so the outputs are exact up to the float scales: y = ±K·(largest weight).
TEST_P(CpuFastLinear, IntegerSumsAtTheirBoundsAreExact) {
  const int64_t n = 16, k = 256, m = 5;
  for (DType f : {DType::kI8, DType::kQ8_0, DType::kQ4_0})
    for (int pattern = 0; pattern < 3; ++pattern) {
      if (pattern == 2 && f == DType::kQ4_0) continue;  // q4_0's -8 is pattern 1
      SCOPED_TRACE(std::string(dtype_name(f)) + " pattern " + std::to_string(pattern));
      // pattern 0: weights at +127 (q4_0: +7), x = +1; pattern 1: weights at -127 (q4_0: -8) for even
      // rows, x = -1; pattern 2: int8 weights at -128, the one value whose magnitude int8 cannot hold
      // (x·sgn w, not w·sgn x, must carry the sign), x = -1.
      const float xv = pattern == 0 ? 1.0f : -1.0f;
      const int wmag = pattern == 2 ? 128 : 127;
      std::vector<uint8_t> bytes;
      std::vector<float> scale(static_cast<size_t>(n), 1.0f / 127.0f);
      auto wmax = [&](int64_t row) { return pattern == 2 || (pattern == 1 && row % 2 == 0) ? -1 : 1; };  // sign per row
      if (f == DType::kI8) {
        bytes.resize(static_cast<size_t>(n * k));
        for (int64_t r = 0; r < n; ++r)
          for (int64_t c = 0; c < k; ++c) bytes[r * k + c] = static_cast<uint8_t>(static_cast<int8_t>(wmag * wmax(r)));
      } else {
        const int64_t bb = f == DType::kQ8_0 ? 34 : 18, nb = k / 32;
        bytes.resize(static_cast<size_t>(n * nb * bb));
        for (int64_t r = 0; r < n; ++r)
          for (int64_t b = 0; b < nb; ++b) {
            uint8_t* blk = bytes.data() + (r * nb + b) * bb;
            const uint16_t d = f32_to_f16(1.0f);
            std::memcpy(blk, &d, 2);
            for (int64_t i = 2; i < bb; ++i)
              blk[i] = f == DType::kQ8_0 ? static_cast<uint8_t>(static_cast<int8_t>(wmag * wmax(r)))
                                         : (wmax(r) > 0 ? 0xFF : 0x00);  // nibbles 15 (+7) or 0 (-8)
          }
      }
      auto pw = pack_weight(f, bytes.data(), n, k, scale.data());
      ASSERT_TRUE(pw.ok());
      std::vector<float> x(static_cast<size_t>(m * k), xv), y(static_cast<size_t>(m * n), 0.0f);
      LinearScratch scratch(pw->k_padded, m);
      for (int64_t rows : {int64_t{1}, m}) {
        linear(*pw, x.data(), rows, nullptr, y.data(), scratch, nullptr);
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t r = 0; r < n; ++r) {
            const double w = f == DType::kI8     ? wmag * wmax(r) / 127.0
                             : f == DType::kQ8_0 ? static_cast<double>(wmag * wmax(r))
                                                 : (wmax(r) > 0 ? 7.0 : -8.0);
            const double want = static_cast<double>(k) * w * xv;
            ASSERT_NEAR(y[static_cast<size_t>(i * n + r)], want, 1e-5 * std::fabs(want)) << "rows " << rows << " row " << i << " col " << r;
          }
      }
    }
}

// Every ISA's activation quantizer writes the portable loop's bytes, scales and block biases (the vector
// paths round with cvtps, the portable one with a magic-number add; both to nearest even), for K tails
// inside a block and past one, both offsets, and values that round exactly half-way.
TEST_P(CpuFastLinear, ActivationQuantizationIsBitIdenticalToPortable) {
  for (int64_t k : {int64_t{32}, int64_t{50}, int64_t{900}, int64_t{4864}})
    for (int offset : {128, 8}) {
      SCOPED_TRACE("k=" + std::to_string(k) + " offset=" + std::to_string(offset));
      const int64_t m = 3, kp = (k + 63) / 64 * 64;
      std::vector<float> x(static_cast<size_t>(m * k));
      std::mt19937 rng(static_cast<uint32_t>(k + offset));
      hfs::test::Normal<float> d(0.0f, 1.0f);
      for (auto& v : x) v = d(rng) * (1 + static_cast<float>(rng() % 8));
      // Row 2: every block's max is 127 exactly, so the others are on integer and half-integer steps.
      for (int64_t e = 0; e < k; ++e) x[static_cast<size_t>(2 * k + e)] = e % 32 == 0 ? 127.0f : static_cast<float>(e % 17) - 8.5f;
      LinearScratch vec(kp, m), portable(kp, m);
      quantize_acts(x.data(), m, k, offset, vec.acts);
      set_isa_cap(Isa::kScalar);
      quantize_acts(x.data(), m, k, offset, portable.acts);
      set_isa_cap(GetParam());
      ASSERT_EQ(0, std::memcmp(vec.acts.xq.data(), portable.acts.xq.data(), vec.acts.xq.size()));
      ASSERT_EQ(0, std::memcmp(vec.acts.block_scale.data(), portable.acts.block_scale.data(), vec.acts.block_scale.size() * 4));
      ASSERT_EQ(0, std::memcmp(vec.acts.block_bias.data(), portable.acts.block_bias.data(), vec.acts.block_bias.size() * 4));
    }
}

INSTANTIATE_TEST_SUITE_P(Isa, CpuFastLinear, all_isas(), isa_test_name);

// The AMX kernel forms the same int32 block sums as VNNI and scales them in the same order, so prefill
// through AMX tiles must equal the AVX-512 kernel bit for bit: full and partial 16-row tiles, padded
// output tiles, 2/4/6/34/48 blocks (K is padded to 64, so the ring of four C tiles ends full or half-way),
// 16..160 rows, bias, 1 and 2 threads.
TEST(CpuFastAmx, PrefillIsBitIdenticalToAvx512) {
  if (detected_isa() < Isa::kAmx) GTEST_SKIP() << "CPU (or OS) without AMX-INT8";
  ThreadPool pools[2] = {ThreadPool(1), ThreadPool(2)};
  for (DType f : {DType::kI8, DType::kQ8_0, DType::kQ4_0})
    for (auto nk : {std::pair<int64_t, int64_t>{83, 160}, {48, 96}, {576, 1536}, {40, 32}, {70, 1088}}) {
      const int64_t n = nk.first, k = nk.second;
      Weight w = make_weight(f, n, k, static_cast<uint32_t>(n + k));
      auto pw = pack_weight(f, w.bytes.data(), n, k, w.scale.empty() ? nullptr : w.scale.data());
      ASSERT_TRUE(pw.ok()) << pw.error().to_string();
      std::vector<float> bias(static_cast<size_t>(n));
      std::mt19937 rng(static_cast<uint32_t>(n));
      hfs::test::Normal<float> d(0.0f, 1.0f);
      for (auto& v : bias) v = d(rng);
      for (int64_t m : {16, 19, 32, 47, 64, 160}) {
        std::vector<float> x(static_cast<size_t>(m * k));
        for (auto& v : x) v = d(rng);
        LinearScratch scratch(pw->k_padded, m);
        ThreadPool& pool = pools[m % 2];  // 1 and 2 threads across the row counts
        SCOPED_TRACE(std::string(dtype_name(f)) + " m=" + std::to_string(m) + " n=" + std::to_string(n) +
                     " k=" + std::to_string(k) + " threads=" + std::to_string(pool.size()));
        std::vector<float> y_amx(static_cast<size_t>(m * n), -7.0f), y_vnni(y_amx);
        set_isa_cap(Isa::kAmx);
        linear(*pw, x.data(), m, bias.data(), y_amx.data(), scratch, &pool);
        set_isa_cap(Isa::kAvx512);
        linear(*pw, x.data(), m, bias.data(), y_vnni.data(), scratch, &pool);
        set_isa_cap(Isa::kAmx);
        ASSERT_EQ(0, std::memcmp(y_amx.data(), y_vnni.data(), y_amx.size() * sizeof(float)));
      }
    }
}

// Delegates that pack the same constant (a program's prefill and decode methods) share one copy; the
// progress callback walks the source rows in order so the caller can release them; once every holder
// is gone the next request packs afresh.
TEST(CpuFastPack, SharedPackedWeightIsPackedOncePerSource) {
  const int64_t n = 2500, k = 96;
  std::vector<int8_t> q(static_cast<size_t>(n * k));
  std::vector<float> scale(static_cast<size_t>(n)), other_scale(static_cast<size_t>(n));
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<int8_t>(static_cast<int>(i % 255) - 127);
  for (int64_t i = 0; i < n; ++i) scale[static_cast<size_t>(i)] = other_scale[static_cast<size_t>(i)] = 0.01f;
  std::vector<uint64_t> progress;
  auto a = shared_packed_weight(DType::kI8, q.data(), n, k, scale.data(), [&](uint64_t b) { progress.push_back(b); });
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  ASSERT_FALSE(progress.empty());
  EXPECT_TRUE(std::is_sorted(progress.begin(), progress.end()));
  EXPECT_EQ(progress.back(), static_cast<uint64_t>(n * k));
  progress.clear();
  auto b = shared_packed_weight(DType::kI8, q.data(), n, k, scale.data(), [&](uint64_t x) { progress.push_back(x); });
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_TRUE(progress.empty());  // nothing packed the second time
  auto c = shared_packed_weight(DType::kI8, q.data(), n, k, other_scale.data());
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->get(), c->get());  // a different interpretation of the same bytes
  a->reset();
  b->reset();
  auto d = shared_packed_weight(DType::kI8, q.data(), n, k, scale.data(), [&](uint64_t x) { progress.push_back(x); });
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(progress.empty());  // packed again
  // The shared copy computes what a private one does.
  auto own = pack_weight(DType::kI8, q.data(), n, k, scale.data());
  ASSERT_TRUE(own.ok());
  std::vector<float> x(static_cast<size_t>(k), 0.25f), y1(static_cast<size_t>(n)), y2(static_cast<size_t>(n));
  LinearScratch s1(own->k_padded, 1), s2(own->k_padded, 1);
  linear(**d, x.data(), 1, nullptr, y1.data(), s1, nullptr);
  linear(*own, x.data(), 1, nullptr, y2.data(), s2, nullptr);
  EXPECT_EQ(y1, y2);
}

// A batch (q/k/v-like: one big and two small weights, with and without bias) gives bit-identical results
// to running each linear alone, for float and integer formats, decode and prefill row counts, 1 and 2
// threads; the task split across weights must not drop or double a row.
// linear_batch and linear_glu give exactly what separate linear() calls (and silu_mul) give.
TEST(CpuFastLinearBatch, MatchesSeparateLinears) {
  std::mt19937 rng(7);
  hfs::test::Normal<float> nd(0.0f, 1.0f);
  const int64_t k = 96;
  const int64_t ns[] = {70, 18, 18};
  for (DType f : {DType::kF32, DType::kF16, DType::kI8, DType::kQ4_0}) {
    std::vector<std::vector<uint8_t>> data;
    std::vector<std::vector<float>> scales, biases;
    std::vector<PackedWeight> ws;
    for (int64_t n : ns) {
      std::vector<float> w(static_cast<size_t>(n * k));
      for (auto& v : w) v = nd(rng);
      scales.emplace_back(static_cast<size_t>(n));
      std::vector<uint8_t> bytes;
      if (f == DType::kF32) {
        bytes.resize(w.size() * 4);
        std::memcpy(bytes.data(), w.data(), bytes.size());
      } else if (f == DType::kF16) {
        bytes.resize(w.size() * 2);
        for (size_t i = 0; i < w.size(); ++i) {
          const uint16_t h = f32_to_f16(w[i]);
          std::memcpy(bytes.data() + 2 * i, &h, 2);
        }
      } else if (f == DType::kI8) {
        bytes.resize(w.size());
        quantize_i8_per_channel(w.data(), n, k, reinterpret_cast<int8_t*>(bytes.data()), scales.back().data());
      } else {
        bytes.resize(static_cast<size_t>(n * (k / 32) * 18));
        ASSERT_TRUE(quantize_q4_0(w.data(), n, k, bytes.data()).ok());
      }
      data.push_back(std::move(bytes));
      biases.emplace_back(static_cast<size_t>(n));
      for (auto& b : biases.back()) b = nd(rng);
    }
    for (size_t j = 0; j < 3; ++j) {
      auto pw = pack_weight(f, data[j].data(), ns[j], k, f == DType::kI8 ? scales[j].data() : nullptr);
      ASSERT_TRUE(pw.ok()) << pw.error().to_string();
      ws.push_back(std::move(*pw));
    }
    for (int64_t m : {1, 5}) {
      for (int threads : {1, 2}) {
        SCOPED_TRACE(std::string(dtype_name(f)) + " m=" + std::to_string(m) + " threads=" + std::to_string(threads));
        ThreadPool pool(threads);
        std::vector<float> x(static_cast<size_t>(m * k));
        for (auto& v : x) v = nd(rng);
        LinearScratch scratch(ws[0].k_padded, m);
        std::vector<std::vector<float>> alone(3), batched(3);
        for (size_t j = 0; j < 3; ++j) {
          alone[j].assign(static_cast<size_t>(m * ns[j]), 0.0f);
          batched[j].assign(alone[j].size(), -7.0f);
          linear(ws[j], x.data(), m, j == 1 ? nullptr : biases[j].data(), alone[j].data(), scratch, &pool);
        }
        if (ws[0].is_integer()) quantize_acts(x.data(), m, k, act_offset(f), scratch.acts);
        LinearJob jobs[3];
        for (size_t j = 0; j < 3; ++j) jobs[j] = {&ws[j], j == 1 ? nullptr : biases[j].data(), batched[j].data()};
        linear_batch(jobs, x.data(), &scratch.acts, m, &pool);
        for (size_t j = 0; j < 3; ++j) EXPECT_EQ(batched[j], alone[j]) << "weight " << j;
        // Weights 1 and 2 (same n) as the gate and up of a gated MLP: linear_glu also writes silu(g)·u.
        std::vector<float> g(alone[1].size(), -3.0f), u(g.size(), -3.0f), y(g.size(), -3.0f), want(g.size());
        silu_mul(alone[1].data(), alone[2].data(), static_cast<int64_t>(g.size()), want.data());
        linear_glu({&ws[1], nullptr, g.data()}, {&ws[2], biases[2].data(), u.data()}, x.data(), &scratch.acts, m,
                   y.data(), &pool);
        EXPECT_EQ(g, alone[1]);
        EXPECT_EQ(u, alone[2]);
        EXPECT_EQ(y, want);
      }
    }
  }
}

// A tied embedding's rows come from the packed LM head: exactly the rows of the original, dequantized.
// A constant float weight is copied (on huge pages), shared like a packed one, and its source reported
// read as the copy moves through it; from then on only the copy is read.
TEST(CpuFastPack, SharedFloatWeightIsACopyOfItsSource) {
  const int64_t n = 3001, k = 800;  // 4.8 MB of f16: more than one 4 MiB copy step
  std::mt19937 rng(9);
  hfs::test::Normal<float> nd(0.0f, 1.0f);
  std::vector<uint16_t> w(static_cast<size_t>(n * k));
  for (auto& v : w) v = f32_to_f16(nd(rng));
  const std::vector<uint16_t> original = w;
  ThreadPool pool(2);
  std::vector<uint64_t> progress;
  auto a = shared_packed_weight(DType::kF16, w.data(), n, k, nullptr, [&](uint64_t b) { progress.push_back(b); }, &pool);
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  const PackedWeight& pw = **a;
  ASSERT_NE(pw.raw, static_cast<const void*>(w.data()));
  EXPECT_EQ(pw.raw, static_cast<const void*>(pw.copy.data()));
  ASSERT_EQ(pw.copy.size(), w.size() * 2);
  EXPECT_EQ(std::memcmp(pw.raw, w.data(), w.size() * 2), 0);
  ASSERT_GE(progress.size(), 2u);
  EXPECT_TRUE(std::is_sorted(progress.begin(), progress.end()));
  EXPECT_EQ(progress.back(), w.size() * 2);
  auto b = shared_packed_weight(DType::kF16, w.data(), n, k, nullptr);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->get(), b->get());
  // The source changes after load (its pages were released and read back as something else, say): the
  // linear and the row gather still see the copy, i.e. the original values.
  for (auto& v : w) v = f32_to_f16(7.0f);
  std::vector<float> x(static_cast<size_t>(k));
  for (auto& v : x) v = nd(rng);
  std::vector<float> y(static_cast<size_t>(n)), want(static_cast<size_t>(n));
  auto in_place = pack_weight(DType::kF16, original.data(), n, k, nullptr);
  ASSERT_TRUE(in_place.ok());
  LinearScratch s1(k, 1), s2(k, 1);
  linear(pw, x.data(), 1, nullptr, y.data(), s1, &pool);
  linear(*in_place, x.data(), 1, nullptr, want.data(), s2, &pool);
  EXPECT_EQ(y, want);  // same kernel, same bytes: bit-identical
  const std::vector<int32_t> ids = {3000, 0, 17};
  std::vector<float> rows(ids.size() * static_cast<size_t>(k));
  gather_rows(pw, ids.data(), static_cast<int64_t>(ids.size()), rows.data());
  for (size_t i = 0; i < ids.size(); ++i)
    for (int64_t e = 0; e < k; ++e)
      ASSERT_EQ(rows[i * static_cast<size_t>(k) + static_cast<size_t>(e)],
                f16_to_f32(original[static_cast<size_t>(ids[i] * k + e)]))
          << "id " << ids[i] << " elem " << e;
}

TEST(CpuFastPack, GatherRowsI8FromPackedCopyEqualsOriginalRows) {
  const int64_t n = 37, k = 100;  // a partial last tile and K padding
  std::mt19937 rng(4);
  std::vector<int8_t> q(static_cast<size_t>(n * k));
  std::vector<float> scale(static_cast<size_t>(n));
  for (auto& v : q) v = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
  for (auto& v : scale) v = 0.001f * static_cast<float>(1 + rng() % 1000);
  auto pw = pack_weight(DType::kI8, q.data(), n, k, scale.data());
  ASSERT_TRUE(pw.ok()) << pw.error().to_string();
  EXPECT_EQ(pw->source, q.data());
  EXPECT_EQ(pw->source_scale, scale.data());
  const std::vector<int32_t> ids = {0, 36, 15, 16, 0, 22};
  std::vector<float> y(ids.size() * static_cast<size_t>(k), -1.0f);
  gather_rows_i8(*pw, ids.data(), static_cast<int64_t>(ids.size()), y.data());
  for (size_t i = 0; i < ids.size(); ++i)
    for (int64_t e = 0; e < k; ++e) {
      const size_t src = static_cast<size_t>(ids[i] * k + e);
      ASSERT_EQ(y[i * static_cast<size_t>(k) + static_cast<size_t>(e)], scale[static_cast<size_t>(ids[i])] * static_cast<float>(q[src]))
          << "id " << ids[i] << " elem " << e;
    }
}

// Every packed byte and block scale against the layout linear.h documents, computed here from the source
// bytes: full blocks, the padded K tail (i8 K = 100 and 40; q formats K = 96 → 128), a partial last tile of
// pad rows. Pads are zero weights: +128 (i8 / q8_0) or two +8 nibbles (q4_0), scale 0. Both packers: the
// portable loop (scalar cap) and the AVX-512 one that full tiles take where the CPU has it.
TEST(CpuFastPack, PackedBytesFollowTheDocumentedLayout) {
  struct Shape2 {
    DType f;
    int64_t n, k;
  };
  struct RestoreCap {
    ~RestoreCap() { set_isa_cap(Isa::kAmx); }
  } restore;
  for (Isa cap : {Isa::kScalar, Isa::kAvx512})
  for (const Shape2& c : {Shape2{DType::kI8, 37, 100}, Shape2{DType::kI8, 16, 40}, Shape2{DType::kQ8_0, 37, 96},
                          Shape2{DType::kQ4_0, 37, 96}, Shape2{DType::kQ4_0, 20, 64}, Shape2{DType::kI8, 48, 512},
                          Shape2{DType::kQ8_0, 32, 320}, Shape2{DType::kQ4_0, 48, 544}}) {
    set_isa_cap(cap);
    SCOPED_TRACE(std::string(dtype_name(c.f)) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
                 " isa=" + std::string(isa_name(active_isa())));
    const int64_t nb = c.k / 32;
    const int64_t block = c.f == DType::kQ4_0 ? 18 : 34;
    std::mt19937 rng(static_cast<uint32_t>(c.n * 1000 + c.k));
    std::vector<uint8_t> src(static_cast<size_t>(c.f == DType::kI8 ? c.n * c.k : c.n * nb * block));
    for (auto& b : src) b = static_cast<uint8_t>(rng());
    std::vector<float> scale(static_cast<size_t>(c.n), 0.5f);
    auto pw = pack_weight(c.f, src.data(), c.n, c.k, c.f == DType::kI8 ? scale.data() : nullptr);
    ASSERT_TRUE(pw.ok()) << pw.error().to_string();
    // Signed element (row, col) of the source, 0 outside [n, k).
    auto elem = [&](int64_t row, int64_t col) -> int {
      if (row >= c.n || col >= c.k) return 0;
      if (c.f == DType::kI8) return static_cast<int8_t>(src[static_cast<size_t>(row * c.k + col)]);
      const uint8_t* blk = src.data() + (row * nb + col / 32) * block + 2;
      if (c.f == DType::kQ8_0) return static_cast<int8_t>(blk[col % 32]);
      const uint8_t byte = blk[col % 16];
      return (col % 32 < 16 ? (byte & 15) : (byte >> 4)) - 8;
    };
    const int64_t B = pw->k_padded / 32, steps = c.f == DType::kQ4_0 ? 4 : 8;
    ASSERT_EQ(pw->n_padded % 16, 0);
    for (int64_t row = 0; row < pw->n_padded; ++row) {
      const int64_t t = row / 16, cc = row % 16;
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t v = 0; v < steps; ++v)
          for (int64_t j = 0; j < 4; ++j) {
            const uint8_t got = pw->q.data()[((t * B + b) * steps + v) * 64 + 4 * cc + j];
            const int64_t col = 32 * b + 4 * v + j;
            const int want = c.f == DType::kQ4_0 ? (elem(row, col) + 8) | ((elem(row, col + 16) + 8) << 4) : elem(row, col) + 128;
            ASSERT_EQ(got, want) << "row " << row << " block " << b << " vector " << v << " byte " << j;
          }
        if (c.f == DType::kI8) continue;
        uint16_t want = 0;
        if (row < c.n && b < nb) std::memcpy(&want, src.data() + (row * nb + b) * block, 2);
        ASSERT_EQ(pw->block_scales.data()[(t * B + b) * 16 + cc], want) << "scale of row " << row << " block " << b;
      }
      if (c.f == DType::kI8) {
        ASSERT_EQ(pw->channel_scales.data()[row], row < c.n ? 0.5f : 0.0f);
      }
    }
  }
}

TEST(CpuFastPack, RejectsBadInput) {
  std::vector<uint8_t> buf(1024);
  auto r = pack_weight(DType::kQ4_0, buf.data(), 4, 40, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("k = 40"), std::string::npos);
  r = pack_weight(DType::kI8, buf.data(), 4, 40, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("scale"), std::string::npos);
  r = pack_weight(DType::kI32, buf.data(), 4, 40, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported);
  EXPECT_FALSE(pack_weight(DType::kF32, nullptr, 4, 4, nullptr).ok());
  EXPECT_FALSE(pack_weight(DType::kF32, buf.data(), 0, 4, nullptr).ok());
}

}  // namespace
}  // namespace hfs::cpu_fast
