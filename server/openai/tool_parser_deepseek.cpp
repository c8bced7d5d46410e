// DeepSeek V3 / R1 tool-call tokens, as the model's chat template renders them:
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{...}\n```<｜tool▁call▁end｜>
//   \n<｜tool▁call▁begin｜>...<｜tool▁call▁end｜><｜tool▁calls▁end｜>
// The V3.1 body (<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>) is accepted too.
#include "server/openai/tool_parser_format.hpp"
#include "server/openai/tool_parser_text.hpp"

namespace strata::tool_parsing {
namespace {

constexpr std::string_view kCallsBegin = "<｜tool▁calls▁begin｜>";
constexpr std::string_view kCallsEnd = "<｜tool▁calls▁end｜>";
constexpr std::string_view kCallBegin = "<｜tool▁call▁begin｜>";
constexpr std::string_view kCallEnd = "<｜tool▁call▁end｜>";
constexpr std::string_view kSep = "<｜tool▁sep｜>";

class DeepSeekV3Parser final : public FormatParser {
 public:
  using FormatParser::FormatParser;

 private:
  // content: answer text. section: inside <｜tool▁calls▁begin｜>, between calls. call: buf_ starts with
  // <｜tool▁call▁begin｜> of an undecided call.
  enum class State { content, section, call };

  void step(bool at_end) override {
    for (;;) {
      switch (state_) {
        case State::content:
          if (!content_until(kCallsBegin, at_end)) return;
          buf_.erase(0, kCallsBegin.size());
          // If the section turns out to hold no valid call, the marker goes back to the answer text.
          unclaimed_open_ = true;
          section_has_call_ = false;
          state_ = State::section;
          continue;
        case State::section: {
          size_t p = text::skip_space(buf_, 0);
          std::string_view rest = std::string_view(buf_).substr(p);
          if (text::starts_with(rest, kCallBegin)) {
            buf_.erase(0, p);
            state_ = State::call;
            searched_ = 0;
            continue;
          }
          if (text::starts_with(rest, kCallsEnd)) {
            // A section without a valid call was never a call section: its closing marker stays text too.
            if (!section_has_call_) {
              reclaim_open_marker();
              emit_content(std::string_view(buf_).substr(0, p + kCallsEnd.size()));
            }
            buf_.erase(0, p + kCallsEnd.size());
            state_ = State::content;
            continue;
          }
          if (rest.empty() ||
              (!at_end && (text::is_proper_prefix_of(rest, kCallBegin) ||
                           text::is_proper_prefix_of(rest, kCallsEnd)))) {
            if (at_end) {
              // An unterminated section: without a valid call in it, its marker was text all along.
              if (!section_has_call_) {
                reclaim_open_marker();
                emit_content(buf_);
              }
              buf_.clear();
            }
            return;
          }
          // Text that is no call inside the section: the section is over and this is answer text.
          reclaim_open_marker();
          state_ = State::content;
          continue;
        }
        case State::call: {
          size_t from = searched_ >= kCallEnd.size() ? searched_ - kCallEnd.size() + 1 : 0;
          size_t end = buf_.find(kCallEnd, std::max(from, kCallBegin.size()));
          if (end == std::string::npos) {
            searched_ = buf_.size();
            if (!at_end) return;
            reject(buf_.size());
            state_ = State::content;
            continue;
          }
          std::optional<CallCandidate> call =
              parse_body(std::string_view(buf_).substr(kCallBegin.size(), end - kCallBegin.size()));
          if (call) {
            unclaimed_open_ = false;
            section_has_call_ = true;
            emit_call(*call);
            buf_.erase(0, end + kCallEnd.size());
          } else {
            reject(end + kCallEnd.size());
          }
          state_ = State::section;
          continue;
        }
      }
    }
  }

  std::optional<CallCandidate> parse_body(std::string_view body) const {
    size_t sep = body.find(kSep);
    if (sep == std::string_view::npos) return std::nullopt;
    std::string_view before = text::trim(body.substr(0, sep));
    std::string_view after = body.substr(sep + kSep.size());
    std::string_view name, arguments;
    size_t newline = after.find('\n');
    if (before == "function" && newline != std::string_view::npos) {
      name = text::trim(after.substr(0, newline));
      arguments = strip_fence(after.substr(newline + 1));
    } else {
      name = before;
      arguments = text::trim(after);
    }
    std::optional<Json> value = parse_json(arguments);
    if (!value) return std::nullopt;
    return call_from_parts(std::string(name), &*value);
  }

  // ```json\n{...}\n``` -> {...}
  static std::string_view strip_fence(std::string_view text) {
    text = text::trim(text);
    for (std::string_view open : {std::string_view("```json"), std::string_view("```")}) {
      if (text::starts_with(text, open)) {
        text.remove_prefix(open.size());
        break;
      }
    }
    text = text::trim(text);
    if (text.size() >= 3 && text.substr(text.size() - 3) == "```") text.remove_suffix(3);
    return text::trim(text);
  }

  // The first n bytes of buf_ held a malformed call: they are answer text, markers included.
  void reject(size_t n) {
    reclaim_open_marker();
    emit_content(std::string_view(buf_).substr(0, n));
    buf_.erase(0, n);
  }

  void reclaim_open_marker() {
    if (unclaimed_open_) emit_content(kCallsBegin);
    unclaimed_open_ = false;
  }

  State state_ = State::content;
  bool unclaimed_open_ = false;
  bool section_has_call_ = false;
  size_t searched_ = 0;
};

}  // namespace

std::unique_ptr<FormatParser> make_deepseek_v3_parser(std::vector<std::string> tool_names) {
  return std::make_unique<DeepSeekV3Parser>(std::move(tool_names));
}

}  // namespace strata::tool_parsing
