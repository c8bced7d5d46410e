// Splits generated text into a leading <think>...</think> thought and the answer that follows it.
//
// Only a thought at the very start of the output counts (after leading whitespace), or one the prompt
// opened (starts_in_thought); a "<think>" later in the answer is ordinary text. A thought that never closes
// is all reasoning (the model ran out of tokens while thinking). Whitespace between "</think>" and the
// answer is dropped. Tags are never emitted in part: a possible tag prefix is held until decided.
#pragma once
#include <string>
#include <string_view>

namespace strata {

class ReasoningSplitter {
 public:
  // enabled=false keeps everything as content (reasoning format "none").
  ReasoningSplitter(bool enabled, bool starts_in_thought);
  // Appends the decided part of `text` to reasoning or content.
  void feed(std::string_view text, std::string& reasoning, std::string& content);
  void finish(std::string& reasoning, std::string& content);

 private:
  enum class State { before_answer, in_thought, answer_start, answer };
  void step(bool at_end, std::string& reasoning, std::string& content);

  State state_;
  std::string held_;  // undecided text: a possible tag prefix, or whitespace whose fate is not yet known
};

}  // namespace strata
