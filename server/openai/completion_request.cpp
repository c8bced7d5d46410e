#include "server/openai/completion_request.hpp"

#include <climits>

#include "server/openai/errors.hpp"
#include "server/openai/fields.hpp"

namespace strata {
namespace {

bool is_token_list(const nlohmann::json& v) {
  if (!v.is_array() || v.empty()) return false;
  for (const auto& e : v)
    if (!e.is_number()) return false;
  return true;
}

std::vector<TokenId> token_list(const nlohmann::json& v, const std::string& path, const RequestLimits& limits) {
  int64_t hi = limits.vocab_size > 0 ? limits.vocab_size - 1 : INT32_MAX;
  std::vector<TokenId> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out.push_back(static_cast<TokenId>(integer_value(v[i], path + "[" + std::to_string(i) + "]", 0, hi)));
  return out;
}

}  // namespace

PromptInput parse_one_prompt(const nlohmann::json& v, const std::string& path, const RequestLimits& limits) {
  PromptInput p;
  if (v.is_string()) {
    p.text = v.get<std::string>();
  } else if (v.is_array()) {
    if (v.empty()) throw_invalid(path, qname(path) + " must not be an empty token list");
    p.is_tokens = true;
    p.tokens = token_list(v, path, limits);
  } else {
    throw_invalid(path, qname(path) + " must be a string or a list of token ids, got " + json_kind(v), "invalid_type");
  }
  return p;
}

CompletionRequest parse_completion_request(const nlohmann::json& body, const RequestLimits& limits) {
  if (!body.is_object())
    throw_invalid("", "the request body must be a JSON object, got " + std::string(json_kind(body)), "invalid_type");
  CompletionRequest r;
  Fields f(body, "");
  r.gen = parse_generation_options(body, limits, {"max_tokens"}, 0);
  r.max_tokens_given = r.gen.max_tokens.has_value();
  if (!r.gen.max_tokens) r.gen.max_tokens = std::min(16, limits.max_tokens());  // the OpenAI default for completions
  const nlohmann::json* p = f.get("prompt");
  if (!p) throw_invalid("prompt", "'prompt' is required", "missing_required_parameter");
  if (p->is_string() || is_token_list(*p)) {
    r.prompts.push_back(parse_one_prompt(*p, "prompt", limits));
  } else if (p->is_array()) {
    if (p->empty()) throw_invalid("prompt", "'prompt' must not be an empty list");
    if (static_cast<int>(p->size()) > limits.max_prompts)
      throw_invalid("prompt", "'prompt' has " + std::to_string(p->size()) + " prompts; the limit is " +
                                  std::to_string(limits.max_prompts));
    for (size_t i = 0; i < p->size(); ++i) {
      std::string path = "prompt[" + std::to_string(i) + "]";
      const nlohmann::json& e = (*p)[i];
      if (e.is_array() && !is_token_list(e) && !e.empty()) {
        // A nested list that is not all numbers: name the offending element.
        for (size_t j = 0; j < e.size(); ++j)
          if (!e[j].is_number())
            throw_invalid(path + "[" + std::to_string(j) + "]", "'" + path + "[" + std::to_string(j) +
                                                                   "]' must be a token id (integer), got " + json_kind(e[j]),
                          "invalid_type");
      }
      if (e.is_number())
        throw_invalid(path, qname(path) + " mixes token ids with other prompt forms; use a list of token ids or of strings",
                      "invalid_type");
      r.prompts.push_back(parse_one_prompt(e, path, limits));
    }
  } else {
    throw_invalid("prompt", "'prompt' must be a string, a list of strings, a list of token ids or a list of token-id lists, got " +
                                std::string(json_kind(*p)), "invalid_type");
  }
  if (static_cast<int>(r.prompts.size()) * r.gen.n > limits.max_prompts)
    throw_invalid("n", "'n' (" + std::to_string(r.gen.n) + ") times the number of prompts (" + std::to_string(r.prompts.size()) +
                           ") exceeds the limit of " + std::to_string(limits.max_prompts) + " choices");
  if (auto e = f.boolean("echo")) r.echo = *e;
  if (auto lp = f.integer("logprobs", 0, 20)) r.logprobs = static_cast<int>(*lp);
  if (auto bo = f.integer("best_of", 1, limits.max_n); bo && *bo != r.gen.n)
    throw_invalid("best_of", "'best_of' other than n is not supported");
  if (auto sfx = f.string("suffix", 1u << 20); sfx && !sfx->empty())
    throw_invalid("suffix", "'suffix' is not supported by this model");
  return r;
}

}  // namespace strata
