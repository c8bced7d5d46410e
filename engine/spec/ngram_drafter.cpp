#include <algorithm>

#include "engine/spec/drafter.hpp"

namespace strata {

NgramDrafter::NgramDrafter(int min_n, int max_n) : min_n_(std::max(1, min_n)), max_n_(std::max(min_n_, max_n)) {}

std::vector<TokenId> NgramDrafter::propose(const std::vector<TokenId>& history, int max_k) {
  const int len = static_cast<int>(history.size());
  if (max_k <= 0 || len < 2) return {};
  for (int n = std::min(max_n_, len - 1); n >= min_n_; --n) {
    const TokenId* suffix = history.data() + (len - n);
    // Most recent earlier occurrence whose continuation starts before the suffix itself.
    for (int start = len - n - 1; start >= 0; --start) {
      if (!std::equal(suffix, suffix + n, history.data() + start)) continue;
      const int from = start + n;
      const int take = std::min(max_k, len - from);
      if (take <= 0) continue;
      return std::vector<TokenId>(history.begin() + from, history.begin() + from + take);
    }
  }
  return {};
}

void AdaptiveK::update(int proposed, int accepted) {
  if (proposed <= 0) return;
  const double rate = static_cast<double>(accepted) / proposed;
  ewma_ = 0.7 * ewma_ + 0.3 * rate;
  // Expected kept drafts per window grow with k only while acceptance is high; below ~30% one draft is
  // the cheap probe that lets the rate recover when the text turns repetitive again.
  if (ewma_ > 0.6) k_ = std::min(max_k_, k_ + 1);
  else if (ewma_ < 0.3) k_ = 1;
  else k_ = std::max(1, std::min(max_k_, k_ - (accepted < proposed ? 1 : 0)));
}

}  // namespace strata
