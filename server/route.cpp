#include "server/route.hpp"

#include "server/openai/sse.hpp"

namespace strata {

RouteResponse json_response(const nlohmann::json& body, int status) {
  RouteResponse r;
  r.status = status;
  r.body = dump_json(body);
  return r;
}

RouteResponse error_response(const ApiError& e) { return json_response(error_body(e), e.status); }

}  // namespace strata
