// The Backend contract's checks that hold for every backend (DESIGN.md, "The Backend contract"), and the window
// builders they and the backends' own tests use. Each check takes a backend the caller built, so the CPU tests
// (in CI) and the CUDA tests (label gpu) hold both backends to the same statements.
#pragma once
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "engine/core/backend.hpp"
#include "engine/core/types.hpp"

namespace strata {
namespace backend_test {

inline std::vector<TokenId> prompt_tokens(int n, int vocab, int salt) {
  std::vector<TokenId> t;
  for (int i = 0; i < n; ++i) t.push_back(TokenId((i * 131 + salt * 71 + 17) % vocab));
  return t;
}

inline Row row(SlotId s, TokenId t, int pos, bool logits = true, bool pick = false) {
  Row r;
  r.slot = s;
  r.token = t;
  r.pos = pos;
  r.want_logits = logits;
  r.want_pick = pick;
  return r;
}

inline Window chunk(SlotId s, const std::vector<TokenId>& t, int first, int count, bool pick = false) {
  Window w;
  for (int i = first; i < first + count; ++i) w.rows.push_back(row(s, t[size_t(i)], i, true, pick));
  return w;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && !a.empty() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// A verify window (two kept rows, two rejected drafts) trimmed by commit continues exactly like a slot that
// only ran the kept rows. `be` has two free slots and a context of at least 12.
inline void check_commit_trims_verify_window(Backend& be, int vocab) {
  const auto p = prompt_tokens(12, vocab, 4);
  const SlotId a = be.open_slot(), ref = be.open_slot();
  const auto straight = be.run_window(chunk(ref, p, 0, 12));

  be.run_window(chunk(a, p, 0, 8));
  Window verify = chunk(a, p, 8, 2);
  verify.rows.push_back(row(a, 5, 10));  // rejected drafts
  verify.rows.push_back(row(a, 6, 11));
  const auto v = be.run_window(verify);
  CHECK(same_bits(v[0].logits, straight[8].logits));
  CHECK(same_bits(v[1].logits, straight[9].logits));
  be.commit(a, 2);
  // The next row must sit at the kept length; its logits read only kept state.
  CHECK_THROWS_AS(be.run_window(chunk(a, p, 11, 1)), Error);
  const auto next = be.run_window(chunk(a, p, 10, 2));
  CHECK(same_bits(next[0].logits, straight[10].logits));
  CHECK(same_bits(next[1].logits, straight[11].logits));
}

// Bad windows throw strata::Error naming the problem and change no state. `be` has three free slots, a
// context of 8 and windows of at most 8 rows.
inline void check_bad_windows_change_nothing(Backend& be, int vocab) {
  using Catch::Matchers::Contains;
  const auto p = prompt_tokens(6, vocab, 5);
  const SlotId a = be.open_slot(), ref = be.open_slot(), closed = be.open_slot();
  be.close_slot(closed);
  be.run_window(chunk(a, p, 0, 4));
  const auto want = be.run_window(chunk(ref, p, 0, 5));

  auto bad = [&](std::vector<Row> rows, const std::string& says) {
    CHECK_THROWS_WITH(be.run_window(Window{rows}), Contains(says));
  };
  bad({row(a, p[4], 4), row(99, 1, 0)}, "slot 99 is not open");
  bad({row(a, p[4], 4), row(closed, 1, 0)}, "slot " + std::to_string(closed) + " is not open");
  bad({row(a, p[4], 5)}, "does not continue its history (committed length 4)");
  bad({row(a, p[4], 3)}, "does not continue its history");
  bad({row(a, p[4], 4), row(a, p[5], 6)}, "leaves a gap (expected 5)");
  bad({row(a, p[4], 4), row(a, p[5], 5), row(ref, 1, 5), row(ref, 2, 6), row(ref, 3, 7), row(ref, 4, 8)},
      "outside [0, max_context)");
  bad({row(a, p[4], -1)}, "position -1");
  bad({row(a, vocab, 4)}, "token " + std::to_string(vocab) + " is outside the vocabulary");
  bad({row(a, -3, 4)}, "token -3");
  bad(std::vector<Row>(9, row(a, 1, 4)), "exceed the backend's max_window_rows 8");

  // Nothing moved: the slot continues at position 4 exactly as an untouched slot does.
  const auto got = be.run_window(chunk(a, p, 4, 1));
  CHECK(same_bits(got[0].logits, want[4].logits));
}

}  // namespace backend_test
}  // namespace strata
