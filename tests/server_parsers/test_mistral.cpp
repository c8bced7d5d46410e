// Mistral [TOOL_CALLS] in its two forms.
#include <catch2/catch.hpp>

#include "tests/server_parsers/chunked_feed.hpp"

using namespace strata;
using namespace strata::testing;

namespace {
const OutputParserOptions kMistral = with_format(ToolFormat::mistral);
}

TEST_CASE("mistral: [TOOL_CALLS] followed by a JSON array gives each element as a call") {
  require_every_chunking_gives(kMistral,
      "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, "
      "{\"name\": \"get_time\", \"arguments\": {\"tz\": \"UTC\", \"q\": \"\\\"x\\\" ü\"}}]",
      {"", "", {{"get_weather", R"J({"city":"Paris"})J"}, {"get_time", R"J({"tz":"UTC","q":"\"x\" ü"})J"}}});
}

TEST_CASE("mistral: the name[ARGS]{...} form, repeated, with content before") {
  require_every_chunking_gives(kMistral,
      "Sure![TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\", \"nested\": {\"a\": [1, 2]}}"
      "[TOOL_CALLS]get_time[ARGS]{\"tz\": \"UTC\"}",
      {"Sure!", "", {{"get_weather", R"J({"city":"Paris","nested":{"a":[1,2]}})J"}, {"get_time", R"J({"tz":"UTC"})J"}}});
}

TEST_CASE("mistral: a [CALL_ID] written by the model is skipped") {
  require_every_chunking_gives(kMistral, "[TOOL_CALLS]get_weather[CALL_ID]a1b2C3d4e[ARGS]{\"city\": \"Oslo\"}",
                               {"", "", {{"get_weather", R"J({"city":"Oslo"})J"}}});
}

TEST_CASE("mistral: an array with one malformed element stays content as a whole") {
  const std::string text =
      "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": 1}}, {\"arguments\": {}}] after";
  require_every_chunking_gives(kMistral, text, {text, "", {}});
}

TEST_CASE("mistral: [TOOL_CALLS] followed by prose stays content") {
  const std::string text = "The token [TOOL_CALLS] starts a call, like [TOOL_CALLS]f but without args.";
  require_every_chunking_gives(kMistral, text, {text, "", {}});
}

TEST_CASE("mistral: malformed or unterminated arguments stay content") {
  const std::string bad = "[TOOL_CALLS]f[ARGS]{\"a\": tru}";
  require_every_chunking_gives(kMistral, bad, {bad, "", {}});
  const std::string cut = "[TOOL_CALLS]f[ARGS]{\"a\": \"}";
  require_every_chunking_gives(kMistral, cut, {cut, "", {}});
}

TEST_CASE("mistral: with declared tools an unknown name stays content") {
  const std::string text = "[TOOL_CALLS]shell[ARGS]{\"cmd\": \"ls\"}";
  require_every_chunking_gives(with_format(ToolFormat::mistral, {"get_weather"}), text, {text, "", {}});
}
