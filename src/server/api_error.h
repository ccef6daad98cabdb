// server/api_error.h — errors in OpenAI's JSON shape: {"error": {"message", "type", "param", "code"}}.
// Every failed request answers with one, whatever failed (validation, auth, limits, the engine).
#pragma once

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
// 400 "json_too_deep" when `body` nests arrays and objects deeper than kMaxJsonDepth (server/json_depth.h);
// checked before any JSON parser sees the body.
std::optional<ApiError> json_depth_error(std::string_view body);

}  // namespace hfs::server
