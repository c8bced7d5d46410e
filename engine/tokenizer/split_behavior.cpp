#include "engine/tokenizer/split_behavior.hpp"

#include "engine/core/types.hpp"

namespace strata {

SplitBehavior parse_split_behavior(const std::string& name, const std::string& what) {
  if (name == "Removed") return SplitBehavior::Removed;
  if (name == "Isolated") return SplitBehavior::Isolated;
  if (name == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (name == "Contiguous") return SplitBehavior::Contiguous;
  throw Error(what + ": unknown split behavior \"" + name + "\"");
}

void split_by_matches(std::string_view text, const std::vector<std::pair<size_t, size_t>>& matches,
                      SplitBehavior behavior, bool invert, std::vector<std::string>& out) {
  // First the alternating spans, each flagged as delimiter (a match, or a gap when inverted).
  struct Span {
    size_t begin, end;
    bool delimiter;
  };
  std::vector<Span> spans;
  spans.reserve(matches.size() * 2 + 1);
  size_t last = 0;
  for (const auto& m : matches) {
    if (m.first > last) spans.push_back({last, m.first, invert});
    spans.push_back({m.first, m.second, !invert});
    last = m.second;
  }
  if (last < text.size()) spans.push_back({last, text.size(), invert});

  auto emit = [&](size_t b, size_t e) {
    if (e > b) out.emplace_back(text.substr(b, e - b));
  };
  switch (behavior) {
    case SplitBehavior::Removed:
      for (const auto& s : spans)
        if (!s.delimiter) emit(s.begin, s.end);
      break;
    case SplitBehavior::Isolated:
      for (const auto& s : spans) emit(s.begin, s.end);
      break;
    case SplitBehavior::MergedWithPrevious: {
      // A delimiter ends the piece before it.
      size_t start = 0;
      bool open = false;
      for (const auto& s : spans) {
        if (!open) start = s.begin;
        open = true;
        if (s.delimiter) {
          emit(start, s.end);
          open = false;
        }
      }
      if (open) emit(start, text.size());
      break;
    }
    case SplitBehavior::MergedWithNext: {
      // A delimiter starts the piece after it.
      size_t start = 0;
      bool open = false;
      for (const auto& s : spans) {
        if (s.delimiter) {
          if (open) emit(start, s.begin);
          start = s.begin;
          open = true;
        } else if (!open) {
          start = s.begin;
          open = true;
        }
      }
      if (open) emit(start, text.size());
      break;
    }
    case SplitBehavior::Contiguous: {
      // Adjacent delimiters (matches touching each other) form one piece.
      size_t i = 0;
      while (i < spans.size()) {
        size_t j = i + 1;
        if (spans[i].delimiter)
          while (j < spans.size() && spans[j].delimiter) ++j;
        emit(spans[i].begin, spans[j - 1].end);
        i = j;
      }
      break;
    }
  }
}

}  // namespace strata
