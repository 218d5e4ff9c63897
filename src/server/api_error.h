// Errors a route answers with, in OpenAI's shape:
//   {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
// Routes throw ApiError; Routes::handle turns it into the reply.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace strix::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, const std::string& message, std::string param = {}, std::string type = "invalid_request_error",
           std::string code = {})
      : std::runtime_error(message),
        status_(status),
        param_(std::move(param)),
        type_(std::move(type)),
        code_(std::move(code)) {}

  int status() const { return status_; }
  nlohmann::json body() const {
    nlohmann::json e = {{"message", what()}, {"type", type_}};
    e["param"] = param_.empty() ? nlohmann::json(nullptr) : nlohmann::json(param_);
    e["code"] = code_.empty() ? nlohmann::json(nullptr) : nlohmann::json(code_);
    return {{"error", e}};
  }

 private:
  int status_;
  std::string param_, type_, code_;
};

}  // namespace strix::server
