// Chunk invariance on generated outputs: texts stitched from the formats' markers, JSON pieces and prose,
// so that markers meet in every order (half-written calls, nested markers, stray closers). Whatever the
// text, whole, byte-by-byte and random chunkings must agree, and nothing may be lost or invented: with no
// valid call, content + reasoning hold every non-whitespace byte of the text.
#include <random>

#include <catch2/catch.hpp>

#include "tests/server_parsers/chunked_feed.hpp"

using namespace strata;
using namespace strata::testing;

namespace {

const std::vector<std::string> kPieces = {
    "<think>", "</think>", "<tool_call>", "</tool_call>", "<|python_tag|>", "[TOOL_CALLS]", "[ARGS]",
    "[CALL_ID]", "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>",
    "<｜tool▁calls▁end｜>", "function", "\n```json\n", "\n```", "{\"name\": \"f\", \"arguments\": {\"a\": 1}}",
    "[{\"name\": \"g\", \"arguments\": {}}]", "{\"name\": \"h\", \"parameters\": {\"s\": \"}\\\"]\"}}", "f",
    "{\"x\": [1, {\"y\": \"z\"}]}", "{", "}", "[", "]", "\"", "\\", ";", " ", "\n", "hello", "é✓", "<", "｜",
    // Whole calls, so that valid calls meet the noise too.
    "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}</tool_call>",
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{\"a\": 1}\n```<｜tool▁call▁end｜>",
    "[TOOL_CALLS]f[ARGS]{\"a\": 1}",
};

std::string random_text(std::mt19937& rng) {
  std::uniform_int_distribution<size_t> count(1, 14), pick(0, kPieces.size() - 1);
  std::string text;
  for (size_t n = count(rng); n > 0; --n) text += kPieces[pick(rng)];
  return text;
}

bool same(const ParsedMessage& a, const ParsedMessage& b) {
  if (a.content != b.content || a.reasoning != b.reasoning || a.tool_calls.size() != b.tool_calls.size()) {
    return false;
  }
  for (size_t i = 0; i < a.tool_calls.size(); ++i) {
    if (a.tool_calls[i].name != b.tool_calls[i].name || a.tool_calls[i].arguments != b.tool_calls[i].arguments) {
      return false;
    }
  }
  return true;
}

std::string without_space(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c != ' ' && c != '\n') out += c;
  }
  return out;
}

void check_format(ToolFormat format, ReasoningMode mode, bool starts_in_thought) {
  OutputParserOptions options = with_format(format);
  options.reasoning = mode;
  options.starts_in_thought = starts_in_thought;
  std::mt19937 rng(static_cast<unsigned>(format) * 7919u + (starts_in_thought ? 1u : 0u));
  for (int round = 0; round < 400; ++round) {
    std::string text = random_text(rng);
    INFO("text: " << text);
    ParsedMessage whole = feed_with_cuts(options, text, {});
    std::vector<size_t> bytewise;
    for (size_t i = 1; i < text.size(); ++i) bytewise.push_back(i);
    REQUIRE(same(whole, feed_with_cuts(options, text, bytewise)));
    std::uniform_int_distribution<size_t> step(1, 9);
    for (int cut_round = 0; cut_round < 5; ++cut_round) {
      std::vector<size_t> cuts;
      for (size_t at = step(rng); at < text.size(); at += step(rng)) cuts.push_back(at);
      INFO("cut round " << cut_round);
      REQUIRE(same(whole, feed_with_cuts(options, text, cuts)));
    }
    if (whole.tool_calls.empty() && mode == ReasoningMode::none) {
      REQUIRE(without_space(whole.content) == without_space(text));
    }
  }
}

}  // namespace

TEST_CASE("generated outputs: every format gives the same message for every chunking") {
  for (ToolFormat format : {ToolFormat::none, ToolFormat::hermes, ToolFormat::llama3_json, ToolFormat::deepseek_v3,
                            ToolFormat::mistral}) {
    INFO("format " << tool_format_name(format));
    check_format(format, ReasoningMode::none, false);
    check_format(format, ReasoningMode::auto_detect, false);
    check_format(format, ReasoningMode::auto_detect, true);
  }
}
