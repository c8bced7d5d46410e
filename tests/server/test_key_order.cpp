#include <catch2/catch.hpp>

#include "engine/template/chat_template.hpp"
#include "server/openai/key_order.hpp"

using strata::with_key_order_of;
using ojson = nlohmann::ordered_json;

TEST_CASE("validated values get back the client's key order at every depth") {
  const std::string text = R"({"tools":[{"type":"function","function":{"name":"get_weather",
      "parameters":{"type":"object","properties":{"unit":{"type":"string"},"city":{"type":"string"}},
      "required":["city"]}}}]})";
  const ojson original = ojson::parse(text);
  const nlohmann::json sorted = nlohmann::json::parse(text);  // what the server validates
  const ojson restored = with_key_order_of(sorted["tools"], original["tools"]);
  CHECK(restored.dump() == original["tools"].dump());
  CHECK(sorted["tools"].dump() != original["tools"].dump());  // the sorted form really differs
}

TEST_CASE("keys the validator added or changed keep their values; added keys come after the client's") {
  const ojson original = ojson::parse(R"([{"role":"developer","content":"be brief","zeta":1}])");
  nlohmann::json validated = nlohmann::json::parse(R"([{"role":"system","content":"be brief","zeta":1}])");
  validated[0]["added"] = true;
  const ojson restored = with_key_order_of(validated, original);
  CHECK(restored.dump() == R"([{"role":"system","content":"be brief","zeta":1,"added":true}])");
}

TEST_CASE("a chat template's tojson prints tools in the order the client sent them") {
  strata::ChatTemplate tpl("{{ tools | tojson }}");
  const std::string body = R"({"tools":[{"type":"function","function":{"name":"f","parameters":{"z":1,"a":2}}}]})";
  const ojson original = ojson::parse(body);
  const nlohmann::json validated = nlohmann::json::parse(body);
  strata::ChatTemplateOptions opt;
  const std::string out = tpl.render_ordered(ojson::array(), with_key_order_of(validated["tools"], original["tools"]), opt);
  // json.dumps(tools, ensure_ascii=False) in Python: insertion order, ", " and ": " separators.
  CHECK(out == R"([{"type": "function", "function": {"name": "f", "parameters": {"z": 1, "a": 2}}}])");
}
