#include <catch2/catch.hpp>

#include "engine/core/scheduler.hpp"
#include "tests/core/harness.hpp"

using namespace strata;
using namespace strata::test;

namespace {

// A running request with `prompt_len` prompt tokens, `cached` of them already in its slot.
std::unique_ptr<SlotState> state(SlotId slot, int prompt_len, int cached, int generated = 0) {
  std::vector<TokenId> prompt;
  for (int i = 0; i < prompt_len; ++i) prompt.push_back(10 + i);
  auto s = std::make_unique<SlotState>(make_request("r" + std::to_string(slot), prompt, 50),
                                       std::make_shared<RequestChannel>(), fixture_tokenizer(), 50);
  for (int i = 0; i < generated; ++i) s->seq.push_back(100 + i);
  s->n_generated = generated;
  s->n_cached = cached;
  s->slot = slot;
  return s;
}

}  // namespace

TEST_CASE("a window puts every decoding slot's row first, then prompt chunks FCFS", "[scheduler]") {
  auto a = state(0, 4, 4, 1);   // decoding: one row at position 4
  auto b = state(1, 30, 0);     // prompt of 30
  auto c = state(2, 6, 7, 2);   // decoding: one row at position 7
  auto d = state(3, 10, 0);     // prompt of 10
  PlannedWindow p = plan_window({a.get(), b.get(), c.get(), d.get()}, WindowBudget{64, 32});
  REQUIRE(p.window.rows.size() == 2 + 30 + 2);  // b fits whole; d gets what the 32-row prefill cap leaves
  CHECK(p.decode_rows == 2);
  CHECK(p.prefill_rows == 32);
  CHECK(std::string(p.kind()) == "mixed");
  CHECK(p.window.rows[0].slot == 0);
  CHECK(p.window.rows[0].pos == 4);
  CHECK(p.window.rows[0].token == 100);
  CHECK(p.window.rows[1].slot == 2);
  CHECK(p.window.rows[1].pos == 7);
  CHECK(p.window.rows[1].token == 101);
  CHECK(p.window.rows[2].slot == 1);
  CHECK(p.window.rows[2].pos == 0);
  CHECK(p.window.rows[31].slot == 1);
  CHECK(p.window.rows[31].pos == 29);
  CHECK(p.window.rows.back().slot == 3);
  CHECK(p.window.rows.back().pos == 1);
  // Only each slot's last known token picks: a, c and the end of b's prompt; d is mid-prompt.
  int picks = 0;
  for (const Row& r : p.window.rows) picks += r.want_pick;
  CHECK(picks == 3);
  CHECK(p.window.rows[31].want_pick);
  CHECK_FALSE(p.window.rows.back().want_pick);
}

TEST_CASE("the prefill cap and the window budget bound the rows of a window", "[scheduler]") {
  auto a = state(0, 100, 0);
  auto b = state(1, 100, 0);
  PlannedWindow capped = plan_window({a.get(), b.get()}, WindowBudget{512, 48});
  CHECK(capped.window.rows.size() == 48);
  CHECK(capped.members.size() == 1);
  CHECK_FALSE(capped.window.rows.back().want_pick);  // a chunk in the middle of a prompt picks nothing
  CHECK(std::string(capped.kind()) == "prefill");

  a->n_cached = 40;
  PlannedWindow two = plan_window({a.get(), b.get()}, WindowBudget{80, 256});
  CHECK(two.window.rows.size() == 80);       // 60 rows finish a's prompt, 20 start b's
  CHECK(two.window.rows[0].pos == 40);
  CHECK(two.window.rows[59].want_pick);
  CHECK(two.window.rows[60].slot == 1);
  CHECK(two.window.rows[79].pos == 19);

  std::vector<std::unique_ptr<SlotState>> many;
  std::vector<SlotState*> ptrs;
  for (int i = 0; i < 8; ++i) {
    many.push_back(state(i, 3, 3, 1));
    ptrs.push_back(many.back().get());
  }
  PlannedWindow decode = plan_window(ptrs, WindowBudget{5, 5});
  CHECK(decode.window.rows.size() == 5);  // the budget is a hard cap even for decode rows
  CHECK(std::string(decode.kind()) == "decode");
}

TEST_CASE("a recomputed request replays prompt and generated tokens and picks only at the end", "[scheduler]") {
  auto a = state(0, 3, 0, 2);  // after a restart: 3 prompt + 2 generated tokens, nothing cached
  PlannedWindow p = plan_window({a.get()}, WindowBudget{64, 64});
  REQUIRE(p.window.rows.size() == 5);
  CHECK(p.window.rows[3].token == 100);
  CHECK(p.window.rows[4].token == 101);
  CHECK(p.window.rows[4].want_pick);
  CHECK_FALSE(p.window.rows[2].want_pick);
}

TEST_CASE("prompt logprob rows ask for logits and picking rows carry n_logprobs", "[scheduler]") {
  auto a = state(0, 4, 0);
  a->req->prompt_logprobs = true;
  a->req->logprobs = 3;
  PlannedWindow p = plan_window({a.get()}, WindowBudget{64, 64});
  REQUIRE(p.window.rows.size() == 4);
  CHECK(p.window.rows[0].want_logits);   // scores prompt token 1
  CHECK(p.window.rows[2].want_logits);   // scores prompt token 3
  CHECK_FALSE(p.window.rows[3].want_logits);  // the last prompt row scores a generated token instead
  CHECK(p.window.rows[3].n_logprobs == 3);
  CHECK(p.window.rows[0].n_logprobs == -1);
}

TEST_CASE("a window with drafts stays within the backend's exact rows and prompt chunks keep their share",
          "[scheduler][spec]") {
  auto a = state(0, 4, 4, 1);
  auto b = state(1, 4, 4, 1);
  auto c = state(2, 4, 4, 1);
  for (auto* s : {a.get(), b.get(), c.get()}) s->drafts = {1, 2, 3, 4};
  auto d = state(3, 20, 0);  // a prompt of 20
  auto drafted = [](const PlannedWindow& p) {
    int n = 0;
    for (int k : p.member_drafts) n += k;
    return n;
  };
  WindowBudget budget{64, 8};
  budget.exact_rows = 12;
  // Three decode rows and the 8-row prompt chunk it would take anyway leave one draft row within 12.
  CHECK(draft_allowance({a.get(), b.get(), c.get(), d.get()}, budget) == 1);
  PlannedWindow mixed = plan_window({a.get(), b.get(), c.get(), d.get()}, budget);
  CHECK(mixed.window.rows.size() == 12);
  CHECK(mixed.prefill_rows == 8);
  CHECK(drafted(mixed) == 1);
  CHECK(mixed.member_drafts.front() == 1);  // FCFS: the first decoding request gets it
  // Without the prompt: 9 draft rows, the first two requests' 4 each, then 1.
  PlannedWindow decode = plan_window({a.get(), b.get(), c.get()}, budget);
  CHECK(decode.window.rows.size() == 12);
  CHECK(decode.member_drafts == std::vector<int>{4, 4, 1});
  // Twelve decoding requests fill the exact rows themselves: no drafts, the batch decodes as without them.
  std::vector<std::unique_ptr<SlotState>> many;
  std::vector<SlotState*> running;
  for (int i = 0; i < 12; ++i) {
    many.push_back(state(SlotId(i), 4, 4, 1));
    many.back()->drafts = {1, 2};
    running.push_back(many.back().get());
  }
  CHECK(draft_allowance(running, budget) == 0);
  CHECK(plan_window(running, budget).window.rows.size() == 12);
  // A backend exact at any size (the default) leaves the budget to the drafts, before prompt chunks.
  budget.exact_rows = WindowBudget{}.exact_rows;
  CHECK(draft_allowance({a.get(), b.get(), c.get(), d.get()}, budget) == 61);
  CHECK(drafted(plan_window({a.get(), b.get(), c.get(), d.get()}, budget)) == 12);
}

TEST_CASE("a prompt whose rest would spill a few rows into the next window takes them now", "[scheduler]") {
  auto a = state(0, 4, 4, 1);  // decoding
  auto b = state(1, 129, 0);
  auto c = state(2, 129, 0);
  auto d = state(3, 129, 0);
  // Cap 256: b whole, then c's 127 rows and its last 2 (within 256 / 8); d gets nothing more.
  PlannedWindow p = plan_window({a.get(), b.get(), c.get(), d.get()}, WindowBudget{512, 256});
  CHECK(p.decode_rows == 1);
  CHECK(p.prefill_rows == 258);
  CHECK(p.members.size() == 3);
  CHECK(p.window.rows.back().slot == 2);
  CHECK(p.window.rows.back().want_pick);  // c's first token comes from this window
  // A rest larger than the slack stays for the next window.
  auto e = state(4, 200, 0);
  auto f = state(5, 129, 0);
  PlannedWindow q = plan_window({e.get(), f.get()}, WindowBudget{512, 256});
  CHECK(q.prefill_rows == 256);  // f: 56 of 129, 73 left
  CHECK_FALSE(q.window.rows.back().want_pick);
  // Never past the window's own budget: a 258-row window has room for 1 row past the cap, not c's 2.
  PlannedWindow r = plan_window({a.get(), b.get(), c.get()}, WindowBudget{258, 256});
  CHECK(r.window.rows.size() == 257);
  CHECK(r.prefill_rows == 256);
  // With drafts in the window the chunk keeps the exact cap: 17 rows under a cap of 16 leave 1 for later.
  auto g = state(6, 4, 4, 1);
  auto h = state(7, 17, 0);
  PlannedWindow plain = plan_window({g.get(), h.get()}, WindowBudget{64, 16});
  CHECK(plain.prefill_rows == 17);
  g->drafts = {1, 2, 3, 4};
  PlannedWindow drafted = plan_window({g.get(), h.get()}, WindowBudget{64, 16});
  CHECK(drafted.member_drafts.front() == 4);
  CHECK(drafted.prefill_rows == 16);
}
