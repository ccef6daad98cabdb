// `hfstatic chat`: an interactive multi-turn REPL over the model's chat template. The cache is kept
// across turns: each turn re-renders the conversation, and only the tokens after what the cache already
// holds are prefilled (if the rendering diverges from the cached tokens, the runner is reset and the
// whole conversation prefilled — correct either way).
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli.h"
#include "common.h"
#include "io_util.h"
#include "hfstatic/chat_template.h"
#include "hfstatic/llm_runner.h"
#include "hfstatic/tokenizer.h"

namespace hfs::cli {
namespace {

struct ChatArgs {
  std::string model;
  std::string system;
  int n = 512;
  float temp = 0.7f;
  int top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  uint64_t seed = 0;
  std::vector<std::string> backends = {"cpu_fast"};
};

std::string file_text(const Program& p, const std::string& file) {
  auto v = p.constant("file:" + file);
  if (!v || v->dtype != DType::kU8) return {};
  return std::string(static_cast<const char*>(v->ptr), static_cast<size_t>(v->nbytes()));
}

std::string token_text(const Tokenizer& tok, std::optional<int32_t> id) {
  if (!id) return {};
  return tok.id_to_token(*id).value_or("");
}

int chat(const ChatArgs& a) {
  auto model = resolve_model(a.model);
  if (!model) return fail(model.error());
  auto program = Program::load(*model);
  if (!program) return fail(program.error());
  auto tok = Tokenizer::from_program(**program);
  if (!tok) return fail(tok.error());
  auto tmpl = ChatTemplate::from_tokenizer_config(file_text(**program, "tokenizer_config.json"));
  if (!tmpl) return fail(tmpl.error().with_context(*model + ": chat template"));
  RunnerOptions ro;
  ro.io.method.backends.backends = a.backends;
  ro.on_prefill_progress = prefill_progress_bar();
  auto runner = Runner::create(*program, ro);
  if (!runner) return fail(runner.error());
  Runner& r = **runner;

  GenerationConfig g;
  g.max_new_tokens = a.n;
  g.sampling = {a.temp, a.top_k, a.top_p, a.min_p, a.repeat_penalty, a.seed};
  g.cancel = install_interrupt_flag();
  const auto& eos = (*tok)->eos_ids();
  ChatContext ctx;
  ctx.add_generation_prompt = true;
  ctx.bos_token = token_text(**tok, (*tok)->bos_id());
  ctx.eos_token = token_text(**tok, eos.empty() ? std::nullopt : std::optional<int32_t>(eos[0]));
  if (!a.system.empty()) ctx.messages.push_back({"system", a.system, {}});
  std::vector<int32_t> cached;  // tokens whose K/V the runner holds, in order
  const bool tty = isatty(STDIN_FILENO);
  std::fprintf(stderr, "hfstatic chat: %s — /reset starts over, /stats shows timings, /quit or Ctrl-D exits\n",
               model->c_str());
  std::string line;
  for (;;) {
    if (tty && !out("> ")) return 1;  // main reports the stdout error
    if (!std::getline(std::cin, line)) break;
    if (line == "/quit" || line == "/exit") break;
    if (line == "/reset") {
      r.reset();
      cached.clear();
      ctx.messages.erase(std::remove_if(ctx.messages.begin(), ctx.messages.end(),
                                        [](const ChatMessage& m) { return m.role != "system"; }),
                         ctx.messages.end());
      std::fprintf(stderr, "(conversation reset)\n");
      continue;
    }
    if (line == "/stats") {
      print_stats_line(r.stats());
      std::fprintf(stderr, "position %lld / %lld\n", static_cast<long long>(r.position()),
                   static_cast<long long>(r.info().context_length));
      continue;
    }
    if (line.empty()) continue;
    ctx.messages.push_back({"user", line, {}});
    auto text = tmpl->render(ctx);
    if (!text) return fail(text.error());
    auto ids = (*tok)->encode(*text, /*add_special=*/false);
    if (!ids) return fail(ids.error());
    size_t common = 0;
    while (common < cached.size() && common < ids->size() && cached[common] == (*ids)[common]) ++common;
    if (common < cached.size()) {  // the rendering no longer extends what the cache holds
      r.reset();
      cached.clear();
      common = 0;
    }
    std::vector<int32_t> fresh(ids->begin() + static_cast<std::ptrdiff_t>(common), ids->end());
    if (!r.can_accept(static_cast<int64_t>(fresh.size()) + 1)) {
      std::fprintf(stderr, "hfstatic: context full: this turn needs %zu more tokens at position %lld of %lld; /reset to start over\n",
                   fresh.size() + 1, static_cast<long long>(r.position()), static_cast<long long>(r.info().context_length));
      ctx.messages.pop_back();
      continue;
    }
    StreamDecoder stream(**tok, /*skip_special=*/true);
    std::string reply;
    reset_interrupt_flag();  // a Ctrl-C cancels the reply in progress; one at the prompt, then another, exits
    auto result = r.generate(fresh, g, [&](int32_t t) {
      auto piece = stream.feed(t);
      if (piece) {
        reply += *piece;
        if (!out(*piece)) return false;  // stdout is gone (closed pipe, full disk): stop generating
      }
      return true;
    });
    if (!out("\n")) return 1;
    if (!result) return fail(result.error());
    // What the cache holds: the fresh tokens, then every generated token but the last (committed by the
    // next turn's prompt) — or, when Ctrl-C stopped the prefill part-way, only the chunks it ran.
    cached.insert(cached.end(), fresh.begin(), fresh.end());
    cached.insert(cached.end(), result->tokens.begin(), result->tokens.end());
    cached.resize(static_cast<size_t>(r.position()));
    if (result->stop == GenerationResult::Stop::kCancelled && result->tokens.empty()) {
      std::fprintf(stderr, "(interrupted)\n");
      ctx.messages.pop_back();
      continue;
    }
    ctx.messages.push_back({"assistant", reply, {}});
    if (result->stop == GenerationResult::Stop::kContextFull)
      std::fprintf(stderr, "hfstatic: context full; /reset to start over\n");
  }
  return 0;
}

RunFn setup(CLI::App& sub) {
  auto a = std::make_shared<ChatArgs>();
  sub.add_option("-m,--model", a->model, "Program file (.hfs) or HF checkpoint directory")->required();
  sub.add_option("--system", a->system, "System prompt");
  sub.add_option("-n,--n-predict", a->n, "Max tokens per reply")->capture_default_str();
  sub.add_option("--temp", a->temp, "Temperature (0 = greedy)")->capture_default_str();
  sub.add_option("--top-k", a->top_k, "Top-k (0 = off)")->capture_default_str();
  sub.add_option("--top-p", a->top_p, "Top-p (1 = off)")->capture_default_str();
  sub.add_option("--min-p", a->min_p, "Min-p (0 = off)")->capture_default_str();
  sub.add_option("--repeat-penalty", a->repeat_penalty, "Repetition penalty (1 = off)")->capture_default_str();
  sub.add_option("--seed", a->seed, "Sampling seed")->capture_default_str();
  sub.add_option("--backend", a->backends, "Backends in priority order")->capture_default_str();
  return [a] { return chat(*a); };
}

[[maybe_unused]] const bool kReg =
    register_command({"chat", "Interactive multi-turn chat using the model's chat template (cache kept across turns)", &setup});

}  // namespace
}  // namespace hfs::cli
