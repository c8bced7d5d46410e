// DeepSeek V3 / R1 tool-call tokens (strings as in the model's chat template).
#include <catch2/catch.hpp>

#include "tests/server_parsers/chunked_feed.hpp"

using namespace strata;
using namespace strata::testing;

namespace {
const OutputParserOptions kDeepSeek = with_format(ToolFormat::deepseek_v3);
const std::string kCallsBegin = "<｜tool▁calls▁begin｜>";
const std::string kCallsEnd = "<｜tool▁calls▁end｜>";
const std::string kCallBegin = "<｜tool▁call▁begin｜>";
const std::string kCallEnd = "<｜tool▁call▁end｜>";
const std::string kSep = "<｜tool▁sep｜>";

std::string call(const std::string& name, const std::string& json) {
  return kCallBegin + "function" + kSep + name + "\n```json\n" + json + "\n```" + kCallEnd;
}
}  // namespace

TEST_CASE("deepseek_v3: content, then two calls in one section, as the template renders them") {
  require_every_chunking_gives(kDeepSeek,
      "Checking both.\n" + kCallsBegin + call("get_weather", "{\"city\": \"Paris\"}") + "\n" +
          call("get_time", "{\"tz\": \"Europe/Paris\", \"fmt\": {\"h24\": true}}") + kCallsEnd,
      {"Checking both.\n", "",
       {{"get_weather", R"J({"city":"Paris"})J"}, {"get_time", R"J({"tz":"Europe/Paris","fmt":{"h24":true}})J"}}});
}

TEST_CASE("deepseek_v3: unicode and escaped quotes in arguments") {
  require_every_chunking_gives(kDeepSeek,
      kCallsBegin + call("translate", R"J({"text": "\"你好\", she said ✓", "to": "fr"})J") + kCallsEnd,
      {"", "", {{"translate", R"J({"text":"\"你好\", she said ✓","to":"fr"})J"}}});
}

TEST_CASE("deepseek_v3: the V3.1 body without type and fence is accepted") {
  require_every_chunking_gives(kDeepSeek,
      kCallsBegin + kCallBegin + "lookup" + kSep + "{\"id\": 7}" + kCallEnd + kCallsEnd,
      {"", "", {{"lookup", R"J({"id":7})J"}}});
}

TEST_CASE("deepseek_v3: a malformed call stays content with its markers, a valid neighbour is a call") {
  const std::string bad = call("f", "{\"a\": ");
  require_every_chunking_gives(kDeepSeek, kCallsBegin + bad + kCallsEnd,
                               {kCallsBegin + bad + kCallsEnd, "", {}});
  require_every_chunking_gives(kDeepSeek, kCallsBegin + call("ok", "{}") + bad + kCallsEnd,
                               {bad, "", {{"ok", "{}"}}});
}

TEST_CASE("deepseek_v3: with declared tools an unknown name stays content") {
  const std::string bad = call("unknown_tool", "{}");
  require_every_chunking_gives(with_format(ToolFormat::deepseek_v3, {"get_weather"}),
                               kCallsBegin + bad + kCallsEnd, {kCallsBegin + bad + kCallsEnd, "", {}});
}

TEST_CASE("deepseek_v3: a call cut off before its end marker stays content") {
  const std::string text = kCallsBegin + kCallBegin + "function" + kSep + "f\n```json\n{\"a\": 1}";
  require_every_chunking_gives(kDeepSeek, text, {text, "", {}});
}

TEST_CASE("deepseek_v3: text after the section is content") {
  require_every_chunking_gives(kDeepSeek, kCallsBegin + call("f", "{}") + kCallsEnd + "\nAll done.",
                               {"\nAll done.", "", {{"f", "{}"}}});
}

TEST_CASE("deepseek_v3: R1 thinking (opened by the prompt) then a tool call") {
  OutputParserOptions options = kDeepSeek;
  options.starts_in_thought = true;
  require_every_chunking_gives(options,
      "The user wants weather; <｜tool▁calls▁begin｜> is how I call.\n</think>\n\n" + kCallsBegin +
          call("get_weather", "{\"city\": \"Rome\"}") + kCallsEnd,
      {"", "The user wants weather; <｜tool▁calls▁begin｜> is how I call.\n",
       {{"get_weather", R"J({"city":"Rome"})J"}}});
}
