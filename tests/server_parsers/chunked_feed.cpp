#include "tests/server_parsers/chunked_feed.hpp"

#include <random>
#include <set>

#include <catch2/catch.hpp>

namespace strata::testing {

namespace {

void require_delta_shape(const ParsedDelta& delta) {
  for (const ToolCallDelta& call : delta.tool_calls) {
    if (call.is_header()) {
      REQUIRE(call.id.rfind("call_", 0) == 0);
      REQUIRE(call.id.size() > 5);
      REQUIRE(call.type == "function");
      REQUIRE(!call.name.empty());
      REQUIRE(call.arguments.empty());
    } else {
      REQUIRE(call.type.empty());
      REQUIRE(call.name.empty());
    }
  }
}

std::string describe(const std::vector<size_t>& cuts) {
  std::string out;
  for (size_t i = 0; i < cuts.size() && i < 64; ++i) out += std::to_string(cuts[i]) + " ";
  return out;
}

void require_matches(const ParsedMessage& got, const Expected& expected, const std::vector<size_t>& cuts) {
  INFO("cuts at: " << describe(cuts));
  REQUIRE(got.content == expected.content);
  REQUIRE(got.reasoning == expected.reasoning);
  REQUIRE(got.tool_calls.size() == expected.calls.size());
  std::set<std::string> ids;
  for (size_t i = 0; i < expected.calls.size(); ++i) {
    REQUIRE(got.tool_calls[i].name == expected.calls[i].name);
    REQUIRE(got.tool_calls[i].arguments == expected.calls[i].arguments);
    REQUIRE(got.tool_calls[i].type == "function");
    ids.insert(got.tool_calls[i].id);
  }
  REQUIRE(ids.size() == expected.calls.size());
}

}  // namespace

OutputParserOptions with_format(ToolFormat format, std::vector<std::string> tool_names) {
  OutputParserOptions options;
  options.tool_format = format;
  options.tool_names = std::move(tool_names);
  return options;
}

ParsedMessage feed_with_cuts(const OutputParserOptions& options, std::string_view text,
                             const std::vector<size_t>& cuts) {
  auto parser = make_output_parser(options);
  ParsedMessage message;
  size_t from = 0;
  for (size_t cut : cuts) {
    ParsedDelta delta = parser->feed(text.substr(from, cut - from));
    require_delta_shape(delta);
    append_delta(message, delta);
    from = cut;
  }
  ParsedDelta delta = parser->feed(text.substr(from));
  require_delta_shape(delta);
  append_delta(message, delta);
  delta = parser->finish();
  require_delta_shape(delta);
  append_delta(message, delta);
  REQUIRE(parser->saw_tool_calls() == !message.tool_calls.empty());
  return message;
}

void require_every_chunking_gives(const OutputParserOptions& options, std::string_view text,
                                  const Expected& expected) {
  require_matches(feed_with_cuts(options, text, {}), expected, {});
  REQUIRE(parse_whole_output(options, text).content == expected.content);

  std::vector<size_t> bytewise;
  for (size_t i = 1; i < text.size(); ++i) bytewise.push_back(i);
  require_matches(feed_with_cuts(options, text, bytewise), expected, bytewise);

  std::mt19937 rng(20261201);
  for (int round = 0; round < 300; ++round) {
    // Short cuts split markers and escapes; long ones put several markers in one delta.
    size_t max_step = round % 3 == 0 ? 3 : round % 3 == 1 ? 12 : 64;
    std::uniform_int_distribution<size_t> step(1, max_step);
    std::vector<size_t> cuts;
    for (size_t at = step(rng); at < text.size(); at += step(rng)) cuts.push_back(at);
    require_matches(feed_with_cuts(options, text, cuts), expected, cuts);
  }
}

}  // namespace strata::testing
