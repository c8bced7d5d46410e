#include <catch2/catch.hpp>

#include <random>
#include <utility>

#include "engine/spec/drafter.hpp"

using strata::AdaptiveK;
using strata::NgramDrafter;
using strata::TokenId;

TEST_CASE("n-gram drafter proposes what followed the most recent earlier occurrence of the longest suffix") {
  NgramDrafter d(1, 3);
  // ... 5 6 7 8 9 ... 5 6 7 | the suffix [5 6 7] occurred at index 1, followed by 8 9 1
  std::vector<TokenId> h = {4, 5, 6, 7, 8, 9, 1, 2, 5, 6, 7};
  CHECK(d.propose(h, 3) == std::vector<TokenId>{8, 9, 1});
  CHECK(d.propose(h, 1) == std::vector<TokenId>{8});
}

TEST_CASE("n-gram drafter prefers a longer match over a more recent shorter one") {
  NgramDrafter d(1, 2);
  // suffix [3 7]: the 2-gram occurs at index 0 (followed by 1); the 1-gram [7] also at index 5 (followed by 2)
  std::vector<TokenId> h = {3, 7, 1, 0, 0, 7, 2, 3, 7};
  CHECK(d.propose(h, 1) == std::vector<TokenId>{1});
}

TEST_CASE("n-gram drafter proposes nothing without a repeat, for short histories, or for max_k 0") {
  NgramDrafter d(1, 4);
  CHECK(d.propose({1, 2, 3, 4, 5}, 4).empty());
  CHECK(d.propose({1}, 4).empty());
  CHECK(d.propose({}, 4).empty());
  CHECK(d.propose({1, 2, 1, 2}, 0).empty());
}

TEST_CASE("n-gram drafter continues a copy that reaches the end of the history with its own proposal") {
  NgramDrafter d(1, 1);
  // [9] last seen at index 2, followed by 4 and the suffix itself: the text repeats with period 2
  CHECK(d.propose({9, 1, 9, 4, 9}, 5) == std::vector<TokenId>{4, 9, 4, 9, 4});
  CHECK(d.propose({9, 1, 9, 4, 9}, 1) == std::vector<TokenId>{4});
  // A run of one token (strata-tiny's "IIII..."): max_k of it, not one
  NgramDrafter run(1, 4);
  CHECK(run.propose({5, 7, 7, 7, 7, 7}, 4) == std::vector<TokenId>{7, 7, 7, 7});
  // A loop of three tokens matched one period back
  NgramDrafter loop(1, 4);
  CHECK(loop.propose({8, 1, 2, 3, 1, 2, 3, 1}, 6) == std::vector<TokenId>{2, 3, 1, 2, 3, 1});
}

TEST_CASE("adaptive k backs off to one draft when acceptance is low and recovers when it is high") {
  AdaptiveK k(6);
  CHECK(k.next() == 6);
  for (int i = 0; i < 6; ++i) k.update(k.next(), 0);
  CHECK(k.next() == 1);
  CHECK(k.acceptance() < 0.3);
  for (int i = 0; i < 12; ++i) k.update(k.next(), k.next());
  CHECK(k.next() == 6);
  CHECK(k.acceptance() > 0.6);
}

namespace {
// The n-gram drafter's rule by a plain scan of the history: the reference its index must agree with.
std::vector<TokenId> scan_reference(const std::vector<TokenId>& h, int min_n, int max_n, int max_k) {
  const int len = static_cast<int>(h.size());
  if (max_k <= 0 || len < 2) return {};
  for (int n = std::min(max_n, len - 1); n >= min_n; --n)
    for (int start = len - n - 1; start >= 0; --start)
      if (std::equal(h.begin() + (len - n), h.end(), h.begin() + start)) {
        // The copy reads the history extended by what it has copied so far.
        std::vector<TokenId> s(h);
        for (int i = 0; i < max_k; ++i) s.push_back(s[size_t(start + n + i)]);
        return std::vector<TokenId>(s.begin() + len, s.end());
      }
  return {};
}
}  // namespace

TEST_CASE("n-gram drafter proposes what a scan of the history finds, as the history grows or is replaced") {
  std::mt19937 rng(12345);
  for (int vocab : {3, 8, 50}) {  // small vocabularies repeat often; larger ones rarely
    for (auto [min_n, max_n] : {std::pair<int, int>{1, 4}, {2, 3}, {1, 1}, {3, 6}}) {
      NgramDrafter d(min_n, max_n);
      std::vector<TokenId> h;
      for (int step = 0; step < 400; ++step) {
        const int what = int(rng() % 10);
        if (what == 0) {
          h.resize(rng() % (h.size() + 1));  // cut back (a history that is not an extension)
        } else if (what == 1 && !h.empty()) {
          h[rng() % h.size()] = TokenId(rng() % vocab);  // changed inside
        } else {
          const int add = 1 + int(rng() % 5);  // grows, as accepted tokens arrive
          for (int i = 0; i < add; ++i) h.push_back(TokenId(rng() % vocab));
        }
        const int k = int(rng() % 6);
        INFO("vocab " << vocab << ", n " << min_n << ".." << max_n << ", step " << step << ", length " << h.size());
        REQUIRE(d.propose(h, k) == scan_reference(h, min_n, max_n, k));
      }
    }
  }
}
