#include "hfstatic/chat_template.h"

#include "chat/evaluator.h"
#include "chat/parser.h"

namespace hfs {

Result<ChatTemplate> ChatTemplate::parse(std::string_view source) {
  HFS_ASSIGN_OR_RETURN(auto program, chat::parse_program(source));
  ChatTemplate t;
  t.source_ = std::string(source);
  t.program_ = std::move(program);
  return t;
}

Result<ChatTemplate> ChatTemplate::from_tokenizer_config(std::string_view json_text, std::string_view name) {
  HFS_ASSIGN_OR_RETURN_CTX(auto doc, Value::parse_json(json_text), "tokenizer_config.json");
  if (!doc.is_object())
    return make_error(ErrorCode::kInvalidArgument, "tokenizer_config.json: expected a JSON object at the top level");
  const Value* tpl = doc.get("chat_template");
  if (!tpl || tpl->is_null())
    return make_error(ErrorCode::kNotFound, "tokenizer_config.json: no 'chat_template' key (the model has no chat template)");
  if (tpl->is_string()) return parse(tpl->as_string());
  if (!tpl->is_array())
    return make_error(ErrorCode::kInvalidArgument,
                      "tokenizer_config.json: 'chat_template' must be a string or a list of {name, template}");
  std::string names;
  for (const Value& entry : tpl->as_array()) {
    const Value* n = entry.get("name");
    const Value* t = entry.get("template");
    if (!n || !n->is_string() || !t || !t->is_string())
      return make_error(ErrorCode::kInvalidArgument,
                        "tokenizer_config.json: 'chat_template' list entries need string 'name' and 'template'");
    if (n->as_string() == name) {
      HFS_ASSIGN_OR_RETURN_CTX(auto parsed, parse(t->as_string()), "chat_template '" + n->as_string() + "'");
      return parsed;
    }
    names += (names.empty() ? "" : ", ") + n->as_string();
  }
  return make_error(ErrorCode::kNotFound, "tokenizer_config.json: no chat template named '" + std::string(name) +
                                              "' (have: " + names + ")");
}

Result<std::string> ChatTemplate::render(const ChatContext& ctx) const {
  Value::Object vars;
  Value::Array messages;
  messages.reserve(ctx.messages.size());
  for (const ChatMessage& m : ctx.messages) {
    Value::Object msg;
    msg.emplace("role", Value(m.role));
    msg.emplace("content", Value(m.content));
    for (const auto& [k, v] : m.extra) msg[k] = v;
    messages.emplace_back(std::move(msg));
  }
  vars.emplace("messages", Value(std::move(messages)));
  vars.emplace("add_generation_prompt", Value(ctx.add_generation_prompt));
  // HF passes these even when unused; templates test `tools is not none`.
  vars.emplace("tools", Value());
  vars.emplace("documents", Value());
  if (!ctx.bos_token.empty()) vars.emplace("bos_token", Value(ctx.bos_token));
  if (!ctx.eos_token.empty()) vars.emplace("eos_token", Value(ctx.eos_token));
  for (const auto& [k, v] : ctx.extra) vars[k] = v;
  return render_variables(vars, ctx.limits, ctx.now_unix_seconds);
}

Result<std::string> ChatTemplate::render_variables(const Value::Object& variables, const RenderLimits& limits,
                                                   int64_t now_unix_seconds) const {
  if (!program_) return make_error(ErrorCode::kInvalidArgument, "chat template: render() on an empty ChatTemplate");
  chat::JObject vars;
  // Messages keep role/content first, as callers build them; the rest of each object follows.
  for (const auto& [k, v] : variables) {
    if (k == "messages" && v.is_array()) {
      chat::JArray msgs;
      for (const Value& m : v.as_array()) {
        if (!m.is_object()) {
          msgs.push_back(chat::JValue::from_value(m));
          continue;
        }
        chat::JObject o;
        for (const char* first : {"role", "content"})
          if (const Value* f = m.get(first)) o.set(first, chat::JValue::from_value(*f));
        for (const auto& [mk, mv] : m.as_object())
          if (mk != "role" && mk != "content") o.set(mk, chat::JValue::from_value(mv));
        msgs.push_back(chat::JValue::object(std::move(o)));
      }
      vars.set(k, chat::JValue::array(std::move(msgs)));
      continue;
    }
    vars.set(k, chat::JValue::from_value(v));
  }
  return chat::evaluate(*program_, vars, limits, now_unix_seconds);
}

}  // namespace hfs
