// `hfstatic bench`: prefill and decode throughput, time to first token, peak RSS, and decode's share of
// the memory-bandwidth roofline (bytes a decode step must read ÷ bandwidth measured in this process).
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <utility>

#include "backend_settings.h"
#include "bench_context.h"
#include "bench_sequences.h"
#include "bench_speculative.h"
#include "core/device_timing.h"
#include "core/regular_file.h"
#include "cli.h"
#include "common.h"
#include "io_util.h"
#include "hfstatic/llm_runner.h"
#include "hfstatic/ext/metadata_keys.h"
#include "option_checks.h"
#include "sampling_options.h"
#include "hfstatic/tokenizer.h"

namespace hfs::cli {
namespace {

struct BenchArgs {
  std::string model;
  int prompt = 512;  // defaults, lowered to fit the context; values given are never changed
  int gen = 128;
  bool prompt_given = false, gen_given = false;
  bool json = false;
  std::vector<std::string> backends = {"cpu_fast"};
  int threads = 0;
  int device = -1;
  bool nondeterministic = false;
  int reps = 1;
  int vs_threads = 0;
  int vs_pairs = 0;  // 0: --reps
  std::string sequences;  // "B1,B2,...": the multi-sequence engine instead of one runner
  std::string verify;     // "K1,K2,...": verification step cost instead
  int verify_pairs = 31;
  DraftConfig draft;      // kind != none: plain vs drafted generation instead
  std::string text_file;  // the prompt for --draft, as text
  std::string context_fill;  // "1k,8k,32k": decode at those live lengths instead
};

// --threads and --device as settings (bench() checked the combination first).
BackendOptions bench_backends(const BenchArgs& a) {
  auto o = cli::backend_options(a.backends, a.threads, a.device, !a.nondeterministic);
  return o ? std::move(*o) : BackendOptions{};
}

// A float array on transparent huge pages, as cpu_fast's packed weights are (src/backends/cpu_fast/
// huge_slab.h): measured on 4 KiB pages the triad read 10-60 % less than on huge pages in the same minute,
// which would flatter the roofline share of weights streamed from huge pages.
struct HugeFloats {
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float[], Free> p;
  HugeFloats(size_t n, float v) {
    constexpr size_t kHuge = size_t{2} << 20;
    const size_t bytes = (n * sizeof(float) + kHuge - 1) / kHuge * kHuge;
    void* raw = nullptr;
    if (posix_memalign(&raw, kHuge, bytes) != 0) throw std::bad_alloc();
    madvise(raw, bytes, MADV_HUGEPAGE);  // advice only
    p.reset(static_cast<float*>(raw));
    std::fill(p.get(), p.get() + n, v);
  }
  float& operator[](size_t i) const { return p[i]; }
};

// STREAM triad a = b + s·c over arrays far larger than the caches, on every core; best of 5.
double triad_bandwidth_gbs() {
  const size_t n = size_t{1} << 23;  // 8 Mi floats = 32 MiB per array
  const HugeFloats a(n, 0.0f), b(n, 1.0f), c(n, 2.0f);
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        size_t lo = n * t / threads, hi = n * (t + 1) / threads;
        for (size_t i = lo; i < hi; ++i) a[i] = b[i] + 3.0f * c[i];
      });
    for (auto& th : pool) th.join();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 3.0 * n * sizeof(float) / s / 1e9);
  }
  return best + a[n / 2] * 0;  // keep the stores observable
}

// Bytes one decode step must read: every constant a node of the decode method reads, except that an
// embedding gather reads one row; plus the live K/V rows at position `pos`.
double decode_bytes_per_token(const Program& p, int64_t pos) {
  const Value* dm = p.meta(keys::kDecodeMethod);
  const MethodDef* m = dm ? p.method(dm->as_string()) : nullptr;
  if (!m) return 0;
  double bytes = 0;
  std::vector<std::string> counted;
  for (const NodeDef& n : m->nodes) {
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      auto c = p.constant(n.inputs[i]);
      if (!c.ok()) continue;
      if (n.op == "embedding" && i == 0) {
        bytes += static_cast<double>(c->nbytes()) / static_cast<double>(std::max<int64_t>(1, c->shape[0]));
        continue;
      }
      if (std::find(counted.begin(), counted.end(), n.inputs[i]) != counted.end()) continue;
      counted.push_back(n.inputs[i]);
      bytes += static_cast<double>(c->nbytes());
    }
  }
  const Value* L = p.meta(keys::kNumLayers);
  const Value* H = p.meta(keys::kNumKvHeads);
  const Value* D = p.meta(keys::kHeadDim);
  const Value* cd = p.meta(keys::kCacheDType);
  if (L && H && D && cd) {
    // Per cached row and head: D elements, and an int8 cache's f32 scale.
    const bool i8 = cd->as_string() == keys::kCacheInt8;
    const double elem = cd->as_string() == "f16" ? 2 : i8 ? 1 : 4;
    const double row = static_cast<double>(D->as_int()) * elem + (i8 ? 4.0 : 0.0);
    bytes += 2.0 * static_cast<double>(L->as_int() * H->as_int()) * row * static_cast<double>(pos);
  }
  return bytes;
}

// Middle value (mean of the two middle ones for an even count); v non-empty.
double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// A phase's steps split into device time and host overhead (accelerator backends; core/device_timing.h):
// per step, the wall time the runner measured, the device's time, the delegates' execute and their
// submit + wait. Host overhead = wall − device: the runner's input writes, the submit, the wait's
// wake-up, reading the logits and sampling. Null when no accelerator delegate ran.
nlohmann::json step_breakdown(const DeviceTiming& t, double wall_ms, int64_t steps) {
  if (t.submits == 0 || steps <= 0) return nullptr;
  const double n = static_cast<double>(steps);
  nlohmann::json j = {{"steps", steps},
                      {"submits_per_step", static_cast<double>(t.submits) / n},
                      {"step_ms", wall_ms / n},
                      {"delegate_execute_ms", t.execute_ms / n},
                      {"submit_wait_ms", t.submit_wait_ms / n},
                      {"device_timed", t.timed_submits == t.submits}};
  // Without timestamps the wait bounds the device time from above, so the share is then a lower bound.
  const bool timed = t.timed_submits == t.submits;
  const double device_ms = timed ? t.device_ms : t.submit_wait_ms;
  if (timed) j["device_ms"] = device_ms / n;
  j["host_overhead_ms"] = (wall_ms - device_ms) / n;
  j["host_overhead_share"] = wall_ms > 0 ? (wall_ms - device_ms) / wall_ms : 0.0;
  return j;
}

// --sequences: the counts, each ≥ 1, then the engine's benchmark with the same prompt/gen defaults.
int bench_engine(const BenchArgs& a, std::shared_ptr<const Program> prog) {
  SequencesBench b;
  auto list = parse_count_list(a.sequences);
  if (!list)
    return usage_error("bench", "--sequences: expected positive integers separated by commas (e.g. 1,2,4,8), got '" +
                                    a.sequences + "'");
  b.counts.assign(list->begin(), list->end());
  const int64_t ctx = [&] {
    const Value* v = prog->meta(keys::kContextLength);
    return v && v->is_int() ? v->as_int() : int64_t{0};
  }();
  b.prompt = a.prompt_given ? a.prompt : static_cast<int>(std::min<int64_t>(a.prompt, ctx - (a.gen_given ? a.gen : 1)));
  b.gen = a.gen_given ? a.gen : static_cast<int>(std::min<int64_t>(a.gen, ctx - b.prompt));
  b.reps = a.reps;
  b.json = a.json;
  return bench_sequences(std::move(prog), bench_backends(a), b);
}


// --verify: the K values, each ≥ 1, and the prompt default lowered to leave room for the largest step.
int bench_verify_steps(const BenchArgs& a, std::shared_ptr<const Program> prog) {
  VerifyBench b;
  auto list = parse_count_list(a.verify);
  if (!list)
    return usage_error("bench", "--verify: expected draft counts K >= 1 separated by commas (e.g. 2,4,8,16), got '" +
                                    a.verify + "'");
  b.drafts.assign(list->begin(), list->end());
  const Value* v = prog->meta(keys::kContextLength);
  const int64_t ctx = v && v->is_int() ? v->as_int() : 0;
  const int max_k = *std::max_element(b.drafts.begin(), b.drafts.end());
  b.prompt = a.prompt_given ? a.prompt : static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(a.prompt, ctx - max_k - 1)));
  b.pairs = a.verify_pairs;
  b.json = a.json;
  return bench_verify(std::move(prog), bench_backends(a), b);
}

// --draft: the prompt (text from --text-file, else --prompt random ids) and the tokens to generate.
int bench_drafts(const BenchArgs& a, std::shared_ptr<const Program> prog) {
  DraftBench b;
  b.draft = a.draft;
  b.reps = a.reps;
  b.json = a.json;
  if (!a.text_file.empty()) {
    auto text = io::read_regular_file(a.text_file, kMaxTextFileBytes);
    if (!text) return fail(text.error().with_context("--text-file"));
    auto tok = Tokenizer::from_program(*prog);
    if (!tok) return fail(tok.error());
    auto ids = (*tok)->encode(*text);
    if (!ids) return fail(ids.error());
    b.prompt = std::move(*ids);
  }
  const Value* v = prog->meta(keys::kContextLength);
  const int64_t ctx = v && v->is_int() ? v->as_int() : 0;
  if (b.prompt.empty()) {
    const int n = a.prompt_given ? a.prompt : static_cast<int>(std::min<int64_t>(a.prompt, ctx - (a.gen_given ? a.gen : 1)));
    std::mt19937 rng(1);
    const Value* vs = prog->meta(keys::kVocabSize);
    const uint32_t vocab = vs && vs->is_int() ? static_cast<uint32_t>(vs->as_int()) : 2;
    b.prompt.resize(static_cast<size_t>(std::max(1, n)));
    for (int32_t& t : b.prompt) t = static_cast<int32_t>(rng() % vocab);
  }
  const int64_t room = ctx - static_cast<int64_t>(b.prompt.size());
  if (room < 1 || (a.gen_given && a.gen > room))
    return usage_error("bench", "--draft: a prompt of " + std::to_string(b.prompt.size()) + " tokens + --gen " +
                                    std::to_string(a.gen) + " exceed the program's context of " + std::to_string(ctx));
  b.gen = a.gen_given ? a.gen : static_cast<int>(std::min<int64_t>(a.gen, room));
  RunnerOptions ro;
  ro.io.method.backends = bench_backends(a);
  return bench_draft(std::move(prog), ro, b);
}

// --context-fill: the lengths (k = 1024), and decode steps per length (--gen, by default 16).
int bench_context(const BenchArgs& a, std::shared_ptr<const Program> prog) {
  ContextFillBench b;
  auto list = parse_context_lengths(a.context_fill);
  if (!list)
    return usage_error("bench", "--context-fill: expected live token counts separated by commas, each a positive "
                                "integer or one with a k (x1024) suffix (e.g. 1k,8k,32k), got '" + a.context_fill + "'");
  b.lengths = std::move(*list);
  b.gen = a.gen_given ? a.gen : 16;
  if (b.gen < 1) return usage_error("bench", "--context-fill: --gen must be at least 1 (the decode steps measured)");
  b.reps = a.reps;
  b.json = a.json;
  b.model = a.model;
  RunnerOptions ro;
  ro.io.method.backends = bench_backends(a);
  return bench_context_fill(std::move(prog), ro, b);
}

int bench(const BenchArgs& a) {
  if (auto checked = cli::backend_options(a.backends, a.threads, a.device); !checked)
    return usage_error("bench", checked.error().message());
  // A checkpoint directory or Hub name is exported with the defaults; --sequences B1,...: for the largest B.
  ExportOptions eo;
  if (auto list = parse_token_list(a.sequences); list && !list->empty())
    eo.sequences = std::max<int64_t>(1, *std::max_element(list->begin(), list->end()));
  auto path = resolve_model(a.model, eo);
  if (!path) return fail(path.error());
  auto prog = Program::load(*path);
  if (!prog) return fail(prog.error());
  if (!a.sequences.empty()) return bench_engine(a, *prog);
  if (!a.verify.empty()) return bench_verify_steps(a, *prog);
  if (a.draft.kind != DraftKind::kNone) return bench_drafts(a, *prog);
  if (!a.context_fill.empty()) return bench_context(a, *prog);
  RunnerOptions ro;
  ro.io.method.backends = bench_backends(a);
  auto runner = Runner::create(*prog, ro);
  if (!runner) return fail(runner.error());
  Runner& r = **runner;
  const int64_t ctx = r.info().context_length;
  // Every token must fit: the prompt plus the generated tokens ≤ the context. A default gives way to what
  // the other needs; numbers given on the command line are used as given or rejected, never cut to fit.
  const std::string fit = " the program's context of " + std::to_string(ctx) + " tokens";
  if (a.prompt_given && a.gen_given && int64_t{a.prompt} + a.gen > ctx)
    return usage_error(
        "bench", "--prompt " + std::to_string(a.prompt) + " + --gen " + std::to_string(a.gen) + " tokens exceed" + fit);
  if (a.prompt_given && a.prompt > ctx)
    return usage_error("bench", "--prompt " + std::to_string(a.prompt) + " exceeds" + fit);
  if (a.gen_given && a.gen > ctx - 1)
    return usage_error("bench", "--gen " + std::to_string(a.gen) + " leaves no room for a prompt in" + fit);
  const int prompt_n =
      a.prompt_given ? a.prompt : static_cast<int>(std::min<int64_t>(a.prompt, ctx - (a.gen_given ? a.gen : 1)));
  const int gen_n = a.gen_given ? a.gen : static_cast<int>(std::min<int64_t>(a.gen, ctx - prompt_n));
  std::mt19937 rng(1);
  std::vector<int32_t> prompt(static_cast<size_t>(prompt_n));
  for (int32_t& t : prompt) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(r.info().vocab_size));

  GenerationConfig g;
  g.max_new_tokens = gen_n;
  g.ignore_eos = true;
  // Each repetition starts over (reset) on the same prompt; its numbers are the stats' growth over it. One
  // prefill is a single ~0.1-1 s sample, and on a shared machine one sample can land in someone else's
  // burst: the median of a few (llama-bench's -r) is what a rerun reproduces.
  std::vector<RunnerStats> runs;
  DeviceTiming prefill_dev, decode_dev;  // summed over the runs; the first token's callback splits the phases
  for (int rep = 0; rep < a.reps; ++rep) {
    const RunnerStats before = r.stats();
    r.reset();
    const DeviceTiming t0 = device_timing();
    DeviceTiming t1 = t0;
    bool first = true;
    auto out = r.generate(prompt, g, [&](int32_t) {
      if (first) t1 = device_timing();
      first = false;
      return true;
    });
    if (!out) return fail(out.error());
    const DeviceTiming t2 = device_timing();
    if (first) t1 = t2;
    prefill_dev = prefill_dev + (t1 - t0);
    decode_dev = decode_dev + (t2 - t1);
    RunnerStats d = r.stats();
    d.prompt_tokens -= before.prompt_tokens;
    d.prefill_ms -= before.prefill_ms;
    d.generated_tokens -= before.generated_tokens;
    d.decode_steps -= before.decode_steps;
    d.decode_ms -= before.decode_ms;
    runs.push_back(d);
  }
  // Prefill time, decode time and TTFT: each the median of its own list over the runs.
  RunnerStats s = runs.front();
  auto median = [&](double RunnerStats::*field) {
    std::vector<double> v;
    for (const RunnerStats& x : runs) v.push_back(x.*field);
    return median_of(std::move(v));
  };
  s.prefill_ms = median(&RunnerStats::prefill_ms);
  s.decode_ms = median(&RunnerStats::decode_ms);
  s.ttft_ms = median(&RunnerStats::ttft_ms);
  s.peak_rss_bytes = r.stats().peak_rss_bytes;

  // --vs-threads: a second runner on the same program with another thread count, its prefill and this
  // one's taking turns (the order alternating) --vs-pairs times. The speedup is the median of the neighbouring
  // pairs' ratios: on a machine whose speed drifts between processes (this project's VMs: ±25 % over
  // minutes) two processes measured one after the other read that drift as scaling. Made after the runs
  // above, so their peak RSS does not include its caches.
  std::vector<double> vs_ms, own_ms;
  if (a.vs_threads > 0) {
    RunnerOptions vo = ro;
    for (const std::string& b : a.backends)
      if (b != "vulkan") vo.io.method.backends.settings[b].set("threads", Value(a.vs_threads));
    auto other = Runner::create(*prog, vo);
    if (!other) return fail(other.error());
    GenerationConfig first_token = g;
    first_token.max_new_tokens = 1;
    const int pairs = a.vs_pairs > 0 ? a.vs_pairs : a.reps;
    for (int rep = 0; rep < pairs; ++rep)
      for (int turn = 0; turn < 2; ++turn) {
        const bool vs = (turn == 0) == (rep % 2 == 0);
        Runner& x = vs ? **other : r;
        const double before = x.stats().prefill_ms;
        x.reset();
        auto out = x.generate(prompt, first_token);
        if (!out) return fail(out.error());
        (vs ? vs_ms : own_ms).push_back(x.stats().prefill_ms - before);
      }
  }
  double bw = triad_bandwidth_gbs();
  double bytes = decode_bytes_per_token(**prog, prompt_n + gen_n / 2);
  double roofline_tps = bytes > 0 ? bw * 1e9 / bytes : 0;
  double share = roofline_tps > 0 ? s.decode_tok_s() / roofline_tps : 0;

  // The memory a run cannot do without: the weights (every constant) and the K/V caches (the decode
  // method's state inputs). Peak RSS beyond this is the runtime's own overhead.
  uint64_t cache_bytes = 0;
  if (const Value* dm = (*prog)->meta(keys::kDecodeMethod))
    if (const MethodDef* m = (*prog)->method(dm->as_string()))
      for (const IOSpec& in : m->inputs)
        if (in.role == IORole::kState) cache_bytes += in.type.nbytes();
  const uint64_t weight_bytes = (*prog)->constant_bytes();

  nlohmann::json j = stats_json(s);
  j["weight_bytes"] = weight_bytes;
  j["cache_bytes"] = cache_bytes;
  j["rss_overhead_mib"] = (static_cast<double>(s.peak_rss_bytes) - static_cast<double>(weight_bytes + cache_bytes)) / (1 << 20);
  j["model"] = a.model;
  j["reps"] = a.reps;
  if (a.vs_threads > 0) {
    std::vector<double> speedup;
    for (size_t i = 0; i < vs_ms.size(); ++i) speedup.push_back(vs_ms[i] / own_ms[i]);
    j["vs_threads"] = a.vs_threads;
    j["vs_prefill_tok_s"] = prompt_n * 1000.0 / median_of(vs_ms);
    j["prefill_speedup_pairs"] = speedup;  // in measurement order, so a reader sees the spread
    j["prefill_speedup_vs_threads"] = median_of(std::move(speedup));
  }
  if (a.reps > 1) {
    nlohmann::json per = nlohmann::json::array();
    for (const RunnerStats& x : runs)
      per.push_back({{"prefill_tok_s", x.prefill_tok_s()}, {"decode_tok_s", x.decode_tok_s()}, {"ttft_ms", x.ttft_ms}});
    j["runs"] = per;
  }
  j["backends"] = a.backends;
  j["kernels"] = cli::backend_kernels(bench_backends(a));
  j["deterministic"] = !a.nondeterministic;
  j["prompt_tokens"] = prompt_n;
  j["bandwidth_gbs"] = bw;
  j["decode_bytes_per_token"] = bytes;
  j["roofline_decode_tok_s"] = roofline_tps;
  j["roofline_share"] = share;
  double prefill_sum = 0, decode_sum = 0;
  int64_t prefills = 0, decode_steps = 0;
  for (const RunnerStats& x : runs) {
    prefill_sum += x.prefill_ms;
    decode_sum += x.decode_ms;
    prefills += x.prompt_tokens > 0 ? 1 : 0;
    decode_steps += x.decode_steps;
  }
  j["prefill_step"] = step_breakdown(prefill_dev, prefill_sum, prefills);
  j["decode_step"] = step_breakdown(decode_dev, decode_sum, decode_steps);
  if (a.json) {
    outf("%s\n", j.dump().c_str());
  } else {
    if (const std::string k = cli::describe_kernels(j["kernels"].get<std::map<std::string, std::string>>()); !k.empty())
      outf("kernels: %s%s\n", k.c_str(), a.nondeterministic ? " (--nondeterministic)" : " (deterministic)");
    outf("prefill %d tok: %.1f tok/s | ttft %.1f ms | decode %d tok: %.1f tok/s | peak RSS %.1f MiB\n", prompt_n,
                s.prefill_tok_s(), s.ttft_ms, gen_n, s.decode_tok_s(), static_cast<double>(s.peak_rss_bytes) / (1 << 20));
    outf("bandwidth %.1f GB/s (triad) | decode reads %.2f MB/token → roofline %.1f tok/s | share %.0f%%\n", bw,
                bytes / 1e6, roofline_tps, share * 100);
    outf("memory: weights %.1f MiB + caches %.1f MiB; peak RSS exceeds them by %.1f MiB\n",
                static_cast<double>(weight_bytes) / (1 << 20), static_cast<double>(cache_bytes) / (1 << 20),
                j["rss_overhead_mib"].get<double>());
    if (const auto& d = j["decode_step"]; !d.is_null()) {
      char device[32] = "untimed";
      if (d.contains("device_ms")) std::snprintf(device, sizeof device, "%.3f", d["device_ms"].get<double>());
      outf("decode step %.3f ms: device %s ms, delegates' submit + wait %.3f ms, host overhead %.3f ms (%.1f%%%s)\n",
           d["step_ms"].get<double>(), device, d["submit_wait_ms"].get<double>(), d["host_overhead_ms"].get<double>(),
           d["host_overhead_share"].get<double>() * 100, d["device_timed"].get<bool>() ? "" : ", a lower bound");
    }
  }
  return 0;
}

RunFn setup(CLI::App& sub) {
  auto a = std::make_shared<BenchArgs>();
  sub.add_option("-m,--model", a->model,
                 "Program file (.hfs), an HF checkpoint directory or a Hub name ORG/NAME[@REVISION] (downloaded into "
                 "the Hugging Face cache; exported once to a cached program, for the largest --sequences count)")
      ->required();
  CLI::Option* prompt =
      sub.add_option("--prompt", a->prompt,
                     "Prompt tokens (random ids), an integer >= 1; prompt + generated tokens must fit "
                     "the context (the default gives way to fit)")
          ->capture_default_str()
          ->transform(integer_in(1, INT32_MAX, "an integer in [1, 2147483647]"));
  CLI::Option* gen =
      sub.add_option("--gen", a->gen, "Tokens to generate, an integer >= 0 (the default gives way to fit)")
          ->capture_default_str()
          ->transform(integer_in(0, INT32_MAX, "an integer in [0, 2147483647]"));
  sub.add_option("--backend", a->backends,
                 "Backends in priority order (cpu_ref always takes the rest); cpu_ref alone = the portable reference")
      ->capture_default_str()
      ->check(backend_name());
  sub.add_flag("--nondeterministic", a->nondeterministic, cli::kNondeterministicHelp);
  sub.add_option("--threads", a->threads,
                 "Threads for the selected backends, an integer in [0, 1024] (0 = their default)")
      ->transform(integer_in(0, 1024, "an integer in [0, 1024]"));
  add_device_option(sub, a->device);
  sub.add_option("--reps", a->reps,
                 "Runs in this process, each from an empty cache, an integer in [1, 100]; prefill/decode tok/s and "
                 "TTFT are their medians")
      ->capture_default_str()
      ->transform(integer_in(1, 100, "an integer in [1, 100]"));
  CLI::Option* vs =
      sub.add_option(
             "--vs-threads", a->vs_threads,
             "Also prefill on this many threads (an integer in [1, 1024]), in turn with --threads in this process "
             "(--vs-pairs pairs); prefill_speedup_vs_threads = median of the pairs' time ratios, "
             "prefill_speedup_pairs = each (--json)")
          ->transform(integer_in(1, 1024, "an integer in [1, 1024]"));
  sub.add_option("--vs-pairs", a->vs_pairs, "Prefill pairs for --vs-threads, an integer in [1, 100] (default: --reps)")
      ->transform(integer_in(1, 100, "an integer in [1, 100]"))
      ->needs(vs);
  CLI::Option* seqs = sub.add_option("--sequences", a->sequences,
                 "Several sequences at once through the engine: counts B separated by commas (e.g. 1,2,4,8), each at "
                 "most the program's export --sequences; per B, B random prompts of --prompt tokens arrive together "
                 "and each generates --gen tokens; reports aggregate decode tok/s (all sequences) and its ratio to "
                 "the first B (--reps runs each, the counts taking turns within each rep; median)");
  seqs->excludes(vs);
  CLI::Option* verify = sub.add_option(
      "--verify", a->verify,
      "Verification step cost instead: draft counts K separated by commas (e.g. 2,4,8,16); per K, one step of K + 1 "
      "rows (the program's smallest step method holding them: export --step-sizes) and one decode step take turns "
      "--verify-pairs times after a --prompt-token prompt, each taken back; reports the medians and "
      "step_over_decode, the median of the pairs' ratios");
  verify->excludes(vs)->excludes(seqs);
  sub.add_option("--verify-pairs", a->verify_pairs, "Step/decode pairs per K for --verify, an integer in [1, 10000]")
      ->capture_default_str()
      ->transform(integer_in(1, 10000, "an integer in [1, 10000]"))
      ->needs(verify);
  add_draft_options(sub, a->draft);
  sub.get_option("--draft")->excludes(verify)->excludes(seqs)->excludes(vs);
  sub.add_option("--text-file", a->text_file,
                 "With --draft: the prompt, a text file encoded with the program's tokenizer (default: --prompt "
                 "random ids). --draft ngram|PATH.hfs generates --gen tokens greedily without and with drafts in turn (--reps "
                 "pairs) and reports both decode tok/s, the speedup (median of the pairs' ratios), the acceptance "
                 "rate and tokens per model step; different tokens with and without drafts are an error")
      ->needs(sub.get_option("--draft"));
  CLI::Option* fill = sub.add_option(
      "--context-fill", a->context_fill,
      "Decode tok/s with that many live tokens in the cache instead: lengths separated by commas, k = 1024 (e.g. "
      "1k,8k,32k or 1024,8192), each at most the context; per length, --gen (default 16) greedy decode steps ending "
      "at it, after the positions before them are skipped without running (their rows hold zeros: attention reads "
      "every live row whatever its values, so the cost is a prefilled cache's, without a long prefill). Reports "
      "tok/s and ms per step per length (median of --reps, the lengths taking turns), what each 1k live tokens "
      "adds, and the caches' memory beside peak RSS");
  fill->excludes(vs)->excludes(seqs)->excludes(verify)->excludes(sub.get_option("--draft"))->excludes(prompt);
  sub.footer(
      "Environment: HFS_PROFILE=1 prints, per method, where cpu_fast spent the time by op kind and how busy "
      "its threads were; HFS_CPU_FAST_ISA=scalar|avx2|avx512|amx caps the kernels cpu_fast picks (results are "
      "bit-identical only within one level); HFS_CPU_FAST_HALF_GEMV=<variant> forces that f16/bf16 decode kernel "
      "instead of the ISA's own (an unknown name fails the load, listing them), HFS_CPU_FAST_HALF_GEMV=tune times "
      "the variants at load and keeps the fastest (not reproducible from load to load; HFS_PROFILE=1 prints the "
      "timings).\n" +
      std::string(kExitStatusHelp));
  sub.add_flag("--json", a->json, "Print one JSON object");
  return [a, prompt, gen] {
    a->prompt_given = prompt->count() > 0;
    a->gen_given = gen->count() > 0;
    return bench(*a);
  };
}

[[maybe_unused]] const bool kReg =
    register_command({"bench", "Measure prefill/decode throughput and decode's bandwidth-roofline share", &setup});

}  // namespace
}  // namespace hfs::cli
