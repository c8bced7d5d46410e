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
        extent_.reset();
      }
      // buf_ starts with <tool_call>; the call is decided at </tool_call>, or at the end of the output
      // (a model stopped by a stop sequence may never write the closing tag).
      switch (step_object(at_end)) {
        case Outcome::wait: return;
        case Outcome::decided: continue;
        case Outcome::not_an_object: break;
      }
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

  enum class Outcome { wait, decided, not_an_object };

  // The usual body is one JSON object: following its brackets lets an argument string contain
  // "</tool_call>". Anything else is left to the plain search for the closing tag.
  Outcome step_object(bool at_end) {
    size_t start = text::skip_space(buf_, kOpen.size());
    if (start == buf_.size()) return at_end ? Outcome::not_an_object : Outcome::wait;
    if (buf_[start] != '{') return Outcome::not_an_object;
    switch (extent_.scan(buf_, start)) {
      case JsonExtent::Status::incomplete: return at_end ? Outcome::not_an_object : Outcome::wait;
      case JsonExtent::Status::invalid: return Outcome::not_an_object;
      case JsonExtent::Status::complete: break;
    }
    size_t end = extent_.end();
    size_t close = text::skip_space(buf_, end);
    std::string_view rest = std::string_view(buf_).substr(close);
    if (text::starts_with(rest, kClose)) {
      decide(end, close + kClose.size());
      return Outcome::decided;
    }
    if (rest.empty()) {
      if (!at_end) return Outcome::wait;
      decide(end, buf_.size());
      return Outcome::decided;
    }
    if (!at_end && text::is_proper_prefix_of(rest, kClose)) return Outcome::wait;
    return Outcome::not_an_object;
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
  JsonExtent extent_;
};

}  // namespace

std::unique_ptr<FormatParser> make_hermes_parser(std::vector<std::string> tool_names) {
  return std::make_unique<HermesParser>(std::move(tool_names));
}

}  // namespace strata::tool_parsing
