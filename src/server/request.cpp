#include "server/request.h"

#include "core/exact_int.h"
#include "hfstatic/value.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace hfs::server {
namespace {

// Ordered: a response_format schema keeps its key order (its properties are generated in that order).
using json = nlohmann::ordered_json;

// The JSON type in the words of an error message.
std::string type_name(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

ApiError wrong_type(const std::string& name, const std::string& expected, const json& v) {
  return invalid_param(name, "'" + name + "' must be " + expected + ", got " + type_name(v));
}

// A number field within [lo, hi] (null = absent).
std::optional<ApiError> number(const json& j, const char* name, double lo, double hi, std::optional<double>& out) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) return wrong_type(name, "a number", *it);
  const double v = it->get<double>();
  if (!(v >= lo && v <= hi)) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "'%s' must be in [%g, %g], got %g", name, lo, hi, v);
    return invalid_param(name, buf);
  }
  out = v;
  return std::nullopt;
}

std::optional<ApiError> integer(const json& j, const char* name, int64_t lo, int64_t hi, std::optional<int64_t>& out) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (it->is_number_float()) {
    const double d = it->get<double>();
    if (d != std::trunc(d)) return wrong_type(name, "an integer", *it);
  } else if (!it->is_number()) {
    return wrong_type(name, "an integer", *it);
  }
  const double d = it->get<double>();
  if (!(d >= static_cast<double>(lo) && d <= static_cast<double>(hi)))
    return invalid_param(name, "'" + std::string(name) + "' must be in [" + std::to_string(lo) + ", " +
                                   std::to_string(hi) + "], got " + it->dump());
  out = it->is_number_unsigned() ? static_cast<int64_t>(it->get<uint64_t>()) : it->is_number_integer() ? it->get<int64_t>()
                                                                                                     : static_cast<int64_t>(d);
  return std::nullopt;
}

std::optional<ApiError> boolean(const json& j, const char* name, bool& out) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return wrong_type(name, "a boolean", *it);
  out = it->get<bool>();
  return std::nullopt;
}

// Message content: a string, or an array of {"type": "text", "text": ...} parts (joined).
std::optional<ApiError> content_text(const json& c, const std::string& where, std::string& out) {
  if (c.is_null()) return std::nullopt;
  if (c.is_string()) {
    out = c.get<std::string>();
    return std::nullopt;
  }
  if (!c.is_array()) return wrong_type(where, "a string or an array of text parts", c);
  for (size_t i = 0; i < c.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!c[i].is_object()) return wrong_type(at, "an object", c[i]);
    auto type = c[i].find("type");
    if (type == c[i].end() || !type->is_string() || *type != "text")
      return invalid_param(at, "'" + at + ".type' must be \"text\" (this server takes text only)");
    auto text = c[i].find("text");
    if (text == c[i].end() || !text->is_string()) return wrong_type(at + ".text", "a string", text == c[i].end() ? json() : *text);
    out += text->get<std::string>();
  }
  return std::nullopt;
}

// JSON into the template's values (object keys sorted: templates read them by name).
Value to_value(const json& v) {
  auto parsed = Value::parse_json(v.dump());
  return parsed ? std::move(*parsed) : Value();
}

// An assistant turn's tool_calls (their arguments, JSON text in OpenAI's shape, given to the template as
// objects, which is what the templates print with tojson) and a tool turn's tool_call_id and name.
std::optional<ApiError> message_tool_fields(const json& m, const std::string& at, ChatMessage& msg) {
  if (auto calls = m.find("tool_calls"); calls != m.end() && !calls->is_null()) {
    if (!calls->is_array()) return wrong_type(at + ".tool_calls", "an array", *calls);
    json list = json::array();
    for (size_t i = 0; i < calls->size(); ++i) {
      const json& c = (*calls)[i];
      const std::string where = at + ".tool_calls[" + std::to_string(i) + "]";
      auto fn = c.is_object() ? c.find("function") : c.end();
      if (!c.is_object() || fn == c.end() || !fn->is_object() || !fn->contains("name") || !(*fn)["name"].is_string())
        return invalid_param(where, "'" + where + "' must be {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}");
      json call = c;
      if (auto args = fn->find("arguments"); args != fn->end() && args->is_string()) {
        json parsed = json::parse(args->get<std::string>(), nullptr, /*allow_exceptions=*/false);
        if (parsed.is_discarded()) return invalid_param(where, "'" + where + ".function.arguments' is not valid JSON");
        call["function"]["arguments"] = std::move(parsed);
      }
      list.push_back(std::move(call));
    }
    msg.extra["tool_calls"] = to_value(list);
  }
  for (const char* key : {"tool_call_id", "name"})
    if (auto v = m.find(key); v != m.end() && !v->is_null()) {
      if (!v->is_string()) return wrong_type(at + "." + key, "a string", *v);
      msg.extra[key] = Value(v->get<std::string>());
    }
  return std::nullopt;
}

// tools: [{"type": "function", "function": {"name", "description", "parameters"}}]; tool_choice: "none",
// "auto", "required" or {"type": "function", "function": {"name"}}.
std::optional<ApiError> parse_tools(const json& j, CompletionRequest& r) {
  auto it = j.find("tools");
  if (it != j.end() && !it->is_null()) {
    if (!it->is_array()) return wrong_type("tools", "an array of {\"type\": \"function\", \"function\": {...}}", *it);
    if (!it->empty() && !r.chat) return invalid_param("tools", "'tools' needs /v1/chat/completions (the chat template renders them)");
    for (size_t i = 0; i < it->size(); ++i) {
      const json& t = (*it)[i];
      const std::string at = "tools[" + std::to_string(i) + "]";
      if (!t.is_object() || t.value("type", json()) != "function" || !t.contains("function") || !t["function"].is_object())
        return invalid_param("tools", "'" + at + "' must be {\"type\": \"function\", \"function\": {\"name\", \"parameters\"}}");
      const json& fn = t["function"];
      if (!fn.contains("name") || !fn["name"].is_string() || fn["name"].get<std::string>().empty())
        return invalid_param("tools", "'" + at + ".function.name' must be a non-empty string");
      Tool tool{fn["name"].get<std::string>(), "{\"type\":\"object\"}"};
      if (auto p = fn.find("parameters"); p != fn.end() && !p->is_null()) {
        if (!p->is_object()) return wrong_type(at + ".function.parameters", "a JSON Schema object", *p);
        tool.parameters = p->dump();
      }
      r.tools.push_back(std::move(tool));
    }
    r.tools_json = it->dump();
  }
  auto c = j.find("tool_choice");
  r.tool_choice = r.tools.empty() ? ToolChoice::kNone : ToolChoice::kAuto;
  if (c == j.end() || c->is_null()) return std::nullopt;
  if (*c == "none") {
    r.tool_choice = ToolChoice::kNone;
    return std::nullopt;
  }
  if (r.tools.empty()) return invalid_param("tool_choice", "'tool_choice' " + c->dump() + " needs 'tools'");
  if (*c == "auto") r.tool_choice = ToolChoice::kAuto;
  else if (*c == "required") r.tool_choice = ToolChoice::kRequired;
  else if (c->is_object() && c->contains("function") && (*c)["function"].is_object() && (*c)["function"].contains("name") &&
           (*c)["function"]["name"].is_string()) {
    r.tool_choice = ToolChoice::kNamed;
    r.tool_name = (*c)["function"]["name"].get<std::string>();
    bool known = false;
    for (const Tool& t : r.tools) known = known || t.name == r.tool_name;
    if (!known) return invalid_param("tool_choice", "'tool_choice' names '" + r.tool_name + "', which is not in 'tools'");
  } else {
    return invalid_param("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or "
                                        "{\"type\": \"function\", \"function\": {\"name\": ...}}, got " + c->dump());
  }
  return std::nullopt;
}

std::optional<ApiError> parse_messages(const json& j, std::vector<ChatMessage>& out) {
  auto it = j.find("messages");
  if (it == j.end()) return invalid_param("messages", "'messages' is required");
  if (!it->is_array()) return wrong_type("messages", "an array", *it);
  if (it->empty()) return invalid_param("messages", "'messages' must not be empty");
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return wrong_type(at, "an object", m);
    auto role = m.find("role");
    if (role == m.end() || !role->is_string())
      return wrong_type(at + ".role", "a string", role == m.end() ? json() : *role);
    ChatMessage msg;
    msg.role = role->get<std::string>();
    if (auto c = m.find("content"); c != m.end())
      if (auto e = content_text(*c, at + ".content", msg.content)) return e;
    if (auto e = message_tool_fields(m, at, msg)) return e;
    out.push_back(std::move(msg));
  }
  return std::nullopt;
}

std::optional<ApiError> parse_prompt(const json& j, CompletionRequest& r) {
  auto it = j.find("prompt");
  if (it == j.end() || it->is_null()) return invalid_param("prompt", "'prompt' is required");
  if (it->is_string()) {
    r.prompt = it->get<std::string>();
    return std::nullopt;
  }
  if (it->is_array()) {
    if (it->size() == 1 && (*it)[0].is_string()) {
      r.prompt = (*it)[0].get<std::string>();
      return std::nullopt;
    }
    if (!it->empty() && (*it)[0].is_string())
      return invalid_param("prompt", "'prompt' holds " + std::to_string(it->size()) +
                                         " prompts; this server answers one prompt per request");
    for (const json& t : *it) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > std::numeric_limits<int32_t>::max())
        return invalid_param("prompt", "'prompt' must be a string or an array of token ids (integers >= 0), got an element " + t.dump());
      r.prompt_tokens.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
    if (r.prompt_tokens.empty()) return invalid_param("prompt", "'prompt' must not be empty");
    r.prompt_is_tokens = true;
    return std::nullopt;
  }
  return wrong_type("prompt", "a string or an array of token ids", *it);
}

std::optional<ApiError> parse_stop(const json& j, std::vector<std::string>& out) {
  auto it = j.find("stop");
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) {
    out.push_back(it->get<std::string>());
    return std::nullopt;
  }
  if (!it->is_array()) return wrong_type("stop", "a string or an array of strings", *it);
  if (it->size() > 16) return invalid_param("stop", "'stop' holds " + std::to_string(it->size()) + " strings; at most 16");
  for (const json& s : *it) {
    if (!s.is_string()) return wrong_type("stop", "a string or an array of strings", s);
    out.push_back(s.get<std::string>());
  }
  return std::nullopt;
}

// Other servers' request fields that change the answer (llama.cpp's, vLLM's, newer OpenAI ones): a client
// written for them would get an answer that silently ignored what it asked for, so each is refused by name
// unless its value is the one that changes nothing. What this server does take instead is named.
struct Foreign {
  const char* name;
  const char* instead;  // "" when there is no equivalent here
  const char* neutral;  // JSON text of a value that changes nothing, or nullptr (any value refused)
};
constexpr Foreign kForeign[] = {
    {"guided_whitespace_pattern", "", nullptr},        // vLLM
    {"regex", "guided_regex", nullptr},
    {"n_predict", "max_tokens", nullptr},               // llama.cpp
    {"repeat_penalty", "repetition_penalty", "1"},
    {"repeat_last_n", "", nullptr},
    {"penalty_last_n", "", nullptr},
    {"typical_p", "", "1"},
    {"tfs_z", "", "1"},
    {"mirostat", "", "0"},
    {"dynatemp_range", "", "0"},
    {"n_probs", "", "0"},
    {"samplers", "", nullptr},
    {"ignore_eos", "", "false"},                        // vLLM and llama.cpp
    {"min_tokens", "", "0"},
    {"stop_token_ids", "stop", "[]"},
    {"bad_words", "logit_bias", "[]"},
    {"allowed_token_ids", "logit_bias", nullptr},
    {"prompt_logprobs", "", nullptr},
    {"use_beam_search", "", "false"},
    {"length_penalty", "", "1"},
    {"include_stop_str_in_output", "", "false"},
    {"skip_special_tokens", "", "true"},
    {"truncate_prompt_tokens", "", nullptr},
    {"add_special_tokens", "", nullptr},
    {"chat_template", "", nullptr},
    {"chat_template_kwargs", "", nullptr},
    {"continue_final_message", "", "false"},
    {"add_generation_prompt", "", "true"},
    {"function_call", "", "\"none\""},
    {"prediction", "", nullptr},                        // OpenAI
    {"modalities", "", "[\"text\"]"},
    {"reasoning_effort", "", nullptr},
};

std::optional<ApiError> refuse_foreign(const json& j) {
  for (const Foreign& f : kForeign) {
    auto it = j.find(f.name);
    if (it == j.end() || it->is_null()) continue;
    if (f.neutral && *it == json::parse(f.neutral)) continue;
    std::string message = std::string("'") + f.name + "' is not supported by this server";
    if (*f.instead) message += std::string(" (use '") + f.instead + "')";
    message += ": it would change the answer, so it is refused rather than ignored";
    return invalid_param(f.name, message);
  }
  return std::nullopt;
}

// Parameters that change the answer and are not implemented: refused by name.
std::optional<ApiError> refuse_unsupported(const json& j) {
  if (auto it = j.find("best_of"); it != j.end() && !it->is_null() && *it != 1)
    return invalid_param("best_of", "'best_of' is not supported (only 1; 'n' returns several choices), got " + it->dump());
  if (auto it = j.find("functions"); it != j.end() && !it->is_null() && !(it->is_array() && it->empty()))
    return invalid_param("functions", "'functions' (the deprecated form of tool calling) is not supported: use 'tools'");
  if (auto it = j.find("echo"); it != j.end() && !it->is_null() && *it != false)
    return invalid_param("echo", "'echo' is not supported by this server");
  if (auto it = j.find("suffix"); it != j.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty()))
    return invalid_param("suffix", "'suffix' is not supported by this server");
  return refuse_foreign(j);
}

std::optional<ApiError> parse_logit_bias(const json& j, SamplingConfig& s) {
  auto it = j.find("logit_bias");
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return wrong_type("logit_bias", "an object mapping token ids to numbers", *it);
  for (const auto& [key, v] : it->items()) {
    // Exactly the digits of an id: " 300", "+300", "0300" and "3e2" are not quietly taken as 300.
    const std::optional<int64_t> id = parse_exact_int(key, 0, std::numeric_limits<int32_t>::max());
    if (!id)
      return invalid_param("logit_bias", "'logit_bias' keys must be token ids (integers >= 0, digits only), got '" + key + "'");
    if (!v.is_number()) return wrong_type("logit_bias[" + key + "]", "a number", v);
    const double b = v.get<double>();
    if (!(b >= -100 && b <= 100))
      return invalid_param("logit_bias", "'logit_bias' values must be in [-100, 100], got " + v.dump() + " for " + key);
    s.logit_bias.emplace_back(static_cast<int32_t>(*id), static_cast<float>(b));
  }
  return std::nullopt;
}

// A GBNF literal spelling `text` exactly (escapes for the quote, the backslash and control bytes).
std::string gbnf_literal(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') out += '\\', out += static_cast<char>(c);
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else out += static_cast<char>(c);
  }
  return out + "\"";
}

using Constraint = CompletionRequest::Constraint;

// Sets the request's constraint, refusing a second one: two fields that both constrain the output would
// leave one of them ignored.
std::optional<ApiError> set_constraint(CompletionRequest& r, const std::string& field, Constraint::Kind kind, std::string text) {
  if (r.constraint.kind != Constraint::Kind::kNone)
    return invalid_param(field, "'" + field + "' and '" + r.constraint.field +
                                    "' both constrain the output; give one of them");
  r.constraint = Constraint{kind, std::move(text), field};
  return std::nullopt;
}

// A JSON Schema given as an object or a boolean (or, as vLLM takes it, the schema's JSON text).
std::optional<ApiError> schema_text(const json& v, const std::string& field, bool text_ok, std::string& out) {
  if (v.is_object() || v.is_boolean()) {
    out = v.dump();
    return std::nullopt;
  }
  if (text_ok && v.is_string()) {
    json parsed = json::parse(v.get<std::string>(), nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded() || !(parsed.is_object() || parsed.is_boolean()))
      return invalid_param(field, "'" + field + "' must be a JSON Schema (an object, or its JSON text)");
    out = parsed.dump();
    return std::nullopt;
  }
  return wrong_type(field, "a JSON Schema object", v);
}

// guided_choice: the output is exactly one of the strings.
std::optional<ApiError> choice_gbnf(const json& v, const std::string& field, std::string& out) {
  if (!v.is_array() || v.empty()) return wrong_type(field, "a non-empty array of strings", v);
  out = "root ::= ";
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string() || v[i].get<std::string>().empty())
      return invalid_param(field, "'" + field + "' must hold non-empty strings, got " + v[i].dump() + " at index " + std::to_string(i));
    out += (i ? " | " : "") + gbnf_literal(v[i].get<std::string>());
  }
  out += "\n";
  return std::nullopt;
}

// One constraint field of llama.cpp's or vLLM's (`field` as the request names it) into the request.
std::optional<ApiError> foreign_constraint(const json& v, const std::string& field, const std::string& kind, CompletionRequest& r) {
  std::string text;
  if (kind == "json") {
    if (auto e = schema_text(v, field, field != "json_schema", text)) return e;
    return set_constraint(r, field, Constraint::Kind::kJsonSchema, std::move(text));
  }
  if (kind == "choice") {
    if (auto e = choice_gbnf(v, field, text)) return e;
    return set_constraint(r, field, Constraint::Kind::kGbnf, std::move(text));
  }
  if (!v.is_string() || v.get<std::string>().empty()) return wrong_type(field, "a non-empty string", v);
  return set_constraint(r, field, kind == "regex" ? Constraint::Kind::kRegex : Constraint::Kind::kGbnf, v.get<std::string>());
}

// response_format: {"type": "text"}, {"type": "json_object"} (llama.cpp: with an optional "schema"), or
// {"type": "json_schema", "json_schema": {"name": ..., "schema": {...}, "strict": ...}} (OpenAI's shape;
// "strict" may be true or false: the output follows the schema either way).
std::optional<ApiError> parse_response_format(const json& j, CompletionRequest& r) {
  auto it = j.find("response_format");
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return wrong_type("response_format", "an object such as {\"type\": \"json_object\"}", *it);
  const json type = it->value("type", json());
  if (type == "text") return std::nullopt;
  if (type == "json_object") {
    if (auto schema = it->find("schema"); schema != it->end() && !schema->is_null()) {
      std::string text;
      if (auto e = schema_text(*schema, "response_format", false, text)) return e;
      return set_constraint(r, "response_format", Constraint::Kind::kJsonSchema, std::move(text));
    }
    return set_constraint(r, "response_format", Constraint::Kind::kJsonObject, "");
  }
  if (type != "json_schema")
    return invalid_param("response_format", "'response_format.type' must be \"text\", \"json_object\" or \"json_schema\", got " +
                                                type.dump());
  auto spec = it->find("json_schema");
  if (spec == it->end() || !spec->is_object())
    return invalid_param("response_format", "'response_format.json_schema' must be an object {\"name\", \"schema\", \"strict\"}");
  auto schema = spec->find("schema");
  if (schema == spec->end() || !(schema->is_object() || schema->is_boolean()))
    return invalid_param("response_format", "'response_format.json_schema.schema' must be a JSON Schema object");
  return set_constraint(r, "response_format", Constraint::Kind::kJsonSchema, schema->dump());
}

// Every constraint field: response_format, llama.cpp's grammar and json_schema, vLLM's guided_* and
// structured_outputs ({"json" | "regex" | "choice" | "grammar": ...}). At most one may be given.
std::optional<ApiError> parse_constraint(const json& j, CompletionRequest& r) {
  if (auto e = parse_response_format(j, r)) return e;
  static constexpr std::pair<const char*, const char*> kFields[] = {
      {"grammar", "grammar"},          {"json_schema", "json"},       {"guided_json", "json"},
      {"guided_regex", "regex"},       {"guided_choice", "choice"},   {"guided_grammar", "grammar"}};
  for (const auto& [field, kind] : kFields) {
    auto it = j.find(field);
    if (it == j.end() || it->is_null()) continue;
    if (auto e = foreign_constraint(*it, field, kind, r)) return e;
  }
  auto so = j.find("structured_outputs");
  if (so == j.end() || so->is_null()) return std::nullopt;
  if (!so->is_object()) return wrong_type("structured_outputs", "an object such as {\"regex\": \"...\"}", *so);
  for (const auto& [key, v] : so->items()) {
    if (v.is_null()) continue;
    const std::string field = "structured_outputs." + key;
    if (key == "json" || key == "regex" || key == "choice" || key == "grammar") {
      if (auto e = foreign_constraint(v, field, key, r)) return e;
    } else if (key != "disable_fallback" && key != "disable_any_whitespace" && key != "disable_additional_properties" &&
               key != "backend") {
      return invalid_param(field, "'" + field + "' is not supported by this server (it takes json, regex, choice or grammar)");
    }
  }
  return std::nullopt;
}

// logprobs: chat takes "logprobs": true and "top_logprobs": k; completions "logprobs": k (k alternatives).
std::optional<ApiError> parse_logprobs(const json& j, CompletionRequest& r) {
  std::optional<int64_t> k;
  auto it = j.find("logprobs");
  if (r.chat || (it != j.end() && it->is_boolean())) {
    if (auto e = boolean(j, "logprobs", r.logprobs)) return e;
    if (auto e = integer(j, "top_logprobs", 0, kMaxTopLogprobs, k)) return e;
    if (k && *k > 0 && !r.logprobs)
      return invalid_param("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  } else {
    if (auto e = integer(j, "logprobs", 0, kMaxTopLogprobs, k)) return e;
    r.logprobs = k.has_value();
  }
  r.top_logprobs = static_cast<int32_t>(k.value_or(0));
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_completion_request(std::string_view body, bool chat, CompletionRequest& r) {
  if (auto e = json_depth_error(body)) return e;
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalid_param("", "the request body is not valid JSON");
  if (!j.is_object()) return invalid_param("", "the request body must be a JSON object, got " + type_name(j));
  r = CompletionRequest{};
  r.chat = chat;
  r.sampling.temperature = kDefaultTemperature;  // the CLI's and Python's default too (llama.cpp's)
  if (auto it = j.find("model"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return wrong_type("model", "a string", *it);
    r.model = it->get<std::string>();
  }
  if (auto e = chat ? parse_messages(j, r.messages) : parse_prompt(j, r)) return e;
  if (auto e = refuse_unsupported(j)) return e;
  if (auto e = parse_constraint(j, r)) return e;
  if (auto e = parse_logprobs(j, r)) return e;
  if (auto e = parse_tools(j, r)) return e;
  if (r.tool_choice != ToolChoice::kNone && r.constraint.kind != CompletionRequest::Constraint::Kind::kNone)
    return invalid_param(r.constraint.field, "'" + r.constraint.field + "' and 'tools' both constrain the output; give one "
                                             "of them (or \"tool_choice\": \"none\")");
  std::optional<int64_t> n;
  if (auto e = integer(j, "n", 1, kMaxChoices, n)) return e;
  r.n = static_cast<int32_t>(n.value_or(1));
  std::optional<int64_t> max_tokens, max_completion_tokens, top_k, seed;
  if (auto e = integer(j, "max_tokens", 1, std::numeric_limits<int32_t>::max(), max_tokens)) return e;
  if (auto e = integer(j, "max_completion_tokens", 1, std::numeric_limits<int32_t>::max(), max_completion_tokens)) return e;
  if (max_completion_tokens) max_tokens = max_completion_tokens;
  if (max_tokens) r.max_tokens = static_cast<int32_t>(*max_tokens);
  if (auto e = integer(j, "top_k", 0, std::numeric_limits<int32_t>::max(), top_k)) return e;
  if (top_k) r.sampling.top_k = static_cast<int32_t>(*top_k);
  if (auto e = integer(j, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), seed)) return e;
  if (seed) r.sampling.seed = static_cast<uint64_t>(*seed), r.seeded = true;
  std::optional<double> v;
  if (auto e = number(j, "temperature", 0, 2, v)) return e;
  if (v) r.sampling.temperature = static_cast<float>(*v);
  v.reset();
  if (auto e = number(j, "top_p", 0, 1, v)) return e;
  if (v) {
    if (*v == 0) return invalid_param("top_p", "'top_p' must be in (0, 1], got 0");
    r.sampling.top_p = static_cast<float>(*v);
  }
  v.reset();
  if (auto e = number(j, "min_p", 0, 1, v)) return e;
  if (v) r.sampling.min_p = static_cast<float>(*v);
  v.reset();
  if (auto e = number(j, "presence_penalty", -2, 2, v)) return e;
  if (v) r.sampling.presence_penalty = static_cast<float>(*v);
  v.reset();
  if (auto e = number(j, "frequency_penalty", -2, 2, v)) return e;
  if (v) r.sampling.frequency_penalty = static_cast<float>(*v);
  v.reset();
  if (auto e = number(j, "repetition_penalty", 1e-6, 1e6, v)) return e;
  if (v) r.sampling.repetition_penalty = static_cast<float>(*v);
  if (auto e = parse_logit_bias(j, r.sampling)) return e;
  if (auto e = parse_stop(j, r.stop)) return e;
  if (auto e = boolean(j, "stream", r.stream)) return e;
  if (auto it = j.find("stream_options"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return wrong_type("stream_options", "an object", *it);
    if (auto e = boolean(*it, "include_usage", r.include_usage)) {
      e->param = "stream_options.include_usage";
      return e;
    }
  }
  return std::nullopt;
}

}  // namespace hfs::server
