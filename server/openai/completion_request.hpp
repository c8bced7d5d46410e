// POST /v1/completions: `prompt` as a string, a list of strings, a list of token ids or a list of token-id
// lists; each prompt yields `n` choices, indexed prompt-major as the OpenAI API does.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/openai/generation_options.hpp"

namespace strata {

struct PromptInput {
  bool is_tokens = false;
  std::string text;
  std::vector<TokenId> tokens;
};

struct CompletionRequest {
  GenerationOptions gen;
  std::vector<PromptInput> prompts;  // at least one
  bool echo = false;
  int logprobs = -1;                 // -1: none; 0..20: the pick plus this many alternatives
  bool max_tokens_given = false;     // false: gen.max_tokens holds OpenAI's default of 16, clipped to the room left
};

CompletionRequest parse_completion_request(const nlohmann::json& body, const RequestLimits& limits);  // throws ApiException

// Shared with /tokenize: a prompt that is text or token ids. `path` names it in errors.
PromptInput parse_one_prompt(const nlohmann::json& v, const std::string& path, const RequestLimits& limits);

}  // namespace strata
