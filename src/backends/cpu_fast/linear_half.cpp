#include "backends/cpu_fast/linear_half.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>

#include "backends/cpu_fast/thread_pool.h"

namespace hfs::cpu_fast {
namespace {

constexpr const char* kEnv = "HFS_CPU_FAST_HALF_GEMV";
constexpr std::string_view kTune = "tune";  // the one value that is not a variant: time them at load

bool serves(const HalfGemvVariant& v, DType f) { return f == DType::kF16 ? v.f16 : f == DType::kBF16 && v.bf16; }

// The built-in kernel of the active level: "zmm-default" on AVX-512 (and AMX), "ymm-default" on AVX2.
std::string_view builtin_name() { return active_isa() >= Isa::kAvx512 ? "zmm-default" : "ymm-default"; }

std::string names(const std::vector<int>& idx) {
  std::string s;
  for (int i : idx) s += (s.empty() ? "" : ", ") + std::string(half_gemv_variants()[static_cast<size_t>(i)].name);
  return s.empty() ? "none" : s;
}

// A tuning sample streams at least this many bytes of weights (one or more linears back to back, as a decode
// step runs them: short, so that most samples run between interruptions on a shared machine) and each
// chunk is at most kChunkBytes: large weights (an LM head) are timed in row
// ranges, so no single call dominates a round.
constexpr size_t kSampleBytes = size_t{2} << 20;
constexpr size_t kChunkBytes = size_t{8} << 20;
// Rounds of one sample per candidate: at least kMinRounds, then more while under kBudget.
constexpr int kMinRounds = 9, kMaxRounds = 25;
constexpr double kBudgetSeconds = 0.040;
constexpr double kMargin = 1.03;

}  // namespace

std::span<const HalfGemvVariant> half_gemv_variants() {
  static const std::vector<HalfGemvVariant> all = [] {
    std::vector<HalfGemvVariant> v;
#if defined(__x86_64__)  // the variants are x86 kernels (cpu_features.h); elsewhere there are none
    for (const auto& x : detail::half_gemv_variants_avx2()) v.push_back(x);
    for (const auto& x : detail::half_gemv_variants_avx512()) v.push_back(x);
#endif
    return v;
  }();
  return all;
}

std::vector<int> eligible_half_gemv(DType f) {
  std::vector<int> out;
  const auto all = half_gemv_variants();
  const Isa isa = active_isa();
  if (isa < Isa::kAvx2 || (f != DType::kF16 && f != DType::kBF16)) return out;
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i].name == builtin_name()) out.push_back(static_cast<int>(i));
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i].isa <= isa && serves(all[i], f) && all[i].name != builtin_name()) out.push_back(static_cast<int>(i));
  return out;
}

bool half_gemv_tuning_requested() {
  const char* env = std::getenv(kEnv);
  return env != nullptr && std::string_view(env) == kTune;
}

Result<int> forced_half_gemv(DType f) {
  const char* env = std::getenv(kEnv);
  if (env == nullptr || *env == '\0' || std::string_view(env) == kTune) return -1;
  const std::string_view want = env;
  const std::vector<int> ok = eligible_half_gemv(f);
  if (want == "default") return ok.empty() ? -1 : ok[0];
  for (int i : ok)
    if (half_gemv_variants()[static_cast<size_t>(i)].name == want) return i;
  const auto all = half_gemv_variants();
  const bool known = std::any_of(all.begin(), all.end(), [&](const HalfGemvVariant& v) { return v.name == want; });
  return make_error(ErrorCode::kInvalidArgument,
                    std::string("cpu_fast: ") + kEnv + "='" + std::string(want) + "' " +
                        (known ? "cannot run " : "is not a GEMV variant for ") + std::string(dtype_name(f)) +
                        " weights on " + std::string(isa_name(active_isa())) + " (choices: default, tune, " + names(ok) + ")");
}

Status check_half_gemv_env() {
  const char* env = std::getenv(kEnv);
  if (env == nullptr || *env == '\0' || std::string_view(env) == "default" || std::string_view(env) == kTune) return Ok{};
  const auto all = half_gemv_variants();
  if (std::any_of(all.begin(), all.end(), [&](const HalfGemvVariant& v) { return v.name == env; })) return Ok{};
  std::vector<int> every(all.size());
  for (size_t i = 0; i < all.size(); ++i) every[i] = static_cast<int>(i);
  return make_error(ErrorCode::kInvalidArgument, std::string("cpu_fast: ") + kEnv + "='" + env +
                                                     "' is not a GEMV variant (choices: default, tune, " + names(every) + ")");
}

HalfGemvTuning tune_half_gemv(DType f, int64_t k, std::span<const PackedWeight* const> weights, ThreadPool* pool) {
  HalfGemvTuning t;
  t.candidates = eligible_half_gemv(f);
  if (t.candidates.empty() || weights.empty() || k <= 0) return t;
  const int threads = pool != nullptr ? pool->size() : 1;
  using Key = std::tuple<DType, int64_t, Isa, int>;
  static std::mutex mu;
  static std::map<Key, HalfGemvTuning> cache;
  const Key key{f, k, active_isa(), threads};
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(key); it != cache.end()) {
    HalfGemvTuning c = it->second;
    c.cached = true;
    return c;
  }
  const auto t0 = std::chrono::steady_clock::now();
  // Row ranges of the weights, in their order (a decode step's order), as float weights to read in place.
  const int64_t row_bytes = 2 * k;
  const int64_t chunk_rows = std::max<int64_t>(1, static_cast<int64_t>(kChunkBytes) / row_bytes);
  std::vector<PackedWeight> chunks;
  int64_t max_rows = 0;
  for (const PackedWeight* w : weights)
    for (int64_t r0 = 0; r0 < w->n; r0 += chunk_rows) {
      PackedWeight v;
      v.format = f;
      v.n = v.n_padded = std::min(chunk_rows, w->n - r0);
      v.k = v.k_padded = k;
      v.raw = static_cast<const char*>(w->raw) + r0 * row_bytes;
      max_rows = std::max(max_rows, v.n);
      chunks.push_back(std::move(v));
    }
  std::vector<float> x(static_cast<size_t>(k)), y(static_cast<size_t>(max_rows));
  for (int64_t i = 0; i < k; ++i) x[static_cast<size_t>(i)] = static_cast<float>((i * 7) % 13 - 6) * 0.01f;
  LinearScratch scratch;
  const size_t nc = t.candidates.size();
  std::vector<std::vector<double>> gbs(nc);
  size_t next = 0;
  for (int round = 0; round < kMaxRounds; ++round) {
    for (size_t p = 0; p < nc; ++p) {
      const size_t c = (p + static_cast<size_t>(round)) % nc;  // each round starts with another candidate
      size_t bytes = 0;
      const auto s0 = std::chrono::steady_clock::now();
      while (bytes < kSampleBytes) {
        PackedWeight& v = chunks[next];
        next = (next + 1) % chunks.size();
        v.gemv_variant = t.candidates[c];
        linear(v, x.data(), 1, nullptr, y.data(), scratch, pool);
        bytes += v.weight_bytes();
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
      gbs[c].push_back(static_cast<double>(bytes) / std::max(s, 1e-9) / 1e9);
    }
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (round + 1 >= kMinRounds && spent > kBudgetSeconds) break;
  }
  // Each round's samples ran within about a millisecond of each other, so each is scored against its
  // round's median: what the machine's other work does to the bandwidth from one round to the next cancels
  // out. A candidate's score is the median of its scores over the rounds.
  const size_t rounds = gbs[0].size();
  std::vector<std::vector<double>> rel(nc);
  for (size_t r = 0; r < rounds; ++r) {
    std::vector<double> g;
    for (size_t c = 0; c < nc; ++c) g.push_back(gbs[c][r]);
    std::nth_element(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(nc / 2), g.end());
    for (size_t c = 0; c < nc; ++c) rel[c].push_back(gbs[c][r] / g[nc / 2]);
  }
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  double best = -1;
  for (size_t c = 0; c < nc; ++c) {
    t.gbs.push_back(median(gbs[c]));
    t.score.push_back(median(rel[c]));
    // The ISA's kernel (candidate 0) stays unless another beats it by kMargin: variants that measure the
    // same would otherwise change places from one load to the next on noise alone.
    if (t.score.back() > (c == 0 ? 0.0 : std::max(best, t.score[0] * kMargin))) {
      best = t.score.back();
      t.variant = t.candidates[c];
    }
  }
  t.ms = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e3;
  cache[key] = t;
  return t;
}

std::string describe(const HalfGemvTuning& t, DType f, int64_t k, int threads) {
  std::string s = "cpu_fast tune: " + std::string(dtype_name(f)) + " K=" + std::to_string(k) + ", " +
                  std::to_string(threads) + (threads == 1 ? " thread" : " threads") + ": ";
  if (t.variant < 0) return s + "no variants (the ISA's kernel)";
  s += std::string(half_gemv_variants()[static_cast<size_t>(t.variant)].name);
  if (t.cached) return s + " (tuned earlier in this process)";
  char buf[64];
  s += " in ";
  std::snprintf(buf, sizeof buf, "%.1f ms; median GB/s (score):", t.ms);
  s += buf;
  for (size_t c = 0; c < t.candidates.size(); ++c) {
    std::snprintf(buf, sizeof buf, " %s %.1f (%.3f)",
                  std::string(half_gemv_variants()[static_cast<size_t>(t.candidates[c])].name).c_str(), t.gbs[c], t.score[c]);
    s += buf;
  }
  return s;
}

}  // namespace hfs::cpu_fast
