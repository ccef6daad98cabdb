// ChatFormat: the one choice of prompt format that chat, serve and Python share (chat_template.h).
#include <filesystem>
#include <memory>
#include <string>

#include "core/regular_file.h"
#include "hfstatic/chat_template.h"

namespace hfs {
namespace {

// HF's reference ChatML rendering (the template transformers documents for ChatML models).
constexpr std::string_view kChatML =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
    "'\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// A file may hold a whole tokenizer_config.json (its chat_template is taken) or the Jinja source itself.
Result<std::shared_ptr<const ChatTemplate>> from_file(const std::string& path) {
  HFS_ASSIGN_OR_RETURN_CTX(std::string text, io::read_regular_file(path, uint64_t{16} << 20), "chat template");
  const size_t first = text.find_first_not_of(" \t\r\n");
  auto t = first != std::string::npos && text[first] == '{' && text.find("\"chat_template\"") != std::string::npos
               ? ChatTemplate::from_tokenizer_config(text)
               : ChatTemplate::parse(text);
  if (!t) return t.error().with_context("chat template " + path);
  return std::make_shared<const ChatTemplate>(std::move(*t));
}

}  // namespace

Result<ChatFormat> ChatFormat::select(std::string_view tokenizer_config, std::string_view choice) {
  ChatFormat f;
  f.name_ = choice.empty() ? "default" : std::string(choice);
  if (choice == "plain") return f;
  if (choice == "chatml") {
    HFS_ASSIGN_OR_RETURN(auto t, ChatTemplate::parse(kChatML));
    f.tmpl_ = std::make_shared<const ChatTemplate>(std::move(t));
    return f;
  }
  const bool has_own = tokenizer_config.find("\"chat_template\"") != std::string_view::npos;
  if (choice.empty()) {
    if (!has_own) {
      f.name_ = "plain";
      return f;
    }
    HFS_ASSIGN_OR_RETURN_CTX(auto t, ChatTemplate::from_tokenizer_config(tokenizer_config), "chat template");
    f.tmpl_ = std::make_shared<const ChatTemplate>(std::move(t));
    return f;
  }
  std::error_code ec;
  if (std::filesystem::exists(std::string(choice), ec)) {
    HFS_ASSIGN_OR_RETURN(f.tmpl_, from_file(std::string(choice)));
    return f;
  }
  // A name: an entry of the list form (a program with one template string has no names but "default").
  if (has_own && (choice == "default" || tokenizer_config.find("\"template\"") != std::string_view::npos)) {
    auto t = ChatTemplate::from_tokenizer_config(tokenizer_config, choice);
    if (t) {
      f.tmpl_ = std::make_shared<const ChatTemplate>(std::move(*t));
      return f;
    }
    if (t.error().code() != ErrorCode::kNotFound) return t.error().with_context("chat template");
  }
  return make_error(ErrorCode::kNotFound, "chat template '" + std::string(choice) +
                                              "': not a built-in name (plain, chatml), a template of the program, or a "
                                              "file");
}

Result<ChatPrompt> ChatFormat::render(const ChatContext& ctx) const {
  if (tmpl_) {
    HFS_ASSIGN_OR_RETURN(std::string text, tmpl_->render(ctx));
    return ChatPrompt{std::move(text), false};
  }
  return ChatPrompt{plain_text(ctx.messages), true};
}

std::string ChatFormat::plain_text(const std::vector<ChatMessage>& messages) {
  std::string text;
  for (size_t i = 0; i < messages.size(); ++i) text += (i ? "\n" : "") + messages[i].content;
  return text;
}

Result<ChatPrompt> ChatFormat::render_variables(const Value::Object& variables) const {
  if (tmpl_) {
    HFS_ASSIGN_OR_RETURN(std::string text, tmpl_->render_variables(variables));
    return ChatPrompt{std::move(text), false};
  }
  ChatPrompt p{{}, true};
  auto it = variables.find("messages");
  if (it == variables.end() || !it->second.is_array())
    return make_error(ErrorCode::kInvalidArgument, "chat format plain: 'messages' must be a list");
  size_t i = 0;
  for (const Value& m : it->second.as_array()) {
    const Value* c = m.get("content");
    if (!c || !c->is_string())
      return make_error(ErrorCode::kInvalidArgument, "chat format plain: message " + std::to_string(i) +
                                                         ": 'content' must be a string (no template to render parts)");
    p.text += (i++ ? "\n" : "") + c->as_string();
  }
  return p;
}

}  // namespace hfs
