// server/json_depth.h — the nesting depth of a JSON text, counted before it is parsed. nlohmann's
// serializer, comparisons and copies recurse once per level, so a body of a few hundred kilobytes of '['
// would exhaust a thread's stack long after parsing succeeded; every request body is scanned first and
// refused past kMaxJsonDepth (docs/server.md, limits).
#pragma once

#include <cstddef>
#include <string_view>

namespace hfs::server {

// Far above any real request (a chat request nests 4 deep, a large JSON Schema some 20) and far below
// what a thread's stack survives.
inline constexpr size_t kMaxJsonDepth = 64;

// The deepest nesting of arrays and objects in `text`, brackets inside strings not counted; it stops
// counting (returns) as soon as the depth passes `most`. Linear, no allocation; invalid JSON is left to
// the parser.
size_t json_depth(std::string_view text, size_t most = kMaxJsonDepth);

}  // namespace hfs::server
