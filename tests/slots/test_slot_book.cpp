// The slot table both backends keep: slot lifecycle, windows that become history, commit(n_keep) trimming
// the last window, and bad windows rejected with a message naming the row before anything changes.
#include <catch2/catch.hpp>

#include "engine/slots/slot_book.hpp"

using namespace strata;
using Catch::Matchers::Contains;

namespace {

// 3 slots of 8 positions over a 50-token vocabulary, windows of up to 6 rows.
SlotBook small_book() { return SlotBook(SlotLimits{3, 8, 50, 6}); }

Row row(SlotId s, TokenId t, int pos) {
  Row r;
  r.slot = s;
  r.token = t;
  r.pos = pos;
  return r;
}

Window rows_of(SlotId s, std::vector<TokenId> tokens, int first) {
  Window w;
  for (size_t i = 0; i < tokens.size(); ++i) w.rows.push_back(row(s, tokens[i], first + int(i)));
  return w;
}

std::vector<TokenId> history_of(const SlotBook& b, SlotId s) {
  const int n = b.committed(s);
  if (n == 0) return {};
  const TokenHistory h = b.history(s, n - 1);
  return std::vector<TokenId>(h.tokens, h.tokens + h.len);
}

SlotId open_one(SlotBook& b) {
  const SlotId s = b.find_free();
  b.open(s);
  return s;
}

}  // namespace

TEST_CASE("find_free names the lowest closed slot and open() is what takes it") {
  SlotBook b = small_book();
  CHECK(b.find_free() == 0);
  CHECK(b.find_free() == 0);  // looking does not take it
  b.open(0);
  CHECK(b.is_open(0));
  CHECK(b.find_free() == 1);
  b.open(1);
  b.open(2);
  CHECK(b.find_free() == kNoSlot);
  b.close(1);
  CHECK_FALSE(b.is_open(1));
  CHECK(b.find_free() == 1);
  CHECK_THROWS_WITH(b.open(0), Contains("slot 0 is not a free slot"));
  CHECK_THROWS_WITH(b.open(3), Contains("slot 3 is not a free slot"));
}

TEST_CASE("an empty book has no slots until a sized one is assigned") {
  SlotBook b;
  CHECK(b.find_free() == kNoSlot);
  b = SlotBook(SlotLimits{1, 4, 10, 4});
  CHECK(b.find_free() == 0);
  CHECK(b.limits().slots == 1);
}

TEST_CASE("a window's rows become their slots' history, interleaved slots each in position order") {
  SlotBook b = small_book();
  const SlotId x = open_one(b), y = open_one(b);
  b.accept(rows_of(x, {7, 8}, 0));
  Window mixed;
  mixed.rows = {row(y, 1, 0), row(x, 9, 2), row(y, 2, 1), row(x, 10, 3)};
  b.accept(mixed);
  CHECK(b.committed(x) == 4);
  CHECK(b.committed(y) == 2);
  CHECK(history_of(b, x) == std::vector<TokenId>{7, 8, 9, 10});
  CHECK(history_of(b, y) == std::vector<TokenId>{1, 2});
  // A pick at position p sees the tokens of positions 0 .. p.
  CHECK(b.history(x, 1).len == 2);
}

TEST_CASE("commit keeps the first n_keep rows of the slot's part of the last window") {
  SlotBook b = small_book();
  const SlotId x = open_one(b), y = open_one(b);
  b.accept(rows_of(x, {1, 2, 3}, 0));
  Window verify;  // last token plus three drafts for x, one row for y
  verify.rows = {row(x, 4, 3), row(x, 5, 4), row(y, 40, 0), row(x, 6, 5), row(x, 7, 6)};
  b.accept(verify);
  b.commit(x, 2);
  CHECK(b.committed(x) == 5);
  CHECK(history_of(b, x) == std::vector<TokenId>{1, 2, 3, 4, 5});
  CHECK(b.committed(y) == 1);  // a plain window commits all its rows

  // The next window continues from the kept rows, overwriting the discarded positions.
  CHECK_THROWS_WITH(b.accept(rows_of(x, {8}, 7)), Contains("does not continue its history (committed length 5)"));
  b.accept(rows_of(x, {8}, 5));
  CHECK(history_of(b, x) == std::vector<TokenId>{1, 2, 3, 4, 5, 8});
}

TEST_CASE("set_token rewrites a token of the last window's rows and refuses any other position") {
  SlotBook b = small_book();
  const SlotId s = open_one(b), other = open_one(b);
  b.accept(rows_of(s, {1, 2, 3}, 0));
  b.accept(rows_of(s, {0, 0}, 3));  // tokens the device will feed (run_chain), unknown at accept()
  b.set_token(s, 3, 7);
  b.set_token(s, 4, 9);
  CHECK(history_of(b, s) == std::vector<TokenId>{1, 2, 3, 7, 9});
  CHECK_THROWS_WITH(b.set_token(s, 2, 5), Contains("position 2"));  // an earlier window's row
  CHECK_THROWS_WITH(b.set_token(s, 5, 5), Contains("position 5"));  // past the slot's rows
  CHECK_THROWS_WITH(b.set_token(other, 0, 5), Contains("slot 1"));  // no rows in the last window
  CHECK_THROWS_WITH(b.set_token(s, 4, 50), Contains("vocabulary"));
  CHECK(history_of(b, s) == std::vector<TokenId>{1, 2, 3, 7, 9});
  b.commit(s, 1);  // commit still trims the window set_token wrote into
  CHECK(history_of(b, s) == std::vector<TokenId>{1, 2, 3, 7});
}

TEST_CASE("commit may shrink the last window again but never grow it") {
  SlotBook b = small_book();
  const SlotId x = open_one(b);
  b.accept(rows_of(x, {1, 2, 3, 4}, 0));
  b.commit(x, 3);
  CHECK_THROWS_WITH(b.commit(x, 4), Contains("commit: n_keep 4 for slot 0 is outside [0, 3]"));
  b.commit(x, 0);
  CHECK(b.committed(x) == 0);
  CHECK(history_of(b, x).empty());
  CHECK_THROWS_WITH(b.commit(x, -1), Contains("n_keep -1"));
}

TEST_CASE("commit names a slot that had no rows in the last window") {
  SlotBook b = small_book();
  const SlotId x = open_one(b), y = open_one(b);
  CHECK_THROWS_WITH(b.commit(x, 0), Contains("commit: slot 0 had no rows in the last window"));
  b.accept(rows_of(x, {1, 2}, 0));
  b.accept(rows_of(y, {3}, 0));
  CHECK_THROWS_WITH(b.commit(x, 1), Contains("slot 0 had no rows in the last window"));
  CHECK(b.committed(x) == 2);
  CHECK_THROWS_WITH(b.commit(2, 0), Contains("commit: slot 2 is not open"));
}

TEST_CASE("an empty window changes nothing, not even which window commit trims") {
  SlotBook b = small_book();
  const SlotId x = open_one(b);
  b.accept(rows_of(x, {1, 2, 3}, 0));
  b.accept(Window{});
  b.commit(x, 1);
  CHECK(history_of(b, x) == std::vector<TokenId>{1});
}

TEST_CASE("a bad window is rejected naming its row and leaves every slot as it was") {
  SlotBook b = small_book();
  const SlotId x = open_one(b), y = open_one(b);
  b.accept(rows_of(x, {1, 2}, 0));
  b.accept(rows_of(y, {5}, 0));  // the last window: y may trim it, x may not

  struct Bad {
    Window window;
    const char* message;
  };
  std::vector<Bad> bad = {
      {rows_of(y, {1, 2, 3, 4, 5, 6, 7}, 1), "window: 7 rows exceed the backend's max_window_rows 6"},
      {Window{{row(y, 6, 1), row(2, 1, 0)}}, "window row 1: slot 2 is not open"},
      {Window{{row(9, 1, 0)}}, "window row 0: slot 9 is not open"},
      {Window{{row(kNoSlot, 1, 0)}}, "window row 0: slot -1 is not open"},
      {Window{{row(y, 6, 1), row(y, 50, 2)}}, "window row 1: token 50 is outside the vocabulary (size 50)"},
      {Window{{row(y, -3, 1)}}, "window row 0: token -3 is outside the vocabulary"},
      {rows_of(x, {3}, 8), "window row 0: position 8 is outside [0, max_context) with max_context 8)"},
      {rows_of(x, {3}, 1), "window row 0: slot 0 position 1 does not continue its history (committed length 2)"},
      {Window{{row(x, 3, 2), row(y, 6, 1), row(x, 4, 4)}},
       "window row 2: slot 0 position 4 leaves a gap (expected 3)"},
      {Window{{row(x, 3, 2), row(x, 4, 2)}}, "window row 1: slot 0 position 2 leaves a gap (expected 3)"},
  };
  for (const Bad& c : bad) {
    INFO(c.message);
    CHECK_THROWS_WITH(b.accept(c.window), Contains(c.message));
    CHECK(history_of(b, x) == std::vector<TokenId>{1, 2});
    CHECK(history_of(b, y) == std::vector<TokenId>{5});
  }
  // The rejected windows did not become the last window either.
  CHECK_THROWS_WITH(b.commit(x, 0), Contains("had no rows in the last window"));
  b.commit(y, 0);
  CHECK(b.committed(y) == 0);
}

TEST_CASE("a window may fill a slot to exactly max_context positions") {
  SlotBook b(SlotLimits{1, 4, 10, 4});
  const SlotId x = open_one(b);
  b.accept(rows_of(x, {1, 2, 3, 4}, 0));
  CHECK(b.committed(x) == 4);
  CHECK_THROWS_WITH(b.accept(rows_of(x, {5}, 4)), Contains("position 4 is outside [0, max_context)"));
}

TEST_CASE("reset forgets positions but keeps sampling settings; a reopened slot starts from defaults") {
  SlotBook b = small_book();
  const SlotId x = open_one(b);
  SamplingParams p;
  p.temperature = 0.0f;
  p.repetition_penalty = 1.3f;
  b.set_sampling(x, p);
  b.accept(rows_of(x, {1, 2, 3}, 0));
  b.reset(x);
  CHECK(b.committed(x) == 0);
  CHECK(b.params(x).repetition_penalty == 1.3f);
  CHECK_THROWS_WITH(b.commit(x, 0), Contains("had no rows in the last window"));
  CHECK_THROWS_WITH(b.accept(rows_of(x, {4}, 3)), Contains("committed length 0"));
  b.accept(rows_of(x, {4}, 0));
  CHECK(history_of(b, x) == std::vector<TokenId>{4});

  b.close(x);
  CHECK_FALSE(b.is_open(x));
  b.open(x);
  CHECK(b.committed(x) == 0);
  CHECK(b.params(x).repetition_penalty == 1.0f);
  CHECK_FALSE(b.params(x).greedy());
}

TEST_CASE("lifecycle calls and set_sampling name a slot that is not open") {
  SlotBook b = small_book();
  CHECK_THROWS_WITH(b.reset(0), Contains("reset_slot: slot 0 is not open"));
  CHECK_THROWS_WITH(b.close(1), Contains("close_slot: slot 1 is not open"));
  CHECK_THROWS_WITH(b.set_sampling(-1, SamplingParams{}), Contains("set_sampling: slot -1 is not open"));
  const SlotId x = open_one(b);
  b.close(x);
  CHECK_THROWS_WITH(b.close(x), Contains("close_slot: slot 0 is not open"));
}

TEST_CASE("set_sampling rejects settings the vocabulary cannot take and keeps the old ones") {
  SlotBook b = small_book();
  const SlotId x = open_one(b);
  SamplingParams good;
  good.top_k = 5;
  b.set_sampling(x, good);
  SamplingParams bias;
  bias.logit_bias = {{50, 1.0f}};
  CHECK_THROWS_WITH(b.set_sampling(x, bias), Contains("logit_bias"));
  SamplingParams top_k;
  top_k.top_k = -1;
  CHECK_THROWS_WITH(b.set_sampling(x, top_k), Contains("top_k"));
  CHECK(b.params(x).top_k == 5);
}

TEST_CASE("after forget_last_window no slot can trim, but the committed history stays") {
  SlotBook b = small_book();
  const SlotId x = open_one(b);
  b.accept(rows_of(x, {1, 2, 3}, 0));
  b.forget_last_window();
  CHECK_THROWS_WITH(b.commit(x, 1), Contains("slot 0 had no rows in the last window"));
  CHECK(history_of(b, x) == std::vector<TokenId>{1, 2, 3});
  b.accept(rows_of(x, {4, 5}, 3));
  b.commit(x, 1);
  CHECK(history_of(b, x) == std::vector<TokenId>{1, 2, 3, 4});
}
