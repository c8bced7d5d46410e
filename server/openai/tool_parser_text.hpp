// Small text helpers shared by the output parsers (internal to strata_parsers).
#pragma once
#include <algorithm>
#include <cstddef>
#include <string_view>

namespace strata::text {

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Index of the first non-whitespace byte at or after `from` (text.size() if none).
inline size_t skip_space(std::string_view text, size_t from) {
  while (from < text.size() && is_space(text[from])) ++from;
  return from;
}

inline bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// `text` is shorter than `marker` and could still grow into it.
inline bool is_proper_prefix_of(std::string_view text, std::string_view marker) {
  return text.size() < marker.size() && marker.substr(0, text.size()) == text;
}

// Length of the longest suffix of `text` that is a proper prefix of `marker`: the bytes that must be held
// back because the next delta may complete the marker.
inline size_t partial_marker_suffix(std::string_view text, std::string_view marker) {
  size_t longest = std::min(text.size(), marker.size() - 1);
  for (size_t n = longest; n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

inline std::string_view trim(std::string_view text) {
  size_t b = skip_space(text, 0);
  size_t e = text.size();
  while (e > b && is_space(text[e - 1])) --e;
  return text.substr(b, e - b);
}

}  // namespace strata::text
