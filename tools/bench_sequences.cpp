#include "bench_sequences.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "cli.h"
#include "common.h"
#include "hfstatic/engine.h"
#include "io_util.h"
#include "option_checks.h"

namespace hfs::cli {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Run {
  double prefill_s = 0, decode_s = 0;
  int64_t decode_tokens = 0, steps = 0, rows = 0, pad_rows = 0;
  double ttft_max_ms = 0, gap_max_ms = 0;  // the packing policy's latency: worst TTFT, worst wait between tokens
};

// B sequences with random prompts of the same length arrive together; the prefill phase lasts until every
// one has its first token, the decode phase from then until all have generated `gen` tokens.
Result<Run> run_once(Engine& e, int count, const SequencesBench& b, uint64_t seed) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  GenerationConfig g;
  g.max_new_tokens = b.gen;
  g.ignore_eos = true;
  std::vector<SequenceId> ids;
  for (int i = 0; i < count; ++i) {
    std::vector<int32_t> prompt(static_cast<size_t>(b.prompt));
    for (int32_t& t : prompt) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(e.info().vocab_size));
    HFS_ASSIGN_OR_RETURN(SequenceId id, e.add(prompt, g));
    ids.push_back(id);
  }
  Run r;
  const EngineStats before = e.stats();
  auto t0 = Clock::now();
  int started = 0;
  while (started < count && !e.idle()) {
    HFS_ASSIGN_OR_RETURN(auto ev, e.step());
    for (const StepEvent& x : ev) started += e.sequence(x.sequence)->generated.size() == 1 ? 1 : 0;
  }
  r.prefill_s = seconds_since(t0);
  // Decode: from the step after every sequence has its first token until the first one finishes, so every
  // step measured carries all B sequences (the ones that started first would otherwise finish first and
  // leave the last steps with fewer rows).
  t0 = Clock::now();
  bool all_running = true;
  while (!e.idle()) {
    HFS_ASSIGN_OR_RETURN(auto ev, e.step());
    if (!all_running) continue;
    r.decode_tokens += static_cast<int64_t>(ev.size());
    for (const StepEvent& x : ev) all_running = all_running && !x.finished;
    if (!all_running) r.decode_s = seconds_since(t0);
  }
  if (all_running) r.decode_s = seconds_since(t0);
  r.steps = e.stats().steps - before.steps;
  r.rows = e.stats().rows - before.rows;
  r.pad_rows = e.stats().padded_rows - before.padded_rows;
  for (SequenceId id : ids) {
    HFS_ASSIGN_OR_RETURN(SequenceInfo info, e.sequence(id));
    r.ttft_max_ms = std::max(r.ttft_max_ms, info.ttft_ms);
    r.gap_max_ms = std::max(r.gap_max_ms, info.max_gap_ms);
    HFS_TRY(e.remove(id));
  }
  return r;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

Result<nlohmann::json> measure_sequences(Engine& e, const SequencesBench& b) {
  const ModelInfo& info = e.info();
  for (int count : b.counts)
    if (count < 1 || count > info.max_sequences)
      return Error(ErrorCode::kInvalidArgument, "sequences " + std::to_string(count) + ": expected 1 to the program's " +
                                                    std::to_string(info.max_sequences) + " (export --sequences N)");
  if (b.prompt < 1 || b.gen < 1 || int64_t{b.prompt} + b.gen > info.context_length)
    return Error(ErrorCode::kInvalidArgument, "prompt " + std::to_string(b.prompt) + " + gen " + std::to_string(b.gen) +
                                                  " tokens: each at least 1, together within the program's context of " +
                                                  std::to_string(info.context_length) + " tokens");
  // The counts take turns within each repetition, so a guest whose speed drifts over minutes weighs on
  // every count alike and the ratios to the first count compare runs seconds apart.
  struct Samples {
    std::vector<double> prefill, decode, steps, pads, ttft, gap;
  };
  std::vector<Samples> by_count(b.counts.size());
  for (int rep = 0; rep < b.reps; ++rep)
    for (size_t c = 0; c < b.counts.size(); ++c) {
      const int count = b.counts[c];
      HFS_ASSIGN_OR_RETURN(Run r, run_once(e, count, b, static_cast<uint64_t>(rep * 1000 + count)));
      Samples& s = by_count[c];
      s.prefill.push_back(r.prefill_s > 0 ? count * b.prompt / r.prefill_s : 0);
      s.decode.push_back(r.decode_s > 0 ? static_cast<double>(r.decode_tokens) / r.decode_s : 0);
      s.steps.push_back(r.steps > 0 ? static_cast<double>(r.rows) / static_cast<double>(r.steps) : 0);
      s.pads.push_back(static_cast<double>(r.pad_rows));
      s.ttft.push_back(r.ttft_max_ms);
      s.gap.push_back(r.gap_max_ms);
    }
  nlohmann::json rows = nlohmann::json::array();
  double base = 0;
  for (size_t c = 0; c < b.counts.size(); ++c) {
    const int count = b.counts[c];
    const Samples& s = by_count[c];
    const double agg = median_of(s.decode);
    if (base == 0) base = agg;
    rows.push_back({{"sequences", count},
                    {"prefill_tok_s", median_of(s.prefill)},
                    {"decode_tok_s", agg},
                    {"decode_tok_s_per_sequence", agg / count},
                    {"decode_vs_first", base > 0 ? agg / base : 0},
                    {"rows_per_step", median_of(s.steps)},
                    {"pad_rows", median_of(s.pads)},
                    {"ttft_max_ms", median_of(s.ttft)},
                    {"token_gap_max_ms", median_of(s.gap)}});
  }
  return nlohmann::json({{"prompt_tokens", b.prompt}, {"gen_tokens", b.gen}, {"reps", b.reps},
                         {"max_sequences", info.max_sequences}, {"step_sizes", info.step_sizes}, {"sequences", rows}});
}

int bench_sequences(std::shared_ptr<const Program> program, const BackendOptions& backends, const SequencesBench& b) {
  EngineOptions eo;
  eo.io.method.backends = backends;
  auto engine = Engine::create(std::move(program), eo);
  if (!engine) return fail(engine.error());
  Engine& e = **engine;
  const ModelInfo& info = e.info();
  for (int count : b.counts)
    if (count > info.max_sequences)
      return usage_error("bench", "--sequences " + std::to_string(count) + " exceeds the program's " +
                                      std::to_string(info.max_sequences) + " (export --sequences N)");
  if (int64_t{b.prompt} + b.gen > info.context_length)
    return usage_error("bench", "--prompt " + std::to_string(b.prompt) + " + --gen " + std::to_string(b.gen) +
                                    " exceed the program's context of " + std::to_string(info.context_length) + " tokens");
  auto measured = measure_sequences(e, b);
  if (!measured) return fail(measured.error());
  const nlohmann::json& rows = (*measured)["sequences"];
  if (b.json) {
    outf("%s\n", measured->dump().c_str());
    return 0;
  }
  outf("sequences | prefill tok/s | decode tok/s (all) | per sequence | vs B=%d | rows/step | pad rows | worst TTFT ms | worst gap ms\n",
       b.counts.front());
  for (const auto& r : rows)
    outf("%9d | %13.1f | %18.1f | %12.1f | %6.2fx | %9.1f | %8.0f | %13.1f | %12.1f\n", r["sequences"].get<int>(),
         r["prefill_tok_s"].get<double>(), r["decode_tok_s"].get<double>(), r["decode_tok_s_per_sequence"].get<double>(),
         r["decode_vs_first"].get<double>(), r["rows_per_step"].get<double>(), r["pad_rows"].get<double>(),
         r["ttft_max_ms"].get<double>(), r["token_gap_max_ms"].get<double>());
  return 0;
}

}  // namespace hfs::cli
