// The OpenAI request -> template variables conversion, observed through small templates that print
// what they were given.
#include <catch2/catch.hpp>

#include "engine/template/chat_template.hpp"

using strata::ChatTemplate;
using strata::ChatTemplateOptions;
using strata::TemplateError;
using Json = nlohmann::ordered_json;

namespace {
std::string render(const std::string& tpl, const Json& messages, const Json& tools = Json(),
                   ChatTemplateOptions options = {}) {
  return ChatTemplate(tpl).render_ordered(messages, tools, options);
}
std::string error_of(const std::string& tpl, const Json& messages, const Json& tools = Json()) {
  try {
    render(tpl, messages, tools);
  } catch (const TemplateError& e) {
    return e.what();
  }
  return "";
}
const char* kContentTemplate = "{% for m in messages %}[{{ m.content }}]{% endfor %}";
}  // namespace

TEST_CASE("text content parts are joined with a newline; plain and null content pass through") {
  Json messages = Json::parse(R"([
    {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
    {"role": "assistant", "content": null},
    {"role": "user", "content": "plain"}])");
  CHECK(render(kContentTemplate, messages) == "[one\ntwo][None][plain]");
}

TEST_CASE("a non-text content part is refused, naming where it is") {
  Json messages = Json::parse(R"([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}])");
  CHECK_THAT(error_of(kContentTemplate, messages), Catch::Contains("messages[0].content[0]") && Catch::Contains("image_url"));
}

TEST_CASE("tools are defined only when the request has tools, and keep their key order") {
  const char* tpl = "{% if tools is defined %}{{ tools|tojson }}{% else %}no tools{% endif %}";
  Json messages = Json::parse(R"([{"role": "user", "content": "hi"}])");
  CHECK(render(tpl, messages) == "no tools");
  CHECK(render(tpl, messages, Json::array()) == "no tools");
  Json tools = Json::parse(R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])");
  CHECK(render(tpl, messages, tools) ==
        R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])");
}

TEST_CASE("tool-call arguments are parsed into objects for a template that renders them with tojson") {
  const char* tpl =
      "{% for m in messages %}{% for c in m.tool_calls %}{{ c.function.name }}:{{ c.function.arguments|tojson }}"
      "{{ c.function.arguments is mapping }}{% endfor %}{% endfor %}";
  Json messages = Json::parse(R"([{"role": "assistant", "content": null, "tool_calls": [
      {"id": "1", "type": "function", "function": {"name": "f", "arguments": "{\"z\": 1, \"a\": [true]}"}}]}])");
  ChatTemplate t(tpl);
  CHECK(t.arguments_as_objects());
  CHECK(t.render_ordered(messages, Json(), {}) == R"(f:{"z": 1, "a": [true]}True)");
}

TEST_CASE("arguments that are not valid JSON stay the string the client sent") {
  const char* tpl = "{% for c in messages[0].tool_calls %}{{ c.function.arguments is string }}{% endfor %}";
  Json messages = Json::parse(R"([{"role": "assistant", "content": null, "tool_calls": [
      {"id": "1", "type": "function", "function": {"name": "f", "arguments": "{not json"}}]}])");
  CHECK(render(tpl, messages) == "True");
}

TEST_CASE("a template that concatenates arguments as text keeps them as strings") {
  const char* tpl =
      "{% for m in messages %}{% if m.tool_calls %}{% for c in m.tool_calls %}"
      "{{ 'call ' + c.function.name + ' ' + c.function.arguments }}{% endfor %}{% endif %}{% endfor %}";
  Json messages = Json::parse(R"([{"role": "assistant", "content": null, "tool_calls": [
      {"id": "1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]}])");
  ChatTemplate t(tpl);
  CHECK_FALSE(t.arguments_as_objects());
  CHECK(t.render_ordered(messages, Json(), {}) == R"(call f {"a": 1})");
}

TEST_CASE("chat_template_kwargs become template variables but cannot replace the conversation") {
  const char* tpl = "{{ enable_thinking }}|{{ messages|length }}";
  ChatTemplateOptions o;
  o.extra = {{"enable_thinking", false}, {"messages", "hijack"}};
  CHECK(render(tpl, Json::parse(R"([{"role": "user", "content": "hi"}])"), Json(), o) == "False|1");
}

TEST_CASE("bos_token, eos_token and add_generation_prompt reach the template; the prompt is on by default") {
  const char* tpl = "{{ bos_token }}|{{ eos_token }}|{{ add_generation_prompt }}";
  Json messages = Json::parse(R"([{"role": "user", "content": "hi"}])");
  ChatTemplateOptions o;
  o.bos_token = "<s>";
  o.eos_token = "</s>";
  CHECK(render(tpl, messages, Json(), o) == "<s>|</s>|True");
  o.add_generation_prompt = false;
  CHECK(render(tpl, messages, Json(), o) == "<s>|</s>|False");
}

TEST_CASE("malformed requests are refused with the field named") {
  CHECK_THAT(error_of(kContentTemplate, Json::parse(R"({"role": "user"})")), Catch::Contains("messages must be an array"));
  CHECK_THAT(error_of(kContentTemplate, Json::parse(R"(["hi"])")), Catch::Contains("messages[0] must be an object"));
  CHECK_THAT(error_of(kContentTemplate, Json::parse(R"([{"role": "user", "content": "x"}])"), Json::parse(R"({"a": 1})")),
             Catch::Contains("tools must be an array"));
}

TEST_CASE("a template that does not parse fails at construction with its position") {
  CHECK_THROWS_WITH(ChatTemplate("{% for m in messages %}"), Catch::Contains("line 1") && Catch::Contains("endfor"));
}

TEST_CASE("the sorted-key nlohmann::json overload renders the same conversation") {
  nlohmann::json messages = nlohmann::json::parse(R"([{"role": "user", "content": "hi"}])");
  CHECK(ChatTemplate(kContentTemplate).render(messages, nlohmann::json(), {}) == "[hi]");
}
