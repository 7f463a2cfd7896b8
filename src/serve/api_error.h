// An HTTP error as OpenAI's APIs answer it:
//   {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
// `param` names the request field at fault (null when none), so a client can
// point at it; `code` is a stable machine word.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"

namespace vidax::serve {

class ApiError : public Error {
 public:
  ApiError(int status, std::string message, std::string param = "", std::string code = "",
           std::string type = "")
      : Error(std::move(message)), status_(status), param_(std::move(param)), code_(std::move(code)),
        type_(type.empty() ? default_type(status) : std::move(type)) {}
  int status() const { return status_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }
  const std::string& type() const { return type_; }

  nlohmann::json body() const {
    return {{"error",
             {{"message", what()},
              {"type", type_},
              {"param", param_.empty() ? nlohmann::json() : nlohmann::json(param_)},
              {"code", code_.empty() ? nlohmann::json() : nlohmann::json(code_)}}}};
  }

 private:
  static std::string default_type(int status) {
    if (status == 401) return "authentication_error";
    if (status == 404) return "not_found_error";
    if (status == 429) return "rate_limit_error";
    if (status >= 500) return "server_error";
    return "invalid_request_error";
  }
  int status_;
  std::string param_, code_, type_;
};

// A 400 naming the field.
inline ApiError bad_field(const std::string& param, const std::string& message,
                          const std::string& code = "invalid_value") {
  return ApiError(400, message, param, code);
}

}  // namespace vidax::serve
