// server/generation.h — one completion request from its body to its answer: the prompt's tokens (chat
// template or text), the Job the scheduler runs, and the text it produces (incremental detokenization,
// stop strings) as a whole response or as server-sent events.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hfstatic/tokenizer.h"
#include "server/api_error.h"
#include "server/request.h"
#include "server/scheduler.h"
#include "server/stop_matcher.h"

namespace hfs::server {

struct State;

// One choice of the answer (n of them): its job and the text it has produced.
struct Choice {
  std::shared_ptr<Job> job;
  std::unique_ptr<StreamDecoder> decoder;
  std::unique_ptr<StopMatcher> stop;
  size_t seen = 0;           // job tokens consumed
  int64_t used = 0;          // completion tokens (up to the end of a stop string's match)
  int64_t cached = 0;        // prompt tokens reused (Job::cached_tokens, copied under its lock)
  std::string text;          // the whole answer (non-streaming)
  std::vector<TokenLogprobs> logprobs;  // request.logprobs: one per used token (streaming: those not yet sent)
  int64_t lp_offset = 0;     // streaming completions: the text offset of the next logprobs entry
  // Tool calling, streaming: text held back while it may be the start of a call (a call is sent whole,
  // as one tool_calls delta, once it has parsed); `streaming_text` once it cannot be.
  std::string held;
  bool streaming_text = false;
  bool call_started = false; // the call's first delta (id, name) went out
  size_t arguments_sent = 0; // offset in `held` up to which its arguments went out
  bool finished = false;
  std::string finish_reason; // "stop" | "length" once finished
};

struct Generation {
  CompletionRequest request;
  std::vector<Choice> choices;  // request.n of them, all submitted together
  std::string id;            // "chatcmpl-N" / "cmpl-N"
  int64_t created = 0;       // unix seconds
  int64_t prompt_tokens = 0;
  bool sent_head = false;    // streaming: the first chunk went out
  ToolFormat tool_format = ToolFormat::kHermes;  // request.tool_choice != kNone
  bool client_gone = false;  // streaming: a write failed
  std::optional<ApiError> error;

  std::vector<std::shared_ptr<Job>> jobs() const;
  void cancel();             // every choice's job
  bool finished() const;     // every choice
  std::string summary() const;  // for the request's log line
};

// Parses and checks the body, builds the prompt's tokens and the job (not yet submitted).
std::optional<ApiError> prepare_generation(State& s, std::string_view body, bool chat, Generation& g);
// Waits for the whole answer; `out` is the response body. `client_gone` (null: never asked) is polled
// while waiting: once it says true the job is cancelled, freeing its sequence, and the answer is dropped.
std::optional<ApiError> run_to_end(State& s, Generation& g, nlohmann::json& out,
                                   const std::function<bool()>& client_gone = nullptr);
// Streaming: writes what is ready (or a keep-alive comment after a short wait) through `write`; false once
// the stream is complete ("data: [DONE]" written) or the client is gone (g.client_gone).
bool stream_some(State& s, Generation& g, const std::function<bool(const std::string&)>& write);

}  // namespace hfs::server
