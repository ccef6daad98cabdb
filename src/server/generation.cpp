#include "server/generation.h"

#include <chrono>
#include <ctime>
#include <random>

#include "server/sse.h"
#include "server/state.h"

namespace hfs::server {
namespace {

using nlohmann::json;

uint64_t random_seed() {
  static std::mutex mu;
  static std::random_device rd;
  std::lock_guard<std::mutex> l(mu);
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

// The prompt's tokens: the chat template's rendering (special tokens written by the template itself), or
// without a template the messages' contents one per line; completions encode the text as `run` does.
std::optional<ApiError> prompt_tokens(State& s, const CompletionRequest& r, std::vector<int32_t>& ids) {
  const Tokenizer& tok = *s.tokenizer;
  if (r.chat) {
    std::string text;
    bool add_special = true;
    if (s.chat_template) {
      ChatContext ctx;
      ctx.messages = r.messages;
      ctx.add_generation_prompt = true;
      ctx.bos_token = s.bos_token;
      ctx.eos_token = s.eos_token;
      if (!r.tools_json.empty()) {
        auto tools = Value::parse_json(r.tools_json);
        if (!tools) return invalid_param("tools", tools.error().message());
        ctx.extra["tools"] = std::move(*tools);
      }
      auto rendered = s.chat_template->render(ctx);
      if (!rendered) return invalid_param("messages", "the chat template cannot render these messages: " + rendered.error().message());
      text = std::move(*rendered);
      add_special = false;
    } else {
      if (!r.tools.empty())
        return invalid_param("tools", "'tools' needs a chat template to show the model its functions, and this model has none");
      text = ChatFormat::plain_text(r.messages);  // the "plain" format, as chat and Python render it
    }
    auto enc = tok.encode(text, add_special);
    if (!enc) return invalid_param("messages", enc.error().message());
    ids = std::move(*enc);
  } else if (r.prompt_is_tokens) {
    for (int32_t t : r.prompt_tokens)
      if (t >= s.scheduler->info().vocab_size)
        return invalid_param("prompt", "token id " + std::to_string(t) + " is outside the vocabulary [0, " +
                                           std::to_string(s.scheduler->info().vocab_size) + ")");
    ids = r.prompt_tokens;
  } else {
    auto enc = tok.encode(r.prompt, true);
    if (!enc) return invalid_param("prompt", enc.error().message());
    ids = std::move(*enc);
  }
  if (ids.empty()) return invalid_param(r.chat ? "messages" : "prompt", "the prompt encodes to no tokens");
  return std::nullopt;
}

// The vocabulary every constrained job masks, built once on the first request's thread.
Result<std::shared_ptr<const TokenVocabulary>> constraint_vocabulary(State& s) {
  std::lock_guard<std::mutex> l(s.constraint_vocab_mu);
  if (!s.constraint_vocab) {
    std::vector<int32_t> eos;
    for (int64_t id : s.scheduler->info().eos_token_ids) eos.push_back(static_cast<int32_t>(id));
    HFS_ASSIGN_OR_RETURN(s.constraint_vocab, token_vocabulary(*s.tokenizer, eos));
  }
  return s.constraint_vocab;
}

// The request's constraint compiled, or taken from the grammar cache (keyed by kind and text); a compile error
// names the field the constraint came from.
std::optional<ApiError> compile_constraint(State& s, const CompletionRequest::Constraint& c,
                                           std::shared_ptr<const Grammar>& out) {
  using Kind = CompletionRequest::Constraint::Kind;
  if (c.kind == Kind::kNone) return std::nullopt;
  if (c.kind == Kind::kJsonObject) {
    out = Grammar::json_object();
    return std::nullopt;
  }
  const char* kind = c.kind == Kind::kJsonSchema ? "json_schema" : c.kind == Kind::kRegex ? "regex" : "gbnf";
  auto got = s.grammars.get(kind, c.text, [&]() -> Result<std::shared_ptr<const Grammar>> {
    if (c.kind == Kind::kJsonSchema) return Grammar::from_json_schema(c.text);
    if (c.kind == Kind::kRegex) return Grammar::from_regex(c.text);
    return Grammar::from_gbnf(c.text);
  });
  if (!got) {
    ApiError e = invalid_param(c.field, "'" + c.field + "': " + got.error().message());
    // The compiler's own limits (depth, states, time): the constraint is too complex, not malformed.
    if (got.error().code() == ErrorCode::kResourceExhausted) e.code = "constraint_too_complex";
    return e;
  }
  s.metrics.count_grammar(got->hit);
  out = got->grammar;
  return std::nullopt;
}

// The grammar a tool call follows (tool_choice auto: text or a call), cached like any other.
std::optional<ApiError> compile_tool_grammar(State& s, const CompletionRequest& r, ToolFormat f,
                                             std::shared_ptr<const Grammar>& out) {
  auto gbnf = tool_call_gbnf(r.tools, f, r.tool_choice, r.tool_name);
  if (!gbnf) return invalid_param("tools", "'tools': " + gbnf.error().message());
  auto got = s.grammars.get("tools:" + gbnf->root, gbnf->text, [&] { return Grammar::from_gbnf(gbnf->text, gbnf->root); });
  if (!got) return invalid_param("tools", "'tools': " + got.error().message());
  s.metrics.count_grammar(got->hit);
  out = got->grammar;
  return std::nullopt;
}

// A tool call's id: 9 letters and digits (Mistral's templates require exactly that; others take any).
std::string call_id() {
  static const char kAlnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  uint64_t r = random_seed();
  std::string id;
  for (int i = 0; i < 9; ++i, r /= 62) id += kAlnum[r % 62];
  return id;
}

json tool_calls_json(const std::vector<ToolCall>& calls, bool with_index) {
  json out = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    json c = {{"id", call_id()}, {"type", "function"}, {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
    if (with_index) c["index"] = i;
    out.push_back(std::move(c));
  }
  return out;
}

json usage(const Generation& g) {
  int64_t used = 0, cached = 0;
  for (const Choice& c : g.choices) used += c.used;
  if (!g.choices.empty()) cached = g.choices[0].cached;
  return {{"prompt_tokens", g.prompt_tokens},
          {"completion_tokens", used},
          {"total_tokens", g.prompt_tokens + used},
          {"prompt_tokens_details", {{"cached_tokens", cached}}}};
}

void finish(State& s, const Generation& g, Choice& c, std::string reason) {
  c.finished = true;
  c.finish_reason = std::move(reason);
  const bool first = &c == &g.choices.front();  // the prompt is the choices' one prompt: counted once
  s.metrics.count_tokens(first ? g.prompt_tokens : 0, c.cached, c.used);
}

// Consumes the choice's new tokens into `out` (the caller waited for them); false once finished.
bool advance(State& s, Generation& g, Choice& c, std::string& out) {
  if (c.finished) return false;
  std::vector<int32_t> fresh;
  std::vector<TokenLogprobs> fresh_lp;
  bool done;
  Job::End end;
  bool started;
  std::string error;
  {
    std::lock_guard<std::mutex> l(c.job->mu);
    fresh.assign(c.job->tokens.begin() + static_cast<std::ptrdiff_t>(c.seen), c.job->tokens.end());
    if (g.request.logprobs)
      fresh_lp.assign(c.job->logprobs.begin() + static_cast<std::ptrdiff_t>(std::min(c.seen, c.job->logprobs.size())),
                      c.job->logprobs.end());
    done = c.job->done, end = c.job->end, started = c.job->started, error = c.job->error;
    c.cached = c.job->cached_tokens;
  }
  for (size_t i = 0; i < fresh.size(); ++i) {
    ++c.seen;
    ++c.used;
    if (i < fresh_lp.size()) c.logprobs.push_back(std::move(fresh_lp[i]));
    auto piece = c.decoder->feed(fresh[i]);
    if (piece) out += c.stop->feed(*piece);
    if (c.stop->stopped()) {
      c.job->cancel = true;  // the scheduler frees the sequence at its next step
      finish(s, g, c, "stop");
      return false;
    }
  }
  if (!done) return true;
  if (end == Job::End::kError) {
    g.error = server_error(500, "server_error", "generation_failed", "generation failed: " + error);
  } else if (!started && (end == Job::End::kTimeout || end == Job::End::kShutdown)) {
    g.error = server_error(503, "server_error", end == Job::End::kTimeout ? "timeout" : "draining",
                           end == Job::End::kTimeout ? "the request timed out waiting for a free sequence (--timeout)"
                                                     : "the server is shutting down");
  }
  auto rest = c.decoder->flush();
  if (rest) out += c.stop->feed(*rest);
  out += c.stop->flush();
  finish(s, g, c, end == Job::End::kStop || c.stop->stopped() ? "stop" : "length");
  return false;
}

// Waits up to `wait` for any unfinished choice to have something new.
void wait_any(Generation& g, std::chrono::milliseconds wait) {
  const auto until = Clock::now() + wait;
  for (;;) {
    bool ready = false;
    Choice* pending = nullptr;
    for (Choice& c : g.choices) {
      if (c.finished) continue;
      std::lock_guard<std::mutex> l(c.job->mu);
      if (c.job->done || c.job->tokens.size() > c.seen) ready = true;
      pending = &c;
    }
    if (ready || !pending) return;
    const auto now = Clock::now();
    if (now >= until) return;
    // One choice's wait at a time, short enough that another choice's token is not held up long.
    const auto slice = g.choices.size() == 1 ? until - now : std::min<Clock::duration>(until - now, std::chrono::milliseconds(5));
    pending->job->wait(pending->seen, std::chrono::duration_cast<std::chrono::milliseconds>(slice) + std::chrono::milliseconds(1));
  }
}

// OpenAI's logprobs object for `lps` (the tokens of one message or one chunk).
// `text_offset` (completions): the offset of the first token's text, advanced past the last one's.
json logprobs_json(State& s, const Generation& g, const std::vector<TokenLogprobs>& lps, int64_t& text_offset) {
  auto bytes_of = [&](int32_t id) {
    if (s.tokenizer->is_special(id)) return s.tokenizer->id_to_token(id).value_or("");
    return s.tokenizer->token_bytes(id).value_or("");
  };
  if (g.request.chat) {
    json content = json::array();
    for (const TokenLogprobs& lp : lps) {
      const std::string b = bytes_of(lp.token);
      json top = json::array();
      for (const auto& [id, v] : lp.top) {
        const std::string tb = bytes_of(id);
        top.push_back({{"token", token_text(tb)}, {"logprob", v}, {"bytes", std::vector<uint8_t>(tb.begin(), tb.end())}});
      }
      content.push_back({{"token", token_text(b)}, {"logprob", lp.logprob}, {"bytes", std::vector<uint8_t>(b.begin(), b.end())},
                         {"top_logprobs", std::move(top)}});
    }
    return {{"content", std::move(content)}, {"refusal", nullptr}};
  }
  json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(), offsets = json::array();
  for (const TokenLogprobs& lp : lps) {
    const std::string b = bytes_of(lp.token);
    tokens.push_back(token_text(b));
    token_logprobs.push_back(lp.logprob);
    json top = json::object();
    for (const auto& [id, v] : lp.top) top[token_text(bytes_of(id))] = v;
    top_logprobs.push_back(std::move(top));
    offsets.push_back(text_offset);
    text_offset += static_cast<int64_t>(b.size());
  }
  return {{"tokens", std::move(tokens)}, {"token_logprobs", std::move(token_logprobs)},
          {"top_logprobs", std::move(top_logprobs)}, {"text_offset", std::move(offsets)}};
}

json choice_delta(State& s, const Generation& g, size_t index, const std::string& piece, const char* finish_reason,
                  const std::vector<TokenLogprobs>& lps, int64_t& offset) {
  json c = {{"index", index}, {"logprobs", nullptr}, {"finish_reason", finish_reason ? json(finish_reason) : json()}};
  if (g.request.chat) c["delta"] = piece.empty() && finish_reason ? json::object() : json{{"content", piece}};
  else c["text"] = piece;
  if (g.request.logprobs && !lps.empty()) c["logprobs"] = logprobs_json(s, g, lps, offset);
  return c;
}

json chunk(const Generation& g, json choices) {
  return {{"id", g.id},
          {"object", g.request.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", g.created},
          {"model", g.request.model},
          {"system_fingerprint", nullptr},
          {"choices", std::move(choices)}};
}

}  // namespace

std::vector<std::shared_ptr<Job>> Generation::jobs() const {
  std::vector<std::shared_ptr<Job>> out;
  for (const Choice& c : choices) out.push_back(c.job);
  return out;
}

void Generation::cancel() {
  for (Choice& c : choices) c.job->cancel = true;
}

bool Generation::finished() const {
  for (const Choice& c : choices)
    if (!c.finished) return false;
  return true;
}

std::string Generation::summary() const {
  int64_t used = 0, cached = choices.empty() ? 0 : choices[0].cached;
  for (const Choice& c : choices) used += c.used;
  std::string finish;
  for (const Choice& c : choices)
    if (c.finished) finish += (finish.empty() ? "" : ",") + c.finish_reason;
  return "prompt=" + std::to_string(prompt_tokens) + " cached=" + std::to_string(cached) + " generated=" + std::to_string(used) +
         (choices.size() > 1 ? " n=" + std::to_string(choices.size()) : "") + (finish.empty() ? "" : " finish=" + finish) +
         (client_gone ? " client_gone" : "") + (error ? " error=" + error->message : "");
}

std::optional<ApiError> prepare_generation(State& s, std::string_view body, bool chat, Generation& g) {
  if (auto e = parse_completion_request(body, chat, g.request)) return e;
  CompletionRequest& r = g.request;
  if (!r.model.empty() && r.model != s.model_id && r.model != "default")
    return ApiError{404, "the model '" + r.model + "' does not exist; this server serves '" + s.model_id + "'",
                    "invalid_request_error", "model", "model_not_found"};
  r.model = s.model_id;
  std::vector<int32_t> ids;
  if (auto e = prompt_tokens(s, r, ids)) return e;
  const int64_t n = static_cast<int64_t>(ids.size()), context = s.scheduler->info().context_length;
  if (n >= context)
    return ApiError{400,
                    "the prompt has " + std::to_string(n) + " tokens, but the model's context is " + std::to_string(context) +
                        " tokens and at least one must be left to generate",
                    "invalid_request_error", chat ? "messages" : "prompt", "context_length_exceeded"};
  if (r.n > s.options.max_queue)
    return invalid_param("n", "'n' is " + std::to_string(r.n) + " but the queue holds " + std::to_string(s.options.max_queue) +
                                  " requests (--max-queue), and a request's choices are queued together");
  if (r.n > s.scheduler->parallel())
    return invalid_param("n", "'n' is " + std::to_string(r.n) + " but this server runs " + std::to_string(s.scheduler->parallel()) +
                                  " sequences at once (--parallel); ask for at most that many choices");
  GenerationConfig config;
  config.max_new_tokens = static_cast<int32_t>(
      std::min<int64_t>({r.max_tokens.value_or(s.options.max_tokens_cap), s.options.max_tokens_cap, context - n}));
  config.sampling = r.sampling;
  if (!r.seeded) config.sampling.seed = random_seed();
  // Log probabilities are read from each step's logits, one token per step: no drafts for such a request.
  if (!r.logprobs) config.draft = s.options.draft;
  if (auto e = compile_constraint(s, r.constraint, config.constraint)) return e;
  if (r.tool_choice != ToolChoice::kNone) {
    g.tool_format = tool_format(s.chat_template ? s.chat_template->source() : "");
    if (auto e = compile_tool_grammar(s, r, g.tool_format, config.constraint)) return e;
  }
  if (config.constraint) {
    auto vocab = constraint_vocabulary(s);
    if (!vocab) return server_error(500, "server_error", "constraint_vocabulary", vocab.error().message());
    config.constraint_vocab = std::move(*vocab);
  }
  if (Status st = validate(config.sampling); !st) return invalid_param("", st.error().message());
  for (const auto& [id, bias] : r.sampling.logit_bias)
    if (id >= s.scheduler->info().vocab_size)
      return invalid_param("logit_bias", "token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                                             std::to_string(s.scheduler->info().vocab_size) + ")");
  const Clock::time_point arrived = Clock::now();
  const Clock::time_point deadline =
      arrived + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s.options.timeout_s));
  g.prompt_tokens = n;
  g.choices.resize(static_cast<size_t>(r.n));
  for (size_t i = 0; i < g.choices.size(); ++i) {
    Choice& c = g.choices[i];
    c.job = std::make_shared<Job>();
    Job& job = *c.job;
    job.config = config;
    job.config.sampling.seed = config.sampling.seed + i;  // choice i: seed + i
    job.top_logprobs = r.logprobs ? r.top_logprobs : -1;
    job.arrived = arrived;
    job.deadline = deadline;
    job.prompt = ids;
    if (i > 0) job.fork_of = g.choices[0].job;
    c.decoder = std::make_unique<StreamDecoder>(*s.tokenizer, /*skip_special=*/true);
    // Completions continue the prompt's text ("▁upon" after "Once" is " upon"); a chat reply is a message
    // of its own, decoded as HF decodes new tokens.
    if (!chat)
      if (Status st = c.decoder->prime(ids); !st) return invalid_param("prompt", st.error().message());
    c.stop = std::make_unique<StopMatcher>(r.stop);
  }
  g.id = std::string(chat ? "chatcmpl-" : "cmpl-") + std::to_string(s.next_id++);
  g.created = static_cast<int64_t>(std::time(nullptr));
  return std::nullopt;
}

std::optional<ApiError> run_to_end(State& s, Generation& g, json& out, const std::function<bool()>& client_gone) {
  for (;;) {
    wait_any(g, std::chrono::milliseconds(client_gone ? 250 : 1000));
    bool more = false;
    for (Choice& c : g.choices) more = advance(s, g, c, c.text) || more;
    if (!more) break;
    if (client_gone && client_gone()) {
      g.client_gone = true;
      g.cancel();  // the scheduler frees the sequences (or drops the queued jobs) at once
      return server_error(499, "server_error", "client_gone", "the client closed the connection");
    }
  }
  if (g.error) return g.error;
  json choices = json::array();
  for (size_t i = 0; i < g.choices.size(); ++i) {
    const Choice& c = g.choices[i];
    json choice = {{"index", i}, {"logprobs", nullptr}, {"finish_reason", c.finish_reason}};
    if (g.request.chat) choice["message"] = {{"role", "assistant"}, {"content", c.text}};
    else choice["text"] = c.text;
    if (g.request.tool_choice != ToolChoice::kNone)
      if (auto calls = parse_tool_calls(c.text, g.tool_format)) {
        choice["message"] = {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", tool_calls_json(*calls, false)}};
        choice["finish_reason"] = "tool_calls";
      }
    int64_t offset = 0;
    if (g.request.logprobs) choice["logprobs"] = logprobs_json(s, g, c.logprobs, offset);
    choices.push_back(std::move(choice));
  }
  out = {{"id", g.id},
         {"object", g.request.chat ? "chat.completion" : "text_completion"},
         {"created", g.created},
         {"model", g.request.model},
         {"system_fingerprint", nullptr},
         {"choices", std::move(choices)},
         {"usage", usage(g)}};
  return std::nullopt;
}

namespace {

// Streaming with tools: the reply's text is held while it may still become a call (a prefix of the
// format's opener, or the opener and more), and sent as text (`piece`) once it cannot. A call goes out as
// OpenAI streams one: a first tool_calls delta with its id and name once the name is complete, then its
// arguments' JSON text as it comes (all but the last kToolCallTail characters, which may still be the
// call's end), the rest when the reply ends, and finish_reason "tool_calls". A reply cut short
// (max_tokens) before its call began is sent as the text it is. False once the client is gone.
bool hold_for_tool_call(Generation& g, Choice& c, size_t index, bool going, std::string& piece, std::string& finish,
                        const std::function<bool(const std::string&)>& send) {
  c.held += piece;
  piece.clear();
  const size_t start = c.held.find_first_not_of(" \t\r\n");
  const std::string_view opener = tool_call_opener(g.tool_format);
  const std::string_view rest = start == std::string::npos ? std::string_view() : std::string_view(c.held).substr(start);
  const size_t n = std::min(rest.size(), opener.size());
  if (!c.call_started && rest.substr(0, n) != opener.substr(0, n)) {
    c.streaming_text = true;
    piece = std::move(c.held);
    return true;
  }
  auto delta = [&](json call) {
    call["index"] = 0;
    return send(sse_event(chunk(g, json::array({json{{"index", index}, {"delta", {{"tool_calls", json::array({std::move(call)})}}},
                                                     {"logprobs", nullptr}, {"finish_reason", nullptr}}}))));
  };
  if (!c.call_started) {
    std::optional<ToolCallHead> head = tool_call_head(c.held, g.tool_format);
    if (!head) {
      if (!going) piece = std::move(c.held);  // ended before its call did
      return true;
    }
    c.call_started = true;
    c.arguments_sent = head->arguments_at;
    if (!delta({{"id", call_id()}, {"type", "function"}, {"function", {{"name", head->name}, {"arguments", ""}}}})) return false;
  }
  size_t until = c.held.size() > kToolCallTail ? c.held.size() - kToolCallTail : 0;
  if (!going) {
    const bool parsed = parse_tool_calls(c.held, g.tool_format).has_value();
    until = c.held.size();
    if (parsed) until = tool_call_arguments_end(c.held, g.tool_format).value_or(until);
    if (parsed) finish = "tool_calls";
  }
  if (until > c.arguments_sent) {
    const std::string more = c.held.substr(c.arguments_sent, until - c.arguments_sent);
    c.arguments_sent = until;
    if (!delta({{"function", {{"arguments", more}}}})) return false;
  }
  return true;
}

}  // namespace

bool stream_some(State& s, Generation& g, const std::function<bool(const std::string&)>& write) {
  auto send = [&](const std::string& data) {
    if (!g.client_gone && !write(data)) {
      g.client_gone = true;
      g.cancel();
    }
    return !g.client_gone;
  };
  if (!g.sent_head) {
    g.sent_head = true;
    if (g.request.chat) {
      json heads = json::array();
      for (size_t i = 0; i < g.choices.size(); ++i)
        heads.push_back({{"index", i}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"logprobs", nullptr}, {"finish_reason", nullptr}});
      if (!send(sse_event(chunk(g, std::move(heads))))) return false;
    }
  }
  wait_any(g, std::chrono::milliseconds(250));
  bool more = false, sent = false;
  for (size_t i = 0; i < g.choices.size(); ++i) {
    Choice& c = g.choices[i];
    if (c.finished) continue;
    std::string piece;
    const bool going = advance(s, g, c, piece);
    more = more || going;
    std::string finish = c.finish_reason;
    if (g.request.tool_choice != ToolChoice::kNone && !c.streaming_text)
      if (!hold_for_tool_call(g, c, i, going, piece, finish, send)) return false;
    if (!piece.empty() || !c.logprobs.empty()) {
      if (!send(sse_event(chunk(g, json::array({choice_delta(s, g, i, piece, nullptr, c.logprobs, c.lp_offset)})))))
        return false;
      c.logprobs.clear();
      sent = true;
    }
    if (!going && !g.error)
      if (!send(sse_event(chunk(g, json::array({choice_delta(s, g, i, "", finish.c_str(), {}, c.lp_offset)}))))) return false;
  }
  // Nothing yet (queued, or a character split over tokens): a comment finds a client that went away.
  if (more && !sent && !send(kSseKeepAlive)) return false;
  if (more && !g.error) return true;
  if (g.error) {
    g.cancel();
    send(sse_event(json::parse(g.error->body())));
  } else if (g.request.include_usage) {
    json u = chunk(g, json::array());
    u["usage"] = usage(g);
    if (!send(sse_event(u))) return false;
  }
  send(kSseDone);
  return false;
}

}  // namespace hfs::server
