#include <algorithm>
#include <cstddef>

#include "engine/spec/drafter.hpp"

namespace strata {

namespace {

uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The n tokens of `s` that end before `end`.
template <class Seq>
uint64_t ngram_hash(const Seq& s, size_t end, int n) {
  uint64_t h = mix(static_cast<uint64_t>(n));
  for (size_t i = end - size_t(n); i < end; ++i) h = mix(h ^ static_cast<uint32_t>(s[i]));
  return h;
}

}  // namespace

// The history followed by another drafter's drafts (extend; none for propose), read as one sequence without
// copying the history.
struct NgramDrafter::Joined {
  const std::vector<TokenId>& h;
  const std::vector<TokenId>& t;
  size_t size() const { return h.size() + t.size(); }
  TokenId operator[](size_t i) const { return i < h.size() ? h[i] : t[i - h.size()]; }
  // Whether the n tokens that end before a equal those that end before b.
  bool same(size_t a, size_t b, int n) const {
    for (size_t i = 1; i <= size_t(n); ++i)
      if ((*this)[a - i] != (*this)[b - i]) return false;
    return true;
  }
};

NgramDrafter::NgramDrafter(int min_n, int max_n, int propose_min_n)
    : min_n_(std::max(1, min_n)),
      max_n_(std::max(min_n_, max_n)),
      propose_min_n_(std::min(max_n_, std::max(min_n_, propose_min_n))),
      last_(size_t(max_n_ - min_n_ + 1)) {}

void NgramDrafter::index(const std::vector<TokenId>& h) {
  if (h.size() < seen_.size() || !std::equal(seen_.begin(), seen_.end(), h.begin())) {
    seen_.clear();
    for (auto& m : last_) m.clear();
  }
  // An n-gram ending at p (its continuation starting at p) is eligible while p < h.size(): the suffix
  // itself ends at h.size().
  for (size_t p = seen_.size(); p < h.size(); ++p)
    for (int n = min_n_; n <= max_n_ && size_t(n) <= p; ++n)
      last_[size_t(n - min_n_)][ngram_hash(h, p, n)] = static_cast<int32_t>(p);
  seen_.insert(seen_.end(), h.begin() + static_cast<long>(seen_.size()), h.end());
}

int NgramDrafter::match(const Joined& seq, int min_n) const {
  const size_t len = seq.size(), indexed = seq.h.size();
  for (int n = std::min(max_n_, static_cast<int>(len) - 1); n >= min_n; --n) {
    // Ends past the indexed history (extend's drafts; never the suffix's own end), the latest first.
    for (size_t p = len - 1; p >= std::max(indexed, size_t(n)) && p < len; --p)
      if (seq.same(len, p, n)) return static_cast<int>(p);
    const auto& m = last_[size_t(n - min_n_)];
    const auto it = m.find(ngram_hash(seq, len, n));
    if (it == m.end()) continue;
    if (seq.same(len, size_t(it->second), n)) return it->second;
    // Another n-gram with the same hash: the most recent earlier occurrence, by a scan.
    for (size_t p = indexed - 1; p >= size_t(n) && p < indexed; --p)
      if (seq.same(len, p, n)) return static_cast<int>(p);
  }
  return -1;
}

void NgramDrafter::settle(const std::vector<TokenId>& h) {
  if (proposed_.empty() || h.size() <= proposed_at_) return;
  size_t kept = 0;
  while (kept < proposed_.size() && proposed_at_ + kept < h.size() && h[proposed_at_ + kept] == proposed_[kept])
    ++kept;
  if (kept == proposed_.size()) {
    reach_ = std::max(reach_, static_cast<int>(std::min<size_t>(2 * proposed_.size(), 1 << 16)));
  } else if (proposed_at_ + kept < h.size()) {
    // Cut short, lookup's tokens or the other drafter's before them (a copy after drafts that are often
    // rejected is rows for nothing).
    reach_ = 0;
  } else {
    return;  // not decided yet: score it next time
  }
  proposed_.clear();
}

std::vector<TokenId> NgramDrafter::propose(const std::vector<TokenId>& history, int max_k, const DraftRoom& room) {
  settle(history);
  const int n = want(max_k, room);
  if (n <= 0 || history.size() < 2) return {};
  index(history);
  const std::vector<TokenId> none;
  const Joined seq{history, none};
  const int from = match(seq, propose_min_n_);
  if (from < 0) return {};
  proposed_ = copy(seq, from, n);
  proposed_at_ = history.size();
  return proposed_;
}

std::vector<TokenId> NgramDrafter::extend(const std::vector<TokenId>& history, const std::vector<TokenId>& drafts,
                                          int max_k, const DraftRoom& room) {
  settle(history);
  const int n = want(max_k, room) - static_cast<int>(drafts.size());
  if (n <= 0 || history.size() + drafts.size() < 2) return {};
  index(history);
  const Joined seq{history, drafts};
  const int from = match(seq, min_n_);
  if (from < 0) return {};
  std::vector<TokenId> more = copy(seq, from, n);
  proposed_ = drafts;
  proposed_.insert(proposed_.end(), more.begin(), more.end());
  proposed_at_ = history.size();
  return more;
}

std::vector<TokenId> NgramDrafter::continue_copy(const std::vector<TokenId>& history, int from, int max_k) {
  const std::vector<TokenId> none;
  return copy(Joined{history, none}, from, max_k);
}

std::vector<TokenId> NgramDrafter::copy(const Joined& seq, int from, int max_k) {
  // The copy runs on into its own proposal, as an overlapping copy does: a match `period` tokens back says the
  // text repeats with that period, so token i of the proposal is the one `period` before it (a loop of one
  // token, a run of the same character, proposes max_k of it, not one).
  const int period = static_cast<int>(seq.size()) - from;
  std::vector<TokenId> out;
  out.reserve(static_cast<size_t>(std::max(max_k, 0)));
  for (int i = 0; i < max_k; ++i)
    out.push_back(i < period ? seq[static_cast<size_t>(from + i)] : out[static_cast<size_t>(i - period)]);
  return out;
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
