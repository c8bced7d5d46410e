// POST /tokenize and /detokenize, vLLM-shaped ({"prompt"} / {"tokens"}), also accepting llama-server's
// spellings ({"content"}, "add_special"), and /tokenize of chat messages through the chat template.
#include "engine/template/chat_template.hpp"
#include "server/generation_common.hpp"
#include "server/openai/chat_request.hpp"
#include "server/openai/completion_request.hpp"
#include "server/openai/fields.hpp"
#include "server/route.hpp"
#include "server/token_codec.hpp"

namespace strata {

RouteResponse tokenize_route(const RouteEnv& env, const nlohmann::json& body) {
  if (!body.is_object())
    throw_invalid("", "the request body must be a JSON object, got " + std::string(json_kind(body)), "invalid_type");
  Fields f(body, "");
  if (auto m = f.string("model", 256)) resolve_model(env, *m);
  require_engine(env);
  bool add_special = true;
  if (auto b = f.boolean("add_special")) add_special = *b;
  if (auto b = f.boolean("add_special_tokens")) add_special = *b;
  std::string text;
  if (f.get("messages")) {
    if (!env.chat_template) throw_invalid("messages", "this model has no chat template", "no_chat_template");
    ChatRequest chat = parse_chat_request(body, env.limits);
    ChatTemplateOptions topt;
    topt.bos_token = env.tokenizer_meta.bos_token;
    topt.eos_token = env.tokenizer_meta.eos_token;
    topt.add_generation_prompt = chat.add_generation_prompt;
    topt.extra = chat.chat_template_kwargs;
    try {
      text = env.chat_template->render(chat.messages, chat.tools_active() ? chat.tools : nlohmann::json(), topt);
    } catch (const TemplateError& e) {
      throw_invalid("messages", e.what(), "chat_template_error");
    }
    // The template writes the special tokens itself.
    if (!f.get("add_special_tokens") && !f.get("add_special")) add_special = false;
  } else {
    const char* key = f.get("prompt") ? "prompt" : "content";
    std::optional<std::string> s = f.string(key, 64u << 20);
    if (!s) throw_invalid("prompt", "'prompt' (or 'content') is required: the text to tokenize", "missing_required_parameter");
    text = *s;
  }
  std::vector<TokenId> ids;
  try {
    ids = env.codec->encode(text, add_special);
  } catch (const Error& e) {
    throw_invalid("prompt", std::string("the text could not be tokenized: ") + e.what());
  }
  nlohmann::json out = {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", env.max_context}};
  return json_response(out);
}

RouteResponse detokenize_route(const RouteEnv& env, const nlohmann::json& body) {
  if (!body.is_object())
    throw_invalid("", "the request body must be a JSON object, got " + std::string(json_kind(body)), "invalid_type");
  Fields f(body, "");
  if (auto m = f.string("model", 256)) resolve_model(env, *m);
  require_engine(env);
  const nlohmann::json* t = f.get("tokens");
  if (!t) throw_invalid("tokens", "'tokens' is required: a list of token ids", "missing_required_parameter");
  if (!t->is_array()) throw_invalid("tokens", "'tokens' must be a list of token ids, got " + std::string(json_kind(*t)), "invalid_type");
  std::vector<TokenId> ids;
  if (!t->empty()) ids = parse_one_prompt(*t, "tokens", env.limits).tokens;
  std::string text = env.codec->decode(ids, false);
  return json_response({{"prompt", text}, {"content", text}});
}

}  // namespace strata
