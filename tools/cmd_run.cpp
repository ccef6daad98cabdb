// `hfstatic run`: generate from a program, streaming as tokens arrive.
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.h"
#include "common.h"
#include "hfstatic/llm_runner.h"

namespace hfs::cli {
namespace {

struct RunArgs {
  std::string model;
  std::string tokens;
  int n = 128;
  float temp = 0.8f;
  int top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  uint64_t seed = 0;
  bool json = false;
  bool ignore_eos = false;
  std::string tail = "auto";
  std::vector<std::string> backends;
  std::string dump_logits;
};

int run(const RunArgs& a) {
  auto prompt = parse_token_list(a.tokens);
  if (!prompt) return fail(prompt.error());
  RunnerOptions ro;
  ro.io.method.backends.backends = a.backends;
  auto tail = parse_tail_policy(a.tail);
  if (!tail) return fail(tail.error());
  ro.tail = *tail;
  auto runner = Runner::load(a.model, ro);
  if (!runner) return fail(runner.error());
  Runner& r = **runner;

  GenerationConfig g;
  g.max_new_tokens = a.n;
  g.ignore_eos = a.ignore_eos;
  g.sampling.temperature = a.temp;
  g.sampling.top_k = a.top_k;
  g.sampling.top_p = a.top_p;
  g.sampling.min_p = a.min_p;
  g.sampling.repetition_penalty = a.repeat_penalty;
  g.sampling.seed = a.seed;
  g.cancel = install_interrupt_flag();

  std::unique_ptr<std::ofstream> dump;
  if (!a.dump_logits.empty()) {
    dump = std::make_unique<std::ofstream>(a.dump_logits, std::ios::binary);
    if (!*dump) return fail(make_error(ErrorCode::kIo, "cannot write '" + a.dump_logits + "'"));
  }
  auto on_token = [&](int32_t tok) {
    if (dump) {
      auto l = r.logits();  // the logits this token was sampled from
      dump->write(reinterpret_cast<const char*>(l.data()), static_cast<std::streamsize>(l.size() * sizeof(float)));
    }
    if (!a.json) {
      std::printf("%d ", tok);
      std::fflush(stdout);
    }
    return true;
  };
  auto out = r.generate(*prompt, g, on_token);
  if (!out) return fail(out.error());
  const RunnerStats& s = r.stats();
  if (a.json) {
    nlohmann::json j;
    j["tokens"] = out->tokens;
    j["stop"] = stop_reason_name(out->stop);
    j["stats"] = stats_json(s);
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("\n");
    print_stats_line(s);
  }
  return 0;
}

RunFn setup(CLI::App& sub) {
  auto a = std::make_shared<RunArgs>();
  sub.add_option("-m,--model", a->model, "Program file (.hfs)")->required();
  sub.add_option("--tokens", a->tokens, "Prompt as comma-separated token ids, e.g. 1,2,3")->required();
  sub.add_option("-n,--n-predict", a->n, "Tokens to generate")->capture_default_str();
  sub.add_option("--temp", a->temp, "Temperature (0 = greedy)")->capture_default_str();
  sub.add_option("--top-k", a->top_k, "Top-k (0 = off)")->capture_default_str();
  sub.add_option("--top-p", a->top_p, "Top-p (1 = off)")->capture_default_str();
  sub.add_option("--min-p", a->min_p, "Min-p (0 = off)")->capture_default_str();
  sub.add_option("--repeat-penalty", a->repeat_penalty, "Repetition penalty (1 = off)")->capture_default_str();
  sub.add_option("--seed", a->seed, "Sampling seed (same seed, same tokens)")->capture_default_str();
  sub.add_flag("--ignore-eos", a->ignore_eos, "Keep generating past end-of-sequence tokens");
  sub.add_option("--tail", a->tail, "Prompt tail routing: auto | pad | decode")->capture_default_str();
  sub.add_option("--backend", a->backends, "Backends in priority order (cpu_ref always takes the rest)");
  sub.add_flag("--json", a->json, "Print one JSON object: {\"tokens\": [...], \"stop\": ..., \"stats\": {...}}");
  sub.add_option("--dump-logits", a->dump_logits, "Write each sampled step's logits (f32 rows) to this file");
  return [a] { return run(*a); };
}

[[maybe_unused]] const bool kReg = register_command({"run", "Generate tokens from a program", &setup});

}  // namespace
}  // namespace hfs::cli
