// core/json_duplicate_keys.h — finds an object key that a JSON document states twice.
//
// JSON parsers (nlohmann, Python's json, serde) silently keep one of two equal keys, so a safetensors
// header naming a tensor twice would describe two different byte ranges and the reader would pick one
// without a word. Checking the text itself makes that an error.
//
//   auto dup = hfs::first_duplicate_key(R"({"a": 1, "b": {"c": 2, "c": 3}})");   // {"b", "c"}
//   if (dup) ... dup->back() is the repeated key, the elements before it the enclosing keys.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hfs {

// The path (enclosing object keys, outermost first, then the repeated key) of the first key that appears
// twice in one object, in document order; nullopt when every object's keys are distinct or the text is not
// valid JSON (parse it separately for that error). Keys compare after unescaping ("\u0061" equals "a").
std::optional<std::vector<std::string>> first_duplicate_key(std::string_view json);

}  // namespace hfs
