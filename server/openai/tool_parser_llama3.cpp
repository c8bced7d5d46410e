// Llama 3.x JSON tool calls: {"name": "f", "parameters": {...}} (or "arguments"), either as the whole start of
// the output or after <|python_tag|>, several separated by ';' or whitespace.
#include "server/openai/tool_parser_format.hpp"
#include "server/openai/tool_parser_text.hpp"

namespace strata::tool_parsing {
namespace {

constexpr std::string_view kTag = "<|python_tag|>";
constexpr size_t npos = std::string::npos;

class Llama3JsonParser final : public FormatParser {
 public:
  using FormatParser::FormatParser;

 private:
  // start: nothing decided yet; a bare '{' here may open a call. content: plain answer text, where only
  // <|python_tag|> opens a call (a '{' inside prose is prose). call: buf_ starts with the call's raw text.
  // between: right after a call, where another may follow.
  enum class State { start, content, call, between };

  void step(bool at_end) override {
    for (;;) {
      switch (state_) {
        case State::start:
        case State::between: {
          size_t p = skip_separators(state_ == State::between);
          if (p == buf_.size()) {
            if (at_end) {
              if (state_ == State::start) emit_content(buf_);
              buf_.clear();
            }
            return;
          }
          std::string_view rest = std::string_view(buf_).substr(p);
          if (rest[0] == '{') {
            if (state_ == State::between) {
              buf_.erase(0, p);
              p = 0;
            }
            open_call(npos, p);
            continue;
          }
          if (text::starts_with(rest, kTag)) {
            if (state_ == State::between) {
              buf_.erase(0, p);
              p = 0;
            }
            open_call(p + kTag.size(), npos);
            continue;
          }
          if (!at_end && text::is_proper_prefix_of(rest, kTag)) return;
          state_ = State::content;
          continue;
        }
        case State::content:
          if (!content_until(kTag, at_end)) return;
          open_call(kTag.size(), npos);
          continue;
        case State::call:
          if (!step_call(at_end)) return;
          continue;
      }
    }
  }

  // Whitespace precedes a call at the start; after a call ';' may separate it from the next.
  size_t skip_separators(bool allow_semicolon) const {
    size_t p = 0;
    while (p < buf_.size() && (text::is_space(buf_[p]) || (allow_semicolon && buf_[p] == ';'))) ++p;
    return p;
  }

  void open_call(size_t tag_end, size_t json_at) {
    state_ = State::call;
    tag_end_ = tag_end;
    json_at_ = json_at;
    extent_.reset();
  }

  // Returns false when more text is needed.
  bool step_call(bool at_end) {
    if (json_at_ == npos) {
      size_t q = text::skip_space(buf_, tag_end_);
      if (q == buf_.size()) {
        if (at_end) give_back(buf_.size());
        return at_end ? true : false;
      }
      if (buf_[q] != '{') {
        // <|python_tag|> followed by something else (a built-in tool's Python call): not ours.
        give_back(tag_end_);
        return true;
      }
      json_at_ = q;
    }
    switch (extent_.scan(buf_, json_at_)) {
      case JsonExtent::Status::incomplete:
        if (at_end) give_back(buf_.size());
        return at_end;
      case JsonExtent::Status::invalid:
        give_back(extent_.end());
        return true;
      case JsonExtent::Status::complete:
        break;
    }
    size_t end = extent_.end();
    std::optional<CallCandidate> call;
    if (auto value = parse_json(std::string_view(buf_).substr(json_at_, end - json_at_))) {
      call = call_from_object(*value);
    }
    if (!call) {
      give_back(end);
      return true;
    }
    emit_call(*call);
    buf_.erase(0, end);
    state_ = State::between;
    return true;
  }

  // The first n bytes were not a call after all: they are answer text.
  void give_back(size_t n) {
    emit_content(std::string_view(buf_).substr(0, n));
    buf_.erase(0, n);
    state_ = State::content;
  }

  State state_ = State::start;
  size_t tag_end_ = npos;  // in call: end of <|python_tag|> in buf_, npos for a bare call
  size_t json_at_ = npos;  // in call: where the call's '{' is, npos until seen
  JsonExtent extent_;
};

}  // namespace

std::unique_ptr<FormatParser> make_llama3_json_parser(std::vector<std::string> tool_names) {
  return std::make_unique<Llama3JsonParser>(std::move(tool_names));
}

}  // namespace strata::tool_parsing
