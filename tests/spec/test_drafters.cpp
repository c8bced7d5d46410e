#include <catch2/catch.hpp>

#include <random>
#include <tuple>
#include <utility>

#include "engine/spec/drafter.hpp"

using strata::AdaptiveK;
using strata::DraftRoom;
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

TEST_CASE("n-gram drafter fills the cheap rows and reaches further only while its copies are kept whole") {
  NgramDrafter d(1, 4);
  std::vector<TokenId> span;
  for (TokenId t = 10; t < 40; ++t) span.push_back(t);
  std::vector<TokenId> h = span;
  h.insert(h.end(), span.begin(), span.begin() + 2);  // 10 .. 39 10 11: the copy goes on with 12 13 ...
  auto next = [&](int n) {
    std::vector<TokenId> out;
    for (int i = 0; i < n; ++i) out.push_back(span[(h.size() + size_t(i)) % span.size()]);
    return out;
  };
  const DraftRoom room{5, 12};  // 5 drafts at no cost, 12 at most
  // k = 2 asked, but a copy fills the cheap rows.
  std::vector<TokenId> p = d.propose(h, 2, room);
  CHECK(p == next(5));
  CHECK(d.reach() == 0);
  // Kept whole (the target's pick after it too): the next copy may be twice as long, within the room.
  auto keep = [&](const std::vector<TokenId>& drafts, size_t n) {
    h.insert(h.end(), drafts.begin(), drafts.begin() + static_cast<long>(n));
    h.push_back(next(1)[0] + (n < drafts.size() ? 1000 : 0));  // a pick that differs where a draft was cut
  };
  keep(p, p.size());
  p = d.propose(h, 2, room);
  CHECK(d.reach() == 10);
  CHECK(p == next(10));
  keep(p, p.size());
  p = d.propose(h, 2, room);
  CHECK(d.reach() == 20);
  CHECK(p == next(12));
  // Cut short: back to the cheap rows.
  keep(p, 4);
  for (const TokenId t : span) h.push_back(t);  // the copy resumes, so lookup has something to propose
  h.push_back(span[0]);
  p = d.propose(h, 2, room);
  CHECK(d.reach() == 0);
  CHECK(p.size() == 5u);
  // The room bounds the cheap rows as it bounds the reach.
  NgramDrafter f(1, 4);
  CHECK(f.propose(h, 2, DraftRoom{5, 3}).size() == 3u);
}

TEST_CASE("n-gram drafter extends another drafter's drafts with the copy after them") {
  NgramDrafter d(1, 4);
  // 1 2 3 4 5 6 7 1 2, drafted 3 4: the copy after them is 5 6 7 1 ..., within the room (drafts included).
  const std::vector<TokenId> h{1, 2, 3, 4, 5, 6, 7, 1, 2};
  CHECK(d.extend(h, {3, 4}, 2, DraftRoom{6, 10}) == std::vector<TokenId>{5, 6, 7, 1});
  CHECK(d.extend(h, {3, 4}, 2, DraftRoom{2, 10}).empty());  // no cheap rows left, no reach yet
  // A match may end inside the drafts: 9 8, drafted 7 9 8, repeats with period 3.
  CHECK(d.extend({9, 8}, {7, 9, 8}, 0, DraftRoom{6, 6}) == std::vector<TokenId>{7, 9, 8});
  // Reach after extensions: kept whole, it grows; the other drafter's drafts rejected, it is gone too (the
  // copy after them was rows for nothing).
  NgramDrafter e(1, 4);
  std::vector<TokenId> g{1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2};
  CHECK(e.extend(g, {3}, 1, DraftRoom{4, 12}) == std::vector<TokenId>{4, 5, 6});
  g.insert(g.end(), {3, 4, 5, 6, 7});  // kept whole, and the pick after them
  CHECK(e.propose(g, 1, DraftRoom{4, 12}).size() == 8u);
  CHECK(e.reach() == 8);
  g.insert(g.end(), {8, 9, 1, 2, 3, 4, 5, 6, 7});  // kept whole again
  const std::vector<TokenId> more = e.extend(g, {50}, 1, DraftRoom{4, 12});
  CHECK(more.empty());  // nothing to copy after 50
  CHECK(e.reach() == 16);
  CHECK(e.extend(g, {8, 9}, 1, DraftRoom{4, 12}).size() == 10u);
  g.insert(g.end(), {8, 51, 1, 2});  // 9 rejected
  CHECK(e.propose(g, 1, DraftRoom{4, 12}).size() == 4u);
  CHECK(e.reach() == 0);
}

TEST_CASE("n-gram drafter's own proposals need propose_min_n tokens of match, its copies after drafts any") {
  NgramDrafter d(1, 4, 3);
  // Suffix 6 7: matched by two tokens only (no earlier 5 6 7), so no proposal of its own.
  const std::vector<TokenId> h{6, 7, 8, 9, 1, 2, 5, 6, 7};
  CHECK(d.propose(h, 3).empty());
  NgramDrafter any(1, 4);
  CHECK(any.propose(h, 3) == std::vector<TokenId>{8, 9, 1});
  // A three-token match is enough: 1 2 3 occurred before, followed by 4 5.
  CHECK(d.propose({1, 2, 3, 4, 5, 0, 1, 2, 3}, 2) == std::vector<TokenId>{4, 5});
  // After another drafter's drafts a one-token match still copies: ... 9, drafted 1, then 2 5 6.
  CHECK(d.extend(h, {1}, 1, DraftRoom{4, 8}) == std::vector<TokenId>{2, 5, 6});
  // The setting is clamped to the n-grams indexed.
  NgramDrafter wide(1, 2, 9);
  CHECK(wide.propose({3, 4, 5, 0, 4, 5}, 1) == std::vector<TokenId>{0});
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
    // {min_n, max_n, propose_min_n}: a proposal of its own needs a match of propose_min_n (clamped to
    // min_n..max_n); extend takes any min_n match.
    for (auto [min_n, max_n, propose_min] :
         {std::tuple<int, int, int>{1, 4, 0}, {2, 3, 0}, {1, 1, 0}, {3, 6, 0}, {1, 4, 3}, {1, 2, 5}, {2, 4, 1}}) {
      NgramDrafter d(min_n, max_n, propose_min);
      const int propose_n = std::min(max_n, std::max(min_n, propose_min));
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
        INFO("vocab " << vocab << ", n " << min_n << ".." << max_n << " (proposals " << propose_n << ".."
                      << max_n << "), step " << step << ", length " << h.size());
        REQUIRE(d.propose(h, k) == scan_reference(h, propose_n, max_n, k));
        // After another drafter's drafts (not indexed: a match may end inside them), within the room.
        std::vector<TokenId> drafts;
        for (int i = int(rng() % 5); i > 0; --i) drafts.push_back(TokenId(rng() % vocab));
        const int most = int(drafts.size()) + int(rng() % 6);
        std::vector<TokenId> seq = h;
        seq.insert(seq.end(), drafts.begin(), drafts.end());
        REQUIRE(d.extend(h, drafts, 0, DraftRoom{most, most}) ==
                scan_reference(seq, min_n, max_n, most - int(drafts.size())));
      }
    }
  }
}
