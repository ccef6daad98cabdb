// fuzz/targets/chat_template.h — chat-template renderer: ChatTemplate::parse on arbitrary Jinja source, then
// render of a small fixed conversation under tight RenderLimits (so a hostile template ends with
// kResourceExhausted well inside libFuzzer's per-input timeout).
#pragma once

#include "common.h"
#include "hfstatic/chat_template.h"

namespace hfs::fuzz {

inline std::string fuzz_chat_template(const uint8_t* data, size_t size) {
  auto tmpl = ChatTemplate::parse(as_text(data, size));
  if (!tmpl) return "";
  ChatContext ctx;
  ctx.messages = {{"system", "Be brief.", {}}, {"user", "Hi!", {}}, {"assistant", "Hello.", {}}, {"user", "2+2?", {}}};
  ctx.add_generation_prompt = true;
  ctx.bos_token = "<s>";
  ctx.eos_token = "</s>";
  ctx.now_unix_seconds = 1764374400;  // 2025-11-29
  ctx.extra["enable_thinking"] = Value(false);
  ctx.limits.max_output_bytes = 1u << 20;
  ctx.limits.max_depth = 100;
  ctx.limits.max_steps = 200'000;
  auto out = tmpl->render(ctx);
  if (out && out->size() > ctx.limits.max_output_bytes)
    return "rendered " + std::to_string(out->size()) + " bytes, over max_output_bytes";
  return "";
}

}  // namespace hfs::fuzz
