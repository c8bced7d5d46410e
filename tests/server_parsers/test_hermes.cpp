// Hermes / Qwen <tool_call> blocks.
#include <catch2/catch.hpp>

#include "tests/server_parsers/chunked_feed.hpp"

using namespace strata;
using namespace strata::testing;

namespace {
const OutputParserOptions kHermes = with_format(ToolFormat::hermes);
}

TEST_CASE("hermes: content before a call streams as content, the call becomes a tool call") {
  require_every_chunking_gives(kHermes,
      "Let me check the weather.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
      "{\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>",
      {"Let me check the weather.\n", "", {{"get_weather", R"J({"city":"Paris","unit":"celsius"})J"}}});
}

TEST_CASE("hermes: several calls in a row keep their order and drop the whitespace between them") {
  require_every_chunking_gives(kHermes,
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"Europe/Paris\"}}\n</tool_call>\n"
      "<tool_call>{\"name\": \"ping\", \"arguments\": {}}</tool_call>\n",
      {"", "",
       {{"get_weather", R"J({"city":"Paris"})J"},
        {"get_time", R"J({"zone":"Europe/Paris"})J"},
        {"ping", "{}"}}});
}

TEST_CASE("hermes: unicode, escaped quotes and backslashes survive in compact arguments") {
  require_every_chunking_gives(kHermes,
      R"J(<tool_call>{"name": "say", "arguments": {"text": "He said \"h\u00e9llo\" — 🌍", "path": "C:\\dir\\f.txt", "nl": "a\nb"}}</tool_call>)J",
      {"", "", {{"say", R"J({"text":"He said \"héllo\" — 🌍","path":"C:\\dir\\f.txt","nl":"a\nb"})J"}}});
}

TEST_CASE("hermes: nested arguments keep their structure and key order") {
  require_every_chunking_gives(kHermes,
      "<tool_call>\n{\"name\": \"query\", \"arguments\": {\"zeta\": 1, \"filter\": {\"and\": [{\"field\": "
      "\"a\", \"op\": \"=\", \"value\": [1, 2.5, null, true]}, {\"not\": {\"field\": \"b}\"}}]}, \"alpha\": "
      "\"[x]\"}}\n</tool_call>",
      {"", "",
       {{"query",
         R"J({"zeta":1,"filter":{"and":[{"field":"a","op":"=","value":[1,2.5,null,true]},{"not":{"field":"b}"}}]},"alpha":"[x]"})J"}}});
}

TEST_CASE("hermes: text after the last call is content, whitespace before it included") {
  require_every_chunking_gives(kHermes,
      "<tool_call>{\"name\": \"ping\", \"arguments\": {\"n\": 1}}</tool_call>\nDone <tool_ca",
      {"\nDone <tool_ca", "", {{"ping", R"J({"n":1})J"}}});
}

TEST_CASE("hermes: malformed JSON inside the tags stays content verbatim") {
  const std::string text =
      "Try: <tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": }\n</tool_call> ok";
  require_every_chunking_gives(kHermes, text, {text, "", {}});
}

TEST_CASE("hermes: a call without a name or with non-object arguments stays content") {
  const std::string no_name = "<tool_call>{\"arguments\": {\"a\": 1}}</tool_call>";
  require_every_chunking_gives(kHermes, no_name, {no_name, "", {}});
  const std::string list_args = "<tool_call>{\"name\": \"f\", \"arguments\": [1, 2]}</tool_call>";
  require_every_chunking_gives(kHermes, list_args, {list_args, "", {}});
}

TEST_CASE("hermes: with declared tools, an unknown tool name stays content and known ones are calls") {
  const auto options = with_format(ToolFormat::hermes, {"get_weather"});
  const std::string unknown = "<tool_call>{\"name\": \"rm_rf\", \"arguments\": {}}</tool_call>";
  require_every_chunking_gives(options,
      unknown + "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>",
      {unknown, "", {{"get_weather", R"J({"city":"Oslo"})J"}}});
}

TEST_CASE("hermes: arguments written as a JSON string are decoded into the object") {
  require_every_chunking_gives(kHermes,
      R"J(<tool_call>{"name": "f", "arguments": "{\"a\": [1, \"x\"]}"}</tool_call>)J",
      {"", "", {{"f", R"J({"a":[1,"x"]})J"}}});
}

TEST_CASE("hermes: a call cut off before </tool_call> is a call when its JSON is complete") {
  require_every_chunking_gives(kHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n",
                               {"", "", {{"f", R"J({"a":1})J"}}});
  const std::string truncated = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1";
  require_every_chunking_gives(kHermes, truncated, {truncated, "", {}});
}

TEST_CASE("hermes: a partial opening tag is held back until the next delta decides it") {
  auto parser = make_output_parser(kHermes);
  CHECK(parser->feed("Hello <tool_").content == "Hello ");
  ParsedDelta call = parser->feed("call>{\"name\": \"f\", \"arguments\": {}}");
  CHECK(call.content.empty());
  CHECK(call.tool_calls.empty());
  ParsedDelta closed = parser->feed("</tool_call>");
  REQUIRE(closed.tool_calls.size() == 2);
  CHECK(closed.tool_calls[0].index == 0);
  CHECK(closed.tool_calls[0].name == "f");
  CHECK(closed.tool_calls[1].arguments == "{}");
  CHECK(parser->saw_tool_calls());
  CHECK(parser->finish().empty());
}

TEST_CASE("hermes: 100k-deep nesting inside a call is content, not a crash") {
  std::string text = "<tool_call>{\"name\": \"f\", \"arguments\": " + std::string(100000, '[') + "</tool_call>";
  ParsedMessage message = parse_whole_output(kHermes, text);
  CHECK(message.content == text);
  CHECK(message.tool_calls.empty());
}

TEST_CASE("hermes: a 256 KiB argument fed byte by byte is parsed in linear time") {
  std::string big(256 * 1024, 'x');
  std::string text = "<tool_call>{\"name\": \"write\", \"arguments\": {\"data\": \"" + big + "\"}}</tool_call>";
  auto parser = make_output_parser(kHermes);
  ParsedMessage message;
  for (char c : text) append_delta(message, parser->feed(std::string_view(&c, 1)));
  append_delta(message, parser->finish());
  REQUIRE(message.tool_calls.size() == 1);
  CHECK(message.tool_calls[0].arguments == "{\"data\":\"" + big + "\"}");
}

TEST_CASE("format none: tool-call markup is plain content") {
  const std::string text = "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>";
  require_every_chunking_gives(with_format(ToolFormat::none), text, {text, "", {}});
}

TEST_CASE("hermes: an argument string may contain the closing tag") {
  require_every_chunking_gives(kHermes,
      "<tool_call>\n{\"name\": \"write\", \"arguments\": {\"code\": \"print('</tool_call>')\"}}\n</tool_call>",
      {"", "", {{"write", R"J({"code":"print('</tool_call>')"})J"}}});
}

TEST_CASE("hermes: an unbalanced object is given back at its closing tag, before the output ends") {
  auto parser = make_output_parser(kHermes);
  ParsedDelta delta = parser->feed("<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}</tool_call> next");
  CHECK(delta.content == "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}</tool_call> next");
  CHECK(delta.tool_calls.empty());
}
