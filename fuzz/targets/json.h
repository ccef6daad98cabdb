// fuzz/targets/json.h — JSON values / config: hfs::Value::parse_json on arbitrary text.
//
// Input: JSON text, amplified as common.h's amplify() says (so 100 000 levels of nesting are reachable).
// Property: a parsed value prints to JSON that parses back to an equal value (both compact and indented).
#pragma once

#include "common.h"
#include "hfstatic/value.h"

namespace hfs::fuzz {

inline std::string fuzz_json(const uint8_t* data, size_t size) {
  auto v = Value::parse_json(amplify(as_text(data, size)));
  if (!v) return "";
  for (int indent : {-1, 2}) {
    std::string text = v->to_json(indent);
    auto back = Value::parse_json(text);
    if (!back) return "to_json output does not parse: " + back.error().to_string() + " text: " + text.substr(0, 200);
    if (!(*back == *v)) return "JSON round trip changed the value: " + text.substr(0, 200);
  }
  return "";
}

}  // namespace hfs::fuzz
