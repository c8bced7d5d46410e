// ChatTemplate: turns an OpenAI chat request into the variables transformers' apply_chat_template
// passes to the model's template, and renders it.
//
// The conversions are the ones clients rely on: text content parts are joined with "\n"; tool-call
// `arguments` arrive as JSON strings but templates written for transformers expect objects (they
// `tojson` them), except templates that concatenate them as strings (DeepSeek V3) and would fail on an
// object. Which kind a template is gets decided once, at load, by rendering a probe conversation both ways.
#include <algorithm>

#include "engine/template/chat_template.hpp"
#include "engine/template/interpreter.hpp"
#include "engine/template/jinja_program.hpp"
#include "engine/template/json_values.hpp"

namespace strata {
namespace {

using jinja::Dict;
using jinja::Value;

template <class Json>
Value convert_content(const Json& content, size_t index) {
  if (!content.is_array()) return jinja::from_json(content);
  std::string joined;
  bool first = true;
  for (size_t j = 0; j < content.size(); ++j) {
    const auto& part = content[j];
    std::string where = "messages[" + std::to_string(index) + "].content[" + std::to_string(j) + "]";
    if (!part.is_object()) throw TemplateError(where + " must be an object");
    auto type = part.find("type");
    std::string kind = type != part.end() && type->is_string() ? type->template get<std::string>() : "";
    if (kind != "text")
      throw TemplateError(where + ": content part type '" + kind + "' is not supported (only 'text')");
    auto text = part.find("text");
    if (text == part.end() || !text->is_string()) throw TemplateError(where + ".text must be a string");
    if (!first) joined += "\n";
    first = false;
    joined += text->template get<std::string>();
  }
  return Value(std::move(joined));
}

template <class Json>
Value convert_tool_call(const Json& call, bool arguments_as_objects) {
  Value v = jinja::from_json(call);
  if (!arguments_as_objects || !call.is_object()) return v;
  auto fn = call.find("function");
  if (fn == call.end() || !fn->is_object()) return v;
  auto args = fn->find("arguments");
  if (args == fn->end() || !args->is_string()) return v;
  // Arguments that are not valid JSON stay a string: the client echoes what the model produced.
  auto parsed = nlohmann::ordered_json::parse(args->template get<std::string>(), nullptr, false);
  if (parsed.is_discarded()) return v;
  auto fn_dict = std::make_shared<Dict>(v.dict_ref().find("function")->dict_ref());
  fn_dict->set("arguments", jinja::from_json(parsed));
  auto call_dict = std::make_shared<Dict>(v.dict_ref());
  call_dict->set("function", Value::dict(fn_dict));
  return Value::dict(call_dict);
}

template <class Json>
Value convert_messages(const Json& messages, bool arguments_as_objects) {
  if (!messages.is_array()) throw TemplateError("messages must be an array");
  jinja::List out;
  out.reserve(messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& m = messages[i];
    if (!m.is_object()) throw TemplateError("messages[" + std::to_string(i) + "] must be an object");
    auto d = std::make_shared<Dict>();
    d->entries.reserve(m.size());
    for (auto it = m.begin(); it != m.end(); ++it) {
      if (it.key() == "content") {
        d->entries.emplace_back(it.key(), convert_content(it.value(), i));
      } else if (it.key() == "tool_calls" && it.value().is_array()) {
        jinja::List calls;
        for (const auto& c : it.value()) calls.push_back(convert_tool_call(c, arguments_as_objects));
        d->entries.emplace_back(it.key(), Value::list(std::move(calls)));
      } else {
        d->entries.emplace_back(it.key(), jinja::from_json(it.value()));
      }
    }
    out.push_back(Value::dict(std::move(d)));
  }
  return Value::list(std::move(out));
}

template <class Json>
std::shared_ptr<Dict> build_context(const Json& messages, const Json& tools, const ChatTemplateOptions& options,
                                    bool arguments_as_objects) {
  auto ctx = std::make_shared<Dict>();
  ctx->set("messages", convert_messages(messages, arguments_as_objects));
  // `tools` exists only when the request declares tools, so `tools is defined` means "has tools".
  if (!tools.is_null() && !tools.is_array()) throw TemplateError("tools must be an array");
  if (tools.is_array() && !tools.empty()) ctx->set("tools", jinja::from_json(tools));
  ctx->set("add_generation_prompt", Value(options.add_generation_prompt));
  ctx->set("bos_token", Value(options.bos_token));
  ctx->set("eos_token", Value(options.eos_token));
  if (!options.extra.is_null() && !options.extra.is_object())
    throw TemplateError("chat_template_kwargs must be an object");
  if (options.extra.is_object()) {
    for (auto it = options.extra.begin(); it != options.extra.end(); ++it) {
      // The request's own fields win: kwargs cannot replace the conversation.
      if (it.key() == "messages" || it.key() == "tools") continue;
      ctx->set(it.key(), jinja::from_json(it.value()));
    }
  }
  return ctx;
}

// Does the template render tool-call arguments given as objects? Renders a small tool round trip with
// object and with string arguments, in a few shapes (templates branch on empty vs null content and on
// what follows the tool turn). A shape "exercises" the arguments when the string render shows them.
bool detect_arguments_as_objects(const JinjaTemplate::Program& program) {
  const std::string marker_value = "strata_probe_value";
  nlohmann::ordered_json object_args = {{"strata_probe_key", marker_value}};
  bool exercised = false, objects_ok = false;
  for (int shape = 0; shape < 4; ++shape) {
    std::string outputs[2];
    bool ok[2] = {false, false};
    for (int as_object = 0; as_object < 2; ++as_object) {
      nlohmann::ordered_json call = {{"id", "call_probe"},
                                     {"type", "function"},
                                     {"function", {{"name", "probe_tool"},
                                                   {"arguments", as_object ? object_args : nlohmann::ordered_json(object_args.dump())}}}};
      nlohmann::ordered_json assistant = {{"role", "assistant"}};
      assistant["content"] = shape % 2 == 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json("");
      assistant["tool_calls"] = nlohmann::ordered_json::array({call});
      nlohmann::ordered_json messages = nlohmann::ordered_json::array(
          {{{"role", "user"}, {"content", "probe"}}, assistant,
           {{"role", "tool"}, {"tool_call_id", "call_probe"}, {"content", "probe result"}}});
      if (shape >= 2) messages.push_back({{"role", "user"}, {"content", "probe"}});
      nlohmann::ordered_json tools = nlohmann::ordered_json::array(
          {{{"type", "function"},
            {"function", {{"name", "probe_tool"}, {"description", "probe"}, {"parameters", {{"type", "object"}}}}}}});
      ChatTemplateOptions options;
      try {
        // Arguments are already in the wanted form, so conversion must leave them alone.
        outputs[as_object] = program.render(build_context(messages, tools, options, false), TemplateLimits{});
        ok[as_object] = true;
      } catch (const TemplateError&) {
      }
    }
    bool object_good = ok[1] && outputs[1].find(marker_value) != std::string::npos &&
                       outputs[1].find("{'strata_probe_key'") == std::string::npos;
    if (ok[0] && outputs[0].find(marker_value) != std::string::npos) {
      exercised = true;
      objects_ok = objects_ok || object_good;
    }
  }
  if (exercised) return objects_ok;
  return true;  // the template never shows arguments: objects are transformers' convention
}

}  // namespace

ChatTemplate::ChatTemplate(const std::string& source) : tpl_(JinjaTemplate::compile(source)) {
  arguments_as_objects_ = detect_arguments_as_objects(*tpl_->program_);
}

std::string ChatTemplate::render(const nlohmann::json& messages, const nlohmann::json& tools,
                                 const ChatTemplateOptions& options) const {
  return tpl_->program_->render(build_context(messages, tools, options, arguments_as_objects_), tpl_->limits_);
}

std::string ChatTemplate::render_ordered(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                         const ChatTemplateOptions& options) const {
  return tpl_->program_->render(build_context(messages, tools, options, arguments_as_objects_), tpl_->limits_);
}

}  // namespace strata
