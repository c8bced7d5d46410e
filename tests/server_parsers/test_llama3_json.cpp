// Llama 3.x JSON tool calls.
#include <catch2/catch.hpp>

#include "tests/server_parsers/chunked_feed.hpp"

using namespace strata;
using namespace strata::testing;

namespace {
const OutputParserOptions kLlama = with_format(ToolFormat::llama3_json);
}

TEST_CASE("llama3_json: a bare JSON object with \"parameters\" is a call") {
  require_every_chunking_gives(kLlama,
      "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"San Francisco\", \"days\": 3}}",
      {"", "", {{"get_weather", R"J({"city":"San Francisco","days":3})J"}}});
}

TEST_CASE("llama3_json: <|python_tag|> may open the call, and \"arguments\" is accepted too") {
  require_every_chunking_gives(kLlama,
      "<|python_tag|>{\"name\": \"search\", \"arguments\": {\"q\": \"caf\\u00e9 \\\"best\\\"\"}}",
      {"", "", {{"search", R"J({"q":"café \"best\""})J"}}});
}

TEST_CASE("llama3_json: calls separated by ';' are all parsed") {
  require_every_chunking_gives(kLlama,
      "\n{\"name\": \"a\", \"parameters\": {\"x\": {\"y\": [1, {\"z\": null}]}}}; "
      "{\"name\": \"b\", \"parameters\": {}};\n",
      {"", "", {{"a", R"J({"x":{"y":[1,{"z":null}]}})J"}, {"b", "{}"}}});
}

TEST_CASE("llama3_json: prose before <|python_tag|> streams as content") {
  require_every_chunking_gives(kLlama,
      "Sure, searching {now}.<|python_tag|>{\"name\": \"search\", \"parameters\": {\"q\": \"x\"}} Then more.",
      {"Sure, searching {now}. Then more.", "", {{"search", R"J({"q":"x"})J"}}});
}

TEST_CASE("llama3_json: a JSON answer that is not a call stays content") {
  const std::string text = "{\"answer\": 42, \"name\": 7}";
  require_every_chunking_gives(kLlama, text, {text, "", {}});
}

TEST_CASE("llama3_json: prose that merely contains braces stays content") {
  const std::string text = "Use {\"name\": \"x\"} in a sentence, not a call.";
  require_every_chunking_gives(kLlama, text, {text, "", {}});
}

TEST_CASE("llama3_json: a built-in tool's Python call after <|python_tag|> stays content") {
  const std::string text = "<|python_tag|>brave_search.call(query=\"weather\")";
  require_every_chunking_gives(kLlama, text, {text, "", {}});
}

TEST_CASE("llama3_json: an unterminated or malformed call stays content") {
  const std::string truncated = "{\"name\": \"f\", \"parameters\": {\"a\": \"b";
  require_every_chunking_gives(kLlama, truncated, {truncated, "", {}});
  const std::string malformed = "{\"name\": \"f\", \"parameters\": {\"a\": nope}}";
  require_every_chunking_gives(kLlama, malformed, {malformed, "", {}});
}

TEST_CASE("llama3_json: with declared tools an unknown name stays content") {
  const std::string text = "{\"name\": \"other\", \"parameters\": {}}";
  require_every_chunking_gives(with_format(ToolFormat::llama3_json, {"get_weather"}), text, {text, "", {}});
}

TEST_CASE("llama3_json: 100k-deep nesting is content, not a crash") {
  std::string text = std::string(100000, '{');
  ParsedMessage message = parse_whole_output(kLlama, text);
  CHECK(message.content == text);
  CHECK(message.tool_calls.empty());
}

TEST_CASE("llama3_json: a 256 KiB argument fed byte by byte is parsed in linear time") {
  std::string big(256 * 1024, 'y');
  std::string text = "{\"name\": \"write\", \"parameters\": {\"data\": \"" + big + "\"}}";
  auto parser = make_output_parser(kLlama);
  ParsedMessage message;
  for (char c : text) append_delta(message, parser->feed(std::string_view(&c, 1)));
  append_delta(message, parser->finish());
  REQUIRE(message.tool_calls.size() == 1);
  CHECK(message.tool_calls[0].arguments == "{\"data\":\"" + big + "\"}");
}

TEST_CASE("llama3_json: an answer opening with a non-JSON brace streams without waiting for the end") {
  auto parser = make_output_parser(kLlama);
  CHECK(parser->feed("{x} is a set; {").content == "{x} is a set; {");
  CHECK(parser->finish().empty());
}
