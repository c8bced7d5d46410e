// POST /v1/chat/completions: the body parsed and validated into a typed request. Messages and tools are
// checked for shape here (so the template only ever sees well-formed input) and passed on as JSON, since
// the chat template consumes them as JSON.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "server/openai/generation_options.hpp"

namespace strata {

enum class ToolChoice { Auto, None, Required, Named };

struct ChatRequest {
  GenerationOptions gen;
  nlohmann::json messages = nlohmann::json::array();  // validated; "developer" role mapped to "system"
  nlohmann::json tools;                               // null when absent
  ToolChoice tool_choice = ToolChoice::Auto;
  std::string tool_choice_name;                       // for Named
  bool add_generation_prompt = true;
  nlohmann::json chat_template_kwargs = nlohmann::json::object();
  bool logprobs = false;
  int top_logprobs = 0;
  // Tools reach the template and the parser only when present and tool_choice is not "none".
  bool tools_active() const { return tools.is_array() && !tools.empty() && tool_choice != ToolChoice::None; }
};

ChatRequest parse_chat_request(const nlohmann::json& body, const RequestLimits& limits);  // throws ApiException

}  // namespace strata
