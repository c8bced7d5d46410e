// Options the HTTP front end reads. Filled by config/ (defaults <- YAML <- STRATA_* env <- CLI flags).
#pragma once
#include <string>
#include <vector>

namespace strata {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::vector<std::string> api_keys;          // --api-key / --api-key-file; empty = no auth
  std::vector<std::string> cors_origins;      // empty = no CORS headers
  std::vector<std::string> served_model_names;  // first is the canonical id; empty = model dir name
  size_t max_body_bytes = 8u << 20;
  int max_n = 16;                 // largest `n` a request may ask for
  int max_stop_strings = 16;
  int max_tokens_limit = 0;       // 0 = the context length
  double shutdown_timeout_s = 30.0;
  std::string reasoning_format = "auto";  // "auto" (split <think> into reasoning_content) or "none"
  int http_threads = 0;  // 0: the serve command sizes it from the slots and the queue (HttpServer alone: 32)
  std::string chat_template_override;     // file contents of --chat-template, if given
  int penalty_window = 0;                 // tokens of history the penalties look at (0 = all)
  std::string tool_call_parser = "auto";  // "auto" (detect from the chat template) or a format name
};

}  // namespace strata
