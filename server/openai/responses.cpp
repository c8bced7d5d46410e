#include "server/openai/responses.hpp"

#include <cmath>

#include "server/token_codec.hpp"

namespace strata {
namespace {

nlohmann::json bytes_of(const std::string& s) {
  nlohmann::json b = nlohmann::json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

// JSON has no -inf; a masked token's logprob is written as the most negative finite float, as OpenAI does.
double finite_logprob(float lp) { return std::isfinite(lp) ? lp : -9999.0; }

nlohmann::json nullable(const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); }

}  // namespace

nlohmann::json usage_json(int prompt_tokens, int completion_tokens, int cached_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", cached_tokens}}}};
}

nlohmann::json chat_logprob_entry(const TokenCodec& codec, const TokenEvent& t, int n_top) {
  std::string text = codec.token_text(t.token);
  nlohmann::json top = nlohmann::json::array();
  for (size_t i = 0; i < t.top.size() && static_cast<int>(i) < n_top; ++i) {
    std::string alt = codec.token_text(t.top[i].token);
    top.push_back({{"token", alt}, {"logprob", finite_logprob(t.top[i].logprob)}, {"bytes", bytes_of(alt)}});
  }
  return {{"token", text}, {"logprob", finite_logprob(t.logprob)}, {"bytes", bytes_of(text)}, {"top_logprobs", top}};
}

void CompletionLogprobs::add(const TokenCodec& codec, const TokenEvent& t, int n_top, bool has_logprob) {
  std::string text = codec.token_text(t.token);
  tokens.push_back(text);
  token_logprobs.push_back(has_logprob ? nlohmann::json(finite_logprob(t.logprob)) : nlohmann::json(nullptr));
  if (!has_logprob) {
    top_logprobs.push_back(nullptr);
  } else {
    nlohmann::json top = nlohmann::json::object();
    for (size_t i = 0; i < t.top.size() && static_cast<int>(i) < n_top; ++i)
      top[codec.token_text(t.top[i].token)] = finite_logprob(t.top[i].logprob);
    top_logprobs.push_back(top);
  }
  text_offset.push_back(offset);
  offset += text.size();
}

nlohmann::json CompletionLogprobs::to_json() const {
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top_logprobs}, {"text_offset", text_offset}};
}

nlohmann::json chat_completion_json(const ResponseHeader& h, const std::vector<ChatChoice>& choices,
                                    const nlohmann::json& usage) {
  nlohmann::json cs = nlohmann::json::array();
  for (const ChatChoice& c : choices) {
    nlohmann::json msg = {{"role", "assistant"}};
    // OpenAI sends content null when the answer is only tool calls.
    msg["content"] = (c.message.content.empty() && !c.message.tool_calls.empty()) ? nlohmann::json(nullptr)
                                                                                   : nlohmann::json(c.message.content);
    if (!c.message.reasoning.empty()) msg["reasoning_content"] = c.message.reasoning;
    if (!c.message.tool_calls.empty()) {
      nlohmann::json calls = nlohmann::json::array();
      for (const ParsedToolCall& t : c.message.tool_calls)
        calls.push_back({{"id", t.id}, {"type", t.type.empty() ? "function" : t.type},
                         {"function", {{"name", t.name}, {"arguments", t.arguments}}}});
      msg["tool_calls"] = calls;
    }
    cs.push_back({{"index", c.index}, {"message", msg}, {"logprobs", c.logprobs}, {"finish_reason", nullable(c.finish_reason)}});
  }
  return {{"id", h.id}, {"object", "chat.completion"}, {"created", h.created}, {"model", h.model},
          {"choices", cs}, {"usage", usage}, {"system_fingerprint", nullptr}};
}

nlohmann::json chat_delta_json(const ParsedDelta& d) {
  nlohmann::json delta = nlohmann::json::object();
  if (!d.reasoning.empty()) delta["reasoning_content"] = d.reasoning;
  if (!d.content.empty()) delta["content"] = d.content;
  if (!d.tool_calls.empty()) {
    nlohmann::json calls = nlohmann::json::array();
    for (const ToolCallDelta& t : d.tool_calls) {
      nlohmann::json c = {{"index", t.index}};
      if (t.is_header()) {
        c["id"] = t.id;
        c["type"] = t.type.empty() ? "function" : t.type;
        c["function"] = {{"name", t.name}, {"arguments", t.arguments}};
      } else {
        c["function"] = {{"arguments", t.arguments}};
      }
      calls.push_back(c);
    }
    delta["tool_calls"] = calls;
  }
  return delta;
}

nlohmann::json chat_chunk_json(const ResponseHeader& h, int index, const nlohmann::json& delta,
                               const std::string& finish_reason, const nlohmann::json& logprobs) {
  nlohmann::json choice = {{"index", index}, {"delta", delta}, {"logprobs", logprobs}, {"finish_reason", nullable(finish_reason)}};
  return {{"id", h.id}, {"object", "chat.completion.chunk"}, {"created", h.created}, {"model", h.model},
          {"system_fingerprint", nullptr}, {"choices", nlohmann::json::array({choice})}};
}

nlohmann::json chat_usage_chunk_json(const ResponseHeader& h, const nlohmann::json& usage) {
  return {{"id", h.id}, {"object", "chat.completion.chunk"}, {"created", h.created}, {"model", h.model},
          {"system_fingerprint", nullptr}, {"choices", nlohmann::json::array()}, {"usage", usage}};
}

nlohmann::json completion_json(const ResponseHeader& h, const std::vector<CompletionChoice>& choices,
                               const nlohmann::json& usage) {
  nlohmann::json cs = nlohmann::json::array();
  for (const CompletionChoice& c : choices)
    cs.push_back({{"index", c.index}, {"text", c.text}, {"logprobs", c.logprobs}, {"finish_reason", nullable(c.finish_reason)}});
  return {{"id", h.id}, {"object", "text_completion"}, {"created", h.created}, {"model", h.model},
          {"choices", cs}, {"usage", usage}, {"system_fingerprint", nullptr}};
}

nlohmann::json completion_chunk_json(const ResponseHeader& h, int index, const std::string& text,
                                     const std::string& finish_reason, const nlohmann::json& logprobs) {
  nlohmann::json choice = {{"index", index}, {"text", text}, {"logprobs", logprobs}, {"finish_reason", nullable(finish_reason)}};
  return {{"id", h.id}, {"object", "text_completion"}, {"created", h.created}, {"model", h.model},
          {"system_fingerprint", nullptr}, {"choices", nlohmann::json::array({choice})}};
}

nlohmann::json completion_usage_chunk_json(const ResponseHeader& h, const nlohmann::json& usage) {
  return {{"id", h.id}, {"object", "text_completion"}, {"created", h.created}, {"model", h.model},
          {"system_fingerprint", nullptr}, {"choices", nlohmann::json::array()}, {"usage", usage}};
}

}  // namespace strata
