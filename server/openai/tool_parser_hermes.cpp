// Hermes / Qwen: <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>, several in a row.
#include "server/openai/tool_parser_format.hpp"
#include "server/openai/tool_parser_text.hpp"

namespace strata::tool_parsing {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

class HermesParser final : public FormatParser {
 public:
  using FormatParser::FormatParser;

 private:
  void step(bool at_end) override {
    for (;;) {
      if (!in_call_) {
        if (!content_until(kOpen, at_end)) return;
        in_call_ = true;
        searched_ = kOpen.size();
      }
      // buf_ starts with <tool_call>; the call is decided at </tool_call>, or at the end of the output
      // (a model stopped by a stop sequence may never write the closing tag).
      size_t from = searched_ >= kClose.size() ? searched_ - kClose.size() + 1 : 0;
      size_t close = buf_.find(kClose, std::max(from, kOpen.size()));
      if (close == std::string::npos) {
        searched_ = buf_.size();
        if (!at_end) return;
        decide(buf_.size(), buf_.size());
        return;
      }
      decide(close, close + kClose.size());
    }
  }

  // The call's JSON is buf_[open end, body_end); the raw call text is buf_[0, raw_end).
  void decide(size_t body_end, size_t raw_end) {
    std::string_view body = std::string_view(buf_).substr(kOpen.size(), body_end - kOpen.size());
    std::optional<CallCandidate> call;
    if (auto value = parse_json(text::trim(body))) call = call_from_object(*value);
    if (call) {
      emit_call(*call);
    } else {
      emit_content(std::string_view(buf_).substr(0, raw_end));
    }
    buf_.erase(0, raw_end);
    in_call_ = false;
  }

  bool in_call_ = false;
  size_t searched_ = 0;  // bytes of buf_ already searched for the closing tag
};

}  // namespace

std::unique_ptr<FormatParser> make_hermes_parser(std::vector<std::string> tool_names) {
  return std::make_unique<HermesParser>(std::move(tool_names));
}

}  // namespace strata::tool_parsing
