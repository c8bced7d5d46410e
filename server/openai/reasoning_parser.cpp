#include "server/openai/reasoning_parser.hpp"

#include "server/openai/tool_parser_text.hpp"

namespace strata {

namespace {
constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";
}  // namespace

ReasoningSplitter::ReasoningSplitter(bool enabled, bool starts_in_thought)
    : state_(!enabled ? State::answer : starts_in_thought ? State::in_thought : State::before_answer) {}

void ReasoningSplitter::feed(std::string_view text, std::string& reasoning, std::string& content) {
  held_.append(text);
  step(false, reasoning, content);
}

void ReasoningSplitter::finish(std::string& reasoning, std::string& content) {
  step(true, reasoning, content);
}

void ReasoningSplitter::step(bool at_end, std::string& reasoning, std::string& content) {
  for (;;) {
    switch (state_) {
      case State::before_answer: {
        size_t p = text::skip_space(held_, 0);
        if (p == held_.size()) {
          // Only whitespace so far: it may still precede "<think>".
          if (at_end) {
            content += held_;
            held_.clear();
          }
          return;
        }
        std::string_view rest = std::string_view(held_).substr(p);
        if (text::starts_with(rest, kOpen)) {
          held_.erase(0, p + kOpen.size());
          state_ = State::in_thought;
          continue;
        }
        if (!at_end && text::is_proper_prefix_of(rest, kOpen)) return;
        state_ = State::answer;
        continue;
      }
      case State::in_thought: {
        size_t p = held_.find(kClose);
        if (p != std::string::npos) {
          reasoning.append(held_, 0, p);
          held_.erase(0, p + kClose.size());
          state_ = State::answer_start;
          continue;
        }
        size_t keep = at_end ? 0 : text::partial_marker_suffix(held_, kClose);
        reasoning.append(held_, 0, held_.size() - keep);
        held_.erase(0, held_.size() - keep);
        return;
      }
      case State::answer_start: {
        size_t p = text::skip_space(held_, 0);
        held_.erase(0, p);
        if (held_.empty()) return;
        state_ = State::answer;
        continue;
      }
      case State::answer:
        content += held_;
        held_.clear();
        return;
    }
  }
}

}  // namespace strata
