#include "server/api_error.h"

#include <nlohmann/json.hpp>

#include "core/json_depth.h"

namespace hfs::server {

std::string ApiError::body() const {
  nlohmann::json e = {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
  if (!param.empty()) e["param"] = param;
  if (!code.empty()) e["code"] = code;
  return nlohmann::json{{"error", e}}.dump();
}

ApiError invalid_param(const std::string& param, const std::string& message) {
  return ApiError{400, message, "invalid_request_error", param, ""};
}

ApiError server_error(int status, const std::string& type, const std::string& code, const std::string& message) {
  return ApiError{status, message, type, "", code};
}

std::optional<ApiError> json_depth_error(std::string_view body) {
  if (!json_nesting_exceeds(body, kMaxJsonDepth)) return std::nullopt;
  return ApiError{400,
                  "the request body nests arrays and objects more than " + std::to_string(kMaxJsonDepth) +
                      " levels deep (the JSON depth limit)",
                  "invalid_request_error", "", "json_too_deep"};
}

}  // namespace hfs::server
