// server/tools.h — tool calling: the request's functions, the call format of the model's chat template,
// the grammar that makes a chosen call parse, and the parse of a reply into OpenAI's tool_calls.
//
// Formats (picked from the template's source, which the model was trained on):
//   kHermes   Qwen 2.5/3, Hermes: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>
//   kLlama3   Llama 3.1/3.2:      {"name": ..., "parameters": {...}}
//   kMistral  Mistral (v3 tokenizers, Nemo): [TOOL_CALLS][{"name": ..., "arguments": {...}}]
// A call is constrained by a grammar built from the functions' JSON Schemas (one branch per function, its
// name a constant), so a chosen call always parses and its arguments validate. tool_choice "required" or a
// named function: the reply is a call. "auto": free text that does not start with the call's opener, or
// the opener and then a constrained call (the grammar decides at the first character, as llama.cpp's lazy
// grammar decides at its trigger).
//
//   ToolFormat f = tool_format(template_source);
//   auto gbnf = tool_call_gbnf(tools, f, choice, name);     // then Grammar::from_gbnf(gbnf->text, gbnf->root)
//   std::optional<std::vector<ToolCall>> calls = parse_tool_calls(reply_text, f);
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hfstatic/error.h"

namespace hfs::server {

struct Tool {
  std::string name;
  std::string parameters;  // the parameters' JSON Schema, compact JSON ({"type":"object"} when absent)
};

enum class ToolFormat : uint8_t { kHermes, kLlama3, kMistral };
enum class ToolChoice : uint8_t { kNone, kAuto, kRequired, kNamed };

// The format the template writes tool calls in; Hermes when it shows none of the three.
ToolFormat tool_format(std::string_view template_source);
const char* tool_format_name(ToolFormat f);
// What every call in the format starts with.
std::string_view tool_call_opener(ToolFormat f);

struct ToolGrammar {
  std::string text;  // GBNF
  std::string root;  // its start rule
};
// The grammar for `choice` (not kNone) over `tools` (kNamed: only the function `name`).
[[nodiscard]] Result<ToolGrammar> tool_call_gbnf(const std::vector<Tool>& tools, ToolFormat f, ToolChoice choice,
                                                 const std::string& name);

struct ToolCall {
  std::string name;
  std::string arguments;  // compact JSON text, as OpenAI sends it
};
// The calls in a reply that starts with the format's opener (leading whitespace aside), or nullopt when it
// does not, or does not parse (a reply cut by max_tokens).
std::optional<std::vector<ToolCall>> parse_tool_calls(std::string_view text, ToolFormat f);

// Streaming a call as it is generated (the grammar fixes its shape: the name, then the arguments): where
// the arguments' JSON starts in a reply that has got that far, and the function's name; nullopt before.
struct ToolCallHead {
  std::string name;
  size_t arguments_at = 0;  // offset of the arguments' first character in the reply
};
std::optional<ToolCallHead> tool_call_head(std::string_view text, ToolFormat f);
// In a whole reply that parses as a call, where its arguments' JSON ends (past its last character).
std::optional<size_t> tool_call_arguments_end(std::string_view text, ToolFormat f);
// How many characters a call can still end with after its arguments: whitespace, the object's "}" and the
// format's closer. Arguments are streamed up to this far from what has arrived.
constexpr size_t kToolCallTail = 64;

}  // namespace hfs::server
