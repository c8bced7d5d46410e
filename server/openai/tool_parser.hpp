// Parsing of a model's generated text into OpenAI message parts: reasoning_content, content and tool_calls.
//
// Contract (streaming first; the non-streaming result is the same parser fed the whole text):
// - Feed the detokenized text deltas in order with feed(), then call finish() once. The concatenation of
//   every returned ParsedDelta (content with content, reasoning with reasoning, tool-call deltas grouped by
//   index) does not depend on how the text was cut into deltas. Tests pin this for 1-byte, random and whole
//   chunkings.
// - A marker is never emitted in part: text that may be the start of a marker is held back until the next
//   feed() decides it (or finish(), which releases it as plain text).
// - A tool call is emitted only once it is complete and valid (JSON parses, arguments are an object, the name
//   is one of the declared tools when tools were declared). Until then its text is held; if it turns out
//   invalid, its raw text (markers included) becomes content. This is why a call's deltas arrive when the
//   call ends rather than token by token: emitting early would make it impossible to give a malformed call
//   back as content, and would make the result depend on the chunking.
// - For each call the deltas are OpenAI's: first {index, id, type "function", name, arguments ""}, then
//   argument fragments {index, arguments}. Arguments are a compact JSON object string with key order kept.
// - Within one ParsedDelta the order of content relative to tool calls is not represented: content that
//   follows a call in the same delta is appended to `content`. Whitespace that only separates calls (or
//   trails them) is dropped.
// - The detokenizer must keep the format's marker tokens in the text (they are often special tokens).
//
// Choosing options per request: tool_format = the --tool-call-parser name if given, else
// detect_tool_format(template source); use ToolFormat::none when the request has no tools or tool_choice is
// "none" (a call the client did not ask for is text). tool_names = the request's function names, so a call
// to an undeclared tool stays content. starts_in_thought = prompt_opens_thought(rendered prompt).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

enum class ToolFormat {
  none,         // no tool-call parsing: all text is content
  hermes,       // Hermes / Qwen: <tool_call>{"name":..,"arguments":{..}}</tool_call>, several in a row
  llama3_json,  // Llama 3.x: {"name":..,"parameters":{..}} at the start of the output or after <|python_tag|>
  deepseek_v3,  // DeepSeek V3 / R1: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME ...
  mistral,      // Mistral: [TOOL_CALLS][{..}, ..] or [TOOL_CALLS]NAME[ARGS]{..}
};

enum class ReasoningMode {
  auto_detect,  // a thought opened by <think> at the start (or by the prompt) goes to reasoning
  none,         // --reasoning-format none: thoughts stay inline in content
};

// The names accepted by --tool-call-parser: hermes, llama3_json, deepseek_v3, mistral, none.
std::optional<ToolFormat> tool_format_from_name(std::string_view name);
std::string_view tool_format_name(ToolFormat format);
// Picks the format whose call markers the chat template renders; none when it renders no known markers.
ToolFormat detect_tool_format(std::string_view chat_template_source);
// True when a rendered prompt ends inside an opened thought (its last non-space text is "<think>"), as
// DeepSeek R1 and QwQ templates do: the output then starts in the thought.
bool prompt_opens_thought(std::string_view rendered_prompt);

struct ToolCallDelta {
  int index = 0;          // position of the call among the choice's tool_calls
  std::string id;         // first delta of a call only: "call_" + a unique suffix
  std::string type;       // first delta of a call only: "function"
  std::string name;       // first delta of a call only
  std::string arguments;  // a fragment of the arguments' JSON text ("" on the first delta)
  bool is_header() const { return !id.empty(); }
};

struct ParsedDelta {
  std::string content;
  std::string reasoning;
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return content.empty() && reasoning.empty() && tool_calls.empty(); }
};

struct OutputParserOptions {
  ToolFormat tool_format = ToolFormat::none;
  ReasoningMode reasoning = ReasoningMode::auto_detect;
  bool starts_in_thought = false;       // the prompt already opened <think> (see prompt_opens_thought)
  std::vector<std::string> tool_names;  // declared tools; empty: any name is accepted
};

class OutputParser {
 public:
  virtual ~OutputParser() = default;
  virtual ParsedDelta feed(std::string_view text) = 0;
  // Ends the text: releases held text and decides any call left open. Call once, after the last feed().
  virtual ParsedDelta finish() = 0;
  // Whether any tool call has been emitted (finish_reason "tool_calls").
  virtual bool saw_tool_calls() const = 0;
};

std::unique_ptr<OutputParser> make_output_parser(const OutputParserOptions& options);

// The whole message, for non-streaming responses: deltas folded together.
struct ParsedToolCall {
  std::string id, type, name, arguments;
};
struct ParsedMessage {
  std::string content;
  std::string reasoning;
  std::vector<ParsedToolCall> tool_calls;
};
// Folds a delta into a message; throws std::invalid_argument on a delta whose index skips ahead.
void append_delta(ParsedMessage& message, const ParsedDelta& delta);
ParsedMessage parse_whole_output(const OutputParserOptions& options, std::string_view text);

}  // namespace strata
