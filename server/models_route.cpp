// GET /v1/models: every served id (the canonical one and --served-model-name aliases) with the context length.
#include <chrono>

#include "server/generation_common.hpp"
#include "server/route.hpp"

namespace strata {
namespace {

nlohmann::json model_json(const RouteEnv& env, const std::string& id) {
  static const int64_t created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return {{"id", id},
          {"object", "model"},
          {"created", created},
          {"owned_by", "strata"},
          {"root", env.model_ids.empty() ? id : env.model_ids.front()},
          {"max_model_len", env.max_context},
          {"context_length", env.max_context}};
}

}  // namespace

RouteResponse models_route(const RouteEnv& env) {
  nlohmann::json data = nlohmann::json::array();
  for (const std::string& id : env.model_ids) data.push_back(model_json(env, id));
  return json_response({{"object", "list"}, {"data", data}});
}

RouteResponse model_route(const RouteEnv& env, const std::string& id) {
  return json_response(model_json(env, resolve_model(env, id.empty() ? std::string(" ") : id)));
}

}  // namespace strata
