// Added tokens (tokenizer.json "added_tokens"): strings recognized in the input before any model
// runs. Tokens with normalized=false are found in the raw text; normalized ones in the normalized text.
// Matching is leftmost-longest; lstrip/rstrip swallow the whitespace beside a match; single_word only
// matches between word boundaries.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/core/types.hpp"

namespace strata {

struct AddedToken {
  TokenId id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false, rstrip = false, single_word = false, normalized = false;
};

// A span of the text: either an added token (id >= 0) or plain text to be processed further.
struct Segment {
  size_t begin, end;
  TokenId id;  // -1 for plain text
};

class AddedTokenMatcher {
 public:
  // `patterns` are the strings to find (already normalized for the normalized matcher), parallel to
  // `tokens`.
  AddedTokenMatcher(std::vector<std::string> patterns, std::vector<const AddedToken*> tokens);
  // Splits text into alternating plain and token segments, covering it exactly except for the
  // whitespace that lstrip/rstrip remove.
  std::vector<Segment> split(std::string_view text) const;

 private:
  struct Node {
    std::unordered_map<unsigned char, int> next;
    int match = -1;  // index into patterns_ when a pattern ends here
  };
  std::vector<Node> trie_;
  bool starts_[256] = {};  // bytes that begin some pattern: every other byte is skipped at once
  std::vector<std::string> patterns_;
  std::vector<const AddedToken*> tokens_;
};

}  // namespace strata
