// Chat-template builtins: filters (`x | trim`), tests (`x is defined`), methods (`s.startswith('a')`,
// `d.items()`) and Python string helpers, with Python/Jinja2 semantics (code-point lengths and
// slices, Unicode whitespace for strip/trim/split).
//
// Every builtin returns Result: wrong argument types are kExecution errors naming the builtin and
// the type it got; the evaluator prefixes the line/column.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "chat/jinja_value.h"

namespace hfs::chat {

struct BuiltinEnv {
  size_t max_bytes = 16u << 20;   // largest string/list a builtin may produce
};

bool is_known_filter(std::string_view name);
bool is_known_test(std::string_view name);

[[nodiscard]] Result<JValue> apply_filter(std::string_view name, const JValue& operand, const CallArgs& args,
                                          const BuiltinEnv& env);
[[nodiscard]] Result<bool> apply_test(std::string_view name, const JValue& operand, const CallArgs& args);

// The bound method `base.name`, or undefined when `base` has no such method.
JValue get_method(const JValue& base, const std::string& name, const BuiltinEnv& env);

// Python str helpers (UTF-8 in, UTF-8 out).
size_t utf8_length(std::string_view s);
std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right);
[[nodiscard]] Result<JValue> py_slice(const JValue& base, const JValue* start, const JValue* stop, const JValue* step);
// Python ordering of two values (numbers, strings, lists): <0, 0, >0; kExecution when unorderable.
[[nodiscard]] Result<int> py_compare(const JValue& a, const JValue& b);
// Python str/list indexing (negative from the end); undefined when out of range.
JValue py_index(const JValue& base, int64_t index);

}  // namespace hfs::chat
