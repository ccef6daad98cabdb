// `hfstatic run`: generate from a program, streaming as tokens arrive.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.h"
#include "common.h"
#include "hfstatic/llm_runner.h"
#include "hfstatic/tokenizer.h"
#include "option_checks.h"
#include "sampling_options.h"

namespace hfs::cli {
namespace {

struct RunArgs {
  std::string model;
  std::string tokens;
  std::string prompt;
  std::string prompt_file;
  int n = 128;
  SamplingConfig sampling{.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f};
  bool json = false;
  bool ignore_eos = false;
  std::string tail = "auto";
  std::vector<std::string> backends = {"cpu_fast"};
  std::string dump_logits;
};

int run(const RunArgs& a) {
  const bool text_mode = a.tokens.empty();
  std::string text = a.prompt;
  if (!a.prompt_file.empty()) {
    std::ifstream f(a.prompt_file, std::ios::binary);
    if (!f) return fail(make_error(ErrorCode::kIo, "cannot read prompt file '" + a.prompt_file + "'"));
    text.assign(std::istreambuf_iterator<char>(f), {});
  }
  if (!text_mode && (!a.prompt.empty() || !a.prompt_file.empty()))
    return fail(make_error(ErrorCode::kInvalidArgument, "give either --tokens or -p/-f, not both"));
  if (text_mode && text.empty())
    return fail(make_error(ErrorCode::kInvalidArgument, "no prompt: give -p TEXT, -f FILE or --tokens IDS"));
  auto model = resolve_model(a.model);
  if (!model) return fail(model.error());
  RunnerOptions ro;
  ro.io.method.backends.backends = a.backends;
  ro.on_prefill_progress = prefill_progress_bar();
  auto tail = parse_tail_policy(a.tail);
  if (!tail) return fail(tail.error());
  ro.tail = *tail;
  auto program = Program::load(*model, ro.load);
  if (!program) return fail(program.error());
  std::shared_ptr<const Tokenizer> tok;
  std::vector<int32_t> prompt;
  if (text_mode) {
    auto t = Tokenizer::from_program(**program);
    if (!t) return fail(t.error());
    tok = *t;
    auto ids = tok->encode(text);
    if (!ids) return fail(ids.error());
    prompt = std::move(*ids);
  } else {
    auto ids = parse_token_list(a.tokens);
    if (!ids) return fail(ids.error());
    prompt = std::move(*ids);
  }
  auto runner = Runner::create(*program, ro);
  if (!runner) return fail(runner.error());
  Runner& r = **runner;
  std::unique_ptr<StreamDecoder> stream;
  std::string generated_text;
  if (tok) {
    stream = std::make_unique<StreamDecoder>(*tok, /*skip_special=*/true);
    // The generated text continues the prompt's: "▁upon" after "Once" is " upon".
    auto primed = stream->prime(prompt);
    if (!primed) return fail(primed.error());
  }
  if (tok && !a.json) {
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
  }

  GenerationConfig g;
  g.max_new_tokens = a.n;
  g.ignore_eos = a.ignore_eos;
  g.sampling = a.sampling;
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
    if (stream) {
      auto piece = stream->feed(tok);
      if (piece) {
        generated_text += *piece;
        if (!a.json) std::fputs(piece->c_str(), stdout);
      }
    } else if (!a.json) {
      std::printf("%d ", tok);
    }
    if (!a.json) std::fflush(stdout);
    return true;
  };
  auto out = r.generate(prompt, g, on_token);
  if (!out) return fail(out.error());
  const RunnerStats& s = r.stats();
  if (a.json) {
    nlohmann::json j;
    j["tokens"] = out->tokens;
    if (stream) {
      auto rest = stream->flush();
      if (rest) generated_text += *rest;
      j["text"] = generated_text;
    }
    j["stop"] = stop_reason_name(out->stop);
    j["stats"] = stats_json(s);
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("\n");
    std::fflush(stdout);
    print_stats_line(s);
  }
  return 0;
}

RunFn setup(CLI::App& sub) {
  auto a = std::make_shared<RunArgs>();
  sub.add_option("-m,--model", a->model,
                 "Program file (.hfs), or an HF checkpoint directory (exported once to a cached program)")
      ->required();
  excludes_each_other(
      {sub.add_option("-p,--prompt", a->prompt, "Prompt text (encoded with the program's tokenizer)"),
       sub.add_option("-f,--file", a->prompt_file, "Read the prompt text from a file"),
       sub.add_option("--tokens", a->tokens, "Prompt as comma-separated token ids instead of text, e.g. 1,2,3")});
  sub.add_option("-n,--n-predict", a->n,
                 "Tokens to generate, an integer >= 0 (generation also ends at the context's end)")
      ->capture_default_str()
      ->transform(integer_in(0, INT32_MAX, "an integer in [0, 2147483647]"));
  add_sampling_options(sub, a->sampling);
  sub.add_flag("--ignore-eos", a->ignore_eos, "Keep generating past end-of-sequence tokens");
  sub.add_option("--tail", a->tail,
                 "Prompt tail (after the full chunks): auto (least estimated time), pad (no decode steps), "
                 "decode (no pad rows)")
      ->capture_default_str()
      ->check(one_of({"auto", "pad", "decode"}));
  sub.add_option("--backend", a->backends,
                 "Backends in priority order (cpu_ref always takes the rest); cpu_ref alone = the portable reference")
      ->capture_default_str()
      ->check(backend_name());
  sub.add_flag("--json", a->json, "Print one JSON object: {\"tokens\": [...], \"stop\": ..., \"stats\": {...}}");
  sub.add_option("--dump-logits", a->dump_logits, "Write each sampled step's logits (f32 rows) to this file");
  return [a] { return run(*a); };
}

[[maybe_unused]] const bool kReg =
    register_command({"run", "Generate text (or token ids) from a program, streaming as it is produced", &setup});

}  // namespace
}  // namespace hfs::cli
