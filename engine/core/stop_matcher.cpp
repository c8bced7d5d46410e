#include "engine/core/stop_matcher.hpp"

#include <algorithm>

namespace strata {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  // An empty stop string would match everywhere and end every request at once: it carries no meaning.
  for (auto& s : stops)
    if (!s.empty()) stops_.push_back(std::move(s));
}

const std::string& StopMatcher::matched_stop() const {
  static const std::string none;
  return matched_ >= 0 ? stops_[static_cast<size_t>(matched_)] : none;
}

size_t StopMatcher::stop_prefix_tail() const {
  size_t best = 0;
  for (const auto& s : stops_) {
    // Only proper prefixes: a whole stop string inside held_ is a match, found before this is asked.
    size_t longest = std::min(held_.size(), s.size() - 1);
    for (size_t len = longest; len > best; --len) {
      if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
        best = len;
        break;
      }
    }
  }
  return best;
}

std::string StopMatcher::push(std::string_view piece) {
  if (matched()) return {};
  held_.append(piece.data(), piece.size());
  if (stops_.empty()) {
    std::string out;
    out.swap(held_);
    return out;
  }
  // Every byte before held_ was proven unable to start a match, so a match can only start inside held_.
  // The earliest match wins (what a reader of the full text would see first); on a tie the longer one.
  size_t best_pos = std::string::npos;
  int best = -1;
  for (size_t i = 0; i < stops_.size(); ++i) {
    size_t pos = held_.find(stops_[i]);
    if (pos == std::string::npos) continue;
    if (pos < best_pos || (pos == best_pos && stops_[i].size() > stops_[static_cast<size_t>(best)].size())) {
      best_pos = pos;
      best = static_cast<int>(i);
    }
  }
  if (best >= 0) {
    matched_ = best;
    std::string out = held_.substr(0, best_pos);
    held_.clear();
    return out;
  }
  size_t keep = stop_prefix_tail();
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopMatcher::flush() {
  std::string out;
  if (!matched()) out.swap(held_);
  held_.clear();
  return out;
}

}  // namespace strata
