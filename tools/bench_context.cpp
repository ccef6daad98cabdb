#include "bench_context.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>

#include "backend_settings.h"
#include "common.h"
#include "hfstatic/ext/io_contract.h"
#include "hfstatic/ext/metadata_keys.h"
#include "io_util.h"
#include "option_checks.h"

namespace hfs::cli {
namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// This process's peak resident set so far.
int64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;  // Linux: KiB
}

// Bytes of the K/V caches: the decode method's state inputs.
uint64_t cache_bytes(const Program& p) {
  uint64_t bytes = 0;
  if (const Value* dm = p.meta(keys::kDecodeMethod))
    if (const MethodDef* m = p.method(dm->as_string()))
      for (const IOSpec& in : m->inputs)
        if (in.role == IORole::kState) bytes += in.type.nbytes();
  return bytes;
}

// Milliseconds per decode step over `gen` greedy steps that end with `length` live tokens.
Result<double> step_ms_at(Runner& r, int64_t length, int gen, int32_t first) {
  r.reset();
  HFS_TRY(r.io().advance_unwritten(0, length - gen));
  int32_t tok = first;
  const auto t0 = Clock::now();
  for (int i = 0; i < gen; ++i) {
    HFS_ASSIGN_OR_RETURN(std::span<const float> logits, r.decode_step(tok));
    tok = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / gen;
}

}  // namespace

std::optional<std::vector<int64_t>> parse_context_lengths(const std::string& s) {
  std::vector<int64_t> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t comma = s.find(',', pos);
    std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    int64_t scale = 1;
    if (!item.empty() && (item.back() == 'k' || item.back() == 'K')) {
      scale = 1024;
      item.pop_back();
    }
    if (item.empty() || item.size() > 9 || !std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
    const int64_t v = std::stoll(item) * scale;
    if (v < 1) return std::nullopt;
    out.push_back(v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

int bench_context_fill(std::shared_ptr<const Program> program, const RunnerOptions& options, const ContextFillBench& b) {
  auto runner = Runner::create(program, options);
  if (!runner) return fail(runner.error());
  Runner& r = **runner;
  const int64_t ctx = r.info().context_length;
  for (int64_t n : b.lengths) {
    if (n > ctx)
      return usage_error("bench", "--context-fill " + std::to_string(n) + " exceeds the program's context of " +
                                      std::to_string(ctx) + " tokens (export with a larger --context)");
    if (n <= b.gen)
      return usage_error("bench", "--context-fill " + std::to_string(n) + " must be more than --gen " +
                                      std::to_string(b.gen) + " (the measured steps end at that many live tokens)");
  }
  std::mt19937 rng(1);
  const auto first = static_cast<int32_t>(rng() % static_cast<uint32_t>(r.info().vocab_size));
  std::vector<std::vector<double>> ms(b.lengths.size());
  for (int rep = 0; rep < b.reps; ++rep)
    for (size_t i = 0; i < b.lengths.size(); ++i) {
      auto t = step_ms_at(r, b.lengths[i], b.gen, first);
      if (!t) return fail(t.error());
      ms[i].push_back(*t);
    }
  r.reset();
  const Value* cd = program->meta(keys::kCacheDType);
  const std::string dtype = cd && cd->is_string() ? cd->as_string() : "?";
  const uint64_t caches = cache_bytes(*program), weights = program->constant_bytes();
  const int64_t peak_rss = peak_rss_bytes();
  const double rss = static_cast<double>(peak_rss);
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < b.lengths.size(); ++i) {
    const double m = median(ms[i]);
    rows.push_back({{"live_tokens", b.lengths[i]}, {"decode_tok_s", 1000.0 / m}, {"step_ms", m}, {"runs_step_ms", ms[i]}});
  }
  // What each further live token costs: the slope between the shortest and the longest length.
  const auto lo = std::min_element(b.lengths.begin(), b.lengths.end()) - b.lengths.begin();
  const auto hi = std::max_element(b.lengths.begin(), b.lengths.end()) - b.lengths.begin();
  const double slope = b.lengths[static_cast<size_t>(hi)] > b.lengths[static_cast<size_t>(lo)]
                           ? (rows[static_cast<size_t>(hi)]["step_ms"].get<double>() - rows[static_cast<size_t>(lo)]["step_ms"].get<double>()) /
                                 static_cast<double>(b.lengths[static_cast<size_t>(hi)] - b.lengths[static_cast<size_t>(lo)]) * 1024
                           : 0;
  nlohmann::json j{{"model", b.model},
                   {"context_length", ctx},
                   {"cache_dtype", dtype},
                   {"gen_tokens", b.gen},
                   {"reps", b.reps},
                   {"fill", "advance_unwritten"},
                   {"context_fill", rows},
                   {"step_ms_per_1k_live_tokens", slope},
                   {"weight_bytes", weights},
                   {"cache_bytes", caches},
                   {"peak_rss_bytes", peak_rss},
                   {"kernels", backend_kernels(options.io.method.backends)}};
  if (b.json) return out(j.dump() + "\n") ? 0 : 1;
  if (const std::string k = describe_kernels(j["kernels"].get<std::map<std::string, std::string>>()); !k.empty())
    outf("kernels: %s\n", k.c_str());
  outf("decode with N live tokens: %d greedy steps ending at N, the positions before them skipped (zero rows, "
       "not prefilled); median of %d\n",
       b.gen, b.reps);
  outf("%12s %14s %10s\n", "live tokens", "decode tok/s", "ms/step");
  for (const auto& row : rows)
    outf("%12lld %14.2f %10.3f\n", static_cast<long long>(row["live_tokens"].get<int64_t>()),
         row["decode_tok_s"].get<double>(), row["step_ms"].get<double>());
  if (b.lengths.size() > 1) outf("each 1k live tokens adds %.3f ms per step\n", slope);
  outf("memory: weights %.1f MiB + caches %.1f MiB (%s, context %lld); peak RSS %.1f MiB\n",
       static_cast<double>(weights) / (1 << 20), static_cast<double>(caches) / (1 << 20), dtype.c_str(),
       static_cast<long long>(ctx), rss / (1 << 20));
  return 0;
}

}  // namespace hfs::cli
