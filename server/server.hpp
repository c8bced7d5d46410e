// The HTTP server: OpenAI routes, SSE, /health, /ready, /metrics. It never touches tensors.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/core/engine.hpp"
#include "engine/model/model_config.hpp"
#include "server/server_options.hpp"

namespace prometheus { class Registry; }

namespace strata {

class Tokenizer;
class ChatTemplate;
class Metrics;
class EnginePort;
class TokenCodec;

// What the routes need; owned by main, outlives the server.
struct ServingContext {
  Engine* engine = nullptr;
  const Tokenizer* tokenizer = nullptr;
  const ChatTemplate* chat_template = nullptr;  // may be null: chat answers 400 "model has no chat template"
  TokenizerMeta tokenizer_meta;
  std::vector<TokenId> eos_ids;
  int max_context = 0;
  std::string model_id;                         // canonical name in /v1/models
  std::shared_ptr<prometheus::Registry> registry;  // served at /metrics (may be null)
  Metrics* metrics = nullptr;                   // request_done() per answered request (may be null)
  // Test seams: when set, used instead of `engine` / `tokenizer` (route tests run a scripted engine).
  EnginePort* engine_port = nullptr;
  const TokenCodec* codec = nullptr;
};

class HttpServer {
 public:
  HttpServer(ServerOptions options, ServingContext& ctx);
  ~HttpServer();
  // Binds host:port (port 0 picks a free one) and serves in background threads. Throws strata::Error.
  void start();
  int port() const;
  // SIGTERM path: readiness false, new requests 503, wait for running ones up to shutdown_timeout_s,
  // end the rest with an error, then stop listening.
  void drain_and_stop();
  void stop();
  struct Impl;
 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata
