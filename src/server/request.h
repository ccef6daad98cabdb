// server/request.h — the body of POST /v1/chat/completions and /v1/completions, parsed and checked.
//
//   CompletionRequest r;
//   if (std::optional<ApiError> e = parse_completion_request(body, /*chat=*/true, r)) return reply(*e);
//
// Every field is checked for type and range; the error names the field (ApiError::param). Parameters that
// would change the answer if ignored and that the server does not implement (n > 1, logprobs, tools,
// best_of, echo, suffix) are refused by name rather than ignored; response_format may be text, json_object
// or json_schema ({"name", "schema", "strict"}: the schema is compiled by the generation, not here);
// informational ones real clients send (user, metadata, store, ...) and unknown ones are accepted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hfstatic/chat_template.h"
#include "hfstatic/sampler.h"
#include "server/api_error.h"

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
  // response_format: text (no constraint), json_object (any JSON object) or json_schema (`json_schema` holds
  // the schema's JSON text).
  enum class Format : uint8_t { kText, kJsonObject, kJsonSchema };
  Format format = Format::kText;
  std::string json_schema;
};

std::optional<ApiError> parse_completion_request(std::string_view body, bool chat, CompletionRequest& out);

}  // namespace hfs::server
