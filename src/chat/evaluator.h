// Chat-template evaluator: walks a parsed Program with a set of variables and produces the text.
//
// Scoping follows Jinja2: `for` bodies and macros get their own scope (a `set` inside a loop does
// not leak out; namespaces are the way out), `if` does not. Globals: namespace(), range(), dict(),
// raise_exception(msg), strftime_now(fmt) when a clock value is injected. Bounded by RenderLimits:
// depth, steps and output size are checked as it goes.
#pragma once

#include <string>

#include "chat/ast.h"
#include "chat/jinja_value.h"
#include "hfstatic/chat_template.h"

namespace hfs::chat {

[[nodiscard]] Result<std::string> evaluate(const Program& program, const JObject& variables, const RenderLimits& limits,
                                           int64_t now_unix_seconds);

// strftime over a UTC Unix time (the subset %a %A %b %B %d %e %H %I %j %m %M %p %S %y %Y %%).
std::string format_time(const std::string& fmt, int64_t unix_seconds);

}  // namespace hfs::chat
