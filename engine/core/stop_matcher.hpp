// Stop strings on the detokenized text of one request. Text arrives in pieces (one per token, from a
// DecodeStream) and a stop string may straddle any number of pieces, so the matcher keeps back exactly the
// tail that could still grow into a stop string: everything before that tail can never be part of a match
// and is released at once. The stop string itself, and anything after it, is never released.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace strata {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Appends a piece of text and returns the text that became safe to emit. After a match the return value
  // is the text up to the stop string and every later call returns "".
  std::string push(std::string_view piece);
  // End of generation without a match: the held-back tail is ordinary text after all.
  std::string flush();

  bool matched() const { return matched_ >= 0; }
  const std::string& matched_stop() const;  // "" unless matched()
  size_t held_bytes() const { return held_.size(); }

 private:
  // Length of the longest suffix of held_ that is a proper prefix of some stop string.
  size_t stop_prefix_tail() const;

  std::vector<std::string> stops_;
  std::string held_;
  int matched_ = -1;
};

}  // namespace strata
