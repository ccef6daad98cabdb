// server/sse.h — server-sent events as OpenAI streams them: "data: <json>\n\n" per chunk, then
// "data: [DONE]\n\n". A comment line (": ...") keeps a waiting stream alive and finds a vanished client.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace hfs::server {

inline std::string sse_event(const nlohmann::json& data) { return "data: " + data.dump() + "\n\n"; }
inline constexpr const char* kSseDone = "data: [DONE]\n\n";
inline constexpr const char* kSseKeepAlive = ": keep-alive\n\n";

}  // namespace hfs::server
