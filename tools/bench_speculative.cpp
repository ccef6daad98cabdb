#include "bench_speculative.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "common.h"
#include "hfstatic/ext/io_contract.h"
#include "io_util.h"

namespace hfs::cli {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// One decode step or one K + 1-row step at position `base`, then taken back to `base`.
Result<double> timed_step(IOManager& io, std::span<const int32_t> rows, int64_t base) {
  auto t0 = Clock::now();
  if (rows.size() == 1) {
    HFS_TRY(io.run_decode(rows[0]));
  } else {
    const SequenceTokens part{0, rows};
    HFS_TRY(io.run_step(std::span<const SequenceTokens>(&part, 1), StepLogits::kAllRows));
  }
  const double ms = ms_since(t0);
  HFS_TRY(io.truncate_sequence(0, base));
  return ms;
}

double cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

struct Generated {
  std::vector<int32_t> tokens;
  RunnerStats stats;  // this generation's alone
  // The generation after the prompt (every token after the first: decode or verification steps, drafting
  // and sampling): wall time, and this process's CPU time, which time spent waiting for a core on a busy
  // machine does not inflate.
  double wall_ms = 0, cpu_ms = 0;
  double tok_s() const { return wall_ms > 0 ? (static_cast<double>(tokens.size()) - 1) * 1e3 / wall_ms : 0; }
  double cpu_tok_s() const { return cpu_ms > 0 ? (static_cast<double>(tokens.size()) - 1) * 1e3 / cpu_ms : 0; }
};

Result<Generated> generate_once(Runner& r, std::span<const int32_t> prompt, const GenerationConfig& g) {
  r.reset();
  const RunnerStats before = r.stats();
  Generated out;
  HFS_ASSIGN_OR_RETURN(std::unique_ptr<Generation> gen, r.start(prompt, g));
  HFS_ASSIGN_OR_RETURN(std::optional<int32_t> first, gen->next());
  const auto t0 = Clock::now();
  const double c0 = cpu_ms();
  for (std::optional<int32_t> t = first; t;) {
    HFS_ASSIGN_OR_RETURN(t, gen->next());
  }
  out.cpu_ms = cpu_ms() - c0;
  out.wall_ms = ms_since(t0);
  out.tokens = gen->tokens();
  RunnerStats d = r.stats();
  d.decode_ms -= before.decode_ms;
  d.decode_steps -= before.decode_steps;
  d.generated_tokens -= before.generated_tokens;
  d.verify_steps -= before.verify_steps;
  d.draft_tokens -= before.draft_tokens;
  d.draft_accepted -= before.draft_accepted;
  d.draft_program_steps -= before.draft_program_steps;
  d.draft_program_ms -= before.draft_program_ms;
  out.stats = d;
  return out;
}

}  // namespace

int bench_verify(std::shared_ptr<const Program> program, const BackendOptions& backends, const VerifyBench& b) {
  IOManagerOptions o;
  o.method.backends = backends;
  auto made = create_io_manager(program, o);
  if (!made) return fail(made.error());
  IOManager& io = **made;
  const ModelInfo& info = io.info();
  if (info.step_sizes.empty())
    return fail(make_error(ErrorCode::kInvalidArgument,
                           "bench --verify: the program has no step methods (export it with --step-sizes, e.g. 3,5,9,17)"));
  const int max_k = *std::max_element(b.drafts.begin(), b.drafts.end());
  if (max_k + 1 > info.step_sizes.back())
    return fail(make_error(ErrorCode::kInvalidArgument,
                           "bench --verify: K = " + std::to_string(max_k) + " needs a step method of at least " +
                               std::to_string(max_k + 1) + " rows; the program's largest is step_" +
                               std::to_string(info.step_sizes.back())));
  if (int64_t{b.prompt} + max_k + 1 > info.context_length)
    return fail(make_error(ErrorCode::kInvalidArgument,
                           "bench --verify: --prompt " + std::to_string(b.prompt) + " + " + std::to_string(max_k + 1) +
                               " rows exceed the program's context of " + std::to_string(info.context_length)));
  std::mt19937 rng(1);
  auto random_tokens = [&](size_t n) {
    std::vector<int32_t> t(n);
    for (int32_t& x : t) x = static_cast<int32_t>(rng() % static_cast<uint32_t>(info.vocab_size));
    return t;
  };
  const std::vector<int32_t> prompt = random_tokens(static_cast<size_t>(b.prompt));
  for (size_t at = 0; at < prompt.size(); at += static_cast<size_t>(info.prefill_tokens)) {
    const size_t n = std::min(prompt.size() - at, static_cast<size_t>(info.prefill_tokens));
    if (Status st = io.run_prefill(std::span(prompt).subspan(at, n), StepLogits::kKeep); !st) return fail(st.error());
  }
  const int64_t base = io.position();
  const std::vector<int32_t> rows = random_tokens(static_cast<size_t>(max_k + 1));
  nlohmann::json per = nlohmann::json::array();
  for (int k : b.drafts) {
    const std::span<const int32_t> step_rows(rows.data(), static_cast<size_t>(k + 1));
    // A warm-up of each, then pairs in alternating order.
    for (auto r : {std::span<const int32_t>(rows.data(), 1), step_rows})
      if (auto ms = timed_step(io, r, base); !ms) return fail(ms.error());
    const int64_t method_rows = io.last_step_tokens();
    std::vector<double> decode_ms, step_ms, ratios;
    for (int p = 0; p < b.pairs; ++p) {
      double d = 0, s = 0;
      for (int turn = 0; turn < 2; ++turn) {
        const bool step_turn = (turn == 0) == (p % 2 == 0);
        auto ms = timed_step(io, step_turn ? step_rows : std::span<const int32_t>(rows.data(), 1), base);
        if (!ms) return fail(ms.error());
        (step_turn ? s : d) = *ms;
      }
      decode_ms.push_back(d);
      step_ms.push_back(s);
      ratios.push_back(s / d);
    }
    per.push_back({{"drafts", k},
                   {"rows", k + 1},
                   {"method_rows", method_rows},
                   {"decode_ms", median(decode_ms)},
                   {"step_ms", median(step_ms)},
                   {"step_over_decode", median(ratios)}});
  }
  if (b.json) {
    nlohmann::json j;
    j["prompt_tokens"] = b.prompt;
    j["pairs"] = b.pairs;
    j["verify"] = per;
    outf("%s\n", j.dump().c_str());
  } else {
    outf("%6s %6s %8s %11s %11s %14s\n", "K", "rows", "method", "decode ms", "step ms", "step/decode");
    for (const auto& r : per)
      outf("%6d %6d %8s %11.3f %11.3f %14.2f\n", r["drafts"].get<int>(), r["rows"].get<int>(),
           ("step_" + std::to_string(r["method_rows"].get<int64_t>())).c_str(), r["decode_ms"].get<double>(),
           r["step_ms"].get<double>(), r["step_over_decode"].get<double>());
  }
  return 0;
}

int bench_draft(std::shared_ptr<const Program> program, const RunnerOptions& options, const DraftBench& b) {
  auto runner = Runner::create(std::move(program), options);
  if (!runner) return fail(runner.error());
  Runner& r = **runner;
  GenerationConfig plain;
  plain.max_new_tokens = b.gen;
  plain.ignore_eos = true;
  plain.sampling.temperature = 0;
  GenerationConfig drafted = plain;
  drafted.draft = b.draft;
  std::vector<Generated> plains, drafts;
  // A first pair unmeasured: page faults and the thread pool's start belong to neither side.
  for (int rep = -1; rep < b.reps; ++rep)
    for (int turn = 0; turn < 2; ++turn) {
      const bool draft_turn = (turn == 0) == (rep % 2 == 0);
      auto g = generate_once(r, b.prompt, draft_turn ? drafted : plain);
      if (!g) return fail(g.error());
      if (rep >= 0) (draft_turn ? drafts : plains).push_back(std::move(*g));
    }
  std::vector<double> plain_tps, draft_tps, speedups, plain_cpu, draft_cpu, cpu_speedups;
  int64_t drafted_n = 0, accepted = 0, tokens = 0, target_steps = 0;
  bool same = true;
  for (size_t i = 0; i < plains.size(); ++i) {
    const RunnerStats& d = drafts[i].stats;
    plain_tps.push_back(plains[i].tok_s());
    draft_tps.push_back(drafts[i].tok_s());
    speedups.push_back(drafts[i].tok_s() / plains[i].tok_s());
    plain_cpu.push_back(plains[i].cpu_tok_s());
    draft_cpu.push_back(drafts[i].cpu_tok_s());
    cpu_speedups.push_back(drafts[i].cpu_tok_s() / plains[i].cpu_tok_s());
    same = same && plains[i].tokens == drafts[i].tokens;
    drafted_n += d.draft_tokens;
    accepted += d.draft_accepted;
    tokens += d.decode_steps;
    // Every committed token took a step of the model except the accepted drafts, which rode along.
    target_steps += d.decode_steps - d.draft_accepted;
  }
  nlohmann::json j;
  j["prompt_tokens"] = b.prompt.size();
  j["gen_tokens"] = b.gen;
  j["reps"] = b.reps;
  j["draft_max"] = b.draft.max_tokens;
  j["plain_decode_tok_s"] = median(plain_tps);
  j["draft_decode_tok_s"] = median(draft_tps);
  j["speedup"] = median(speedups);
  j["speedup_pairs"] = speedups;
  j["plain_cpu_tok_s"] = median(plain_cpu);
  j["draft_cpu_tok_s"] = median(draft_cpu);
  j["speedup_cpu"] = median(cpu_speedups);
  j["acceptance_rate"] = drafted_n > 0 ? static_cast<double>(accepted) / static_cast<double>(drafted_n) : 0.0;
  j["drafts_per_run"] = static_cast<double>(drafted_n) / b.reps;
  j["verify_steps_per_run"] = [&] {
    int64_t v = 0;
    for (const Generated& g : drafts) v += g.stats.verify_steps;
    return static_cast<double>(v) / b.reps;
  }();
  if (b.draft.kind == DraftKind::kProgram) {  // the draft program's own steps, drafting and catch-up
    double ms = 0, steps = 0;
    for (const Generated& g : drafts) ms += g.stats.draft_program_ms, steps += static_cast<double>(g.stats.draft_program_steps);
    j["draft_program"] = b.draft.program_path;
    j["draft_program_ms_per_run"] = ms / b.reps;
    j["draft_program_steps_per_run"] = steps / b.reps;
  }
  j["tokens_per_step"] = target_steps > 0 ? static_cast<double>(tokens) / static_cast<double>(target_steps) : 0.0;
  j["same_tokens"] = same;
  if (b.json) {
    outf("%s\n", j.dump().c_str());
  } else {
    outf("plain %.1f tok/s | drafts %.1f tok/s | speedup %.2fx (CPU time %.2fx) | acceptance %.0f%% | %.2f tokens/step | same tokens: %s\n",
         j["plain_decode_tok_s"].get<double>(), j["draft_decode_tok_s"].get<double>(), j["speedup"].get<double>(),
         j["speedup_cpu"].get<double>(), j["acceptance_rate"].get<double>() * 100, j["tokens_per_step"].get<double>(), same ? "yes" : "NO");
  }
  if (!same) {
    return fail(make_error(ErrorCode::kExecution,
                           "bench --draft: the tokens generated with drafts differ from those generated without"));
  }
  return 0;
}

}  // namespace hfs::cli
