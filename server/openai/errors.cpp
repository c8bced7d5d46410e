#include "server/openai/errors.hpp"

namespace strata {

ApiError invalid_param(const std::string& param, const std::string& message, const std::string& code) {
  ApiError e;
  e.status = 400;
  e.message = message;
  e.param = param;
  e.code = code;
  return e;
}

void throw_invalid(const std::string& param, const std::string& message, const std::string& code) {
  throw ApiException(invalid_param(param, message, code));
}

ApiError unauthorized_error() {
  ApiError e;
  e.status = 401;
  e.type = "authentication_error";
  e.code = "invalid_api_key";
  e.message = "missing or invalid API key: send it as 'Authorization: Bearer <key>'";
  return e;
}

ApiError model_not_found_error(const std::string& model) {
  ApiError e;
  e.status = 404;
  e.param = "model";
  e.code = "model_not_found";
  e.message = "the model '" + model + "' does not exist; GET /v1/models lists the served ids";
  return e;
}

ApiError body_too_large_error(size_t limit) {
  ApiError e;
  e.status = 413;
  e.code = "request_too_large";
  e.message = "request body is larger than the limit of " + std::to_string(limit) + " bytes (--max-body-bytes)";
  return e;
}

ApiError queue_full_error() {
  ApiError e;
  e.status = 429;
  e.type = "rate_limit_error";
  e.code = "queue_full";
  e.message = "the request queue is full (--max-queued); retry later";
  return e;
}

ApiError unavailable_error(const std::string& why, const std::string& code) {
  ApiError e;
  e.status = 503;
  e.type = "server_error";
  e.code = code;
  e.message = why;
  return e;
}

ApiError not_found_route_error(const std::string& method, const std::string& path) {
  ApiError e;
  e.status = 404;
  e.code = "not_found";
  e.message = "no route for " + method + " " + path;
  return e;
}

ApiError internal_error(const std::string& why) {
  ApiError e;
  e.status = 500;
  e.type = "server_error";
  e.code = "internal_error";
  e.message = why;
  return e;
}

nlohmann::json error_body(const ApiError& e) {
  nlohmann::json err = {{"message", e.message}, {"type", e.type}};
  err["param"] = e.param.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.param);
  err["code"] = e.code.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.code);
  return {{"error", err}};
}

}  // namespace strata
