#include "server/request.h"

#include "core/exact_int.h"

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
    {"grammar", "response_format", nullptr},           // llama.cpp
    {"json_schema", "response_format", nullptr},       // llama.cpp (top level)
    {"guided_json", "response_format", nullptr},       // vLLM
    {"guided_regex", "", nullptr},
    {"guided_choice", "", nullptr},
    {"guided_grammar", "", nullptr},
    {"guided_decoding_backend", "", nullptr},
    {"guided_whitespace_pattern", "", nullptr},
    {"structured_outputs", "response_format", nullptr},
    {"regex", "", nullptr},
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
    {"tool_choice", "", "\"none\""},
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
  if (auto it = j.find("n"); it != j.end() && !it->is_null() && *it != 1)
    return invalid_param("n", "'n' must be 1: this server returns one choice per request, got " + it->dump());
  if (auto it = j.find("best_of"); it != j.end() && !it->is_null() && *it != 1)
    return invalid_param("best_of", "'best_of' is not supported (only 1), got " + it->dump());
  if (auto it = j.find("logprobs"); it != j.end() && !it->is_null() && *it != false && *it != 0)
    return invalid_param("logprobs", "'logprobs' is not supported by this server");
  if (auto it = j.find("top_logprobs"); it != j.end() && !it->is_null() && *it != 0)
    return invalid_param("top_logprobs", "'top_logprobs' is not supported by this server");
  for (const char* name : {"tools", "functions"})
    if (auto it = j.find(name); it != j.end() && !it->is_null() && !(it->is_array() && it->empty()))
      return invalid_param(name, std::string("'") + name + "' (tool calling) is not supported by this server");
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

}  // namespace

// response_format: {"type": "text"}, {"type": "json_object"}, or {"type": "json_schema", "json_schema":
// {"name": ..., "schema": {...}, "strict": ...}} (OpenAI's shape; "strict" may be true or false: the output
// follows the schema either way).
std::optional<ApiError> parse_response_format(const json& j, CompletionRequest& r) {
  auto it = j.find("response_format");
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return wrong_type("response_format", "an object such as {\"type\": \"json_object\"}", *it);
  const json type = it->value("type", json());
  if (type == "text") return std::nullopt;
  if (type == "json_object") {
    r.format = CompletionRequest::Format::kJsonObject;
    return std::nullopt;
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
  r.format = CompletionRequest::Format::kJsonSchema;
  r.json_schema = schema->dump();
  return std::nullopt;
}

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
  if (auto e = parse_response_format(j, r)) return e;
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
