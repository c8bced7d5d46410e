// How a pattern's matches and the text between them become pieces (SplitDelimiterBehavior in the
// reference): the delimiter is dropped, kept alone, glued to a neighbour, or merged with its own run.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata {

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// Throws strata::Error naming `what` for an unknown behaviour name.
SplitBehavior parse_split_behavior(const std::string& name, const std::string& what);

// `matches` are sorted, non-overlapping, non-empty byte spans of `text`. Appends the resulting
// non-empty pieces to `out`.
void split_by_matches(std::string_view text, const std::vector<std::pair<size_t, size_t>>& matches,
                      SplitBehavior behavior, bool invert, std::vector<std::string>& out);

}  // namespace strata
