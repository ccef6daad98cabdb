// server/request.h — the body of POST /v1/chat/completions and /v1/completions, parsed and checked.
//
//   CompletionRequest r;
//   if (std::optional<ApiError> e = parse_completion_request(body, /*chat=*/true, r)) return reply(*e);
//
// Every field is checked for type and range; the error names the field (ApiError::param). Parameters that
// would change the answer if ignored and that the server does not implement (functions, best_of, echo, suffix,
// other servers' sampling knobs) are refused by name rather than ignored. The output constraint may come
// from OpenAI's response_format (text, json_object, json_schema), llama.cpp's grammar / json_schema or
// vLLM's guided_json / guided_regex / guided_choice / guided_grammar / structured_outputs — one of them
// per request (the grammar is compiled by the generation, not here); informational fields real clients
// send (user, metadata, store, ...) and unknown ones are accepted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hfstatic/chat_template.h"
#include "hfstatic/sampler.h"
#include "server/api_error.h"
#include "server/tools.h"

namespace hfs::server {

struct CompletionRequest {
  bool chat = false;
  std::string model;                  // "" when not given
  std::vector<ChatMessage> messages;  // chat
  std::string prompt;                 // completions: text ...
  std::vector<int32_t> prompt_tokens; // ... or token ids (prompt_is_tokens)
  bool prompt_is_tokens = false;
  std::optional<int32_t> max_tokens;  // max_tokens or max_completion_tokens
  SamplingConfig sampling;            // temperature defaults to 1 and top_p to 1, as OpenAI's do
  bool seeded = false;                // seed given (else the server picks one per request)
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;         // stream_options.include_usage
  // The output's constraint, from whichever field asked for one.
  struct Constraint {
    enum class Kind : uint8_t { kNone, kJsonObject, kJsonSchema, kGbnf, kRegex };
    Kind kind = Kind::kNone;
    std::string text;   // the schema's compact JSON (keys in the request's order), GBNF text or regex
    std::string field;  // the request field it came from ("response_format", "grammar", "guided_choice", ...)
  };
  Constraint constraint;
  // Log probabilities: chat's "logprobs": true with "top_logprobs": k, completions' "logprobs": k.
  bool logprobs = false;
  int32_t top_logprobs = 0;  // alternatives per token, [0, 20]
  int32_t n = 1;             // choices, [1, kMaxChoices]
  // Tool calling (chat): the functions, the tools array as sent (compact JSON, for the chat template's
  // `tools`), and tool_choice ("auto" by default when tools are given; kNamed: `tool_name`).
  std::vector<Tool> tools;
  std::string tools_json;
  ToolChoice tool_choice = ToolChoice::kNone;
  std::string tool_name;
};

constexpr int32_t kMaxChoices = 16;
constexpr int32_t kMaxTopLogprobs = 20;

std::optional<ApiError> parse_completion_request(std::string_view body, bool chat, CompletionRequest& out);

}  // namespace hfs::server
