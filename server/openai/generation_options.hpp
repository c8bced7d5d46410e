// The request fields chat and legacy completions share (sampling, stopping, n, streaming), parsed and
// validated against the serving limits. Everything here is checked before the engine sees the request, so
// the engine can trust its inputs.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/types.hpp"

namespace strata {

class Fields;

struct RequestLimits {
  int vocab_size = 0;          // token ids must be below this (0: only >= 0 is checked)
  int max_context = 0;         // positions per sequence (0: unknown, no check)
  int max_n = 16;
  int max_stop_strings = 16;
  size_t max_stop_bytes = 1024;  // one stop string
  int max_tokens_limit = 0;    // 0 = max_context
  int max_logit_bias = 1024;   // entries
  int max_stop_token_ids = 256;
  int max_prompts = 64;        // completions: prompts in one batch
  int max_messages = 4096;
  int max_tools = 256;
  int penalty_window = 0;      // history window the penalties look at (0 = whole history)
  int max_tokens() const;      // the effective upper bound on max_tokens (INT32_MAX if unknown)
};

struct GenerationOptions {
  std::string model;               // "" = the default model
  int n = 1;
  std::optional<int> max_tokens;   // absent: the route's default
  SamplingParams sampling;
  std::optional<uint64_t> seed;    // absent: a random seed per choice
  std::vector<std::string> stop;
  std::vector<TokenId> stop_token_ids;
  int min_tokens = 0;
  bool ignore_eos = false;
  bool skip_special_tokens = true;
  bool stream = false;
  bool include_usage = false;      // stream_options.include_usage
  std::string user;
};

// Reads the shared fields from the body. `max_tokens_keys` lists the accepted spellings, first wins
// (chat: max_completion_tokens, max_tokens). `min_max_tokens` is 1 for chat, 0 for completions (echo scoring).
GenerationOptions parse_generation_options(const nlohmann::json& body, const RequestLimits& limits,
                                           const std::vector<std::string>& max_tokens_keys, int min_max_tokens);

// response_format: "text" passes; json_object / json_schema are refused until structured output lands.
void check_response_format(const Fields& f);

}  // namespace strata
