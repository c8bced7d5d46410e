#include "server/openai/chat_request.hpp"

#include "server/openai/errors.hpp"
#include "server/openai/fields.hpp"

namespace strata {
namespace {

constexpr size_t kMaxText = 16u << 20;  // one message's text; the body limit is the real bound

std::string idx(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

void check_content_parts(const nlohmann::json& parts, const std::string& path) {
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string p = idx(path, i);
    const nlohmann::json& part = parts[i];
    if (!part.is_object()) throw_invalid(p, qname(p) + " must be a content part object, got " + json_kind(part), "invalid_type");
    Fields pf(part, p);
    std::optional<std::string> type = pf.string("type", 64);
    if (!type) throw_invalid(pf.name("type"), qname(pf.name("type")) + " is required", "missing_required_parameter");
    if (*type != "text")
      throw_invalid(pf.name("type"), qname(pf.name("type")) + " '" + *type +
                                         "' is not supported; this model accepts only 'text' content parts",
                    "unsupported_value");
    if (!pf.string("text", kMaxText))
      throw_invalid(pf.name("text"), qname(pf.name("text")) + " is required for a text part", "missing_required_parameter");
  }
}

void check_tool_calls(const nlohmann::json& calls, const std::string& path) {
  if (!calls.is_array()) throw_invalid(path, qname(path) + " must be an array, got " + json_kind(calls), "invalid_type");
  for (size_t i = 0; i < calls.size(); ++i) {
    std::string p = idx(path, i);
    if (!calls[i].is_object()) throw_invalid(p, qname(p) + " must be an object, got " + json_kind(calls[i]), "invalid_type");
    Fields cf(calls[i], p);
    cf.string("id", 256);
    if (auto t = cf.string("type", 64); t && *t != "function")
      throw_invalid(cf.name("type"), qname(cf.name("type")) + " must be 'function', got '" + *t + "'");
    const nlohmann::json* fn = cf.get("function");
    if (!fn || !fn->is_object())
      throw_invalid(cf.name("function"), qname(cf.name("function")) + " must be an object with 'name' and 'arguments'",
                    fn ? "invalid_type" : "missing_required_parameter");
    Fields ff(*fn, cf.name("function"));
    if (!ff.string("name", 256)) throw_invalid(ff.name("name"), qname(ff.name("name")) + " is required", "missing_required_parameter");
    const nlohmann::json* args = ff.get("arguments");
    if (args && !args->is_string() && !args->is_object())
      throw_invalid(ff.name("arguments"), qname(ff.name("arguments")) + " must be a JSON string, got " + json_kind(*args),
                    "invalid_type");
  }
}

nlohmann::json parse_messages(const Fields& f, const RequestLimits& limits) {
  const nlohmann::json* v = f.get("messages");
  if (!v) throw_invalid("messages", "'messages' is required", "missing_required_parameter");
  if (!v->is_array()) throw_invalid("messages", "'messages' must be an array, got " + std::string(json_kind(*v)), "invalid_type");
  if (v->empty()) throw_invalid("messages", "'messages' must contain at least one message");
  if (static_cast<int>(v->size()) > limits.max_messages)
    throw_invalid("messages", "'messages' has " + std::to_string(v->size()) + " entries; the limit is " +
                                  std::to_string(limits.max_messages));
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < v->size(); ++i) {
    std::string p = idx("messages", i);
    const nlohmann::json& m = (*v)[i];
    if (!m.is_object()) throw_invalid(p, qname(p) + " must be an object, got " + json_kind(m), "invalid_type");
    Fields mf(m, p);
    std::optional<std::string> role = mf.string("role", 64);
    if (!role) throw_invalid(mf.name("role"), qname(mf.name("role")) + " is required", "missing_required_parameter");
    if (*role != "system" && *role != "developer" && *role != "user" && *role != "assistant" && *role != "tool" &&
        *role != "function")
      throw_invalid(mf.name("role"), qname(mf.name("role")) +
                                         " must be one of system, developer, user, assistant, tool; got '" + *role + "'");
    const nlohmann::json* content = mf.get("content");
    bool has_calls = mf.get("tool_calls") != nullptr;
    if (!content) {
      if (*role != "assistant")
        throw_invalid(mf.name("content"), qname(mf.name("content")) + " is required for a '" + *role + "' message",
                      "missing_required_parameter");
    } else if (content->is_string()) {
      if (content->get_ref<const std::string&>().size() > kMaxText)
        throw_invalid(mf.name("content"), qname(mf.name("content")) + " is longer than " + std::to_string(kMaxText) + " bytes");
    } else if (content->is_array()) {
      check_content_parts(*content, mf.name("content"));
    } else {
      throw_invalid(mf.name("content"), qname(mf.name("content")) + " must be a string or an array of content parts, got " +
                                            json_kind(*content), "invalid_type");
    }
    if (has_calls) {
      if (*role != "assistant")
        throw_invalid(mf.name("tool_calls"), qname(mf.name("tool_calls")) + " is only allowed on assistant messages");
      check_tool_calls(*mf.get("tool_calls"), mf.name("tool_calls"));
    }
    mf.string("name", 256);
    mf.string("tool_call_id", 256);
    mf.string("reasoning_content", kMaxText);
    nlohmann::json copy = m;
    // Templates know system/user/assistant/tool; "developer" is OpenAI's newer name for a system message.
    if (*role == "developer") copy["role"] = "system";
    out.push_back(std::move(copy));
  }
  return out;
}

nlohmann::json parse_tools(const Fields& f, const RequestLimits& limits) {
  const nlohmann::json* v = f.get("tools");
  if (!v) return nullptr;
  if (!v->is_array()) throw_invalid("tools", "'tools' must be an array, got " + std::string(json_kind(*v)), "invalid_type");
  if (static_cast<int>(v->size()) > limits.max_tools)
    throw_invalid("tools", "'tools' has " + std::to_string(v->size()) + " entries; the limit is " + std::to_string(limits.max_tools));
  for (size_t i = 0; i < v->size(); ++i) {
    std::string p = idx("tools", i);
    const nlohmann::json& t = (*v)[i];
    if (!t.is_object()) throw_invalid(p, qname(p) + " must be an object, got " + json_kind(t), "invalid_type");
    Fields tf(t, p);
    std::optional<std::string> type = tf.string("type", 64);
    if (!type) throw_invalid(tf.name("type"), qname(tf.name("type")) + " is required", "missing_required_parameter");
    if (*type != "function")
      throw_invalid(tf.name("type"), qname(tf.name("type")) + " must be 'function', got '" + *type + "'", "unsupported_value");
    const nlohmann::json* fn = tf.get("function");
    if (!fn) throw_invalid(tf.name("function"), qname(tf.name("function")) + " is required", "missing_required_parameter");
    if (!fn->is_object())
      throw_invalid(tf.name("function"), qname(tf.name("function")) + " must be an object, got " + json_kind(*fn), "invalid_type");
    Fields ff(*fn, tf.name("function"));
    std::optional<std::string> name = ff.string("name", 64);
    if (!name || name->empty())
      throw_invalid(ff.name("name"), qname(ff.name("name")) + " is required (a non-empty function name)", "missing_required_parameter");
    for (char c : *name) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
      if (!ok)
        throw_invalid(ff.name("name"), qname(ff.name("name")) + " may contain only a-z, A-Z, 0-9, '_', '-' and '.', got '" +
                                           *name + "'");
    }
    ff.string("description", 1u << 20);
    if (const nlohmann::json* params = ff.get("parameters"); params && !params->is_object())
      throw_invalid(ff.name("parameters"), qname(ff.name("parameters")) + " must be a JSON Schema object, got " +
                                               json_kind(*params), "invalid_type");
    ff.boolean("strict");
  }
  return *v;
}

void parse_tool_choice(const Fields& f, ChatRequest& r) {
  const nlohmann::json* v = f.get("tool_choice");
  if (!v) {
    r.tool_choice = ToolChoice::Auto;
    return;
  }
  if (v->is_string()) {
    const std::string& s = v->get_ref<const std::string&>();
    if (s == "auto") r.tool_choice = ToolChoice::Auto;
    else if (s == "none") r.tool_choice = ToolChoice::None;
    else if (s == "required") r.tool_choice = ToolChoice::Required;
    else throw_invalid("tool_choice", "'tool_choice' must be 'auto', 'none', 'required' or a named function, got '" + s + "'");
  } else if (v->is_object()) {
    Fields tf(*v, "tool_choice");
    if (auto t = tf.string("type", 64); t && *t != "function")
      throw_invalid("tool_choice.type", "'tool_choice.type' must be 'function', got '" + *t + "'");
    const nlohmann::json* fn = tf.get("function");
    if (!fn || !fn->is_object())
      throw_invalid("tool_choice.function", "'tool_choice.function' must be an object with a 'name'",
                    fn ? "invalid_type" : "missing_required_parameter");
    Fields ff(*fn, "tool_choice.function");
    std::optional<std::string> name = ff.string("name", 64);
    if (!name) throw_invalid("tool_choice.function.name", "'tool_choice.function.name' is required", "missing_required_parameter");
    r.tool_choice = ToolChoice::Named;
    r.tool_choice_name = *name;
  } else {
    throw_invalid("tool_choice", "'tool_choice' must be a string or an object, got " + std::string(json_kind(*v)), "invalid_type");
  }
  if (r.tool_choice == ToolChoice::Required || r.tool_choice == ToolChoice::Named) {
    if (!r.tools.is_array() || r.tools.empty())
      throw_invalid("tool_choice", "'tool_choice' requires a non-empty 'tools' list");
  }
  if (r.tool_choice == ToolChoice::Named) {
    bool found = false;
    for (const auto& t : r.tools) found = found || t["function"]["name"] == r.tool_choice_name;
    if (!found)
      throw_invalid("tool_choice.function.name",
                    "'tool_choice.function.name' names '" + r.tool_choice_name + "', which is not in 'tools'");
  }
}

}  // namespace

ChatRequest parse_chat_request(const nlohmann::json& body, const RequestLimits& limits) {
  if (!body.is_object())
    throw_invalid("", "the request body must be a JSON object, got " + std::string(json_kind(body)), "invalid_type");
  ChatRequest r;
  Fields f(body, "");
  r.gen = parse_generation_options(body, limits, {"max_completion_tokens", "max_tokens"}, 1);
  r.messages = parse_messages(f, limits);
  r.tools = parse_tools(f, limits);
  parse_tool_choice(f, r);
  f.boolean("parallel_tool_calls");
  if (auto b = f.boolean("add_generation_prompt")) r.add_generation_prompt = *b;
  if (const nlohmann::json* k = f.get("chat_template_kwargs")) {
    if (!k->is_object())
      throw_invalid("chat_template_kwargs", "'chat_template_kwargs' must be an object, got " + std::string(json_kind(*k)),
                    "invalid_type");
    r.chat_template_kwargs = *k;
  }
  if (auto b = f.boolean("logprobs")) r.logprobs = *b;
  if (auto t = f.integer("top_logprobs", 0, 20)) {
    if (!r.logprobs) throw_invalid("top_logprobs", "'top_logprobs' requires 'logprobs' to be true");
    r.top_logprobs = static_cast<int>(*t);
  }
  return r;
}

}  // namespace strata
