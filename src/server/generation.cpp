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
      auto rendered = s.chat_template->render(ctx);
      if (!rendered) return invalid_param("messages", "the chat template cannot render these messages: " + rendered.error().message());
      text = std::move(*rendered);
      add_special = false;
    } else {
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

json usage(const Generation& g) {
  const int64_t p = static_cast<int64_t>(g.job->prompt.size());
  return {{"prompt_tokens", p},
          {"completion_tokens", g.used},
          {"total_tokens", p + g.used},
          {"prompt_tokens_details", {{"cached_tokens", g.cached}}}};
}

void finish(State& s, Generation& g, std::string reason) {
  g.finished = true;
  g.finish_reason = std::move(reason);
  s.metrics.count_tokens(static_cast<int64_t>(g.job->prompt.size()), g.cached, g.used);
}

// Consumes the job's new tokens (waiting up to `wait` for some) into `out`; false once finished.
bool advance(State& s, Generation& g, std::string& out, std::chrono::milliseconds wait) {
  if (g.finished) return false;
  g.job->wait(g.seen, wait);
  std::vector<int32_t> fresh;
  bool done;
  Job::End end;
  bool started;
  std::string error;
  {
    std::lock_guard<std::mutex> l(g.job->mu);
    fresh.assign(g.job->tokens.begin() + static_cast<std::ptrdiff_t>(g.seen), g.job->tokens.end());
    done = g.job->done, end = g.job->end, started = g.job->started, error = g.job->error;
    g.cached = g.job->cached_tokens;
  }
  for (int32_t t : fresh) {
    ++g.seen;
    ++g.used;
    auto piece = g.decoder->feed(t);
    if (piece) out += g.stop->feed(*piece);
    if (g.stop->stopped()) {
      g.job->cancel = true;  // the scheduler frees the sequence at its next step
      finish(s, g, "stop");
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
  auto rest = g.decoder->flush();
  if (rest) out += g.stop->feed(*rest);
  out += g.stop->flush();
  finish(s, g, end == Job::End::kStop || g.stop->stopped() ? "stop" : "length");
  return false;
}

json choice_delta(const Generation& g, const std::string& piece, const char* finish_reason) {
  json c = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish_reason ? json(finish_reason) : json()}};
  if (g.request.chat) c["delta"] = piece.empty() && finish_reason ? json::object() : json{{"content", piece}};
  else c["text"] = piece;
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

std::string Generation::summary() const {
  return "prompt=" + std::to_string(job ? job->prompt.size() : 0) + " cached=" + std::to_string(cached) +
         " generated=" + std::to_string(used) + (finished ? " finish=" + finish_reason : "") +
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
  g.job = std::make_shared<Job>();
  Job& job = *g.job;
  job.config.max_new_tokens = static_cast<int32_t>(
      std::min<int64_t>({r.max_tokens.value_or(s.options.max_tokens_cap), s.options.max_tokens_cap, context - n}));
  job.config.sampling = r.sampling;
  if (!r.seeded) job.config.sampling.seed = random_seed();
  job.config.draft = s.options.draft;
  if (r.format == CompletionRequest::Format::kJsonObject) job.config.constraint = Grammar::json_object();
  if (r.format == CompletionRequest::Format::kJsonSchema) {
    auto got = s.grammars.get("json_schema", r.json_schema, [&] { return Grammar::from_json_schema(r.json_schema); });
    if (!got) {
      ApiError e = invalid_param("response_format", got.error().message());
      // The compiler's own limits (depth, states, time): the schema is too complex, not malformed.
      if (got.error().code() == ErrorCode::kResourceExhausted) e.code = "constraint_too_complex";
      return e;
    }
    s.metrics.count_grammar(got->hit);
    job.config.constraint = got->grammar;
  }
  if (job.config.constraint) {
    auto vocab = constraint_vocabulary(s);
    if (!vocab) return server_error(500, "server_error", "constraint_vocabulary", vocab.error().message());
    job.config.constraint_vocab = std::move(*vocab);
  }
  if (Status st = validate(job.config.sampling); !st) return invalid_param("", st.error().message());
  for (const auto& [id, bias] : r.sampling.logit_bias)
    if (id >= s.scheduler->info().vocab_size)
      return invalid_param("logit_bias", "token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                                             std::to_string(s.scheduler->info().vocab_size) + ")");
  job.arrived = Clock::now();
  job.deadline = job.arrived + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s.options.timeout_s));
  g.decoder = std::make_unique<StreamDecoder>(*s.tokenizer, /*skip_special=*/true);
  // Completions continue the prompt's text ("▁upon" after "Once" is " upon"); a chat reply is a message
  // of its own, decoded as HF decodes new tokens.
  if (!chat)
    if (Status st = g.decoder->prime(ids); !st) return invalid_param("prompt", st.error().message());
  job.prompt = std::move(ids);
  g.stop = std::make_unique<StopMatcher>(r.stop);
  g.id = std::string(chat ? "chatcmpl-" : "cmpl-") + std::to_string(s.next_id++);
  g.created = static_cast<int64_t>(std::time(nullptr));
  return std::nullopt;
}

std::optional<ApiError> run_to_end(State& s, Generation& g, json& out, const std::function<bool()>& client_gone) {
  while (advance(s, g, g.text, std::chrono::milliseconds(client_gone ? 250 : 1000))) {
    if (client_gone && client_gone()) {
      g.client_gone = true;
      g.job->cancel = true;  // the scheduler frees the sequence (or drops the queued job) at once
      return server_error(499, "server_error", "client_gone", "the client closed the connection");
    }
  }
  if (g.error) return g.error;
  json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", g.finish_reason}};
  if (g.request.chat) choice["message"] = {{"role", "assistant"}, {"content", g.text}};
  else choice["text"] = g.text;
  out = {{"id", g.id},
         {"object", g.request.chat ? "chat.completion" : "text_completion"},
         {"created", g.created},
         {"model", g.request.model},
         {"system_fingerprint", nullptr},
         {"choices", json::array({choice})},
         {"usage", usage(g)}};
  return std::nullopt;
}

bool stream_some(State& s, Generation& g, const std::function<bool(const std::string&)>& write) {
  auto send = [&](const std::string& data) {
    if (!g.client_gone && !write(data)) {
      g.client_gone = true;
      g.job->cancel = true;
    }
    return !g.client_gone;
  };
  if (!g.sent_head) {
    g.sent_head = true;
    if (g.request.chat) {
      json c = {{"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
      if (!send(sse_event(chunk(g, json::array({c}))))) return false;
    }
  }
  std::string piece;
  const bool more = advance(s, g, piece, std::chrono::milliseconds(250));
  if (!piece.empty()) {
    if (!send(sse_event(chunk(g, json::array({choice_delta(g, piece, nullptr)}))))) return false;
  } else if (more) {
    // Nothing yet (queued, or a character split over tokens): a comment finds a client that went away.
    if (!send(kSseKeepAlive)) return false;
  }
  if (more) return true;
  if (g.error) {
    send(sse_event(json::parse(g.error->body())));
  } else {
    if (!send(sse_event(chunk(g, json::array({choice_delta(g, "", g.finish_reason.c_str())}))))) return false;
    if (g.request.include_usage) {
      json u = chunk(g, json::array());
      u["usage"] = usage(g);
      if (!send(sse_event(u))) return false;
    }
  }
  send(kSseDone);
  return false;
}

}  // namespace hfs::server
