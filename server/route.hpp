// What a route handler sees and returns, independent of the HTTP library: routes are plain functions from
// a parsed body to a RouteResponse, so their tests need no sockets. server.cpp adapts them to cpp-httplib.
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/model/model_config.hpp"
#include "server/openai/errors.hpp"
#include "server/openai/generation_options.hpp"
#include "server/openai/tool_parser.hpp"

namespace strata {

class EnginePort;
class TokenCodec;
class ChatTemplate;

struct RouteResponse {
  int status = 200;
  std::string body;  // JSON text, unless `stream` is set
  // SSE: writes events through `write` (false once the client is gone) until the stream ends, and returns
  // the status the request counts as in metrics (200, or the status of an error sent in-stream).
  std::function<int(const std::function<bool(const std::string&)>& write)> stream;
};

RouteResponse json_response(const nlohmann::json& body, int status = 200);
RouteResponse error_response(const ApiError& e);

// Everything the routes read, set up once by HttpServer (or by a test).
struct RouteEnv {
  EnginePort* engine = nullptr;       // null while the model is loading
  const TokenCodec* codec = nullptr;  // null while the model is loading
  const ChatTemplate* chat_template = nullptr;
  TokenizerMeta tokenizer_meta;
  std::vector<std::string> model_ids;  // served ids; the first is canonical
  int max_context = 0;
  RequestLimits limits;
  ToolFormat tool_format = ToolFormat::none;
  ReasoningMode reasoning = ReasoningMode::auto_detect;
  const std::atomic<bool>* aborting = nullptr;  // set when the server gives up on running requests
};

// Per-call state from the HTTP layer.
struct CallContext {
  std::function<bool()> client_gone;  // may be empty
  // When the HTTP layer had the whole request, before parsing and tokenizing: the requests' arrival, so
  // the engine's TTFT and queue times include the server's own front-end work.
  std::chrono::steady_clock::time_point received = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point submitted{};  // when the engine took the job (answer_generation)
  const std::string* raw_body = nullptr;  // the request text, for key order (see openai/key_order.hpp)
};

RouteResponse chat_completions_route(const RouteEnv& env, const nlohmann::json& body, const CallContext& call);
RouteResponse completions_route(const RouteEnv& env, const nlohmann::json& body, const CallContext& call);
RouteResponse tokenize_route(const RouteEnv& env, const nlohmann::json& body);
RouteResponse detokenize_route(const RouteEnv& env, const nlohmann::json& body);
RouteResponse models_route(const RouteEnv& env);
RouteResponse model_route(const RouteEnv& env, const std::string& id);

}  // namespace strata
