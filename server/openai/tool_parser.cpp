// OutputParser: the reasoning splitter first, then the tool-call format parser over the answer text.
#include "server/openai/tool_parser.hpp"

#include <stdexcept>

#include "server/openai/reasoning_parser.hpp"
#include "server/openai/tool_parser_format.hpp"

namespace strata {
namespace {

using tool_parsing::FormatParser;

// Format "none": the answer is content as it comes.
class PlainParser final : public FormatParser {
 public:
  using FormatParser::FormatParser;

 private:
  void step(bool) override {
    emit_content(buf_);
    buf_.clear();
  }
};

std::unique_ptr<FormatParser> make_format_parser(const OutputParserOptions& options) {
  switch (options.tool_format) {
    case ToolFormat::hermes: return tool_parsing::make_hermes_parser(options.tool_names);
    case ToolFormat::llama3_json: return tool_parsing::make_llama3_json_parser(options.tool_names);
    case ToolFormat::deepseek_v3: return tool_parsing::make_deepseek_v3_parser(options.tool_names);
    case ToolFormat::mistral: return tool_parsing::make_mistral_parser(options.tool_names);
    case ToolFormat::none: break;
  }
  return std::make_unique<PlainParser>(options.tool_names);
}

class ComposedParser final : public OutputParser {
 public:
  explicit ComposedParser(const OutputParserOptions& options)
      : reasoning_(options.reasoning != ReasoningMode::none, options.starts_in_thought),
        tools_(make_format_parser(options)) {}

  ParsedDelta feed(std::string_view text) override {
    ParsedDelta out;
    if (finished_) return out;
    std::string answer;
    reasoning_.feed(text, out.reasoning, answer);
    tools_->feed(answer, out);
    return out;
  }

  ParsedDelta finish() override {
    ParsedDelta out;
    if (finished_) return out;
    finished_ = true;
    std::string answer;
    reasoning_.finish(out.reasoning, answer);
    tools_->feed(answer, out);
    tools_->finish(out);
    return out;
  }

  bool saw_tool_calls() const override { return tools_->saw_calls(); }

 private:
  ReasoningSplitter reasoning_;
  std::unique_ptr<FormatParser> tools_;
  bool finished_ = false;  // text after finish() would break the "decided once" promise: it is ignored
};

}  // namespace

std::unique_ptr<OutputParser> make_output_parser(const OutputParserOptions& options) {
  return std::make_unique<ComposedParser>(options);
}

void append_delta(ParsedMessage& message, const ParsedDelta& delta) {
  message.content += delta.content;
  message.reasoning += delta.reasoning;
  for (const ToolCallDelta& call : delta.tool_calls) {
    size_t index = static_cast<size_t>(call.index);
    if (call.index < 0 || index > message.tool_calls.size() ||
        (index == message.tool_calls.size() && !call.is_header())) {
      throw std::invalid_argument("tool call delta index " + std::to_string(call.index) +
                                  " does not follow the " + std::to_string(message.tool_calls.size()) +
                                  " calls seen");
    }
    if (index == message.tool_calls.size()) {
      message.tool_calls.push_back({call.id, call.type, call.name, ""});
    }
    message.tool_calls[index].arguments += call.arguments;
  }
}

ParsedMessage parse_whole_output(const OutputParserOptions& options, std::string_view text) {
  auto parser = make_output_parser(options);
  ParsedMessage message;
  append_delta(message, parser->feed(text));
  append_delta(message, parser->finish());
  return message;
}

}  // namespace strata
