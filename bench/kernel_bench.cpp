// Decode GEMV bandwidth of the cpu_fast linear kernels vs a triad loop (docs/cpu-fast-backend.md).
//
// Weights are cycled through enough copies (≥ 256 MB) that every GEMV streams from DRAM, as in a real
// decode step, not from L3. GB/s = bytes of weights (+ scales) read per GEMV / best-of time.
// Build (from the repository root; no CMake target so it never slows the normal build):
//   g++ -O3 -std=c++20 -Iinclude -Isrc bench/kernel_bench.cpp src/backends/cpu_fast/{quantize,linear,linear_scalar,\
//     linear_avx2,linear_avx512,thread_pool,cpu_features}.cpp src/core/{error,dtype}.cpp -lpthread -o /tmp/kernel_bench
//   /tmp/kernel_bench            # all formats, 1 and 2 threads, weights from DRAM
//   /tmp/kernel_bench hot        # same, weights cache-resident (kernel compute ceiling)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

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

int main(int argc, char** argv) {
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
        for (int rep = 0; rep < (hot ? 200 : 8); ++rep) {
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
