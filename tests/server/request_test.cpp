#include "server/request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace hfs::server {
namespace {

std::optional<ApiError> parse(const std::string& body, bool chat, CompletionRequest* out = nullptr) {
  CompletionRequest r;
  auto e = parse_completion_request(body, chat, r);
  if (out) *out = r;
  return e;
}

TEST(CompletionRequest, ParsesOpenAiFields) {
  CompletionRequest r;
  ASSERT_FALSE(parse(R"({"model":"m","messages":[{"role":"system","content":"Be brief."},
      {"role":"user","content":[{"type":"text","text":"Hi "},{"type":"text","text":"there"}]}],
      "max_completion_tokens":12,"temperature":0.5,"top_p":0.9,"top_k":3,"min_p":0.1,"seed":-1,
      "stop":["a","b"],"stream":true,"stream_options":{"include_usage":true},"presence_penalty":0.5,
      "frequency_penalty":-0.25,"logit_bias":{"7":-100},"n":1,"user":"u","metadata":{},"store":false})",
                     true, &r));
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[1].content, "Hi there");
  EXPECT_EQ(r.max_tokens, 12);
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.sampling.top_p, 0.9f);
  EXPECT_EQ(r.sampling.top_k, 3);
  EXPECT_TRUE(r.seeded);
  EXPECT_EQ(r.sampling.seed, UINT64_MAX);  // -1 as the 64-bit pattern
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(r.stream && r.include_usage);
  EXPECT_FLOAT_EQ(r.sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r.sampling.frequency_penalty, -0.25f);
  ASSERT_EQ(r.sampling.logit_bias.size(), 1u);
  EXPECT_EQ(r.sampling.logit_bias[0].first, 7);
}

TEST(CompletionRequest, DefaultsAreOpenAis) {
  CompletionRequest r;
  ASSERT_FALSE(parse(R"({"prompt":"x"})", false, &r));
  EXPECT_EQ(r.prompt, "x");
  // The one default temperature of every front end (llama.cpp's), not OpenAI's 1.
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.8f);
  EXPECT_FALSE(r.max_tokens.has_value());
  EXPECT_FALSE(r.seeded);
  ASSERT_FALSE(parse(R"({"prompt":[1,2,3]})", false, &r));
  EXPECT_TRUE(r.prompt_is_tokens);
  EXPECT_EQ(r.prompt_tokens, (std::vector<int32_t>{1, 2, 3}));
}

TEST(CompletionRequest, ErrorsNameTheField) {
  struct Case {
    const char* body;
    bool chat;
    const char* param;
    const char* words;
  };
  const Case cases[] = {
      {"{", false, "", "not valid JSON"},
      {"[1]", false, "", "must be a JSON object"},
      {R"({})", true, "messages", "required"},
      {R"({"messages":[]})", true, "messages", "must not be empty"},
      {R"({"messages":[{"content":"x"}]})", true, "messages[0].role", "must be a string"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})", true, "messages[0].content[0]", "text only"},
      {R"({"prompt":5})", false, "prompt", "a string or an array"},
      {R"({"prompt":["a","b"]})", false, "prompt", "one prompt per request"},
      {R"({"prompt":"x","max_tokens":0})", false, "max_tokens", "[1, "},
      {R"({"prompt":"x","max_tokens":1.5})", false, "max_tokens", "an integer"},
      {R"({"prompt":"x","temperature":"hot"})", false, "temperature", "a number, got a string"},
      {R"({"prompt":"x","top_p":0})", false, "top_p", "(0, 1]"},
      {R"({"prompt":"x","presence_penalty":3})", false, "presence_penalty", "[-2, 2]"},
      {R"({"prompt":"x","stop":[1]})", false, "stop", "array of strings"},
      {R"({"prompt":"x","logit_bias":{"a":1}})", false, "logit_bias", "token ids"},
      {R"({"prompt":"x","logit_bias":{"1":500}})", false, "logit_bias", "[-100, 100]"},
      {R"({"prompt":"x","stream_options":{"include_usage":1}})", false, "stream_options.include_usage", "boolean"},
      {R"({"prompt":"x","n":30})", false, "n", "[1, 16]"},
      {R"({"prompt":"x","logprobs":"yes"})", false, "logprobs", "an integer"},
      {R"({"prompt":"x","echo":true})", false, "echo", "not supported"},
      {R"({"prompt":"x","best_of":2})", false, "best_of", "not supported"},
      {R"({"messages":[{"role":"user","content":"x"}],"tools":[{}]})", true, "tools", "'tools[0]' must be {"},
      {R"({"prompt":"x","tools":[{"type":"function","function":{"name":"f"}}]})", false, "tools", "needs /v1/chat/completions"},
      {R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],
           "tool_choice":{"type":"function","function":{"name":"g"}}})", true, "tool_choice", "'g', which is not in 'tools'"},
      {R"({"messages":[{"role":"user","content":"x"}],"tool_choice":"required"})", true, "tool_choice", "needs 'tools'"},
      {R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],
           "grammar":"root ::= \"a\""})", true, "grammar", "both constrain"},
      {R"({"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{"}}]}]})", true,
       "messages[0].tool_calls[0]", "not valid JSON"},
      {R"({"messages":[{"role":"user","content":"x"}],"functions":[{"name":"f"}]})", true, "functions", "use 'tools'"},
      {R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema"}})", true, "response_format",
       "'response_format.json_schema' must be an object"},
      {R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"a"}}})",
       true, "response_format", "'response_format.json_schema.schema' must be a JSON Schema object"},
      {R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"xml"}})", true, "response_format",
       "must be \"text\", \"json_object\" or \"json_schema\", got \"xml\""},
      {R"({"messages":[{"role":"user","content":"x"}],"response_format":"json"})", true, "response_format", "an object"},
  };
  for (const Case& c : cases) {
    auto e = parse(c.body, c.chat);
    ASSERT_TRUE(e.has_value()) << c.body;
    EXPECT_EQ(e->status, 400) << c.body;
    EXPECT_EQ(e->param, c.param) << c.body;
    EXPECT_NE(e->message.find(c.words), std::string::npos) << c.body << " → " << e->message;
    // OpenAI's error shape.
    auto j = nlohmann::json::parse(e->body());
    EXPECT_EQ(j["error"]["message"], e->message);
    EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  }
}

TEST(CompletionRequest, ResponseFormatsAreParsed) {
  CompletionRequest r;
  ASSERT_FALSE(parse_completion_request(R"({"prompt":"x","response_format":{"type":"json_object"}})", false, r));
  EXPECT_EQ(r.constraint.kind, CompletionRequest::Constraint::Kind::kJsonObject);
  EXPECT_EQ(r.constraint.field, "response_format");
  ASSERT_FALSE(parse_completion_request(
      R"({"prompt":"x","response_format":{"type":"json_schema","json_schema":{"name":"n","strict":true,
          "schema":{"type":"object","properties":{"a":{"type":"integer"}}}}}})",
      false, r));
  EXPECT_EQ(r.constraint.kind, CompletionRequest::Constraint::Kind::kJsonSchema);
  EXPECT_EQ(nlohmann::json::parse(r.constraint.text),
            nlohmann::json::parse(R"({"type":"object","properties":{"a":{"type":"integer"}}})"));
  ASSERT_FALSE(parse_completion_request(R"({"prompt":"x","response_format":{"type":"text"}})", false, r));
  EXPECT_EQ(r.constraint.kind, CompletionRequest::Constraint::Kind::kNone);
}

// Every other server's constraint field is taken, each into the kind and text the generation compiles.
TEST(CompletionRequest, OtherServersConstraintFieldsAreHonoured) {
  using Kind = CompletionRequest::Constraint::Kind;
  struct Case {
    const char* body;
    Kind kind;
    const char* text;
    const char* field;
  } cases[] = {
      {R"({"prompt":"x","grammar":"root ::= \"yes\" | \"no\""})", Kind::kGbnf, R"(root ::= "yes" | "no")", "grammar"},
      {R"({"prompt":"x","json_schema":{"type":"integer"}})", Kind::kJsonSchema, R"({"type":"integer"})", "json_schema"},
      {R"({"prompt":"x","guided_json":{"type":"object", "properties":{}}})", Kind::kJsonSchema,
       R"({"type":"object","properties":{}})", "guided_json"},
      {R"({"prompt":"x","guided_json":"{\"type\": \"string\"}"})", Kind::kJsonSchema, R"({"type":"string"})", "guided_json"},
      {R"({"prompt":"x","guided_regex":"[0-9]+"})", Kind::kRegex, "[0-9]+", "guided_regex"},
      {R"({"prompt":"x","guided_grammar":"root ::= [a-z]+"})", Kind::kGbnf, "root ::= [a-z]+", "guided_grammar"},
      {R"({"prompt":"x","guided_choice":["yes","no \"quoted\"\n"]})", Kind::kGbnf,
       "root ::= \"yes\" | \"no \\\"quoted\\\"\\x0A\"\n", "guided_choice"},
      {R"({"prompt":"x","structured_outputs":{"regex":"a|b"}})", Kind::kRegex, "a|b", "structured_outputs.regex"},
      {R"({"prompt":"x","response_format":{"type":"json_object","schema":{"type":"array"}}})", Kind::kJsonSchema,
       R"({"type":"array"})", "response_format"},
      {R"({"prompt":"x","guided_decoding_backend":"xgrammar","guided_regex":"a"})", Kind::kRegex, "a", "guided_regex"},
  };
  for (const Case& c : cases) {
    CompletionRequest r;
    auto e = parse_completion_request(c.body, false, r);
    ASSERT_FALSE(e.has_value()) << c.body << ": " << e->message;
    EXPECT_EQ(r.constraint.kind, c.kind) << c.body;
    EXPECT_EQ(r.constraint.text, c.text) << c.body;
    EXPECT_EQ(r.constraint.field, c.field) << c.body;
  }
  // Two constraints: refused, naming both (one of them would be ignored).
  auto e = parse(R"({"prompt":"x","response_format":{"type":"json_object"},"grammar":"root ::= \"a\""})", false);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->param, "grammar");
  EXPECT_NE(e->message.find("'response_format'"), std::string::npos) << e->message;
  // Wrong shapes name the field.
  for (const auto& [body, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"prompt":"x","grammar":5})", "grammar"},
           {R"({"prompt":"x","guided_choice":[]})", "guided_choice"},
           {R"({"prompt":"x","guided_choice":["a", 1]})", "guided_choice"},
           {R"({"prompt":"x","guided_json":"not json"})", "guided_json"},
           {R"({"prompt":"x","json_schema":"{}"})", "json_schema"},
           {R"({"prompt":"x","structured_outputs":{"structural_tag":"x"}})", "structured_outputs.structural_tag"}}) {
    auto err = parse(body, false);
    ASSERT_TRUE(err.has_value()) << body;
    EXPECT_EQ(err->param, field) << body;
  }
}

TEST(CompletionRequest, LogprobsAndChoices) {
  CompletionRequest r;
  ASSERT_FALSE(parse_completion_request(R"({"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":3,"n":3})",
                                        true, r));
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 3);
  EXPECT_EQ(r.n, 3);
  ASSERT_FALSE(parse_completion_request(R"({"prompt":"x","logprobs":2})", false, r));
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 2);
  ASSERT_FALSE(parse_completion_request(R"({"prompt":"x","logprobs":0})", false, r));
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 0);
  ASSERT_FALSE(parse_completion_request(R"({"prompt":"x"})", false, r));
  EXPECT_FALSE(r.logprobs);
  EXPECT_EQ(r.n, 1);
  for (const auto& [body, chat, field] : std::vector<std::tuple<std::string, bool, std::string>>{
           {R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})", true, "top_logprobs"},
           {R"({"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":21})", true, "top_logprobs"},
           {R"({"messages":[{"role":"user","content":"x"}],"logprobs":2})", true, "logprobs"},
           {R"({"prompt":"x","logprobs":21})", false, "logprobs"},
           {R"({"prompt":"x","n":0})", false, "n"},
           {R"({"prompt":"x","n":17})", false, "n"}}) {
    auto e = parse(body, chat);
    ASSERT_TRUE(e.has_value()) << body;
    EXPECT_EQ(e->param, field) << body;
  }
}

TEST(CompletionRequest, NeutralValuesOfRefusedFieldsAreAccepted) {
  EXPECT_FALSE(parse(R"({"prompt":"x","n":1,"logprobs":false,"tools":[],"response_format":{"type":"text"},"echo":false,
                       "best_of":1,"user":"u","metadata":{"a":"b"},"store":true,"unknown_field":1})",
                     false));
}

TEST(CompletionRequest, DeepNestingIsRefusedBeforeParsing) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  for (const std::string& body : {R"({"prompt": )" + deep + "}", R"({"prompt": "x", "n": )" + deep + "}",
                                  std::string(200000, '{')}) {
    auto e = parse(body, false);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->code, "json_too_deep");
    EXPECT_NE(e->message.find("64 levels"), std::string::npos) << e->message;
  }
  // 64 levels parse (and are then judged on what they hold).
  auto e = parse(R"({"prompt": "x", "metadata": )" + std::string(63, '[') + std::string(63, ']') + "}", false);
  EXPECT_FALSE(e.has_value()) << e->message;
}

TEST(CompletionRequest, OtherServersFieldsThatChangeTheAnswerAreRefusedByName) {
  for (const char* field : {"guided_whitespace_pattern", "n_predict", "min_tokens", "stop_token_ids", "typical_p"}) {
    auto e = parse(std::string(R"({"prompt": "x", ")") + field + R"(": ["a"]})", false);
    ASSERT_TRUE(e.has_value()) << field;
    EXPECT_EQ(e->param, field);
    EXPECT_NE(e->message.find(std::string("'") + field + "'"), std::string::npos) << e->message;
  }
  // Null, and values that change nothing, are accepted.
  EXPECT_FALSE(parse(R"({"prompt": "x", "grammar": null, "ignore_eos": false, "min_tokens": 0, "skip_special_tokens": true})",
                     false).has_value());
  auto e = parse(R"({"messages": [{"role": "user", "content": "x"}], "ignore_eos": true})", true);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->param, "ignore_eos");
}

}  // namespace
}  // namespace hfs::server
