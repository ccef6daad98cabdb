// Decode GEMV bandwidth of the cpu_fast linear kernels vs a triad loop (docs/cpu-fast-backend.md).
//
// Weights are cycled through enough copies (≥ 256 MB) that every GEMV streams from DRAM, as in a real
// decode step, not from L3. GB/s = bytes of weights (+ scales) read per GEMV / best-of time.
// Build (from the repository root, one command line; no CMake target so it never slows the normal build):
//   g++ -O3 -std=c++20 -Iinclude -Isrc bench/kernel_bench.cpp src/backends/cpu_fast/{quantize,linear,linear_scalar,
//     linear_avx2,linear_avx512,thread_pool,cpu_features,attention,attention_scalar,attention_avx2,attention_avx512,elementwise,elementwise_avx512}.cpp
//     src/core/{error,dtype}.cpp -lopenblas -lpthread -o /tmp/kernel_bench
//   /tmp/kernel_bench            # all formats, 1 and 2 threads, weights from DRAM
//   /tmp/kernel_bench hot        # same, weights cache-resident (kernel compute ceiling)
//   /tmp/kernel_bench extra      # prefill GEMM vs OpenBLAS, live-slot attention, busy-core decode
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include <cblas.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/cpu_fast/attention.h"
#include "backends/cpu_fast/cpu_features.h"
#include "backends/cpu_fast/half.h"
#include "backends/cpu_fast/linear.h"
#include "backends/cpu_fast/quantize.h"
#include "backends/cpu_fast/thread_pool.h"

using namespace hfs;
using namespace hfs::cpu_fast;
using Clock = std::chrono::steady_clock;

namespace {

double triad_gbs(ThreadPool& pool) {
  const int64_t n = 16 << 20;  // 3 × 64 MB
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  const int64_t chunks = 64;
  double best = 1e30;
  for (int rep = 0; rep < 8; ++rep) {
    auto t0 = Clock::now();
    pool.run(chunks, [&](int64_t ch) {
      const int64_t i0 = n * ch / chunks, i1 = n * (ch + 1) / chunks;
      for (int64_t i = i0; i < i1; ++i) a[i] = b[i] + 3.0f * c[i];
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

double seconds_best(int reps, const std::function<void()>& f) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

void extra() {
  ThreadPool pool(2);
  // Prefill: M rows through one f32 [4864, 896] weight, ours vs OpenBLAS sgemm (2 threads each).
  for (int64_t m : {16, 64, 128}) {
    const int64_t n = 4864, k = 896;
    std::vector<float> w(n * k, 0.01f), x(m * k, 0.5f), y(m * n);
    auto pw = pack_weight(DType::kF32, w.data(), n, k, nullptr).value();
    LinearScratch scratch;
    double ours = seconds_best(20, [&] { linear(pw, x.data(), m, nullptr, y.data(), scratch, &pool); });
    openblas_set_num_threads(2);
    double blas = seconds_best(20, [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x.data(), k, w.data(), k, 0.0f, y.data(), n);
    });
    const double fl = 2.0 * m * n * k;
    std::printf("prefill f32 M=%-4lld N=%lld K=%lld  ours %6.1f GFLOP/s  openblas %6.1f GFLOP/s\n",
                static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), fl / ours / 1e9,
                fl / blas / 1e9);
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

int main(int argc, char** argv) {
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
        std::vector<uint8_t> one;
        std::vector<float> sc(n);
        switch (f) {
          case DType::kF32: one.resize(n * k * 4); std::memcpy(one.data(), w.data(), one.size()); break;
          case DType::kF16: one.resize(n * k * 2); quantize_f16(w.data(), reinterpret_cast<uint16_t*>(one.data()), n * k); break;
          case DType::kBF16: one.resize(n * k * 2); quantize_bf16(w.data(), reinterpret_cast<uint16_t*>(one.data()), n * k); break;
          case DType::kI8: one.resize(n * k); quantize_i8_per_channel(w.data(), n, k, reinterpret_cast<int8_t*>(one.data()), sc.data()); break;
          case DType::kQ8_0: one.resize(q8_0_bytes(n, k)); (void)quantize_q8_0(w.data(), n, k, one.data()); break;
          default: one.resize(q4_0_bytes(n, k)); (void)quantize_q4_0(w.data(), n, k, one.data()); break;
        }
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
