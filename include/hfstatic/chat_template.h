// hfstatic/chat_template.h — rendering a model's chat template (the Jinja `chat_template` of
// tokenizer_config.json) into the prompt text, without Python.
//
//   hfs::Result<hfs::ChatTemplate> t = hfs::ChatTemplate::from_tokenizer_config(config_json_text);
//   if (!t) return t.error();
//   hfs::ChatContext ctx;
//   ctx.messages = {{"system", "Be brief.", {}}, {"user", "Hi!", {}}};   // role, content, extra fields
//   ctx.add_generation_prompt = true;
//   ctx.bos_token = "<|begin_of_text|>";
//   ctx.eos_token = "<|eot_id|>";
//   hfs::Result<std::string> prompt = t->render(ctx);   // feed to the tokenizer without adding specials
//   (compiled and run by tests/api/usage_examples_test.cpp: keep the two in step)
//
// The interpreter implements the Jinja subset that HF chat templates use (see docs/chat-templates.md):
// text/expression/statement tags with whitespace control, comments, if/elif/else, for (tuple targets,
// inline `if` filter, else, loop.*), set (plain, namespace attribute, block), macro and call, break and
// continue, literals (incl. list/dict/tuple), attribute/subscript/slice access, the usual operators,
// filters, tests, string/dict methods, and the globals namespace(), range(), raise_exception() and
// strftime_now(). Rendering follows HF transformers' environment: trim_blocks and lstrip_blocks are on,
// a single trailing newline of the template is dropped.
//
// Errors (no exception crosses this API):
//   parse:  kInvalidArgument "chat template: line 3 col 7: expected '%}' after 'endif', got 'x'";
//           kUnsupported for Jinja syntax outside the subset (names the construct, line and column).
//   render: kInvalidArgument when the template calls raise_exception(msg) (message carries msg: the
//           conversation is not valid for this model); kExecution for type errors (e.g. `'a' + none`);
//           kResourceExhausted when a RenderLimits bound is hit. All name the line and column.
// A ChatTemplate is immutable after parse; render() is const and safe to call from several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hfstatic/error.h"
#include "hfstatic/export_macro.h"
#include "hfstatic/value.h"

namespace hfs {

namespace chat {
struct Program;  // parsed template (src/chat/ast.h)
}  // namespace chat

struct HFS_API ChatMessage {
  std::string role;     // "system" | "user" | "assistant" | "tool" | ...
  std::string content;
  // Extra message fields visible to the template as message.<key> (e.g. "reasoning_content",
  // "tool_calls"). A key named "role" or "content" here replaces the field above; a null `content`
  // entry makes message.content none (some templates test for that).
  Value::Object extra;
};

// Bounds for untrusted templates and inputs. Exceeding one is an error, never a crash or hang.
struct HFS_API RenderLimits {
  size_t max_output_bytes = 16u << 20;   // rendered text
  int max_depth = 200;                   // nested expression/statement/macro evaluation
  int64_t max_steps = 10'000'000;        // loop iterations + statements executed + macro calls
  size_t max_items = 1u << 20;           // elements of one list a template builds (+, *, range): a list
                                         // doubled in a loop reaches it in milliseconds, not gigabytes
};

struct HFS_API ChatContext {
  std::vector<ChatMessage> messages;
  bool add_generation_prompt = false;
  std::string bos_token;   // exposed as bos_token; an empty string leaves the variable undefined
  std::string eos_token;   // exposed as eos_token; likewise
  // Returned by strftime_now(fmt), formatted with fmt (%d %b %Y %B %m %y %H %M %S %j %A %a %%):
  // injected so rendering is deterministic. Unix seconds, UTC. Negative → strftime_now is undefined.
  int64_t now_unix_seconds = -1;
  // Further template variables (tools, enable_thinking, date_string, ...). They shadow the fields above
  // when the names collide, e.g. extra["messages"] replaces `messages`.
  Value::Object extra;
  RenderLimits limits;
};

class HFS_API ChatTemplate {
 public:
  // Parses Jinja source. Errors name the line and column of the offending token.
  [[nodiscard]] static Result<ChatTemplate> parse(std::string_view source);
  // Reads `chat_template` from tokenizer_config.json text: either a string, or the list form
  // [{"name": "default", "template": "..."}, {"name": "tool_use", ...}] from which `name` is picked.
  [[nodiscard]] static Result<ChatTemplate> from_tokenizer_config(std::string_view json_text,
                                                                  std::string_view name = "default");

  [[nodiscard]] Result<std::string> render(const ChatContext& ctx) const;
  // The same with every variable supplied as a Value (messages as an array of objects): the form used
  // when messages carry structured content (lists of parts) or tool calls.
  [[nodiscard]] Result<std::string> render_variables(const Value::Object& variables,
                                                     const RenderLimits& limits = {},
                                                     int64_t now_unix_seconds = -1) const;

  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::shared_ptr<const chat::Program> program_;
};

// How a front end (the CLI's chat and serve, Python's Runner.chat) turns messages into a prompt: one choice,
// made the same way everywhere.
//
//   auto f = hfs::ChatFormat::select(program->embedded_file("tokenizer_config.json"), "");  // or "chatml", a file
//   hfs::Result<hfs::ChatPrompt> p = f->render(ctx);   // then tokenizer.encode(p->text, p->add_special)
//
// `choice`:
//   ""        the program's chat template (tokenizer_config.json's `chat_template`, its "default" entry in the
//             list form); a program without one gets "plain".
//   "plain"   no template: the messages' contents one per line, in order, roles dropped, encoded with the
//             tokenizer's special tokens (BOS) added; add_generation_prompt adds nothing, so the model continues
//             the last message's line. This suits base models (the bundled default model is one).
//   "chatml"  the ChatML template (<|im_start|>role\ncontent<|im_end|>\n ..., HF's reference rendering).
//   NAME      an entry of the list form of the program's `chat_template` (e.g. "tool_use").
//   PATH      a file of Jinja source (at most 16 MiB), or a tokenizer_config.json holding `chat_template`.
// Anything else is kNotFound naming the choice and the names available.
struct HFS_API ChatPrompt {
  std::string text;
  bool add_special = false;  // whether the tokenizer adds its special tokens (a template writes its own)
};

class HFS_API ChatFormat {
 public:
  [[nodiscard]] static Result<ChatFormat> select(std::string_view tokenizer_config, std::string_view choice);
  // "plain", "chatml", "default" (the program's), the list entry's name, or the file's path.
  const std::string& name() const { return name_; }
  bool is_plain() const { return !tmpl_; }
  // The template itself; null for "plain".
  const ChatTemplate* chat_template() const { return tmpl_.get(); }
  [[nodiscard]] Result<ChatPrompt> render(const ChatContext& ctx) const;
  // The "plain" rendering of `messages`: their contents one per line.
  static std::string plain_text(const std::vector<ChatMessage>& messages);
  // The same with every variable as a Value (ChatTemplate::render_variables); "plain" reads
  // variables["messages"][i]["content"] (strings; other values are an error naming the message).
  [[nodiscard]] Result<ChatPrompt> render_variables(const Value::Object& variables) const;

 private:
  std::string name_;
  std::shared_ptr<const ChatTemplate> tmpl_;
};

}  // namespace hfs
