// `hfstatic run`: generate from a program, streaming as tokens arrive.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli.h"
#include "common.h"
#include "backend_settings.h"
#include "constraint_options.h"
#include "core/regular_file.h"
#include "io_util.h"
#include "hfstatic/constraint.h"
#include "hfstatic/llm_runner.h"
#include "hfstatic/tokenizer.h"
#include "option_checks.h"
#include "sampling_options.h"
#include "server/stop_matcher.h"
#include "session_options.h"

namespace hfs::cli {
namespace {

struct RunArgs {
  std::string model;
  std::string tokens;
  std::string prompt;
  std::string prompt_file;
  int n = 128;
  SamplingConfig sampling = default_sampling();
  DraftConfig draft;
  std::vector<std::string> stop;
  int threads = 0;
  bool json = false;
  bool ignore_eos = false;
  std::string tail = "auto";
  std::vector<std::string> backends = {"cpu_fast"};
  int device = -1;
  bool nondeterministic = false;
  std::string dump_logits;
  std::string session;
  ConstraintArgs constraint;
};

int run(const RunArgs& a) {
  const bool text_mode = a.tokens.empty();
  std::string text = a.prompt;
  if (!a.prompt_file.empty()) {
    // A directory, FIFO or device is refused without blocking; the text is read in one allocation, bounded.
    auto f = io::read_regular_file(a.prompt_file, kMaxTextFileBytes);
    if (!f) return fail(f.error().with_context("prompt file"));
    text = std::move(*f);
  }
  if (!text_mode && (!a.prompt.empty() || !a.prompt_file.empty()))
    return fail(make_error(ErrorCode::kInvalidArgument, "give either --tokens or -p/-f, not both"));
  if (text_mode && text.empty())
    return fail(make_error(ErrorCode::kInvalidArgument, "no prompt: give -p TEXT, -f FILE or --tokens IDS"));
  if (!text_mode && !a.stop.empty())
    return usage_error("run", "--stop: stop strings match the generated text: give the prompt as text (-p or -f), "
                              "not --tokens");
  auto constraint = load_constraint(a.constraint);
  if (!constraint) return fail(constraint.error());
  auto model = resolve_model(a.model);
  if (!model) return fail(model.error());
  RunnerOptions ro;
  auto backends = backend_options(a.backends, capped_threads("run", a.threads), a.device, !a.nondeterministic);
  if (!backends) return usage_error("run", backends.error().message());
  ro.io.method.backends = std::move(*backends);
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
  if (Status st = check_draft_support(r.info(), a.draft); !st) return usage_error("run", "--" + st.error().message());
  if (std::string bad = logit_bias_outside(a.sampling, r.info().vocab_size); !bad.empty()) return usage_error("run", bad);
  // Checked before anything reaches stdout: an over-long prompt is not echoed and then refused.
  if (!r.can_accept(static_cast<int64_t>(prompt.size())))
    return fail(make_error(ErrorCode::kCapacityExceeded,
                           "prompt has " + std::to_string(prompt.size()) + " tokens; the program holds at most " +
                               std::to_string(r.capacity_left()) + " (context " +
                               std::to_string(r.info().context_length) + "); export with a larger --context"));
  // --session: the saved tokens the prompt begins with are not prefilled again.
  int64_t reused = 0;
  if (!a.session.empty()) {
    auto k = reuse_session(r, a.session, prompt, has_sliding_layers(**program));
    if (!k) return fail(k.error().with_context("--session"));
    reused = *k;
  }
  OutputFile dump;
  if (!a.dump_logits.empty())
    if (Status st = dump.open(a.dump_logits); !st) return fail(st.error().with_context("--dump-logits"));
  std::unique_ptr<StreamDecoder> stream;
  std::string generated_text;
  if (tok) {
    stream = std::make_unique<StreamDecoder>(*tok, /*skip_special=*/true);
    // The generated text continues the prompt's: "▁upon" after "Once" is " upon".
    auto primed = stream->prime(prompt);
    if (!primed) return fail(primed.error());
  }
  if (tok && !a.json && !out(text)) return 1;  // main reports the stdout error

  GenerationConfig g;
  g.max_new_tokens = a.n;
  g.ignore_eos = a.ignore_eos;
  g.sampling = a.sampling;
  g.draft = a.draft;
  g.cancel = install_interrupt_flag();
  g.constraint = *constraint;

  // --stop: text is shown only once it cannot be the start of a stop string; a completed one ends generation
  // and neither it nor anything after it is printed.
  server::StopMatcher stops(a.stop);
  bool stopped_by_string = false;
  auto emit = [&](const std::string& piece) {
    const std::string shown = a.stop.empty() ? piece : stops.feed(piece);
    generated_text += shown;
    if (stops.stopped()) stopped_by_string = true;
    return a.json || out(shown);
  };
  // A failed write (stdout or the dump file) stops generation at once: nothing is produced into the void.
  std::optional<Error> dump_error;
  const Tokenizer* tokenizer = tok.get();
  auto on_token = [&](int32_t tok) {
    if (dump.is_open()) {
      auto l = r.logits();  // the logits this token was sampled from
      if (Status st = dump.write(l.data(), l.size() * sizeof(float)); !st) {
        dump_error = st.error();
        return false;
      }
    }
    if (tokenizer && g.constraint) {
      // The constraint matched the tokens' raw bytes: print exactly those (no clean-up of tokenization
      // spaces, which could turn matched output into output the grammar or regex rejects).
      if (tokenizer->is_special(tok)) return true;
      const std::string piece = tokenizer->token_bytes(tok).value_or("");
      return emit(piece) && !stopped_by_string;
    }
    if (stream) {
      auto piece = stream->feed(tok);
      if (piece && (!emit(*piece) || stopped_by_string)) return false;
    } else if (!a.json) {
      if (!out(std::to_string(tok) + " ")) return false;
    }
    return true;
  };
  auto result = r.generate(std::span<const int32_t>(prompt).subspan(static_cast<size_t>(reused)), g, on_token);
  if (!result) return fail(result.error());
  if (!a.session.empty())
    if (Status st = r.save_session(a.session); !st) return fail(st.error().with_context("--session"));
  // Text a stop string might have begun, held back until the end: shown now that none completed.
  if (!stopped_by_string && !a.stop.empty()) {
    auto rest = g.constraint || !stream ? Result<std::string>(std::string()) : stream->flush();
    const std::string tail = stops.feed(rest ? *rest : std::string()) + stops.flush();
    generated_text += tail;
    if (!a.json && !out(tail)) return 1;
  }
  if (dump_error) return fail(dump_error->with_context("--dump-logits"));
  if (Status st = dump.close(); !st) return fail(st.error().with_context("--dump-logits"));
  if (!stdout_ok()) return 1;  // main reports the stdout error
  const RunnerStats& s = r.stats();
  if (a.json) {
    nlohmann::json j;
    j["tokens"] = result->tokens;
    if (stream) {
      if (a.stop.empty()) {
        auto rest = g.constraint ? Result<std::string>(std::string()) : stream->flush();
        if (rest) generated_text += *rest;
      }
      j["text"] = generated_text;
    }
    j["stop"] = stopped_by_string ? "stop_string" : stop_reason_name(result->stop);
    j["seed"] = a.sampling.seed;
    j["stats"] = stats_json(s);
    // A constrained output cut by -n may end inside a UTF-8 character: replaced, not an exception.
    if (!out(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n")) return 1;
  } else {
    if (!out("\n")) return 1;
    print_stats_line(s, a.sampling.temperature > 0 ? std::optional<uint64_t>(a.sampling.seed) : std::nullopt);
  }
  return 0;
}

RunFn setup(CLI::App& sub) {
  auto a = std::make_shared<RunArgs>();
  sub.add_option("-m,--model", a->model,
                 "Program file (.hfs), an HF checkpoint directory, or a Hub name ORG/NAME[@REVISION] (downloaded into the "
                 "Hugging Face cache, HF_TOKEN for gated models; exported once to a cached program)")
      ->required();
  excludes_each_other(
      {sub.add_option("-p,--prompt", a->prompt, "Prompt text (encoded with the program's tokenizer)"),
       sub.add_option("-f,--file", a->prompt_file,
                      "Read the prompt text from a regular file of at most 64 MiB (a directory, FIFO or device is refused)"),
       sub.add_option("--tokens", a->tokens, "Prompt as comma-separated token ids instead of text, e.g. 1,2,3")});
  sub.add_option("-n,--n-predict", a->n,
                 "Tokens to generate, an integer >= 0 (generation also ends at the context's end)")
      ->capture_default_str()
      ->transform(integer_in(0, INT32_MAX, "an integer in [0, 2147483647]"));
  add_sampling_options(sub, a->sampling);
  sub.add_option("-r,--stop,--reverse-prompt", a->stop,
                 "End generation when the generated text contains this string (not printed, nor anything after "
                 "it; text that may begin one is held back until it is known not to); repeatable. Needs a text "
                 "prompt; --json reports stop \"stop_string\"")
      ->allow_extra_args(false)
      ->check(CLI::Validator([](std::string& v) { return v.empty() ? std::string("a stop string must not be empty") : std::string(); }, ""));
  add_draft_options(sub, a->draft);
  sub.add_flag("--ignore-eos", a->ignore_eos, "Keep generating past end-of-sequence tokens");
  sub.add_option("--tail", a->tail,
                 "Prompt tail (after the full chunks): auto (least cost in a fixed model), pad (no decode steps), "
                 "decode (no pad rows)")
      ->capture_default_str()
      ->check(one_of({"auto", "pad", "decode"}));
  sub.add_flag("--nondeterministic", a->nondeterministic, kNondeterministicHelp);
  sub.add_option("--backend", a->backends,
                 "Backends in priority order (cpu_ref always takes the rest); cpu_ref alone = the portable reference")
      ->capture_default_str()
      ->check(backend_name());
  add_threads_option(sub, a->threads);
  add_device_option(sub, a->device);
  add_llama_cli_refusals(sub);
  sub.add_flag("--json", a->json, "Print one JSON object: {\"tokens\": [...], \"text\": ..., \"stop\": ..., \"seed\": ..., \"stats\": {...}}");
  add_constraint_options(sub, a->constraint);
  sub.add_option("--session", a->session,
                 "Prompt cache file (docs/sessions.md): when it exists, its tokens and cache rows are restored and "
                 "the part of the prompt that begins with them is not prefilled again; at exit the prompt and the "
                 "generated tokens are saved to it. A file of another program, or a corrupted one, is refused")
      ->type_name("FILE");
  sub.add_option("--dump-logits", a->dump_logits,
                 "Write each sampled step's logits (f32 rows) to this file; a failed write stops the run and "
                 "removes the file");
  sub.footer(
      "Ctrl-C stops between steps (during a long prompt's prefill, within one chunk), prints the stats and exits "
      "0; a second Ctrl-C exits at once (130). A prompt over the program's context is refused before anything "
      "is printed. A failed write to stdout (full disk, closed pipe) stops generating and exits 1.\n"
      "Structured output (--grammar, --json-schema, --regex, --json-object): each step samples only among the tokens that keep "
      "the output a valid prefix; end-of-sequence only once it is complete. Output reaching -n stops with "
      "stop max_tokens (a length stop) as a valid prefix. The text printed is the tokens' raw bytes. Drafts (--draft-*) are "
      "checked against the constraint, each verification row masked. See docs/structured-output.md.");
  return [a] { return run(*a); };
}

[[maybe_unused]] const bool kReg =
    register_command({"run", "Generate text (or token ids) from a program, streaming as it is produced", &setup});

}  // namespace
}  // namespace hfs::cli
