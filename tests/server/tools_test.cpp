// server/tools: the call format read from the real chat templates (tests/chat/templates), the grammar of
// each format accepting the calls those templates themselves write and refusing others, and the parse.
#include "server/tools.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "hfstatic/constraint.h"

namespace hfs::server {
namespace {

std::string read_template(const std::string& name) {
  std::ifstream f(std::string(HFS_SOURCE_DIR) + "/tests/chat/templates/" + name + ".jinja");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const std::vector<Tool> kTools = {
    {"weather", R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false})"},
    {"time", R"({"type":"object","properties":{"zone":{"enum":["utc","local"]}},"required":["zone"],"additionalProperties":false})"}};

bool accepts(const ToolGrammar& g, const std::string& text) {
  auto grammar = Grammar::from_gbnf(g.text, g.root);
  EXPECT_TRUE(grammar.ok()) << (grammar ? "" : grammar.error().to_string());
  if (!grammar) return false;
  GrammarMatcher m(*grammar);
  return m.feed(text) && m.complete();
}

TEST(ToolCalls, FormatsComeFromTheRealTemplates) {
  EXPECT_EQ(tool_format(read_template("qwen2_5")), ToolFormat::kHermes);
  EXPECT_EQ(tool_format(read_template("qwen3")), ToolFormat::kHermes);
  EXPECT_EQ(tool_format(read_template("llama3_2")), ToolFormat::kLlama3);
  EXPECT_EQ(tool_format(read_template("mistral_nemo")), ToolFormat::kMistral);
}

TEST(ToolCalls, GrammarsAcceptTheTemplatesCallsAndNothingElse) {
  struct Case {
    ToolFormat f;
    const char* call;  // as the format's template writes one
  } cases[] = {
      {ToolFormat::kHermes, "<tool_call>\n{\"name\": \"time\", \"arguments\": {\"zone\": \"utc\"}}\n</tool_call>"},
      {ToolFormat::kLlama3, "{\"name\": \"time\", \"parameters\": {\"zone\": \"utc\"}}"},
      {ToolFormat::kMistral, "[TOOL_CALLS][{\"name\": \"time\", \"arguments\": {\"zone\": \"utc\"}}]"},
  };
  for (const Case& c : cases) {
    auto required = tool_call_gbnf(kTools, c.f, ToolChoice::kRequired, "");
    ASSERT_TRUE(required.ok()) << required.error().to_string();
    EXPECT_TRUE(accepts(*required, c.call)) << c.call;
    EXPECT_FALSE(accepts(*required, "Hello")) << tool_format_name(c.f);
    auto named = tool_call_gbnf(kTools, c.f, ToolChoice::kNamed, "weather");
    ASSERT_TRUE(named.ok());
    EXPECT_FALSE(accepts(*named, c.call)) << "the named function only";
    auto automatic = tool_call_gbnf(kTools, c.f, ToolChoice::kAuto, "");
    ASSERT_TRUE(automatic.ok());
    EXPECT_TRUE(accepts(*automatic, c.call));
    EXPECT_TRUE(accepts(*automatic, "Hello, world"));
    // A reply that starts like a call is a call: the bad zone is refused.
    std::string bad = c.call;
    bad.replace(bad.find("utc"), 3, "mars");
    EXPECT_FALSE(accepts(*automatic, bad)) << bad;
    auto parsed = parse_tool_calls(c.call, c.f);
    ASSERT_TRUE(parsed.has_value()) << c.call;
    ASSERT_EQ(parsed->size(), 1u);
    EXPECT_EQ((*parsed)[0].name, "time");
    EXPECT_EQ((*parsed)[0].arguments, R"({"zone":"utc"})");
    EXPECT_FALSE(parse_tool_calls("Hello", c.f).has_value());
  }
  EXPECT_FALSE(tool_call_gbnf(kTools, ToolFormat::kHermes, ToolChoice::kNamed, "nope").ok());
}

// Streaming: the head (name, where the arguments start) once it has arrived, and the arguments' end.
TEST(ToolCalls, HeadAndArgumentsOfAStreamedCall) {
  const std::string call = "<tool_call>\n{\"name\": \"time\", \"arguments\": {\"zone\": \"utc\"}}\n</tool_call>";
  const size_t args = call.find("{\"zone");
  for (size_t n = 0; n <= args; ++n) EXPECT_FALSE(tool_call_head(call.substr(0, n), ToolFormat::kHermes).has_value()) << n;
  auto head = tool_call_head(call.substr(0, args + 1), ToolFormat::kHermes);
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->name, "time");
  EXPECT_EQ(head->arguments_at, args);
  auto end = tool_call_arguments_end(call, ToolFormat::kHermes);
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(call.substr(args, *end - args), "{\"zone\": \"utc\"}");
  const std::string llama = "{\"name\": \"time\", \"parameters\": {\"zone\": \"utc\"} }";
  head = tool_call_head(llama, ToolFormat::kLlama3);
  end = tool_call_arguments_end(llama, ToolFormat::kLlama3);
  ASSERT_TRUE(head.has_value() && end.has_value());
  EXPECT_EQ(llama.substr(head->arguments_at, *end - head->arguments_at), "{\"zone\": \"utc\"}");
  const std::string mistral = "[TOOL_CALLS][{\"name\": \"time\", \"arguments\": {}}]";
  head = tool_call_head(mistral, ToolFormat::kMistral);
  end = tool_call_arguments_end(mistral, ToolFormat::kMistral);
  ASSERT_TRUE(head.has_value() && end.has_value());
  EXPECT_EQ(mistral.substr(head->arguments_at, *end - head->arguments_at), "{}");
  EXPECT_FALSE(tool_call_arguments_end("<tool_call>\n{\"name\": \"t\", \"arguments\": {", ToolFormat::kHermes).has_value());
}

}  // namespace
}  // namespace hfs::server
