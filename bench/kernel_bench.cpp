// Decode GEMV bandwidth of the cpu_fast linear kernels vs a triad loop (docs/cpu-fast-backend.md).
//
// Weights are cycled through enough copies (≥ 256 MB) that every GEMV streams from DRAM, as in a real
// decode step, not from L3. GB/s = bytes of weights (+ scales) read per GEMV / best-of time.
// Built with -DHFS_BUILD_BENCH=ON (bench/bench.cmake; needs OpenBLAS: scripts/install-deps --bench):
//   build/kernel_bench            # all formats, 1 and 2 threads, weights from DRAM
//   build/kernel_bench hot        # same, weights cache-resident (kernel compute ceiling)
//   build/kernel_bench extra      # prefill GEMM vs OpenBLAS, live-slot attention, busy-core decode
//   build/kernel_bench attention  # prefill attention only: blocked vs per-row kernel
//   build/kernel_bench attention-rows  # 8 decode rows of 8 sequences in a pool of 8×512 vs
//                                 # 8×4096 slots, each row over its own slots vs the union; mask scan costs
//   build/kernel_bench rows [T] [FORMATS] [hot]  # one weight pass for R = 1..16 rows, ratio to R = 1
//   build/kernel_bench attention-decode [B] [L] [hot]  # a decode step's attention, B rows of B sequences
//                                 # of L tokens (Qwen2.5-0.5B heads, 24 layers of caches from DRAM, or with
//                                 # `hot` one layer's cache 24 times), 1 / 2 threads
//   build/kernel_bench attention-verify [R] [L]  # a verification step's attention: R rows of one
//                                 # sequence after L slots (Qwen2.5-0.5B heads, 24 layers), 1 / 2 threads
//   build/kernel_bench gemm       # integer prefill GEMMs: AVX-512 VNNI vs AMX tiles, AMX block costs
//   build/kernel_bench pack       # load-time weight packing: portable loop vs AVX-512
//   build/kernel_bench quant      # prefill activation quantization on the caller vs on the pool
//   build/kernel_bench scaling    # 2-thread gain by kind of work: registers, L2 streams, q4_0 and f16
//                                 # prefill GEMMs (weights cached, from memory, after the op before
//                                 # wrote their input or output from both cores)
//   build/kernel_bench layer      # a prefill chunk's f16 GEMMs over 30 layers of distinct weights, 1 vs 2
//                                 # threads (what each pool task pays on a chain of different weights)
//   build/kernel_bench rows [T] [f16,bf16,...]  # one weight pass for R = 1..16 activation rows, every
//                                 # format (or those named), T threads; HFS_CPU_FAST_HALF_GEMV picks the
//                                 # f16 / bf16 GEMV variant
//   build/kernel_bench half [T]   # every f16 / bf16 decode GEMV variant (linear_half.h), alternated, T threads,
//                                 # and what the load-time tuning picks over the same weights
//   build/kernel_bench half-decode qwen|smollm [T]  # a decode token's linears (every layer's weights, distinct,
//                                 # on huge pages), the ISA's kernel against the tuning's pick, tokens alternating
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <immintrin.h>
#include <vector>

#include <cblas.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/cpu_fast/attention.h"
#include "backends/cpu_fast/cpu_features.h"
#include "backends/cpu_fast/half.h"
#include "backends/cpu_fast/isa_target.h"
#include "backends/cpu_fast/linear.h"
#include "backends/cpu_fast/linear_half.h"
#include "backends/cpu_fast/thread_pool.h"
#include "backends/cpu_fast/weight_formats.h"

using namespace hfs;
using namespace hfs::cpu_fast;
using Clock = std::chrono::steady_clock;

namespace {

double triad_gbs(ThreadPool& pool) {
  const int64_t n = 16 << 20;  // 3 × 64 MB, on huge pages like the packed weights (huge_slab.h)
  AlignedArray<float> a(n), b(n), c(n);
  std::fill(b.data(), b.data() + n, 1.0f);
  std::fill(c.data(), c.data() + n, 2.0f);
  const int64_t chunks = 64;
  double best = 1e30;
  for (int rep = 0; rep < 8; ++rep) {
    auto t0 = Clock::now();
    pool.run(chunks, [&](int64_t ch) {
      const int64_t i0 = n * ch / chunks, i1 = n * (ch + 1) / chunks;
      for (int64_t i = i0; i < i1; ++i) a.data()[i] = b.data()[i] + 3.0f * c.data()[i];
    });
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return 3.0 * n * 4 / best / 1e9;  // STREAM convention: 2 reads + 1 write, no write-allocate counted
}

struct Bench {
  DType f;
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<std::vector<float>> scales;
  std::vector<PackedWeight> packed;
};

}  // namespace

// `w` [n, k] f32 in format f, as a checkpoint or export stores it (i8: per-row scales into sc[n]).
std::vector<uint8_t> stored_weight(DType f, const std::vector<float>& w, int64_t n, int64_t k, float* sc) {
  std::vector<uint8_t> one;
  switch (f) {
    case DType::kF32: one.resize(n * k * 4); std::memcpy(one.data(), w.data(), one.size()); break;
    case DType::kF16: one.resize(n * k * 2); quantize_f16(w.data(), reinterpret_cast<uint16_t*>(one.data()), n * k); break;
    case DType::kBF16: one.resize(n * k * 2); quantize_bf16(w.data(), reinterpret_cast<uint16_t*>(one.data()), n * k); break;
    case DType::kI8: one.resize(n * k); quantize_i8_per_channel(w.data(), n, k, reinterpret_cast<int8_t*>(one.data()), sc); break;
    case DType::kQ8_0: one.resize(q8_0_bytes(n, k)); (void)quantize_q8_0(w.data(), n, k, one.data()); break;
    default: one.resize(q4_0_bytes(n, k)); (void)quantize_q4_0(w.data(), n, k, one.data()); break;
  }
  return one;
}

double seconds_best(int reps, const std::function<void()>& f) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

// Prefill attention: the last chunk of a 512-token prompt (rows see 480 + r slots), f16 cache, D = 64,
// SmolLM2-135M (9/3 heads, chunk 32) and Qwen2.5-0.5B (14/2, chunk 64) heads; the blocked kernel
// (rows × heads along the lanes) against the per-row one (scratch without block_d).
void prefill_attention(ThreadPool& pool) {
  for (auto [hq, hkv, T] : {std::tuple<int64_t, int64_t, int64_t>{9, 3, 32}, {14, 2, 64}}) {
    const int64_t S = 512, d = 64, start = S - T;
    std::mt19937 arng(7);
    std::normal_distribution<float> and_(0.0f, 1.0f);
    std::vector<float> q(T * hq * d), out(T * hq * d), mask(T * S, -1e30f);
    for (auto& v : q) v = and_(arng);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j <= start + t; ++j) mask[t * S + j] = 0.0f;
    std::vector<uint16_t> kc(hkv * S * d), vc(hkv * S * d);
    for (auto& v : kc) v = f32_to_f16(and_(arng));
    for (auto& v : vc) v = f32_to_f16(and_(arng));
    std::vector<int32_t> slots(S);
    const int64_t nl = live_slots(mask.data(), T, S, slots.data());
    AttentionArgs a;
    a.q = q.data(); a.k = kc.data(); a.v = vc.data(); a.kv_dtype = DType::kF16; a.mask = mask.data(); a.out = out.data();
    a.t = T; a.hq = hq; a.hkv = hkv; a.s = S; a.d = d; a.scale = 0.125f;
    AttentionScratch per_row(2, hq / hkv, S, d), blocked(2, hq / hkv, S, d, d);
    const double r1 = seconds_best(200, [&] { attention(a, slots.data(), nl, per_row, nullptr); });
    const double r2 = seconds_best(200, [&] { attention(a, slots.data(), nl, per_row, &pool); });
    const double b1 = seconds_best(200, [&] { attention(a, slots.data(), nl, blocked, nullptr); });
    const double b2 = seconds_best(200, [&] { attention(a, slots.data(), nl, blocked, &pool); });
    std::printf("attention prefill T=%lld %lld/%lld heads S=%lld D=64 f16: per-row %.0f / %.0f us, blocked %.0f / %.0f us "
                "(1 / 2 threads)\n", static_cast<long long>(T), static_cast<long long>(hq), static_cast<long long>(hkv),
                static_cast<long long>(S), r1 * 1e6, r2 * 1e6, b1 * 1e6, b2 * 1e6);
  }
}

// Attention rows: one step of rows of different sequences packed into one cache pool (SmolLM2-135M heads,
// 9/3, D = 64, f16 cache). Sequence i owns slots [i·per_seq, (i+1)·per_seq) and has seqs[i] = {rows, len}:
// one row is a decode row over its `len` slots, more are causal prefill rows ending at `len`. Times one
// layer's attention with every row over its own slots and over the union (what every row walked before
// per-row lists), on 1 and 2 threads, and the mask scan; returns the own-slots times on 1 and 2 threads.
std::pair<double, double> attention_rows_case(ThreadPool& pool, const std::vector<std::pair<int64_t, int64_t>>& seqs, int64_t per_seq) {
  const int64_t hq = 9, hkv = 3, d = 64, S = static_cast<int64_t>(seqs.size()) * per_seq;
  int64_t T = 0;
  for (auto [rows, len] : seqs) T += rows;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> q(T * hq * d), out(T * hq * d), mask(T * S, -1e30f);
  for (auto& v : q) v = nd(rng);
  int64_t r = 0;
  for (size_t i = 0; i < seqs.size(); ++i)
    for (int64_t k = 0; k < seqs[i].first; ++k, ++r) {
      const int64_t base = static_cast<int64_t>(i) * per_seq, end = base + seqs[i].second - seqs[i].first + 1 + k;
      for (int64_t j = base; j < end; ++j) mask[r * S + j] = 0.0f;
    }
  std::vector<uint16_t> kc(hkv * S * d), vc(hkv * S * d);
  for (auto& v : kc) v = f32_to_f16(nd(rng));
  for (auto& v : vc) v = f32_to_f16(nd(rng));
  LiveSlots live(T, S);
  scan_live_slots(mask.data(), live);
  AttentionArgs a;
  a.q = q.data(); a.k = kc.data(); a.v = vc.data(); a.kv_dtype = DType::kF16; a.mask = mask.data(); a.out = out.data();
  a.t = T; a.hq = hq; a.hkv = hkv; a.s = S; a.d = d; a.scale = 0.125f;
  AttentionScratch sc(pool.size(), hq / hkv, S, d, d);
  const double own1 = seconds_best(300, [&] { attention(a, live, sc, nullptr, RowPath::kOwn); });
  const double own2 = seconds_best(300, [&] { attention(a, live, sc, &pool, RowPath::kOwn); });
  const double uni1 = seconds_best(100, [&] { attention(a, live, sc, nullptr, RowPath::kUnion); });
  const double uni2 = seconds_best(100, [&] { attention(a, live, sc, &pool, RowPath::kUnion); });
  const double scan = seconds_best(300, [&] { scan_live_slots(mask.data(), live); });
  std::vector<int32_t> slots(S);
  const double union_scan = seconds_best(300, [&] { (void)live_slots(mask.data(), T, S, slots.data()); });
  std::string shape;  // "8*1x100": 8 sequences of 1 row over 100 slots
  for (size_t i = 0, j = 0; i < seqs.size(); i = j) {
    while (j < seqs.size() && seqs[j] == seqs[i]) ++j;
    shape += (shape.empty() ? "" : " + ") + (j - i > 1 ? std::to_string(j - i) + "*" : "") +
             std::to_string(seqs[i].first) + "x" + std::to_string(seqs[i].second);
  }
  std::printf("attention rows [%s] T=%lld S=%lld: own slots %.1f / %.1f us, union %.1f / %.1f us (1 / 2 threads), "
              "picks %s; mask scan %.1f us (union only %.1f us)\n",
              shape.c_str(), static_cast<long long>(T), static_cast<long long>(S), own1 * 1e6, own2 * 1e6, uni1 * 1e6,
              uni2 * 1e6, walks_own_slots(a, live, sc) ? "own slots" : "union",
              scan * 1e6, union_scan * 1e6);
  return {own1, own2};
}

// One step's attention over Qwen2.5-0.5B heads (14/2, D = 64), f16 caches of S slots for 24 layers,
// `rows` rows whose mask `visible(r, mask_row)` opens: distinct caches per layer (so every layer streams
// its K/V from DRAM, as between two steps the weights evict them), or with `hot` one layer's 24 times.
// Best-of-100 step time in seconds on 1 and 2 threads.
constexpr int64_t kQwenHq = 14, kQwenHkv = 2, kQwenD = 64, kQwenLayers = 24;
template <typename Visible>
std::array<double, 2> qwen_attention_step(int64_t rows, int64_t S, bool hot, const Visible& visible) {
  const int64_t hq = kQwenHq, hkv = kQwenHkv, d = kQwenD, layers = kQwenLayers;
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> q(rows * hq * d), out(rows * hq * d), mask(rows * S, -1e30f);
  for (auto& v : q) v = nd(rng);
  for (int64_t r = 0; r < rows; ++r) visible(r, mask.data() + r * S);
  std::vector<std::vector<uint16_t>> kc(layers), vc(layers);  // [layers][hkv, S, d]
  for (int64_t l = 0; l < layers; ++l) {
    kc[l].resize(hkv * S * d);
    vc[l].resize(hkv * S * d);
    for (auto& v : kc[l]) v = f32_to_f16(nd(rng));
    for (auto& v : vc[l]) v = f32_to_f16(nd(rng));
  }
  LiveSlots live(rows, S);
  scan_live_slots(mask.data(), live);
  std::array<double, 2> best{};
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    AttentionScratch sc(threads, hq / hkv, S, d, 0, rows);
    AttentionArgs a;
    a.q = q.data(); a.kv_dtype = DType::kF16; a.mask = mask.data(); a.out = out.data();
    a.t = rows; a.hq = hq; a.hkv = hkv; a.s = S; a.d = d; a.scale = 0.125f;
    best[threads - 1] = seconds_best(100, [&] {
      for (int64_t l = 0; l < layers; ++l) {
        a.k = kc[hot ? 0 : l].data();
        a.v = vc[hot ? 0 : l].data();
        attention(a, live, sc, threads > 1 ? &pool : nullptr, RowPath::kOwn);
      }
    });
  }
  return best;
}

// A decode step's attention as the model runs it: `rows` rows of `rows` sequences of `len` tokens in a pool
// of `rows` × 640 slots, each row over its own slots; the K/V bytes the rows read per second.
void attention_decode(int64_t rows, int64_t len, bool hot) {
  constexpr int64_t per_seq = 640;
  const double bytes = static_cast<double>(kQwenLayers * rows * len * kQwenHkv * kQwenD * 2 * 2);  // f16 K and V
  std::printf("attention decode: %lld rows x %lld slots, %lld layers, %.1f MB of K/V per step\n",
              static_cast<long long>(rows), static_cast<long long>(len), static_cast<long long>(kQwenLayers), bytes / 1e6);
  const auto t = qwen_attention_step(rows, rows * per_seq, hot, [&](int64_t r, float* m) {
    std::fill_n(m + r * per_seq, len, 0.0f);
  });
  for (int threads : {1, 2})
    std::printf("  %d thread(s): %.3f ms per step (%.3f ms per row), %.1f GB/s of K/V\n", threads,
                t[threads - 1] * 1e3, t[threads - 1] * 1e3 / static_cast<double>(rows), bytes / t[threads - 1] / 1e9);
}

// A verification step's attention: `rows` rows of one sequence, row r seeing the first len + r + 1 slots,
// as the rows of rows - 1 drafts after a len-token context (the rows-together path).
void attention_verify(int64_t rows, int64_t len) {
  std::printf("attention verify: %lld rows of one sequence after %lld slots, %lld layers\n", static_cast<long long>(rows),
              static_cast<long long>(len), static_cast<long long>(kQwenLayers));
  const auto t = qwen_attention_step(rows, len + rows + 63, false, [&](int64_t r, float* m) {
    std::fill_n(m, len + r + 1, 0.0f);
  });
  for (int threads : {1, 2}) std::printf("  %d thread(s): %.3f ms per step\n", threads, t[threads - 1] * 1e3);
}

void attention_rows(ThreadPool& pool) {
  // Pool-size flatness: 8 decode rows of 8 sequences, 100 tokens each, in 8×512 and 8×4096 slots.
  const std::vector<std::pair<int64_t, int64_t>> decode8(8, {1, 100});
  const auto small = attention_rows_case(pool, decode8, 512);
  const auto large = attention_rows_case(pool, decode8, 4096);
  std::printf("attention rows: own slots, pool 8x512 time / pool 8x4096 time: %.2f (1 thread) %.2f (2 threads)\n",
              small.first / large.first, small.second / large.second);
  // The mask scan at the engine's largest step: 16 rows, 8×4096 slots.
  attention_rows_case(pool, std::vector<std::pair<int64_t, int64_t>>(16, {1, 100}), 2048);
  // Where the union pays (rows of one sequence) and in between: prefill rows of two sequences, a prefill
  // chunk next to decode rows.
  attention_rows_case(pool, {{16, 1000}}, 2048);
  attention_rows_case(pool, {{8, 1000}, {8, 1000}}, 1024);
  attention_rows_case(pool, {{12, 1000}, {4, 300}}, 1024);
  attention_rows_case(pool, {{14, 1000}, {2, 300}}, 1024);
  attention_rows_case(pool, {{8, 1000}, {1, 100}, {1, 100}, {1, 100}, {1, 100}, {1, 100}, {1, 100}, {1, 100}, {1, 100}}, 1024);
}

// What one 16×16×32 block costs in the AMX kernel's structure (16 rows × K = 1536, all in L1/L2): the tile
// loads + TDPBSUD alone, + storing the C tile, + reading it back into vector registers, + the float
// epilogue the per-block scales need (what linear_amx.cpp does per block).
HFS_TARGET_AMX_BEGIN
void amx_block_costs() {
  struct alignas(64) Cfg {
    uint8_t palette = 1, start = 0, reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};
  } cfg;
  for (int t = 0; t < 2; ++t) cfg.rows[t] = 16, cfg.colsb[t] = 64;
  for (int t = 4; t < 6; ++t) cfg.rows[t] = 16, cfg.colsb[t] = 32, cfg.rows[t + 2] = 8, cfg.colsb[t + 2] = 64;
  constexpr int64_t kBlocks = 48, kp = 1536;
  static int8_t A[16 * kp] __attribute__((aligned(64)));
  static uint8_t B[kBlocks * 512] __attribute__((aligned(64)));
  static int32_t cb[2][256] __attribute__((aligned(64)));
  static int32_t xb[16 * kBlocks];
  static float xs[16 * kBlocks];
  std::fill(xs, xs + 16 * kBlocks, 1e-3f);
  _tile_loadconfig(&cfg);
  std::printf("AMX 16x16x32 block, ns:");
  const char* names[] = {"multiply", "+store", "+reload", "+epilogue"};
  for (int mode = 0; mode < 4; ++mode) {
    __m512 acc[16];
    const double t = seconds_best(20, [&] {
      [&]<size_t... I>(std::index_sequence<I...>) {
        ((acc[I] = _mm512_setzero_ps()), ...);
        for (int rep = 0; rep < 100; ++rep)
          for (int64_t b = 0; b < kBlocks; b += 2) {
            _tile_zero(0);
            _tile_loadd(4, A + 32 * b, kp);
            _tile_loadd(6, B + 512 * b, 64);
            _tile_dpbsud(0, 4, 6);
            _tile_zero(1);
            _tile_loadd(5, A + 32 * (b + 1), kp);
            _tile_loadd(7, B + 512 * (b + 1), 64);
            _tile_dpbsud(1, 5, 7);
            if (mode >= 1) {
              _tile_stored(0, cb[0], 64);
              _tile_stored(1, cb[1], 64);
            }
            for (int p = 0; p < 2 && mode >= 2; ++p) {
              const int32_t* c = cb[p];
              if (mode == 2)
                ((acc[I] = _mm512_add_ps(acc[I], _mm512_castsi512_ps(_mm512_load_si512(c + I * 16)))), ...);
              else
                ((acc[I] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_load_si512(c + I * 16),
                                                                               _mm512_set1_epi32(xb[I * kBlocks + b]))),
                                           _mm512_set1_ps(xs[I * kBlocks + b]), acc[I])),
                 ...);
            }
          }
      }(std::make_index_sequence<16>{});
    });
    float sum = 0;
    for (auto& v : acc) sum += _mm512_reduce_add_ps(v);
    std::printf("  %s %.1f", names[mode], t / (100.0 * kBlocks) * 1e9 + sum * 0);
  }
  std::printf("\n");
  _tile_release();
}
HFS_TARGET_END

// Integer prefill GEMMs, AVX-512 VNNI against AMX tiles (where the CPU has them) in the same process:
// Qwen2.5-0.5B's gate/up [4864, 896] and SmolLM2-135M's down [576, 1536], M = 16..128, 1 and 2 threads.
void prefill_int_gemm() {
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    for (auto [n, k] : {std::pair<int64_t, int64_t>{4864, 896}, {576, 1536}})
      for (DType f : {DType::kI8, DType::kQ8_0, DType::kQ4_0}) {
        std::vector<float> wf(n * k), scale(n, 0.001f);
        std::mt19937 rng(2);
        std::normal_distribution<float> nd(0.0f, 0.02f);
        for (auto& v : wf) v = nd(rng);
        std::vector<uint8_t> q(f == DType::kQ4_0 ? q4_0_bytes(n, k) : f == DType::kQ8_0 ? q8_0_bytes(n, k) : n * k);
        if (f == DType::kQ4_0) (void)quantize_q4_0(wf.data(), n, k, q.data());
        if (f == DType::kQ8_0) (void)quantize_q8_0(wf.data(), n, k, q.data());
        auto pq = pack_weight(f, q.data(), n, k, scale.data()).value();
        std::printf("prefill %-4s N=%-4lld K=%-4lld %d thr  GOP/s avx512 / amx:", std::string(dtype_name(f)).c_str(),
                    static_cast<long long>(n), static_cast<long long>(k), threads);
        for (int64_t m : {16, 32, 64, 128}) {
          std::vector<float> x(m * k, 0.5f), y(m * n);
          LinearScratch qs(pq.k_padded, m);
          const double fl = 2.0 * m * n * k;
          // VNNI and AMX alternate call by call, best of 150 each: on a machine whose speed drifts over
          // seconds (a shared VM), two back-to-back best-of-20 loops differ by more than the kernels do.
          double tv = 1e30, ta = 1e30;
          for (int r = 0; r < 150; ++r) {
            set_isa_cap(Isa::kAvx512);
            tv = std::min(tv, seconds_best(1, [&] { linear(pq, x.data(), m, nullptr, y.data(), qs, &pool); }));
            set_isa_cap(Isa::kAmx);
            ta = std::min(ta, seconds_best(1, [&] { linear(pq, x.data(), m, nullptr, y.data(), qs, &pool); }));
          }
          std::printf("  M=%lld %.0f / %.0f", static_cast<long long>(m), fl / tv / 1e9,
                      active_isa() == Isa::kAmx ? fl / ta / 1e9 : 0.0);
        }
        std::printf("\n");
      }
  }
  if (detected_isa() >= Isa::kAmx) amx_block_costs();  // detection also asked Linux for the tile state
}

void extra() {
  ThreadPool pool(2);
  // Prefill: M rows through one f32 [4864, 896] weight, ours (the row-invariant default and the panel GEMM,
  // linear.h FloatRows) vs OpenBLAS sgemm (2 threads each).
  for (int64_t m : {16, 64, 128}) {
    const int64_t n = 4864, k = 896;
    std::vector<float> w(n * k, 0.01f), x(m * k, 0.5f), y(m * n);
    auto pw = pack_weight(DType::kF32, w.data(), n, k, nullptr).value();
    LinearScratch scratch;
    double ours = seconds_best(20, [&] { linear(pw, x.data(), m, nullptr, y.data(), scratch, &pool); });
    double panel = seconds_best(20, [&] {
      linear(pw, x.data(), m, nullptr, y.data(), scratch, &pool, FloatRows::kPanelGemm);
    });
    openblas_set_num_threads(2);
    double blas = seconds_best(20, [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x.data(), k, w.data(), k, 0.0f, y.data(), n);
    });
    const double fl = 2.0 * m * n * k;
    std::printf("prefill f32 M=%-4lld N=%lld K=%lld  ours %6.1f GFLOP/s (panel GEMM %6.1f)  openblas %6.1f GFLOP/s\n",
                static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), fl / ours / 1e9,
                fl / panel / 1e9, fl / blas / 1e9);
    for (DType f : {DType::kQ4_0, DType::kQ8_0}) {
      std::vector<float> wf(n * k);
      std::mt19937 rng(2);
      std::normal_distribution<float> nd(0.0f, 0.02f);
      for (auto& v : wf) v = nd(rng);
      std::vector<uint8_t> q(f == DType::kQ4_0 ? q4_0_bytes(n, k) : q8_0_bytes(n, k));
      (void)(f == DType::kQ4_0 ? quantize_q4_0(wf.data(), n, k, q.data()) : quantize_q8_0(wf.data(), n, k, q.data()));
      auto pq = pack_weight(f, q.data(), n, k, nullptr).value();
      LinearScratch qs(pq.k_padded, m);
      double t = seconds_best(20, [&] { linear(pq, x.data(), m, nullptr, y.data(), qs, &pool); });
      std::printf("prefill %-4s M=%-4lld ours %6.1f GOP/s\n", std::string(dtype_name(f)).c_str(),
                  static_cast<long long>(m), fl / t / 1e9);
    }
  }
  // Attention at position 15 (16 live slots), Qwen2-0.5B geometry, f16 cache: 256 vs 4096 slots.
  for (int64_t S : {256, 4096}) {
    const int64_t hq = 14, hkv = 2, d = 64;
    std::vector<float> q(hq * d, 0.1f), out(hq * d), mask(S, -1e30f);
    for (int i = 0; i < 16; ++i) mask[i] = 0.0f;
    std::vector<uint16_t> kc(hkv * S * d, 0x3c00), vc(hkv * S * d, 0x3c00);
    std::vector<int32_t> slots(S);
    AttentionScratch sc(2, hq / hkv, S, d);
    AttentionArgs a;
    a.q = q.data(); a.k = kc.data(); a.v = vc.data(); a.kv_dtype = DType::kF16; a.mask = mask.data(); a.out = out.data();
    a.t = 1; a.hq = hq; a.hkv = hkv; a.s = S; a.d = d; a.scale = 0.125f;
    int64_t nl = 0;
    const double scan = seconds_best(5000, [&] { nl = live_slots(mask.data(), 1, S, slots.data()); });
    const double t1 = seconds_best(5000, [&] { attention(a, slots.data(), nl, sc, nullptr); });
    const double t2 = seconds_best(5000, [&] { attention(a, slots.data(), nl, sc, &pool); });
    std::printf("attention decode pos 15, S=%-5lld  live-slot scan %.2f us (once per step), attention %.2f us "
                "(1 thread) %.2f us (2 threads); 24-layer step %.1f us\n",
                static_cast<long long>(S), scan * 1e6, t1 * 1e6, t2 * 1e6, (scan + 24 * t1) * 1e6);
  }
  prefill_attention(pool);
  // Decode with another process spinning on CPU 1: q4_0 [4864, 896] × 64 copies (DRAM-resident).
  {
    const int64_t n = 4864, k = 896;
    std::vector<float> wf(n * k, 0.01f), x(k, 1.0f), y(n);
    std::vector<uint8_t> q(q4_0_bytes(n, k));
    (void)quantize_q4_0(wf.data(), n, k, q.data());
    std::vector<PackedWeight> ws;
    for (int i = 0; i < 64; ++i) ws.push_back(pack_weight(DType::kQ4_0, q.data(), n, k, nullptr).value());
    LinearScratch sc(ws[0].k_padded, 1);
    auto step = [&] { for (auto& w : ws) linear(w, x.data(), 1, nullptr, y.data(), sc, &pool); };
    const double idle = seconds_best(10, step);
    pid_t child = fork();
    if (child == 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(1, &set);
      sched_setaffinity(0, sizeof(set), &set);
      for (;;) asm volatile("");  // spin forever
    }
    usleep(100000);
    const double busy = seconds_best(10, step);
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    std::printf("decode q4_0 64x[4864,896], 2 threads: idle %.2f ms, with a spinning process on CPU 1 %.2f ms (%.0f%% of idle speed)\n",
                idle * 1e3, busy * 1e3, 100.0 * idle / busy);
  }
}

// Load-time packing: pack_weight of one Qwen2.5-0.5B-shaped weight per format, best of 30, with the
// portable loop (scalar cap) and the ISA's own path alternating call by call.
void packing() {
  for (const auto& shape : {std::tuple<DType, int64_t, int64_t>{DType::kI8, 4864, 896}, {DType::kQ8_0, 4864, 896},
                             {DType::kQ4_0, 896, 4864}}) {
    // Plain locals, not a structured binding: clang 14 cannot capture those in the lambdas below.
    const DType f = std::get<0>(shape);
    const int64_t n = std::get<1>(shape), k = std::get<2>(shape);
    const size_t bytes = f == DType::kQ4_0 ? q4_0_bytes(n, k) : f == DType::kQ8_0 ? q8_0_bytes(n, k) : n * k;
    std::vector<uint8_t> src(bytes);
    std::mt19937 rng(3);
    for (auto& b : src) b = static_cast<uint8_t>(rng());
    std::vector<float> scale(n, 0.01f);
    double t[2] = {1e30, 1e30};
    for (int r = 0; r < 30; ++r)
      for (int path = 0; path < 2; ++path) {
        set_isa_cap(path == 0 ? Isa::kScalar : Isa::kAmx);
        t[path] = std::min(t[path], seconds_best(1, [&] { (void)pack_weight(f, src.data(), n, k, scale.data()).value(); }));
      }
    set_isa_cap(Isa::kAmx);
    std::printf("pack %-4s [%lld, %lld]: portable %.3f ms, %s %.3f ms (%.2f GB/s of source)\n",
                std::string(dtype_name(f)).c_str(), static_cast<long long>(n), static_cast<long long>(k), t[0] * 1e3,
                std::string(isa_name(active_isa())).c_str(), t[1] * 1e3, static_cast<double>(bytes) / t[1] / 1e9);
  }
}

// Prefill activation quantization + integer GEMM at m = 64 on 2 threads, the quantization on the caller
// alone vs shared over the pool, alternating call by call (medians of 400: a shared VM drifts over seconds).
void quantization() {
  ThreadPool pool(2);
  for (const auto& shape : {std::tuple<DType, int64_t, int64_t>{DType::kQ4_0, 576, 576}, {DType::kQ4_0, 576, 1536},
                             {DType::kQ4_0, 896, 4864}, {DType::kI8, 4864, 896}, {DType::kI8, 896, 4864}}) {
    const DType f = std::get<0>(shape);
    const int64_t n = std::get<1>(shape), k = std::get<2>(shape);
    constexpr int64_t m = 64;
    std::mt19937 rng(4);
    std::normal_distribution<float> nd(0.0f, 0.02f);
    std::vector<float> wf(n * k), scale(n, 0.01f), x(m * k), y(m * n);
    for (auto& v : wf) v = nd(rng);
    for (auto& v : x) v = nd(rng) * 50;
    std::vector<uint8_t> q(f == DType::kQ4_0 ? q4_0_bytes(n, k) : n * k);
    if (f == DType::kQ4_0) (void)quantize_q4_0(wf.data(), n, k, q.data());
    else for (auto& b : q) b = static_cast<uint8_t>(rng());
    auto pw = pack_weight(f, q.data(), n, k, scale.data()).value();
    LinearScratch s(pw.k_padded, m);
    std::vector<double> t[2];
    for (int r = 0; r < 400; ++r)
      for (int pooled = 0; pooled < 2; ++pooled)
        t[pooled].push_back(seconds_best(1, [&] {
          quantize_acts(x.data(), m, k, act_offset(f), s.acts, pooled ? &pool : nullptr);
          linear_quantized(pw, s.acts, m, nullptr, y.data(), &pool);
        }));
    for (auto& v : t) std::sort(v.begin(), v.end());
    std::printf("quantize + gemm %-4s [%lld, %lld] m=64, 2 threads: quantization serial %.1f us, pooled %.1f us (medians)\n",
                std::string(dtype_name(f)).c_str(), static_cast<long long>(n), static_cast<long long>(k),
                t[0][200] * 1e6, t[1][200] * 1e6);
  }
}

// What two threads can gain on the machine it runs on, by kind of work: the same work on a 1-thread and a 2-thread
// pool, alternating call by call, medians of 200. Register-only arithmetic shows the cores themselves,
// an L2-resident sum whether the two cores' caches stay independent, and a q4_0 prefill GEMM (split as in
// a model step) what the kernels keep of that. A model's 2-thread prefill gain (hfstatic bench, or
// bench/compare's prefill_2t_over_1t) below the GEMM's is lost outside the kernels.
void scaling() {
  // The worker spins through the 1-thread turns (with the default 50 µs it would sleep and each 2-thread
  // call would time a wake-up: on a KVM guest 40-300 µs on average, and the caller takes both tasks first).
  ThreadPool one(1), two(2);
  two.set_spin_us(200'000);
  constexpr int64_t kL2Floats = 32 << 10;  // 128 KiB per task: both tasks' buffers fit one core's L2
  std::vector<float> buf[2] = {std::vector<float>(kL2Floats, 1.0f), std::vector<float>(kL2Floats, 1.0f)};
  volatile float sink = 0;
  auto registers = [&](int64_t) {
    float a[8] = {1, 2, 3, 4, 5, 6, 7, 8};  // eight independent chains the compiler keeps in registers
    for (int i = 0; i < 2'000'000; ++i)
      for (float& v : a) v = v * 0.9999999f + 1e-7f;
    sink = sink + a[0] + a[7];
  };
  auto l2_stream = [&](int64_t t) {
    float acc[16] = {};
    for (int r = 0; r < 64; ++r)
      for (int64_t i = 0; i < kL2Floats; i += 16)
        for (int j = 0; j < 16; ++j) acc[j] += buf[t][i + j];
    sink = sink + acc[0] + acc[15];
  };
  // SmolLM2-135M's gate projection [1536, 576] in q4_0 against a 64-row prefill chunk.
  const int64_t n = 1536, k = 576, m = 64;
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 0.02f);
  std::vector<float> wf(n * k), x(m * k), y(m * n);
  for (auto& v : wf) v = nd(rng);
  for (auto& v : x) v = nd(rng) * 50;
  std::vector<uint8_t> q(q4_0_bytes(n, k));
  (void)quantize_q4_0(wf.data(), n, k, q.data());
  const PackedWeight pw = pack_weight(DType::kQ4_0, q.data(), n, k, nullptr).value();
  LinearScratch s(pw.k_padded, m);
  quantize_acts(x.data(), m, k, act_offset(pw.format), s.acts, nullptr);
  // The same GEMM over 256 copies of the weight (128 MiB, past any L3), one copy per call, as a model's
  // prefill meets its weights: streamed from memory once per chunk.
  std::vector<PackedWeight> cold;
  for (int c = 0; c < 256; ++c) cold.push_back(pack_weight(DType::kQ4_0, q.data(), n, k, nullptr).value());
  size_t next_cold = 0;
  // SmolLM2-135M's down projection [576, 1536] in f16 against a 128-row prefill chunk (the default
  // chunk), cached and from memory (64 copies, 108 MiB).
  const int64_t fn = 576, fk = 1536, fm = 128;
  std::vector<uint16_t> wh(fn * fk);
  for (auto& v : wh) v = f32_to_f16(nd(rng));
  std::vector<float> fx(fm * fk), fy(fm * fn);
  for (auto& v : fx) v = nd(rng) * 50;
  std::vector<std::vector<uint16_t>> fcopies(64, wh);
  std::vector<PackedWeight> fcold;
  for (const auto& c : fcopies) fcold.push_back(pack_weight(DType::kF16, c.data(), fn, fk, nullptr).value());
  LinearScratch fs(fk, fm);
  size_t next_fcold = 0;
  // Rewrites the fm rows of buf (cols wide) as the op before a GEMM leaves them: one share of the rows per
  // thread (row halves on 2 threads), so the GEMM, split by output columns, finds half of them modified in
  // the other core's cache.
  auto by_row_shares = [&](ThreadPool& pool, std::vector<float>& buf, int64_t cols, float scale, float add) {
    const int64_t parts = pool.size();
    pool.run(parts, [&](int64_t t) {
      for (int64_t i = fm * t / parts * cols; i < fm * (t + 1) / parts * cols; ++i) buf[i] = buf[i] * scale + add;
    });
  };
  auto rewrite = [&](ThreadPool& pool) { by_row_shares(pool, fx, fk, 0.5f, 1e-3f); };  // the GEMM's input
  auto rewrite_y = [&](ThreadPool& pool) { by_row_shares(pool, fy, fn, 0.0f, 0.0f); };  // its output buffer
  // The register and L2 work as two tasks; the GEMM through linear_quantized, split as in a model step.
  auto two_tasks = [](const std::function<void(int64_t)>& task) {
    return [task](ThreadPool& pool) { pool.run(2, [&](int64_t i) { task(i); }); };
  };
  const std::pair<const char*, std::function<void(ThreadPool&)>> kinds[] = {
      {"register arithmetic", two_tasks(registers)},
      {"L2-resident sum (128 KiB per task)", two_tasks(l2_stream)},
      {"q4_0 prefill GEMM [1536, 576] m=64", [&](ThreadPool& pool) { linear_quantized(pw, s.acts, m, nullptr, y.data(), &pool); }},
      {"the same GEMM, weights from memory", [&](ThreadPool& pool) {
         linear_quantized(cold[next_cold++ % cold.size()], s.acts, m, nullptr, y.data(), &pool);
       }},
      {"f16 prefill GEMM [576, 1536] m=128", [&](ThreadPool& pool) {
         linear(fcold[0], fx.data(), fm, nullptr, fy.data(), fs, &pool);
       }},
      {"the same GEMM, weights from memory", [&](ThreadPool& pool) {
         linear(fcold[next_fcold++ % fcold.size()], fx.data(), fm, nullptr, fy.data(), fs, &pool);
       }},
      {"x rewritten by row halves (alone)", [&](ThreadPool& pool) { rewrite(pool); }},
      {"x rewritten, then the GEMM from memory", [&](ThreadPool& pool) {
         rewrite(pool);
         linear(fcold[next_fcold++ % fcold.size()], fx.data(), fm, nullptr, fy.data(), fs, &pool);
       }},
      {"y rewritten, then the GEMM from memory", [&](ThreadPool& pool) {
         rewrite_y(pool);
         linear(fcold[next_fcold++ % fcold.size()], fx.data(), fm, nullptr, fy.data(), fs, &pool);
       }}};
  for (const auto& kind : kinds) {
    // Named members, not a structured binding: clang 14 cannot capture a binding in a lambda.
    const auto& name = kind.first;
    const auto& run = kind.second;
    std::vector<double> t[2];
    for (int r = 0; r < 200; ++r)
      for (int p = 0; p < 2; ++p) t[p].push_back(seconds_best(1, [&] { run(p == 0 ? one : two); }));
    for (auto& v : t) std::sort(v.begin(), v.end());
    std::printf("%-36s 1 thread %8.1f us  2 threads %8.1f us  2t/1t %.2f (medians)\n", name, t[0][100] * 1e6,
                t[1][100] * 1e6, t[0][100] / t[1][100]);
  }
}

// A prefill chunk's GEMMs as a model runs them: SmolLM2-135M's layer (q/k/v batch, o_proj, gate/up + SiLU,
// down) in f16 against a 128-row chunk, over 30 layers of distinct weights (from memory, each weight met
// once per pass, as in a model's prefill), on 1 and 2 threads taking turns. The single repeated GEMM of
// `scaling` hides what a chain of different weights pays per pool task: a range's cold first panel
// (PanelPrefetch::first_of_range in src/backends/cpu_fast/linear_kernels.h).
void layer() {
  constexpr int kLayers = 30, kPasses = 24, kWarm = 4;
  const int64_t m = 128, d = 576, kv = 192, ff = 1536;
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.0f, 0.02f);
  struct Weight {
    std::vector<uint16_t> h;
    PackedWeight p;
  };
  auto make = [&](int64_t n, int64_t k) {
    Weight w;
    w.h.resize(n * k);
    for (auto& v : w.h) v = f32_to_f16(nd(rng));
    w.p = pack_weight(DType::kF16, w.h.data(), n, k, nullptr).value();  // float: points at w.h
    return w;
  };
  struct Layer {
    Weight q, k, v, o, g, u, dn;
  };
  std::vector<Layer> layers;
  layers.reserve(kLayers);
  for (int l = 0; l < kLayers; ++l)
    layers.push_back({make(d, d), make(kv, d), make(kv, d), make(d, d), make(ff, d), make(ff, d), make(d, ff)});
  std::vector<float> x(m * d), q(m * d), k(m * kv), v(m * kv), o(m * d), g(m * ff), u(m * ff), h(m * ff), y(m * d);
  for (auto& e : x) e = nd(rng) * 50;
  LinearScratch scratch(ff, m);
  ThreadPool one(1), two(2);
  const char* kinds[] = {"q/k/v batch", "o_proj", "gate/up + SiLU", "down"};
  double sum[2][4] = {};
  std::vector<double> pass[2];
  for (int rep = 0; rep < kPasses; ++rep)
    for (int p = 0; p < 2; ++p) {
      ThreadPool& pool = p == 0 ? one : two;
      double t[4] = {};
      const auto start = std::chrono::steady_clock::now();
      for (Layer& l : layers) {
        auto a = std::chrono::steady_clock::now();
        auto lap = [&](int kind) {
          const auto b = std::chrono::steady_clock::now();
          t[kind] += std::chrono::duration<double>(b - a).count();
          a = b;
        };
        const LinearJob qkv[3] = {{&l.q.p, nullptr, q.data()}, {&l.k.p, nullptr, k.data()}, {&l.v.p, nullptr, v.data()}};
        linear_batch(qkv, x.data(), nullptr, m, &pool);
        lap(0);
        linear(l.o.p, q.data(), m, nullptr, o.data(), scratch, &pool);  // q stands in for the attention output
        lap(1);
        linear_glu({&l.g.p, nullptr, g.data()}, {&l.u.p, nullptr, u.data()}, x.data(), nullptr, m, h.data(), &pool);
        lap(2);
        linear(l.dn.p, h.data(), m, nullptr, y.data(), scratch, &pool);
        lap(3);
      }
      pass[p].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      if (rep >= kWarm)
        for (int j = 0; j < 4; ++j) sum[p][j] += t[j];
    }
  for (int j = 0; j < 4; ++j)
    std::printf("%-16s 1 thread %7.2f ms  2 threads %7.2f ms  2t/1t %.2f (means per pass)\n", kinds[j],
                sum[0][j] / (kPasses - kWarm) * 1e3, sum[1][j] / (kPasses - kWarm) * 1e3, sum[0][j] / sum[1][j]);
  for (auto& v : pass) std::sort(v.begin(), v.end());
  std::printf("%-16s 1 thread %7.2f ms  2 threads %7.2f ms  2t/1t %.2f (medians)\n", "30 layers", pass[0][kPasses / 2] * 1e3,
              pass[1][kPasses / 2] * 1e3, pass[0][kPasses / 2] / pass[1][kPasses / 2]);
}

// "rows": one weight pass for R activation rows (a multi-sequence engine step, or K draft tokens + 1), R = 1,
// 2, 4, 8, 16, for every weight format (or the comma-separated dtype names in `formats`), Qwen2.5-0.5B's
// down [896, 4864] and up [4864, 896] shapes, 2 threads (or as given), weights streamed from DRAM (copies
// well beyond the caches): time per call and its ratio to R = 1. A kernel that shares the weight pass keeps
// the ratio near 1 while R grows; R separate passes would make it R. f16 / bf16 weights run the GEMV
// variant HFS_CPU_FAST_HALF_GEMV names (the ISA's kernel when unset), as a load would.
// Each call is timed alone and a copy's best call is kept (the mean over the copies is printed): on a shared
// machine a call another process interrupted then does not count, while every call still reads its copy
// from memory. The R values take turns within each repetition. `kernel_bench rows T` runs T threads;
// `kernel_bench rows T FORMATS hot` reads one cache-resident copy instead (the kernel's compute ceiling per R).
void rows(int threads, const std::string& formats, bool hot) {
  ThreadPool pool(threads);
  std::printf("isa %s  threads %d  triad %.1f GB/s\n", std::string(isa_name(active_isa())).c_str(), threads,
              triad_gbs(pool));
  for (auto [n, k] : {std::pair<int64_t, int64_t>{896, 4864}, {4864, 896}})
    for (DType f : {DType::kF32, DType::kF16, DType::kBF16, DType::kI8, DType::kQ8_0, DType::kQ4_0}) {
      if (!formats.empty() && ("," + formats + ",").find("," + std::string(dtype_name(f)) + ",") == std::string::npos)
        continue;
      std::mt19937 rng(1);
      std::normal_distribution<float> d(0.0f, 0.02f);
      std::vector<float> w(n * k), x(16 * k), y(16 * n);
      for (auto& v : w) v = d(rng);
      for (auto& v : x) v = d(rng) * 50;
      std::vector<float> sc(n);
      const std::vector<uint8_t> one = stored_weight(f, w, n, k, sc.data());
      // Float weights are read in place, so each copy needs its own source bytes (packing one buffer N times
      // would point every copy at the same, cache-resident bytes).
      const size_t copies = hot ? 1 : std::max<size_t>(4, (256u << 20) / one.size());
      std::vector<std::vector<uint8_t>> sources(f == DType::kF32 || f == DType::kF16 || f == DType::kBF16 ? copies : 1,
                                                one);
      std::vector<PackedWeight> packed;
      const int variant = f == DType::kF16 || f == DType::kBF16 ? forced_half_gemv(f).value() : -1;
      for (size_t c = 0; c < copies; ++c) {
        packed.push_back(std::move(pack_weight(f, sources[c % sources.size()].data(), n, k, sc.data()).value()));
        packed.back().gemv_variant = variant;
      }
      LinearScratch scratch(packed[0].k_padded, 16);
      // The R values take turns within each repetition, so that what the machine is doing meanwhile weighs on
      // every R alike.
      constexpr int64_t kRows[] = {1, 2, 4, 8, 16};
      constexpr size_t kR = std::size(kRows);
      std::vector<double> best(kR * packed.size(), 1e30);
      for (int rep = 0; rep < (hot ? 200 : 10); ++rep)
        for (size_t ri = 0; ri < kR; ++ri)
          for (size_t c = 0; c < packed.size(); ++c) {
            const auto t0 = Clock::now();
            linear(packed[c], x.data(), kRows[ri], nullptr, y.data(), scratch, &pool);
            double& b = best[ri * packed.size() + c];
            b = std::min(b, std::chrono::duration<double>(Clock::now() - t0).count());
          }
      std::printf("  %-5s N=%-4lld K=%-4lld %-14s:", std::string(dtype_name(f)).c_str(), static_cast<long long>(n),
                  static_cast<long long>(k),
                  variant < 0 ? "" : std::string(half_gemv_variants()[static_cast<size_t>(variant)].name).c_str());
      double base = 0;
      for (size_t ri = 0; ri < kR; ++ri) {
        double s = 0;
        for (size_t c = 0; c < packed.size(); ++c)
          s += best[ri * packed.size() + c] / static_cast<double>(packed.size());
        if (ri == 0) base = s;
        std::printf("  R=%-2lld %7.1f us (%4.2fx)", static_cast<long long>(kRows[ri]), s * 1e6, s / base);
      }
      std::printf("\n");
    }
}

// "half": the decode GEMV variants for f16 / bf16 weights (linear_half.h) on Qwen2.5-0.5B's and SmolLM2-135M's
// shapes, weights streamed from DRAM (copies well beyond the caches). The variants take turns within each
// repetition (one call over every copy each), so what the machine does meanwhile weighs on all alike;
// per variant the median / upper-quartile GB/s of single calls, and the median's ratio to the ISA's own
// kernel (the first).
// Then tune_half_gemv over the same copies: its pick, its own medians and what it took.
void half_variants(int threads) {
  ThreadPool pool(threads);
  std::printf("isa %s  threads %d  triad %.1f GB/s\n", std::string(isa_name(active_isa())).c_str(), threads,
              triad_gbs(pool));
  for (auto [n, k] : {std::pair<int64_t, int64_t>{4864, 896}, {896, 4864}, {1536, 576}, {576, 1536}}) {
    std::mt19937 rng(1);
    std::normal_distribution<float> d(0.0f, 0.02f);
    std::vector<float> w(n * k), x(k), y(n);
    for (auto& v : w) v = d(rng);
    for (auto& v : x) v = d(rng) * 50;
    for (DType f : {DType::kF16, DType::kBF16}) {
      const std::vector<uint8_t> one = stored_weight(f, w, n, k, nullptr);
      const size_t copies = std::max<size_t>(4, (384u << 20) / one.size());
      std::vector<std::vector<uint8_t>> sources(copies, one);
      std::vector<PackedWeight> packed;
      for (auto& b : sources) packed.push_back(std::move(pack_weight(f, b.data(), n, k, nullptr).value()));
      LinearScratch scratch;
      const std::vector<int> cand = eligible_half_gemv(f);
      // One call per sample (a longer one would rarely escape the other processes on a shared machine),
      // each on the next copy, so a copy is read again only after every other copy has been.
      const int reps = static_cast<int>(3 * copies);
      std::vector<std::vector<double>> gbs(cand.size());
      size_t next = 0;
      for (int rep = 0; rep < reps; ++rep)
        for (size_t c = 0; c < cand.size(); ++c) {
          PackedWeight& p = packed[next];
          next = (next + 1) % packed.size();
          p.gemv_variant = cand[c];
          const auto t0 = Clock::now();
          linear(p, x.data(), 1, nullptr, y.data(), scratch, &pool);
          const double s = std::chrono::duration<double>(Clock::now() - t0).count();
          gbs[c].push_back(static_cast<double>(p.weight_bytes()) / s / 1e9);
        }
      std::printf("  %-4s N=%-5lld K=%-5lld", std::string(dtype_name(f)).c_str(), static_cast<long long>(n), static_cast<long long>(k));
      double base = 0;
      for (size_t c = 0; c < cand.size(); ++c) {
        std::sort(gbs[c].begin(), gbs[c].end());
        const double med = gbs[c][gbs[c].size() / 2];
        if (c == 0) base = med;
        std::printf("  %s %.1f/%.1f (%.2f)", std::string(half_gemv_variants()[static_cast<size_t>(cand[c])].name).c_str(), med,
                    gbs[c][gbs[c].size() * 3 / 4], med / base);
      }
      std::printf("\n");
      std::vector<const PackedWeight*> ws;
      for (auto& p : packed) ws.push_back(&p);
      std::printf("    %s\n", describe(tune_half_gemv(f, k, ws, &pool), f, k, threads).c_str());
    }
  }
}

// "half-decode": the linears of one decode token of Qwen2.5-0.5B (24 layers, hidden 896, MLP 4864, 2 KV heads,
// vocabulary 151936) or SmolLM2-135M (30 layers, 576, 1536, 3 KV heads of 64, 49152), every weight its own
// bytes in a huge-page copy as the backend keeps them, f16 and bf16, T threads. Each token runs every layer's
// q, k, v, o, gate, up and down projections and the LM head, one linear() each; tokens alternate between
// every weight on the ISA's kernel and every weight on what tune_half_gemv picks for its (format, K) over
// the same weights. Prints the median token times, their ratio, and the GB/s of the median tokens.
void half_decode(const std::string& model, int threads) {
  ThreadPool pool(threads);
  const bool qwen = model == "qwen";
  const int64_t layers = qwen ? 24 : 30, h = qwen ? 896 : 576, f = qwen ? 4864 : 1536, kv = qwen ? 128 : 192,
                vocab = qwen ? 151936 : 49152;
  std::printf("isa %s  threads %d  triad %.1f GB/s  %s\n", std::string(isa_name(active_isa())).c_str(), threads,
              triad_gbs(pool), qwen ? "Qwen2.5-0.5B" : "SmolLM2-135M");
  std::vector<std::pair<int64_t, int64_t>> shapes;
  for (int64_t l = 0; l < layers; ++l)
    for (auto nk : {std::pair<int64_t, int64_t>{h, h}, {kv, h}, {kv, h}, {h, h}, {f, h}, {f, h}, {h, f}}) shapes.push_back(nk);
  shapes.emplace_back(vocab, h);
  for (DType fmt : {DType::kF16, DType::kBF16}) {
    std::mt19937 rng(3);
    std::uniform_int_distribution<int> bits(0x3000, 0x3c00);  // magnitudes 2^-3 .. 1 in f16, tiny in bf16: any finite value does
    std::vector<std::unique_ptr<AlignedArray<uint8_t>>> store;
    std::vector<PackedWeight> ws;
    size_t bytes = 0;
    for (auto [n, k] : shapes) {
      auto a = std::make_unique<AlignedArray<uint8_t>>(static_cast<size_t>(n * k * 2), AlignedArray<uint8_t>::Init::kNone);
      auto* p16 = reinterpret_cast<uint16_t*>(a->data());
      for (int64_t i = 0; i < n * k; ++i) p16[i] = static_cast<uint16_t>(bits(rng) | (i & 1 ? 0x8000 : 0));
      ws.push_back(std::move(pack_weight(fmt, a->data(), n, k, nullptr).value()));
      bytes += static_cast<size_t>(n * k * 2);
      store.push_back(std::move(a));
    }
    std::vector<float> x(static_cast<size_t>(f), 0.01f), y(static_cast<size_t>(vocab));
    LinearScratch scratch;
    // The tuning over each class's weights (what tune_linears does at load).
    std::map<int64_t, int> pick;
    for (int64_t k : {h, f}) {
      std::vector<const PackedWeight*> cls;
      for (auto& w : ws)
        if (w.k == k) cls.push_back(&w);
      const HalfGemvTuning t = tune_half_gemv(fmt, k, cls, &pool);
      pick[k] = t.variant;
      std::printf("  %s\n", describe(t, fmt, k, threads).c_str());
    }
    const int builtin = eligible_half_gemv(fmt)[0];
    constexpr int kTokens = 15;
    std::vector<double> tok[2];
    for (int t = 0; t < 2 * kTokens; ++t) {
      const int which = t % 2;
      for (auto& w : ws) w.gemv_variant = which == 0 ? builtin : pick[w.k];
      const auto t0 = Clock::now();
      for (auto& w : ws) linear(w, x.data(), 1, nullptr, y.data(), scratch, &pool);
      tok[which].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    for (auto& v : tok) std::sort(v.begin(), v.end());
    const double a = tok[0][kTokens / 2], b = tok[1][kTokens / 2];
    std::printf("  %-4s %.0f MB/token: ISA kernel %.2f ms (%.1f GB/s), tuned %.2f ms (%.1f GB/s), tuned/ISA speed %.3f\n",
                std::string(dtype_name(fmt)).c_str(), static_cast<double>(bytes) / 1e6, a * 1e3,
                static_cast<double>(bytes) / a / 1e9, b * 1e3, static_cast<double>(bytes) / b / 1e9, a / b);
  }
}

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "half-decode") == 0) {
    half_decode(argc > 2 ? argv[2] : "smollm", argc > 3 ? std::atoi(argv[3]) : 2);
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "half") == 0) {
    half_variants(argc > 2 ? std::atoi(argv[2]) : 2);
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "pack") == 0) {
    packing();
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "scaling") == 0) {
    scaling();
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "layer") == 0) {
    layer();
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "quant") == 0) {
    quantization();
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "gemm") == 0) {
    prefill_int_gemm();
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "attention") == 0) {
    ThreadPool pool(2);
    prefill_attention(pool);
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "rows") == 0) {
    rows(argc > 2 ? std::atoi(argv[2]) : 2, argc > 3 ? argv[3] : "", argc > 4 && std::strcmp(argv[4], "hot") == 0);
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "attention-rows") == 0) {
    ThreadPool pool(2);
    attention_rows(pool);
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "attention-verify") == 0) {
    attention_verify(argc > 2 ? std::atoll(argv[2]) : 9, argc > 3 ? std::atoll(argv[3]) : 512);
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "attention-decode") == 0) {
    attention_decode(argc > 2 ? std::atoi(argv[2]) : 8, argc > 3 ? std::atoi(argv[3]) : 576,
                     argc > 4 && std::strcmp(argv[4], "hot") == 0);
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "extra") == 0) {
    extra();
    return 0;
  }
  // "hot": one copy of each matrix (L2/L3-resident) — shows kernel compute speed, not DRAM.
  const bool hot = argc > 1 && std::strcmp(argv[1], "hot") == 0;
  std::printf("isa %s\n", std::string(isa_name(active_isa())).c_str());
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    std::printf("threads %d  triad %.1f GB/s\n", threads, triad_gbs(pool));
    for (auto nk : {std::pair<int64_t, int64_t>{896, 4864}, {4864, 896}}) {
      const int64_t n = nk.first, k = nk.second;
      std::mt19937 rng(1);
      std::normal_distribution<float> d(0.0f, 0.02f);
      std::vector<float> w(n * k), x(k), y(n);
      for (auto& v : w) v = d(rng);
      for (auto& v : x) v = d(rng) * 50;
      for (DType f : {DType::kF32, DType::kF16, DType::kBF16, DType::kI8, DType::kQ8_0, DType::kQ4_0}) {
        std::vector<float> sc(n);
        const std::vector<uint8_t> one = stored_weight(f, w, n, k, sc.data());
        const size_t copies = hot ? 1 : std::max<size_t>(4, (256u << 20) / one.size());
        std::vector<std::vector<uint8_t>> all(copies, one);
        std::vector<PackedWeight> packed;
        for (auto& b : all) packed.push_back(std::move(pack_weight(f, b.data(), n, k, sc.data()).value()));
        if (packed[0].is_integer()) all.clear();  // packed copies are what the kernel streams
        LinearScratch scratch(packed[0].k_padded, 1);
        double best = 1e30;
        for (int rep = 0; rep < (hot ? 200 : 20); ++rep) {
          auto t0 = Clock::now();
          for (auto& p : packed) linear(p, x.data(), 1, nullptr, y.data(), scratch, &pool);
          best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count() / packed.size());
        }
        const double bytes = static_cast<double>(packed[0].weight_bytes());
        std::printf("  %-5s N=%-5lld K=%-5lld %7.2f MB  %7.1f us  %6.1f GB/s\n", std::string(dtype_name(f)).c_str(),
                    static_cast<long long>(n), static_cast<long long>(k), bytes / 1e6, best * 1e6, bytes / best / 1e9);
      }
    }
  }
}
