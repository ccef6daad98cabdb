// `hfstatic chat`: an interactive multi-turn REPL over the model's chat template. The cache is kept
// across turns: each turn re-renders the conversation, and only the tokens after what the cache already
// holds are prefilled (if the rendering diverges from the cached tokens, the runner is reset and the
// whole conversation prefilled — correct either way).
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "backend_settings.h"
#include "cli.h"
#include "common.h"
#include "core/regular_file.h"
#include "io_util.h"
#include "hfstatic/chat_template.h"
#include "hfstatic/llm_runner.h"
#include "hfstatic/ext/metadata_keys.h"
#include "hfstatic/tokenizer.h"
#include "option_checks.h"
#include "constraint_options.h"
#include "sampling_options.h"

namespace hfs::cli {
namespace {

struct ChatArgs {
  std::string model;
  std::string system;
  int n = 512;
  SamplingConfig sampling = default_sampling();
  DraftConfig draft;
  std::string chat_template;
  int threads = 0;
  ConstraintArgs constraint;
  std::vector<std::string> backends = {"cpu_fast"};
  int device = -1;
  std::string session;
};

// The conversation beside a chat session file (FILE.messages.json): the messages whose rendering the
// session's tokens begin with. Written after the session, by temp + rename; a missing or stale one only
// means the next turn is prefilled in full (the token comparison below decides).
std::string messages_path(const std::string& session) { return session + ".messages.json"; }

std::vector<ChatMessage> load_messages(const std::string& session) {
  std::vector<ChatMessage> out;
  auto text = io::read_regular_file(messages_path(session), kMaxTextFileBytes);
  if (!text) return out;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_array()) return out;
  for (const auto& m : j)
    if (m.is_object() && m.value("role", nlohmann::json()).is_string() && m.value("content", nlohmann::json()).is_string())
      out.push_back({m["role"].get<std::string>(), m["content"].get<std::string>(), {}});
  return out;
}

Status save_chat_session(Runner& r, const std::string& session, const std::vector<ChatMessage>& messages) {
  HFS_TRY(r.save_session(session));
  nlohmann::json j = nlohmann::json::array();
  for (const ChatMessage& m : messages) j.push_back({{"role", m.role}, {"content", m.content}});
  const std::string path = messages_path(session), tmp = path + ".tmp";
  {
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) return make_error(ErrorCode::kIo, "cannot write '" + tmp + "'");
    const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if ((std::fclose(f) != 0) || !ok) return make_error(ErrorCode::kIo, "writing '" + tmp + "' failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return make_error(ErrorCode::kIo, "cannot rename '" + tmp + "' to '" + path + "'");
  return Ok{};
}

constexpr const char* kCommands = "/reset, /stats, /quit, /exit";

int chat(const ChatArgs& a) {
  auto model = resolve_model(a.model);
  if (!model) return fail(model.error());
  auto program = Program::load(*model);
  if (!program) return fail(program.error());
  auto tok = Tokenizer::from_program(**program);
  if (!tok) return fail(tok.error());
  // The format serve and Python use too: the program's template, or "plain" for a program without one.
  auto tmpl = ChatFormat::select((*program)->embedded_file("tokenizer_config.json"), a.chat_template);
  if (!tmpl) return fail(tmpl.error().with_context(*model));
  RunnerOptions ro;
  auto backends = backend_options(a.backends, capped_threads("chat", a.threads), a.device);
  if (!backends) return usage_error("chat", backends.error().message());
  ro.io.method.backends = std::move(*backends);
  ro.on_prefill_progress = prefill_progress_bar();
  auto runner = Runner::create(*program, ro);
  if (!runner) return fail(runner.error());
  Runner& r = **runner;
  if (Status st = check_draft_support(r.info(), a.draft); !st) return usage_error("chat", "--" + st.error().message());
  if (std::string bad = logit_bias_outside(a.sampling, r.info().vocab_size); !bad.empty()) return usage_error("chat", bad);

  auto constraint = load_constraint(a.constraint);
  if (!constraint) return fail(constraint.error());
  GenerationConfig g;
  g.max_new_tokens = a.n;
  g.sampling = a.sampling;
  g.draft = a.draft;
  g.constraint = *constraint;  // each reply on its own: the matcher starts over every turn
  g.cancel = install_interrupt_flag();
  ChatContext ctx;
  ctx.add_generation_prompt = true;
  ctx.bos_token = (*tok)->bos_token();
  ctx.eos_token = (*tok)->eos_token();
  if (!a.system.empty()) ctx.messages.push_back({"system", a.system, {}});
  std::vector<int32_t> cached;  // tokens whose K/V the runner holds, in order
  if (!a.session.empty() && std::filesystem::exists(a.session)) {
    if (Status st = r.restore_session(a.session); !st) return fail(st.error().with_context("--session"));
    cached.assign(r.tokens().begin(), r.tokens().end());
    std::vector<ChatMessage> saved = load_messages(a.session);
    if (!saved.empty()) ctx.messages = std::move(saved);
    std::fprintf(stderr, "hfstatic chat: session '%s': %zu tokens, %zu messages restored\n", a.session.c_str(), cached.size(),
                 ctx.messages.size());
  }
  // At every exit path below that ends the conversation normally: the session saved.
  auto save = [&]() -> int {
    if (a.session.empty()) return 0;
    if (Status st = save_chat_session(r, a.session, ctx.messages); !st) return fail(st.error().with_context("--session"));
    return 0;
  };
  const bool tty = isatty(STDIN_FILENO);
  std::fprintf(stderr, "hfstatic chat: %s (chat format %s) — /reset starts over, /stats shows timings, /quit or "
               "Ctrl-D exits\n", model->c_str(), tmpl->name().c_str());
  if (tmpl->is_plain())
    std::fprintf(stderr, "hfstatic chat: the program has no chat template: messages are joined one per line and the "
                         "model continues the text (--chat-template chooses another format)\n");
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
      print_stats_line(r.stats(), a.sampling.temperature > 0 ? std::optional<uint64_t>(a.sampling.seed) : std::nullopt);
      std::fprintf(stderr, "position %lld / %lld\n", static_cast<long long>(r.position()),
                   static_cast<long long>(r.info().context_length));
      continue;
    }
    if (line.empty()) continue;
    if (line[0] == '/' && line.rfind("//", 0) != 0) {
      std::fprintf(stderr,
                   "hfstatic chat: unknown command '%s'; commands: %s (start a message with // to send "
                   "it with a leading /)\n",
                   line.c_str(), kCommands);
      continue;
    }
    if (line.rfind("//", 0) == 0) line.erase(0, 1);
    // A line the template cannot render or the tokenizer cannot encode is reported and dropped; the
    // conversation goes on without it.
    ctx.messages.push_back({"user", line, {}});
    auto text = tmpl->render(ctx);
    auto ids = text ? (*tok)->encode(text->text, text->add_special) : Result<std::vector<int32_t>>(text.error());
    if (!ids) {
      std::fprintf(stderr, "hfstatic chat: this message was not sent: %s\n", ids.error().to_string().c_str());
      ctx.messages.pop_back();
      continue;
    }
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
    // Unprimed on purpose: a reply is a message of its own, and its content is decode(reply ids) as HF
    // decodes new tokens (no leading space for SentencePiece vocabularies), so that re-rendering the
    // conversation reproduces the tokens the cache holds.
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
  return save();
}

RunFn setup(CLI::App& sub) {
  auto a = std::make_shared<ChatArgs>();
  sub.add_option("-m,--model", a->model, "Program file (.hfs), HF checkpoint directory or Hub name ORG/NAME[@REVISION] (downloaded into "
                 "the Hugging Face cache, exported once to a cached program)")->required();
  sub.add_option("--system", a->system, "System prompt, the conversation's first message (also -sys)");
  sub.add_option("--chat-template", a->chat_template,
                 "The chat format: the program's template by default, or \"plain\" (the messages one per line, the "
                 "model continuing the text) for a program without one; or plain, chatml, a name from the program's "
                 "list of templates (e.g. tool_use), or a file of Jinja source or a tokenizer_config.json")
      ->type_name("NAME|FILE");
  sub.add_option("-n,--n-predict", a->n, "Max tokens per reply, an integer >= 1")
      ->capture_default_str()
      ->transform(integer_in(1, INT32_MAX, "an integer in [1, 2147483647]"));
  add_sampling_options(sub, a->sampling);
  add_draft_options(sub, a->draft);
  add_constraint_options(sub, a->constraint);
  sub.add_option("--backend", a->backends, "Backends in priority order")->capture_default_str()->check(backend_name());
  add_threads_option(sub, a->threads);
  add_device_option(sub, a->device);
  sub.add_option("--session", a->session,
                 "Conversation file (docs/sessions.md): when it exists, the conversation's tokens, cache rows and "
                 "messages (FILE.messages.json) are restored and the chat continues it without prefilling again; "
                 "saved at exit (/quit, Ctrl-D). A file of another program, or a corrupted one, is refused")
      ->type_name("FILE");
  add_llama_cli_refusals(sub);
  sub.footer(std::string("In the chat: ") + kCommands +
             " (a line starting with // is sent with one leading /). A line the template cannot render, the "
             "tokenizer cannot encode or the context cannot hold is reported and dropped; the chat goes on.\n" +
             kExitStatusHelp);
  return [a] { return chat(*a); };
}

[[maybe_unused]] const bool kReg =
    register_command({"chat", "Interactive multi-turn chat using the model's chat template, or plain text without one (cache kept across turns)", &setup});

}  // namespace
}  // namespace hfs::cli
