// OpenAI-shaped errors: {"error": {"message", "type", "param", "code"}}. Every client fault names the field
// (param) and, where there is one, the limit it broke, so a client can fix its request without guessing.
#pragma once
#include <exception>
#include <string>

#include <nlohmann/json.hpp>

namespace strata {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // "" is written as null
  std::string code;   // "" is written as null
};

// Thrown by the request parsers; the route turns it into a response. Never crosses the engine boundary.
struct ApiException : std::exception {
  explicit ApiException(ApiError e) : error(std::move(e)) {}
  const char* what() const noexcept override { return error.message.c_str(); }
  ApiError error;
};

// 400 about one parameter. `param` is the dotted path of the field, e.g. "messages[2].content".
ApiError invalid_param(const std::string& param, const std::string& message, const std::string& code = "invalid_value");
[[noreturn]] void throw_invalid(const std::string& param, const std::string& message,
                                const std::string& code = "invalid_value");

ApiError unauthorized_error();
ApiError model_not_found_error(const std::string& model);
ApiError body_too_large_error(size_t limit);
ApiError queue_full_error();
ApiError unavailable_error(const std::string& why, const std::string& code);
ApiError not_found_route_error(const std::string& method, const std::string& path);
ApiError internal_error(const std::string& why);

nlohmann::json error_body(const ApiError& e);

}  // namespace strata
