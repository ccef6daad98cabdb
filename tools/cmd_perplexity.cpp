// `hfstatic perplexity -m PROGRAM -f FILE [--base OTHER] [--chunk N] [--max-tokens N]`: how well a program
// predicts a text (llama-perplexity's habit), and with --base how far its next-token distributions are from
// another program's on the same tokens (a quantized export against the float one).
//
// The text is encoded once with the program's tokenizer and cut into non-overlapping windows of --chunk
// tokens (default: the context). Each window runs from an empty cache and every token in it is scored given
// the tokens before it in the same window. When the tokenizer adds a BOS token, every window begins with BOS
// and holds chunk − 1 text tokens, so every text token is scored exactly once; otherwise the first token of
// each window is context only. (llama-perplexity instead scores only the second half of each window, so its
// numbers are comparable only at the same windows.)
//
// Rows come from the program as it was exported: a chunk's rows at once from prefill methods exported with
// `--logits all`, from step methods (`--step-sizes`), or else token by token through decode (slow: one
// decode step per token, with a note saying so). Both programs advance in lockstep one step at a time, so
// only one step's rows of each are held whatever the window and vocabulary.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "backend_settings.h"
#include "core/regular_file.h"
#include "cli.h"
#include "common.h"
#include "hfstatic/ext/io_contract.h"
#include "hfstatic/llm_runner.h"
#include "hfstatic/tokenizer.h"
#include "io_util.h"
#include "option_checks.h"

namespace hfs::cli {
namespace {

struct PplArgs {
  std::string model;
  std::string file;
  std::string base;
  int64_t chunk = 0;       // window length in tokens; 0 = the context (the smaller of both programs')
  int64_t max_tokens = 0;  // 0 = the whole text
  std::string dump_logits;
  bool json = false;
  int threads = 0;
  std::vector<std::string> backends = {"cpu_fast"};
  int device = -1;
};

// How a program gives every row's logits.
enum class RowSource : uint8_t { kPrefillAll, kStepAll, kDecode };

const char* row_source_name(RowSource s) {
  switch (s) {
    case RowSource::kPrefillAll: return "prefill (logits all)";
    case RowSource::kStepAll: return "step methods";
    case RowSource::kDecode: return "decode, token by token";
  }
  return "?";
}

struct Scorer {
  std::string path;
  std::unique_ptr<Runner> runner;
  RowSource source = RowSource::kDecode;
  int64_t rows_per_step = 1;  // the most rows one call returns
};

Result<Scorer> open_scorer(const std::string& model, const PplArgs& a) {
  Scorer s;
  HFS_ASSIGN_OR_RETURN(s.path, resolve_model(model));
  RunnerOptions ro;
  HFS_ASSIGN_OR_RETURN(BackendOptions backends,
                       backend_options(a.backends, capped_threads("perplexity", a.threads), a.device));
  ro.io.method.backends = std::move(backends);
  HFS_ASSIGN_OR_RETURN(s.runner, Runner::load(s.path, ro));
  const ModelInfo& info = s.runner->info();
  if (info.logits_all) {
    s.source = RowSource::kPrefillAll;
    s.rows_per_step = info.prefill_tokens;
  } else if (!info.step_sizes.empty()) {
    s.source = RowSource::kStepAll;
    s.rows_per_step = info.step_sizes.back();
  }
  return s;
}

// Feeds `tokens` (at most rows_per_step) at the scorer's next positions; returns their logits, [n, vocab].
Result<std::span<const float>> feed(Scorer& s, std::span<const int32_t> tokens) {
  IOManager& io = s.runner->io();
  // One row is a decode step whatever the program has: a 1-token prefill would pad a whole chunk.
  if (tokens.size() == 1) {
    HFS_TRY(io.run_decode(tokens[0]));
    return io.last_logits();
  }
  switch (s.source) {
    case RowSource::kPrefillAll: HFS_TRY(io.run_prefill(tokens, StepLogits::kKeep)); break;
    case RowSource::kStepAll: {
      const SequenceTokens part{0, tokens};
      HFS_TRY(io.run_step(std::span<const SequenceTokens>(&part, 1), StepLogits::kAllRows));
      break;
    }
    case RowSource::kDecode: HFS_TRY(io.run_decode(tokens[0])); break;
  }
  std::span<const float> rows = io.last_step_logits();
  const size_t want = tokens.size() * static_cast<size_t>(s.runner->info().vocab_size);
  if (rows.size() != want)
    return make_error(ErrorCode::kInternal, s.path + ": a step of " + std::to_string(tokens.size()) + " rows returned " +
                                                std::to_string(rows.size()) + " logits, expected " + std::to_string(want));
  return rows;
}

// log-softmax of one row into `out` (double: the sums stay exact enough at any vocabulary size).
void log_softmax(std::span<const float> row, std::vector<double>& out) {
  out.resize(row.size());
  double mx = -INFINITY;
  for (float v : row) mx = std::max(mx, static_cast<double>(v));
  double sum = 0;
  for (float v : row) sum += std::exp(static_cast<double>(v) - mx);
  const double lse = mx + std::log(sum);
  for (size_t i = 0; i < row.size(); ++i) out[i] = static_cast<double>(row[i]) - lse;
}

size_t argmax(std::span<const float> row) { return static_cast<size_t>(std::max_element(row.begin(), row.end()) - row.begin()); }

struct Totals {
  int64_t scored = 0;
  double nll = 0, nll_sq = 0, base_nll = 0;
  double kl = 0, kl_max = 0;
  int64_t top1_same = 0;
  double mean_nll() const { return scored ? nll / static_cast<double>(scored) : 0; }
  // Standard error of the mean NLL (as llama-perplexity reports it).
  double nll_stderr() const {
    if (scored < 2) return 0;
    const double n = static_cast<double>(scored), m = nll / n;
    return std::sqrt(std::max(0.0, (nll_sq / n - m * m) / (n - 1)));
  }
};

// Scores one row: `row` of this program predicting `target`, and `base_row` (empty without --base).
void score_row(std::span<const float> row, std::span<const float> base_row, int32_t target, Totals& t,
               std::vector<double>& lp, std::vector<double>& lq) {
  log_softmax(row, lp);
  const double nll = -lp[static_cast<size_t>(target)];
  t.nll += nll;
  t.nll_sq += nll * nll;
  ++t.scored;
  if (base_row.empty()) return;
  log_softmax(base_row, lq);
  t.base_nll -= lq[static_cast<size_t>(target)];
  double kl = 0;  // KL(base || this) = Σ p_base (log p_base − log p_this)
  for (size_t i = 0; i < lq.size(); ++i)
    if (std::isfinite(lq[i])) kl += std::exp(lq[i]) * (lq[i] - lp[i]);
  t.kl += kl;
  t.kl_max = std::max(t.kl_max, kl);
  t.top1_same += argmax(row) == argmax(base_row);
}

int run(const PplArgs& a) {
  auto text = io::read_regular_file(a.file, kMaxTextFileBytes);
  if (!text) return fail(text.error().with_context("perplexity text"));
  auto main_scorer = open_scorer(a.model, a);
  if (!main_scorer) return fail(main_scorer.error());
  Scorer& s = *main_scorer;
  const ModelInfo& info = s.runner->info();
  std::optional<Scorer> base;
  if (!a.base.empty()) {
    auto b = open_scorer(a.base, a);
    if (!b) return fail(b.error().with_context("--base"));
    if (b->runner->info().vocab_size != info.vocab_size)
      return fail(make_error(ErrorCode::kInvalidArgument,
                             "--base: " + b->path + " has a vocabulary of " + std::to_string(b->runner->info().vocab_size) +
                                 " tokens, " + s.path + " of " + std::to_string(info.vocab_size) +
                                 ": the two programs must share a tokenizer"));
    base = std::move(*b);
  }
  auto program = Program::load(s.path);
  if (!program) return fail(program.error());
  auto tok = Tokenizer::from_program(**program);
  if (!tok) return fail(tok.error());
  auto ids = (*tok)->encode(*text);
  if (!ids) return fail(ids.error());

  // Every window starts with BOS when the tokenizer adds one; the text tokens follow it.
  const bool bos = !ids->empty() && (*tok)->bos_id() && (*ids)[0] == *(*tok)->bos_id();
  std::vector<int32_t> body(ids->begin() + (bos ? 1 : 0), ids->end());
  if (a.max_tokens > 0 && static_cast<int64_t>(body.size()) > a.max_tokens) body.resize(static_cast<size_t>(a.max_tokens));
  int64_t context = info.context_length;
  if (base) context = std::min(context, base->runner->info().context_length);
  const int64_t window = a.chunk > 0 ? a.chunk : context;
  if (window > context)
    return usage_error("perplexity", "--chunk " + std::to_string(window) + " is more than the context of " +
                                         std::to_string(context) + " tokens" + (base ? " (the smaller of the two programs')" : ""));
  const int64_t per_window = window - (bos ? 1 : 0);  // text tokens per window
  const int64_t min_tokens = bos ? 1 : 2;
  if (static_cast<int64_t>(body.size()) < min_tokens)
    return fail(make_error(ErrorCode::kInvalidArgument, a.file + ": the text has " + std::to_string(body.size()) +
                                                            " tokens; at least " + std::to_string(min_tokens) + " are needed to score one"));
  int64_t step = s.rows_per_step;
  if (base) step = std::min(step, base->rows_per_step);
  for (const Scorer* sc : {&s, base ? &*base : nullptr})
    if (sc && sc->source == RowSource::kDecode)
      std::fprintf(stderr,
                   "hfstatic perplexity: note: %s returns the last row's logits only: scoring token by token through "
                   "decode (slow); export it with --logits all to score a chunk's rows per step\n",
                   sc->path.c_str());

  OutputFile dump;
  if (!a.dump_logits.empty())
    if (Status st = dump.open(a.dump_logits); !st) return fail(st.error().with_context("--dump-logits"));
  const int32_t bos_id = bos ? *(*tok)->bos_id() : 0;
  const size_t vocab = static_cast<size_t>(info.vocab_size);
  Totals t;
  int64_t windows = 0;
  std::vector<double> lp, lq;
  std::vector<int32_t> win;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t start = 0; start < body.size(); start += static_cast<size_t>(per_window)) {
    const size_t end = std::min(body.size(), start + static_cast<size_t>(per_window));
    win.clear();
    if (bos) win.push_back(bos_id);
    win.insert(win.end(), body.begin() + static_cast<std::ptrdiff_t>(start), body.begin() + static_cast<std::ptrdiff_t>(end));
    if (win.size() < 2) break;  // a last window of one token scores nothing
    ++windows;
    s.runner->reset();
    if (base) base->runner->reset();
    // Row i's logits predict win[i + 1]: the last token needs no row.
    const size_t fed_total = win.size() - 1;
    for (size_t p = 0; p < fed_total; p += static_cast<size_t>(step)) {
      const size_t n = std::min(static_cast<size_t>(step), fed_total - p);
      const std::span<const int32_t> part(win.data() + p, n);
      auto rows = feed(s, part);
      if (!rows) return fail(rows.error());
      std::span<const float> base_rows;
      if (base) {
        auto br = feed(*base, part);
        if (!br) return fail(br.error().with_context("--base"));
        base_rows = *br;
      }
      if (dump.is_open())
        if (Status st = dump.write(rows->data(), rows->size_bytes()); !st) return fail(st.error().with_context("--dump-logits"));
      for (size_t i = 0; i < n; ++i)
        score_row(rows->subspan(i * vocab, vocab), base ? base_rows.subspan(i * vocab, vocab) : std::span<const float>(),
                  win[p + i + 1], t, lp, lq);
    }
  }
  if (Status st = dump.close(); !st) return fail(st.error().with_context("--dump-logits"));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double ppl = std::exp(t.mean_nll());
  const double n = static_cast<double>(t.scored);
  if (a.json) {
    nlohmann::json j{{"tokens", t.scored},       {"windows", windows},      {"window_tokens", window},
                     {"bos_per_window", bos},    {"rows", row_source_name(s.source)},
                     {"nll", t.mean_nll()},      {"nll_stderr", t.nll_stderr()},
                     {"perplexity", ppl},        {"seconds", secs}};
    if (base) {
      j["base"] = {{"nll", t.base_nll / n}, {"perplexity", std::exp(t.base_nll / n)}, {"rows", row_source_name(base->source)}};
      j["kl_mean"] = t.kl / n;
      j["kl_max"] = t.kl_max;
      j["top1_agreement"] = static_cast<double>(t.top1_same) / n;
    }
    return out(j.dump() + "\n") ? 0 : 1;
  }
  outf("scored %lld tokens in %lld window%s of up to %lld tokens%s (rows: %s), %.1f s\n",
       static_cast<long long>(t.scored), static_cast<long long>(windows), windows == 1 ? "" : "s", static_cast<long long>(window),
       bos ? ", each starting with BOS" : "", row_source_name(s.source), secs);
  outf("mean NLL   %.6f ± %.6f\nperplexity %.4f\n", t.mean_nll(), t.nll_stderr(), ppl);
  if (base) {
    outf("base perplexity          %.4f (%s)\n", std::exp(t.base_nll / n), base->path.c_str());
    outf("mean KL(base || program) %.6g\nmax KL                   %.6g\n", t.kl / n, t.kl_max);
    outf("top-1 agreement          %.3f %% (%lld of %lld)\n", 100.0 * static_cast<double>(t.top1_same) / n,
         static_cast<long long>(t.top1_same), static_cast<long long>(t.scored));
  }
  return 0;
}

RunFn setup(CLI::App& sub) {
  auto a = std::make_shared<PplArgs>();
  sub.add_option("-m,--model", a->model, "Program file (.hfs), an HF checkpoint directory or a Hub name (as run's -m)")
      ->required();
  sub.add_option("-f,--file", a->file, "The text to score (a regular file of at most 64 MiB)")->required();
  sub.add_option("--base", a->base,
                 "Another program on the same tokenizer (e.g. the f32 export of a quantized one): also reports the mean "
                 "and max KL(base || program) per token and the share of positions whose top-1 tokens agree");
  sub.add_option("--chunk", a->chunk,
                 "Window length in tokens (default: the context, the smaller of both programs'); windows do not overlap, "
                 "each runs from an empty cache and starts with BOS where the tokenizer adds one")
      ->transform(integer_in(2, INT32_MAX, "an integer >= 2"));
  sub.add_option("--max-tokens", a->max_tokens, "Score at most the first N tokens of the text")
      ->transform(integer_in(1, INT64_MAX, "an integer >= 1"));
  sub.add_option("--dump-logits", a->dump_logits,
                 "Write every scored row's logits (f32, [tokens, vocab] in text order) to this file");
  sub.add_flag("--json", a->json,
               "Print one JSON object: tokens, windows, nll, nll_stderr, perplexity (and base, kl_mean, kl_max, "
               "top1_agreement with --base)");
  sub.add_option("--backend", a->backends, "Backends in priority order (cpu_ref always takes the rest)")
      ->capture_default_str()
      ->check(backend_name());
  add_threads_option(sub, a->threads);
  add_device_option(sub, a->device);
  sub.footer(
      "Each token is scored given the tokens before it in its window (llama-perplexity scores only each window's "
      "second half: compare numbers at the same windows only). Rows per step: a program exported with --logits all scores a prefill chunk's rows per step; one with step "
      "methods (--step-sizes) that many; any other program is scored token by token through decode, which is "
      "correct but slow (one decode step per token, a note says so). With --base both programs run the same "
      "windows in lockstep. Perplexity = exp(mean NLL) over the scored tokens; ± is the standard error of the "
      "mean NLL.");
  return [a] { return run(*a); };
}

[[maybe_unused]] const bool kReg = register_command(
    {"perplexity", "Perplexity of a program on a text, and KL divergence / top-1 agreement against another program", &setup});

}  // namespace
}  // namespace hfs::cli
