#include "server/tools.h"

#include <nlohmann/json.hpp>

#include "hfstatic/constraint.h"

namespace hfs::server {
namespace {

using json = nlohmann::ordered_json;

// A GBNF literal for `text` (quotes, backslashes and control bytes escaped).
std::string literal(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') out += '\\', out += static_cast<char>(c);
    else if (c == '\n') out += "\\n";
    else if (c < 0x20) out += "\\x" + std::string(1, "0123456789ABCDEF"[c >> 4]) + "0123456789ABCDEF"[c & 15];
    else out += static_cast<char>(c);
  }
  return out + "\"";
}

}  // namespace

ToolFormat tool_format(std::string_view src) {
  if (src.find("[TOOL_CALLS]") != std::string_view::npos) return ToolFormat::kMistral;
  if (src.find("<tool_call>") != std::string_view::npos) return ToolFormat::kHermes;
  if (src.find("\"parameters\": ") != std::string_view::npos || src.find("<|python_tag|>") != std::string_view::npos)
    return ToolFormat::kLlama3;
  return ToolFormat::kHermes;
}

const char* tool_format_name(ToolFormat f) {
  return f == ToolFormat::kMistral ? "mistral" : f == ToolFormat::kLlama3 ? "llama3" : "hermes";
}

std::string_view tool_call_opener(ToolFormat f) {
  return f == ToolFormat::kMistral ? "[TOOL_CALLS]" : f == ToolFormat::kLlama3 ? "{" : "<tool_call>";
}

Result<ToolGrammar> tool_call_gbnf(const std::vector<Tool>& tools, ToolFormat f, ToolChoice choice, const std::string& name) {
  // One JSON Schema for a call: a branch per function, the name a constant, the arguments its schema.
  const char* args_key = f == ToolFormat::kLlama3 ? "parameters" : "arguments";
  json branches = json::array();
  for (const Tool& t : tools) {
    if (choice == ToolChoice::kNamed && t.name != name) continue;
    json params = json::parse(t.parameters);
    branches.push_back({{"type", "object"},
                        {"properties", {{"name", {{"const", t.name}}}, {args_key, std::move(params)}}},
                        {"required", {"name", args_key}},
                        {"additionalProperties", false}});
  }
  if (branches.empty()) return make_error(ErrorCode::kInvalidArgument, "tool_choice names '" + name + "', which is not in 'tools'");
  const json schema = branches.size() == 1 ? branches[0] : json{{"anyOf", branches}};
  HFS_ASSIGN_OR_RETURN(std::string gbnf, Grammar::json_schema_gbnf(schema.dump()));
  // The schema's grammar starts at `root`; the call wraps it in the format's opener and closer.
  std::string call;
  if (f == ToolFormat::kHermes) call = literal("<tool_call>\n") + " root " + literal("\n</tool_call>");
  else if (f == ToolFormat::kMistral) call = literal("[TOOL_CALLS][") + " root " + literal("]");
  else call = "root";
  gbnf += "\nhfs-tool-call ::= " + call + "\n";
  if (choice != ToolChoice::kAuto) return ToolGrammar{gbnf, "hfs-tool-call"};
  // auto: the opener's first character decides. Free text starts with any other character.
  const unsigned char first = static_cast<unsigned char>(tool_call_opener(f)[0]);
  char cls[16];
  std::snprintf(cls, sizeof cls, "[^\\x%02X]", first);
  gbnf += "hfs-tool-auto ::= hfs-tool-call | " + std::string(cls) + " .*\n";
  return ToolGrammar{gbnf, "hfs-tool-auto"};
}

std::optional<std::vector<ToolCall>> parse_tool_calls(std::string_view text, ToolFormat f) {
  const size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return std::nullopt;
  text.remove_prefix(start);
  const std::string_view opener = tool_call_opener(f);
  if (text.substr(0, opener.size()) != opener) return std::nullopt;
  std::string body(text);
  if (f == ToolFormat::kHermes) {
    body = body.substr(opener.size());
    const size_t end = body.rfind("</tool_call>");
    if (end == std::string::npos) return std::nullopt;
    body = body.substr(0, end);
  } else if (f == ToolFormat::kMistral) {
    body = body.substr(opener.size());
  }
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  if (!j.is_array()) j = json::array({j});
  std::vector<ToolCall> calls;
  const char* args_key = f == ToolFormat::kLlama3 ? "parameters" : "arguments";
  for (const json& c : j) {
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string()) return std::nullopt;
    const json args = c.contains(args_key) ? c[args_key] : json::object();
    calls.push_back({c["name"].get<std::string>(), args.is_string() ? args.get<std::string>() : args.dump()});
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

std::optional<ToolCallHead> tool_call_head(std::string_view text, ToolFormat f) {
  const std::string_view args_key = f == ToolFormat::kLlama3 ? "\"parameters\"" : "\"arguments\"";
  const size_t name_key = text.find("\"name\"");
  const size_t key = text.find(args_key);
  if (name_key == std::string_view::npos || key == std::string_view::npos || key < name_key) return std::nullopt;
  // The name: the string between the name's colon and the comma before the arguments' key.
  const size_t open = text.find('"', text.find(':', name_key + 6));
  const size_t comma = text.rfind(',', key);
  if (open == std::string_view::npos || comma == std::string_view::npos || comma < open) return std::nullopt;
  const size_t close = text.find_last_of('"', comma);
  json name = json::parse(text.substr(open, close + 1 - open), nullptr, /*allow_exceptions=*/false);
  if (!name.is_string()) return std::nullopt;
  const size_t colon = text.find(':', key + args_key.size());
  if (colon == std::string_view::npos) return std::nullopt;
  const size_t at = text.find_first_not_of(" \t\r\n", colon + 1);
  if (at == std::string_view::npos) return std::nullopt;
  return ToolCallHead{name.get<std::string>(), at};
}

std::optional<size_t> tool_call_arguments_end(std::string_view text, ToolFormat f) {
  auto trim = [&] {
    const size_t last = text.find_last_not_of(" \t\r\n");
    text = text.substr(0, last == std::string_view::npos ? 0 : last + 1);
  };
  trim();
  const std::string_view closer = f == ToolFormat::kHermes ? "</tool_call>" : f == ToolFormat::kMistral ? "]" : "";
  if (text.size() < closer.size() || text.substr(text.size() - closer.size()) != closer) return std::nullopt;
  text.remove_suffix(closer.size());
  trim();
  if (text.empty() || text.back() != '}') return std::nullopt;  // the call object's end
  text.remove_suffix(1);
  trim();
  return text.size();
}

}  // namespace hfs::server
