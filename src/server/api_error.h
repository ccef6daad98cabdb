// server/api_error.h — errors in OpenAI's JSON shape: {"error": {"message", "type", "param", "code"}}.
// Every failed request answers with one, whatever failed (validation, auth, limits, the engine).
#pragma once

#include <string>

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

}  // namespace hfs::server
