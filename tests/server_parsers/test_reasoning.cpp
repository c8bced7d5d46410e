// <think> reasoning split, alone and together with tool calls.
#include <catch2/catch.hpp>

#include "server/openai/reasoning_parser.hpp"
#include "tests/server_parsers/chunked_feed.hpp"

using namespace strata;
using namespace strata::testing;

namespace {
OutputParserOptions reasoning_options(ReasoningMode mode, bool starts_in_thought = false,
                                      ToolFormat format = ToolFormat::none) {
  OutputParserOptions options = with_format(format);
  options.reasoning = mode;
  options.starts_in_thought = starts_in_thought;
  return options;
}
}  // namespace

TEST_CASE("reasoning: a leading <think> block goes to reasoning, the answer to content") {
  require_every_chunking_gives(reasoning_options(ReasoningMode::auto_detect),
                               "\n<think>\nLet me add: 2+2 — é.\n</think>\n\nThe answer is 4.",
                               {"The answer is 4.", "\nLet me add: 2+2 — é.\n", {}});
}

TEST_CASE("reasoning: when the prompt opened the thought, the output starts inside it") {
  require_every_chunking_gives(reasoning_options(ReasoningMode::auto_detect, true),
                               "Hmm, <b>tags</b> inside.</think>Answer <think>not a thought</think>",
                               {"Answer <think>not a thought</think>", "Hmm, <b>tags</b> inside.", {}});
}

TEST_CASE("reasoning: mode none keeps the thought inline as content") {
  const std::string text = "<think>x</think>y";
  require_every_chunking_gives(reasoning_options(ReasoningMode::none), text, {text, "", {}});
  require_every_chunking_gives(reasoning_options(ReasoningMode::none, true), text, {text, "", {}});
}

TEST_CASE("reasoning: <think> that does not start the output is content") {
  const std::string text = "Hello <think> there </think> friend";
  require_every_chunking_gives(reasoning_options(ReasoningMode::auto_detect), text, {text, "", {}});
}

TEST_CASE("reasoning: a thought that never closes is all reasoning") {
  require_every_chunking_gives(reasoning_options(ReasoningMode::auto_detect), "<think>still thinking </thi",
                               {"", "still thinking </thi", {}});
}

TEST_CASE("reasoning: an output that is only a partial tag is content") {
  require_every_chunking_gives(reasoning_options(ReasoningMode::auto_detect), "  <thi", {"  <thi", "", {}});
}

TEST_CASE("reasoning: an empty thought gives empty reasoning") {
  require_every_chunking_gives(reasoning_options(ReasoningMode::auto_detect), "<think>\n\n</think>\n\nHi",
                               {"Hi", "\n\n", {}});
}

TEST_CASE("reasoning: tags are never emitted in part while streaming") {
  auto parser = make_output_parser(reasoning_options(ReasoningMode::auto_detect));
  CHECK(parser->feed("<thi").empty());
  ParsedDelta inside = parser->feed("nk>abc</th");
  CHECK(inside.reasoning == "abc");
  CHECK(inside.content.empty());
  ParsedDelta after = parser->feed("ink>\nok");
  CHECK(after.reasoning.empty());
  CHECK(after.content == "ok");
  CHECK(parser->finish().empty());
}

TEST_CASE("reasoning and hermes: the thought is reasoning, the call after it a tool call") {
  require_every_chunking_gives(
      reasoning_options(ReasoningMode::auto_detect, false, ToolFormat::hermes),
      "<think>I need the weather. <tool_call>{\"name\": \"no\"}</tool_call> is the syntax.</think>\n"
      "Calling.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lyon\"}}\n</tool_call>",
      {"Calling.\n", "I need the weather. <tool_call>{\"name\": \"no\"}</tool_call> is the syntax.",
       {{"get_weather", R"J({"city":"Lyon"})J"}}});
}

TEST_CASE("reasoning splitter alone: feed then finish releases the held tag prefix") {
  ReasoningSplitter splitter(true, true);
  std::string reasoning, content;
  splitter.feed("deep </thin", reasoning, content);
  CHECK(reasoning == "deep ");
  splitter.finish(reasoning, content);
  CHECK(reasoning == "deep </thin");
  CHECK(content.empty());
}

TEST_CASE("output parser: text fed after finish() is ignored") {
  auto parser = make_output_parser(reasoning_options(ReasoningMode::auto_detect));
  CHECK(parser->feed("a").content == "a");
  CHECK(parser->finish().empty());
  CHECK(parser->feed("b").empty());
  CHECK(parser->finish().empty());
}
