// server/api_error.h — errors in OpenAI's JSON shape: {"error": {"message", "type", "param", "code"}}.
// Every failed request answers with one, whatever failed (validation, auth, limits, the engine).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace hfs::server {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";  // OpenAI's types: invalid_request_error, authentication_error, ...
  std::string param;                          // the request field at fault, "" when none
  std::string code;                           // a stable machine-readable name, "" when none

  std::string body() const;  // the JSON text
};

ApiError invalid_param(const std::string& param, const std::string& message);
ApiError server_error(int status, const std::string& type, const std::string& code, const std::string& message);
// How deeply a request body may nest arrays and objects: far above any real request (a chat request nests
// 4 deep, a large JSON Schema some 20) and far below what a thread's stack survives, since nlohmann's
// serializer, comparisons and copies recurse once per level (docs/server.md, limits).
inline constexpr size_t kMaxJsonDepth = 64;
// 400 "json_too_deep" when `body` nests deeper than kMaxJsonDepth, found by core/json_depth.h's linear scan
// before any JSON parser sees the body.
std::optional<ApiError> json_depth_error(std::string_view body);

}  // namespace hfs::server
