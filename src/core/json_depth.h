// core/json_depth.h — how deeply a JSON text nests, found without parsing it.
//
// Parsers, converters and printers of JSON values recurse once per level, so a document of 100 000 '['
// exhausts the stack of whatever walks it. Scanning the text first (strings skipped, escapes honoured)
// bounds every later walk by a depth checked before any recursion starts.
//
//   if (auto at = hfs::json_nesting_exceeds(text, 64)) return error("nests deeper than 64 at offset " + ...);
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace hfs {

// The byte offset of the first '[' or '{' that opens level `limit` + 1 (outside strings), or nullopt when
// the text never nests deeper than `limit`. Not a validator: malformed JSON is left to the parser.
std::optional<size_t> json_nesting_exceeds(std::string_view json, size_t limit);

}  // namespace hfs
