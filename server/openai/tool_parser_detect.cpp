// Choosing the tool-call format: by name (--tool-call-parser) or from the markers the chat template renders.
#include <array>
#include <utility>

#include "server/openai/tool_parser.hpp"
#include "server/openai/tool_parser_text.hpp"

namespace strata {
namespace {

constexpr std::array<std::pair<std::string_view, ToolFormat>, 5> kNames{{
    {"none", ToolFormat::none},
    {"hermes", ToolFormat::hermes},
    {"llama3_json", ToolFormat::llama3_json},
    {"deepseek_v3", ToolFormat::deepseek_v3},
    {"mistral", ToolFormat::mistral},
}};

bool contains(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}

}  // namespace

std::optional<ToolFormat> tool_format_from_name(std::string_view name) {
  for (const auto& [known, format] : kNames) {
    if (known == name) return format;
  }
  return std::nullopt;
}

std::string_view tool_format_name(ToolFormat format) {
  for (const auto& [known, f] : kNames) {
    if (f == format) return known;
  }
  return "none";
}

ToolFormat detect_tool_format(std::string_view source) {
  // The most specific markers first: the DeepSeek and Mistral tokens cannot appear by accident, while
  // "<tool_call>" is the Hermes convention other templates may mention in prose.
  if (contains(source, "<｜tool▁calls▁begin｜>")) return ToolFormat::deepseek_v3;
  if (contains(source, "[TOOL_CALLS]")) return ToolFormat::mistral;
  if (contains(source, "<tool_call>")) return ToolFormat::hermes;
  // Llama 3.1+ templates name the python tag, or the ipython role that answers tool calls.
  if (contains(source, "<|python_tag|>") ||
      (contains(source, "<|start_header_id|>") && contains(source, "ipython"))) {
    return ToolFormat::llama3_json;
  }
  return ToolFormat::none;
}

bool prompt_opens_thought(std::string_view rendered_prompt) {
  std::string_view tail = text::trim(rendered_prompt);
  constexpr std::string_view kOpen = "<think>";
  return tail.size() >= kOpen.size() && tail.substr(tail.size() - kOpen.size()) == kOpen;
}

}  // namespace strata
