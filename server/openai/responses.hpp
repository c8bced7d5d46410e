// Typed results -> OpenAI response JSON: chat.completion, chat.completion.chunk, text_completion, usage and
// the two logprobs formats (chat's per-token entries and legacy completions' parallel arrays).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/request.hpp"
#include "server/openai/tool_parser.hpp"

namespace strata {

class TokenCodec;

// The fields every object of one response shares (stable across a stream's chunks).
struct ResponseHeader {
  std::string id;
  int64_t created = 0;
  std::string model;
};

// OpenAI's usage object; prompt_tokens_details.cached_tokens counts the prompt tokens the prefix cache supplied.
nlohmann::json usage_json(int prompt_tokens, int completion_tokens, int cached_tokens = 0);

// Chat logprobs: {"token","logprob","bytes","top_logprobs":[...]} for one generated token.
nlohmann::json chat_logprob_entry(const TokenCodec& codec, const TokenEvent& t, int n_top);

// Legacy completions logprobs over `tokens`; text_offset counts bytes from `offset0`.
// A token without a logprob (the first prompt token under echo) is written as null.
struct CompletionLogprobs {
  nlohmann::json tokens = nlohmann::json::array(), token_logprobs = nlohmann::json::array(),
                 top_logprobs = nlohmann::json::array(), text_offset = nlohmann::json::array();
  size_t offset = 0;  // byte offset of the next token's text
  void add(const TokenCodec& codec, const TokenEvent& t, int n_top, bool has_logprob);
  nlohmann::json to_json() const;
};

// One choice of a chat completion, message already parsed into content / reasoning / tool calls.
struct ChatChoice {
  int index = 0;
  ParsedMessage message;
  std::string finish_reason;
  nlohmann::json logprobs;  // null or {"content": [...]}
};
nlohmann::json chat_completion_json(const ResponseHeader& h, const std::vector<ChatChoice>& choices,
                                    const nlohmann::json& usage);

// A streamed chat chunk with one choice delta; `finish_reason` "" is written as null.
nlohmann::json chat_chunk_json(const ResponseHeader& h, int index, const nlohmann::json& delta,
                               const std::string& finish_reason, const nlohmann::json& logprobs);
nlohmann::json chat_usage_chunk_json(const ResponseHeader& h, const nlohmann::json& usage);
// Delta for a parsed piece of output.
nlohmann::json chat_delta_json(const ParsedDelta& d);

struct CompletionChoice {
  int index = 0;
  std::string text;
  std::string finish_reason;
  nlohmann::json logprobs;  // null or the legacy object
};
nlohmann::json completion_json(const ResponseHeader& h, const std::vector<CompletionChoice>& choices,
                               const nlohmann::json& usage);
nlohmann::json completion_chunk_json(const ResponseHeader& h, int index, const std::string& text,
                                     const std::string& finish_reason, const nlohmann::json& logprobs);
nlohmann::json completion_usage_chunk_json(const ResponseHeader& h, const nlohmann::json& usage);

}  // namespace strata
