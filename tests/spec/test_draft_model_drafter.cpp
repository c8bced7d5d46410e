// The draft-model drafter over a toy backend whose greedy pick is (last token + 1) mod 100: what it proposes,
// that its slot stays in step with the target's history (truncated to where they agree, one row fed per
// draft step), that many slots' drafters draft together in shared windows, and, as a feature draft, which
// token and feature each entry gets.
#include <catch2/catch.hpp>

#include <map>

#include "engine/spec/draft_model_drafter.hpp"

using namespace strata;

namespace {

struct ToyBackend : Backend {
  int free_slots = 2;
  bool fail = false;
  std::map<SlotId, std::vector<TokenId>> held;  // committed tokens per open slot
  std::map<SlotId, int> last_first, last_count;
  std::vector<Window> windows;
  int resets = 0, truncates = 0;
  int max_rows = 64;

  BackendInfo info() const override { return {"toy", 4, 64, 100, max_rows}; }
  SlotId open_slot() override {
    if (free_slots == 0) return kNoSlot;
    SlotId s = static_cast<SlotId>(held.size());
    --free_slots;
    held[s] = {};
    return s;
  }
  void reset_slot(SlotId s) override {
    ++resets;
    held.at(s).clear();
  }
  void close_slot(SlotId s) override {
    held.erase(s);
    ++free_slots;
  }
  void set_sampling(SlotId, const SamplingParams& p) override { CHECK(p.greedy()); }
  std::vector<RowResult> run_window(const Window& w) override {
    if (fail) throw Error("toy: device fault");
    if (static_cast<int>(w.rows.size()) > max_rows) throw Error("toy: window larger than max_window_rows");
    windows.push_back(w);
    std::vector<RowResult> out;
    std::map<SlotId, bool> seen;
    for (const Row& r : w.rows) {
      auto& h = held.at(r.slot);
      if (!seen[r.slot]) {  // this window's part of the slot starts here
        seen[r.slot] = true;
        last_first[r.slot] = static_cast<int>(h.size());
        last_count[r.slot] = 0;
      }
      ++last_count[r.slot];
      REQUIRE(r.pos == static_cast<int32_t>(h.size()));  // each row continues the slot's history
      h.push_back(r.token);
      RowResult res;
      if (r.want_pick) res.pick = (r.token + 1) % 100;
      // A two-value feature that says which row made it: (token + 0.5, position).
      if (r.want_feature) res.feature = {float(r.token) + 0.5f, float(r.pos)};
      out.push_back(res);
    }
    return out;
  }
  void commit(SlotId s, int n_keep) override {
    REQUIRE(n_keep <= last_count[s]);
    held.at(s).resize(static_cast<size_t>(last_first[s] + n_keep));
  }
  int truncate(SlotId s, int n_keep) override {
    REQUIRE(n_keep >= 0);
    REQUIRE(size_t(n_keep) <= held.at(s).size());
    ++truncates;
    held.at(s).resize(size_t(n_keep));
    return n_keep;
  }
};

// A backend that keeps no part of a slot on truncate (the Backend default: reset_slot).
struct ForgetfulToy : ToyBackend {
  int truncate(SlotId s, int n_keep) override { return Backend::truncate(s, n_keep); }
};

}  // namespace

TEST_CASE("draft-model drafter proposes the draft model's greedy continuation") {
  auto toy = std::make_shared<ToyBackend>();
  DraftModelDrafter d(toy);
  CHECK(d.propose({5, 6, 7}, 3) == std::vector<TokenId>{8, 9, 10});
  CHECK(d.propose({5, 6, 7}, 1) == std::vector<TokenId>{8});
  CHECK(d.propose({5, 6, 7}, 0).empty());
}

TEST_CASE("draft-model drafter feeds one row per draft step and keeps the drafts the target accepted") {
  auto toy = std::make_shared<ToyBackend>();
  DraftModelDrafter d(toy);
  CHECK(d.propose({5, 6, 7}, 3) == std::vector<TokenId>{8, 9, 10});
  // Three windows: the history, then 8, then 9 (10 is never fed); the slot holds all of it.
  REQUIRE(toy->windows.size() == 3u);
  CHECK(toy->windows[0].rows.size() == 3u);
  CHECK(toy->windows[1].rows.size() == 1u);
  CHECK(toy->windows[2].rows.size() == 1u);
  CHECK(toy->held.at(0) == std::vector<TokenId>{5, 6, 7, 8, 9});
  // The target kept 8 9 and picked 20 itself: nothing to cut, the next call feeds 20 at position 5.
  toy->windows.clear();
  CHECK(d.propose({5, 6, 7, 8, 9, 20}, 2) == std::vector<TokenId>{21, 22});
  REQUIRE(toy->windows.size() == 2u);
  CHECK(toy->windows[0].rows.size() == 1u);
  CHECK(toy->windows[0].rows[0].pos == 5);
  CHECK(toy->truncates == 0);
  CHECK(toy->held.at(0) == std::vector<TokenId>{5, 6, 7, 8, 9, 20, 21});
  // The target kept only 20 of 21 22 and picked 40: the slot is cut back to the history it agrees with.
  toy->windows.clear();
  CHECK(d.propose({5, 6, 7, 8, 9, 20, 40}, 2) == std::vector<TokenId>{41, 42});
  CHECK(toy->truncates == 1);
  CHECK(toy->windows[0].rows[0].pos == 6);
  CHECK(toy->held.at(0) == std::vector<TokenId>{5, 6, 7, 8, 9, 20, 40, 41});
  CHECK(toy->resets == 0);
}

TEST_CASE("draft-model drafter recomputes a history that shares nothing with what its slot holds") {
  for (bool forgetful : {false, true}) {
    std::shared_ptr<ToyBackend> toy = forgetful ? std::make_shared<ForgetfulToy>() : std::make_shared<ToyBackend>();
    DraftModelDrafter d(toy);
    d.propose({5, 6, 7, 8}, 2);
    toy->windows.clear();
    CHECK(d.propose({1, 2}, 2) == std::vector<TokenId>{3, 4});
    CHECK(toy->windows[0].rows.size() == 2u);  // from position 0
    CHECK(toy->held.at(0) == std::vector<TokenId>{1, 2, 3});
    CHECK(toy->resets == (forgetful ? 1 : 0));
  }
}

TEST_CASE("draft-model drafter refeeds what a backend could not keep on truncate") {
  auto toy = std::make_shared<ForgetfulToy>();
  DraftModelDrafter d(toy);
  d.propose({5, 6, 7}, 3);
  toy->windows.clear();
  CHECK(d.propose({5, 6, 7, 8, 30}, 2) == std::vector<TokenId>{31, 32});
  CHECK(toy->resets == 1);
  CHECK(toy->windows[0].rows.size() == 5u);  // everything again, from position 0
  CHECK(toy->held.at(0) == std::vector<TokenId>{5, 6, 7, 8, 30, 31});
}

TEST_CASE("draft-model drafter proposes nothing while the draft backend has no free slot, and frees its slot") {
  auto toy = std::make_shared<ToyBackend>();
  toy->free_slots = 0;
  {
    DraftModelDrafter d(toy);
    CHECK(d.propose({5, 6}, 3).empty());
    toy->free_slots = 1;
    CHECK(d.propose({5, 6}, 3) == std::vector<TokenId>{7, 8, 9});
    CHECK(toy->free_slots == 0);
  }
  CHECK(toy->free_slots == 1);
}

TEST_CASE("draft-model drafter passes a draft backend fault to its caller") {
  auto toy = std::make_shared<ToyBackend>();
  DraftModelDrafter d(toy);
  toy->fail = true;
  CHECK_THROWS_WITH(d.propose({5, 6}, 2), Catch::Contains("device fault"));
}

TEST_CASE("draft-model drafter catches up a history longer than the draft backend's window in several windows") {
  auto toy = std::make_shared<ToyBackend>();
  toy->max_rows = 5;
  DraftModelDrafter d(toy);
  std::vector<TokenId> history;
  for (int i = 0; i < 23; ++i) history.push_back(TokenId(10 + i));
  // 23 tokens in windows of at most 5 rows: the toy backend throws on a larger one.
  CHECK(d.propose(history, 3) == std::vector<TokenId>{33, 34, 35});
  for (const Window& w : toy->windows) CHECK(w.rows.size() <= 5u);
  CHECK(toy->windows.size() >= 5u + 2u);  // ceil(23 / 5) catch-up windows, then two draft steps
  // The slot holds the history and the first two drafts, as after a one-window catch-up.
  std::vector<TokenId> expect = history;
  expect.push_back(33);
  expect.push_back(34);
  CHECK(toy->held.at(0) == expect);
  // And it goes on in step: the target accepted both drafts and picked 35; only that row is fed.
  history.push_back(33);
  history.push_back(34);
  history.push_back(35);
  const size_t before = toy->windows.size();
  CHECK(d.propose(history, 2) == std::vector<TokenId>{36, 37});
  CHECK(toy->windows[before].rows.size() == 1u);
}

TEST_CASE("draft-model drafters on one backend draft together: k shared windows, the proposals of each alone") {
  auto toy = std::make_shared<ToyBackend>();
  toy->free_slots = 3;
  DraftModelDrafter a(toy), b(toy), c(toy);
  CHECK(a.batch_key() == b.batch_key());
  CHECK(a.batch_key() != nullptr);
  const std::vector<TokenId> ha{5, 6, 7}, hb{40, 41}, hc{90, 91, 92, 93};
  std::vector<DraftJob> jobs{{&a, &ha, 3, {}}, {&b, &hb, 1, {}}, {&c, &hc, 4, {}}};
  a.propose_together(jobs);
  CHECK(jobs[0].drafts == std::vector<TokenId>{8, 9, 10});
  CHECK(jobs[1].drafts == std::vector<TokenId>{42});
  CHECK(jobs[2].drafts == std::vector<TokenId>{94, 95, 96, 97});
  // One chain of the longest k's steps (Backend::run_chain, here as windows): every slot in each step.
  REQUIRE(toy->windows.size() == 4u);
  auto slots_in = [](const Window& w) {
    std::map<SlotId, int> n;
    for (const Row& r : w.rows) ++n[r.slot];
    return n.size();
  };
  for (const Window& w : toy->windows) CHECK(slots_in(w) == 3u);
  // Each slot holds its history and the three picks fed after the first window, whatever its own k; after
  // the first window every slot feeds one row a step.
  CHECK(toy->held.at(0) == std::vector<TokenId>{5, 6, 7, 8, 9, 10});
  CHECK(toy->held.at(1) == std::vector<TokenId>{40, 41, 42, 43, 44});
  CHECK(toy->held.at(2) == std::vector<TokenId>{90, 91, 92, 93, 94, 95, 96});
  CHECK(toy->windows[1].rows.size() == 3u);
  // And the next round feeds each only what its target decided since: a kept 8 and picked 50 (9 is cut);
  // c kept 94 95 and picked 99 (96 is cut).
  const std::vector<TokenId> ha2{5, 6, 7, 8, 50}, hc2{90, 91, 92, 93, 94, 95, 99};
  std::vector<DraftJob> next{{&a, &ha2, 2, {}}, {&c, &hc2, 2, {}}};
  toy->windows.clear();
  c.propose_together(next);
  CHECK(next[0].drafts == std::vector<TokenId>{51, 52});
  CHECK(next[1].drafts == std::vector<TokenId>{0, 1});
  REQUIRE(toy->windows.size() == 2u);
  CHECK(toy->windows[0].rows.size() == 1u + 1u);  // a: 50 at position 4; c: 99 at position 6
  CHECK(toy->truncates == 2);
  CHECK(toy->resets == 0);
}

TEST_CASE("shared draft windows respect the draft backend's window size and recover after a fault") {
  auto toy = std::make_shared<ToyBackend>();
  toy->free_slots = 3;
  toy->max_rows = 4;
  DraftModelDrafter a(toy), b(toy), c(toy);
  std::vector<TokenId> ha, hb{1, 2}, hc{60, 61, 62};
  for (int i = 0; i < 11; ++i) ha.push_back(TokenId(10 + i));
  std::vector<DraftJob> jobs{{&a, &ha, 3, {}}, {&b, &hb, 3, {}}, {&c, &hc, 3, {}}};
  a.propose_together(jobs);
  for (const Window& w : toy->windows) CHECK(w.rows.size() <= 4u);
  CHECK(jobs[0].drafts == std::vector<TokenId>{21, 22, 23});
  CHECK(jobs[1].drafts == std::vector<TokenId>{3, 4, 5});
  CHECK(jobs[2].drafts == std::vector<TokenId>{63, 64, 65});
  // A fault part-way leaves the slots' contents unknown: the next proposal starts them over and is right.
  toy->fail = true;
  hb.push_back(3);
  CHECK_THROWS_WITH(a.propose_together(jobs), Catch::Contains("device fault"));
  toy->fail = false;
  const int resets = toy->resets;
  a.propose_together(jobs);
  CHECK(toy->resets == resets + 3);
  CHECK(jobs[1].drafts == std::vector<TokenId>{4, 5, 6});
  CHECK(toy->held.at(1) == std::vector<TokenId>{1, 2, 3, 4, 5});
}

namespace {

// The rows of a window as (token, position) pairs and its features, for comparing whole windows.
std::vector<std::pair<TokenId, int32_t>> rows_of(const Window& w) {
  std::vector<std::pair<TokenId, int32_t>> r;
  for (const Row& row : w.rows) r.emplace_back(row.token, row.pos);
  return r;
}

}  // namespace

TEST_CASE("feature drafter: entry i is token i + 1 with the target's feature i; chained steps read their own") {
  auto toy = std::make_shared<ToyBackend>();
  DraftModelDrafter d(toy, 2);
  CHECK(d.feature_dim() == 2);
  CHECK(std::string(d.name()) == "feature-draft");
  // Prompt 10 11, then the target picked 12 (not yet run): the target's features of positions 0 and 1.
  d.take_feature(0, {100, 0});
  d.take_feature(1, {101, 1});
  CHECK(d.propose({10, 11, 12}, 3) == std::vector<TokenId>{13, 14, 15});
  REQUIRE(toy->windows.size() == 3u);
  using P = std::vector<std::pair<TokenId, int32_t>>;
  CHECK(rows_of(toy->windows[0]) == P{{11, 0}, {12, 1}});
  CHECK(toy->windows[0].features == std::vector<float>{100, 0, 101, 1});
  CHECK(rows_of(toy->windows[1]) == P{{13, 2}});
  CHECK(toy->windows[1].features == std::vector<float>{12.5f, 1});  // the draft's own feature of entry 1
  CHECK(rows_of(toy->windows[2]) == P{{14, 3}});
  CHECK(toy->windows[2].features == std::vector<float>{13.5f, 2});
  CHECK(toy->held.at(0) == std::vector<TokenId>{11, 12, 13, 14});

  // The target kept 13 and picked 20: its features of positions 2 (token 12) and 3 (token 13) arrive. The
  // chained entries (which read the draft's features) go, even the one whose token was accepted.
  toy->windows.clear();
  d.take_feature(2, {102, 2});
  d.take_feature(3, {103, 3});
  CHECK(d.propose({10, 11, 12, 13, 20}, 2) == std::vector<TokenId>{21, 22});
  CHECK(toy->truncates == 1);
  REQUIRE(toy->windows.size() == 2u);
  CHECK(rows_of(toy->windows[0]) == P{{13, 2}, {20, 3}});
  CHECK(toy->windows[0].features == std::vector<float>{102, 2, 103, 3});
  CHECK(rows_of(toy->windows[1]) == P{{21, 4}});
  CHECK(toy->windows[1].features == std::vector<float>{20.5f, 3});
  CHECK(toy->held.at(0) == std::vector<TokenId>{11, 12, 13, 20, 21});
}

TEST_CASE("feature drafter: a feature it never got reads as zeros; a feature delivered again is ignored") {
  auto toy = std::make_shared<ToyBackend>();
  DraftModelDrafter d(toy, 2);
  d.take_feature(1, {101, 1});  // position 0 came from a prefix cache: no feature
  d.take_feature(2, {102, 2, 7});  // the wrong width: unusable
  CHECK(d.propose({10, 11, 12, 13}, 1) == std::vector<TokenId>{14});
  REQUIRE(toy->windows.size() == 1u);
  CHECK(toy->windows[0].features == std::vector<float>{0, 0, 101, 1, 0, 0});
  // A recompute (after a restart) delivers the fed positions again: they change nothing.
  toy->windows.clear();
  d.take_feature(0, {900, 0});
  d.take_feature(3, {103, 3});
  CHECK(d.propose({10, 11, 12, 13, 14}, 1) == std::vector<TokenId>{15});
  REQUIRE(toy->windows.size() == 1u);
  CHECK(rows_of(toy->windows[0]) == std::vector<std::pair<TokenId, int32_t>>{{14, 3}});
  CHECK(toy->windows[0].features == std::vector<float>{103, 3});
  // A history of one token has no entry to feed.
  DraftModelDrafter e(toy, 2);
  CHECK(e.propose({10}, 2).empty());
}

TEST_CASE("feature drafters on one backend draft together, each row with its own feature") {
  auto toy = std::make_shared<ToyBackend>();
  DraftModelDrafter a(toy, 2), b(toy, 2);
  a.take_feature(0, {1, 0});
  b.take_feature(0, {2, 0});
  b.take_feature(1, {3, 1});
  std::vector<TokenId> ha{5, 6}, hb{7, 8, 9};
  std::vector<DraftJob> jobs{{&a, &ha, 2, {}}, {&b, &hb, 2, {}}};
  a.propose_together(jobs);
  CHECK(jobs[0].drafts == std::vector<TokenId>{7, 8});
  CHECK(jobs[1].drafts == std::vector<TokenId>{10, 11});
  REQUIRE(toy->windows.size() == 2u);
  CHECK(toy->windows[0].features == std::vector<float>{1, 0, 2, 0, 3, 1});
  CHECK(toy->windows[1].features == std::vector<float>{6.5f, 0, 9.5f, 1});
}

TEST_CASE("drafting ahead: a proposal kept whole with the draft's next pick comes from the stream, which goes on") {
  auto toy = std::make_shared<ToyBackend>();
  DraftModelDrafter d(toy, 0, DraftModelDrafter::Ahead::On);
  CHECK(d.propose({5, 6, 7}, 3) == std::vector<TokenId>{8, 9, 10});
  // The chain ran k + 2 = 5 steps more (the toy runs them at once): 10 .. 14 fed, 11 .. 15 picked.
  CHECK(toy->held.at(0) == std::vector<TokenId>{5, 6, 7, 8, 9, 10, 11, 12, 13, 14});
  CHECK(d.ahead_runs() == 1);
  // The target kept 8 9 10 and picked 11, as the draft did: the next proposal is 12 13 14, from the stream.
  // The stream then goes on from its last pick, 15, to cover the next proposal: the guess and 4 drafts.
  toy->windows.clear();
  CHECK(d.propose({5, 6, 7, 8, 9, 10, 11}, 3) == std::vector<TokenId>{12, 13, 14});
  CHECK(d.ahead_hits() == 1);
  CHECK(toy->windows.empty());  // nothing on the round's path: the stream goes on once the target verifies
  CHECK(d.ahead_extends() == 0);
  d.while_verifying();
  CHECK(d.ahead_extends() == 1);
  REQUIRE(toy->windows.size() == 4u);  // one window per step (the default extend_ahead)
  CHECK(toy->windows[0].rows.size() == 1u);
  CHECK(toy->windows[0].rows[0].token == 15);
  CHECK(toy->windows[0].rows[0].pos == 10);
  CHECK(toy->held.at(0).back() == 18);
  // Kept again, with 15: the stream answers 16 17 18 (k is 3 again) and goes on.
  CHECK(d.propose({5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, 3) == std::vector<TokenId>{16, 17, 18});
  CHECK(d.ahead_hits() == 2);
  d.while_verifying();
  d.while_verifying();  // once
  CHECK(d.ahead_extends() == 2);
  CHECK(toy->truncates == 0);
  CHECK(d.ahead_runs() == 1);
  // The target kept 16 17 18 but picked 30: the stream is dropped, the slot is cut back to the history's
  // entries it holds (through 18, the stream's rows reused) and fed 30 alone.
  toy->windows.clear();
  CHECK(d.propose({5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 30}, 3) == std::vector<TokenId>{31, 32, 33});
  CHECK(toy->truncates == 1);
  REQUIRE(!toy->windows.empty());
  CHECK(toy->windows[0].rows.size() == 1u);
  CHECK(toy->windows[0].rows[0].token == 30);
  CHECK(toy->windows[0].rows[0].pos == 14);
  CHECK(d.ahead_runs() == 2);
}

TEST_CASE("drafting ahead: a round that waits for its drafts drafts at most `critical`; the stream covers k") {
  auto toy = std::make_shared<ToyBackend>();
  DraftModelDrafter d(toy, 0, DraftModelDrafter::Ahead::On, 1);
  CHECK(d.propose({5, 6, 7}, 3) == std::vector<TokenId>{8});
  // One step, then the guess (9) and k + 1 = 4 drafts ahead (10 .. 13): 8 .. 12 fed.
  CHECK(toy->held.at(0) == std::vector<TokenId>{5, 6, 7, 8, 9, 10, 11, 12});
  CHECK(d.propose({5, 6, 7, 8, 9}, 3) == std::vector<TokenId>{10, 11, 12});
  CHECK(d.ahead_hits() == 1);
  // A drafter without drafting ahead ignores the cap.
  auto toy2 = std::make_shared<ToyBackend>();
  DraftModelDrafter plain(toy2, 0, DraftModelDrafter::Ahead::Off, 1);
  CHECK(plain.propose({5, 6, 7}, 3) == std::vector<TokenId>{8, 9, 10});
  CHECK_THROWS_WITH(DraftModelDrafter(toy2, 0, DraftModelDrafter::Ahead::On, -1),
                    Catch::Contains("critical steps must not be negative"));
}

// A toy that says how many steps each run_chain_ahead was asked to return (the round's wait).
struct StepsToy : ToyBackend {
  std::vector<int> asked_steps;
  std::vector<std::vector<TokenId>> run_chain_ahead(const Window& w, int steps, int ahead, uint64_t* ticket) override {
    asked_steps.push_back(steps);
    return Backend::run_chain_ahead(w, steps, ahead, ticket);
  }
};

// A lookup that proposes what it is told to, at most max_k of it.
struct FixedLookup : Drafter {
  std::vector<TokenId>* out;
  explicit FixedLookup(std::vector<TokenId>* o) : out(o) {}
  const char* name() const override { return "fixed"; }
  std::vector<TokenId> propose(const std::vector<TokenId>&, int max_k, const DraftRoom&) override {
    std::vector<TokenId> p = *out;
    if (p.size() > size_t(max_k)) p.resize(size_t(max_k));
    return p;
  }
};

TEST_CASE("drafting ahead: a lookup proposal waits for no draft step; its chain runs while the target verifies") {
  auto toy = std::make_shared<StepsToy>();
  std::vector<TokenId> found{50, 51, 52, 53, 54};
  DraftModelDrafter d(toy, 0, DraftModelDrafter::Ahead::On, 1, std::make_unique<FixedLookup>(&found));
  // The lookup's proposal (cut to k) is the round's, and nothing runs on the round's path: the chain (its
  // first window the history, then 50 51 52 as known rows, and kLookupAhead = 2 steps after it, all ahead:
  // the guess and one draft) is launched once the target's window is.
  CHECK(d.propose({5, 6, 7}, 3) == std::vector<TokenId>{50, 51, 52});
  CHECK(d.lookup_proposals() == 1);
  CHECK(toy->asked_steps.empty());
  CHECK(toy->windows.empty());
  d.while_verifying();
  REQUIRE(toy->asked_steps == std::vector<int>{0});
  CHECK(toy->held.at(0) == std::vector<TokenId>{5, 6, 7, 50, 51, 52, 53});
  d.while_verifying();  // once
  CHECK(toy->asked_steps.size() == 1u);
  // Kept whole, and the target picked 53 as the draft guessed: the next proposal is the stream's 54.
  CHECK(d.propose({5, 6, 7, 50, 51, 52, 53}, 3) == std::vector<TokenId>{54});
  CHECK(d.ahead_hits() == 1);
  // A round the lookup has nothing for waits for `critical` (1) step, as before.
  found.clear();
  CHECK(d.propose({5, 6, 7, 50, 60}, 3) == std::vector<TokenId>{61});
  CHECK(toy->asked_steps == std::vector<int>{0, 1});
  // A chain whose proposal no window verified runs before the drafter's next proposal reads its slot.
  found = {70, 71};
  CHECK(d.propose({5, 6, 7, 50, 60, 61, 69}, 3) == std::vector<TokenId>{70, 71});
  CHECK(toy->asked_steps.size() == 2u);
  found.clear();
  CHECK(d.propose({5, 6, 7, 50, 60, 61, 69, 70, 71, 72}, 3) == std::vector<TokenId>{73});
  CHECK(d.ahead_hits() == 2);
  CHECK(toy->asked_steps == std::vector<int>{0, 1, 0});
  // A chain that faults when launched leaves the slot to be reset; the next proposal recomputes it.
  found = {80};
  CHECK(d.propose({5, 6, 7, 8}, 3) == std::vector<TokenId>{80});
  toy->fail = true;
  CHECK_THROWS_AS(d.while_verifying(), Error);
  toy->fail = false;
  found.clear();
  const int resets = toy->resets;
  CHECK(d.propose({5, 6, 7, 8, 80, 81}, 2) == std::vector<TokenId>{82});
  CHECK(toy->resets == resets + 1);
  CHECK(toy->held.at(0).size() >= 6u);
  CHECK(toy->held.at(0)[5] == 81);
  // Two jobs in one chain: it waits for none only when both have lookup proposals, and goes on for both.
  DraftModelDrafter b(toy, 0, DraftModelDrafter::Ahead::On, 1, std::make_unique<FixedLookup>(&found));
  std::vector<TokenId> ha{5, 6, 7, 9}, hb{40, 41};
  std::vector<DraftJob> jobs{{&d, &ha, 2, {}}, {&b, &hb, 2, {}}};
  found = {90, 91};
  d.propose_together(jobs);
  CHECK(jobs[0].drafts == std::vector<TokenId>{90, 91});
  CHECK(jobs[1].drafts == std::vector<TokenId>{90, 91});
  CHECK(toy->asked_steps.back() != 0);
  b.while_verifying();
  CHECK(toy->asked_steps.back() == 0);
  ha = {5, 6, 7, 9, 90, 91, 92};
  hb = {40, 41, 90, 91, 92};
  found.clear();
  d.propose_together(jobs);
  CHECK(jobs[0].drafts == std::vector<TokenId>{93});
  CHECK(jobs[1].drafts == std::vector<TokenId>{93});
  CHECK(d.ahead_hits() == 3);
  CHECK(b.ahead_hits() == 1);
}

TEST_CASE("drafting ahead: a stream goes on only when every job of its chain took its proposal from it") {
  auto toy = std::make_shared<ToyBackend>();
  DraftModelDrafter a(toy, 0, DraftModelDrafter::Ahead::On), b(toy, 0, DraftModelDrafter::Ahead::On);
  std::vector<TokenId> ha{5, 6}, hb{40, 41};
  std::vector<DraftJob> jobs{{&a, &ha, 2, {}}, {&b, &hb, 2, {}}};
  a.propose_together(jobs);
  CHECK(jobs[0].drafts == std::vector<TokenId>{7, 8});
  CHECK(jobs[1].drafts == std::vector<TokenId>{42, 43});
  // Both kept whole, with the guessed picks: both from the stream, which goes on for both in one step set.
  ha = {5, 6, 7, 8, 9};
  hb = {40, 41, 42, 43, 44};
  toy->windows.clear();
  a.propose_together(jobs);
  CHECK(jobs[0].drafts == std::vector<TokenId>{10, 11});
  CHECK(jobs[1].drafts == std::vector<TokenId>{45, 46});
  b.while_verifying();  // either drafter goes on with the streams of the chain they share
  a.while_verifying();
  REQUIRE(!toy->windows.empty());
  CHECK(toy->windows[0].rows.size() == 2u);
  CHECK(b.ahead_extends() == 1);  // counted by the drafter that ran it
  // Only a is kept whole now: b's history left its stream, so b drafts afresh and a's stream stops where it is
  // (a chain after it would wait for it first); a still answers from what it holds.
  ha = {5, 6, 7, 8, 9, 10, 11, 12};
  hb = {40, 41, 42, 43, 44, 45, 50};
  a.propose_together(jobs);
  CHECK(jobs[0].drafts == std::vector<TokenId>{13, 14});
  CHECK(jobs[1].drafts == std::vector<TokenId>{51, 52});
  a.while_verifying();
  CHECK(a.ahead_extends() == 0);
  CHECK(b.ahead_extends() == 1);
  CHECK(a.ahead_hits() == 2);
  CHECK(b.ahead_hits() == 1);
}

TEST_CASE("drafting ahead: a proposal the target cut, or ended otherwise, drops the ahead steps") {
  auto toy = std::make_shared<ToyBackend>();
  DraftModelDrafter d(toy, 0, DraftModelDrafter::Ahead::On);
  CHECK(d.propose({5, 6, 7}, 3) == std::vector<TokenId>{8, 9, 10});
  // All three kept but the target picked 20, not 11: the slot is cut back to 5 6 7 8 9 and fed 10 20.
  CHECK(d.propose({5, 6, 7, 8, 9, 10, 20}, 3) == std::vector<TokenId>{21, 22, 23});
  CHECK(d.ahead_hits() == 0);
  CHECK(toy->truncates == 1);
  CHECK(toy->windows.back().rows.size() == 1u);
  // Two kept, then the target's own pick: the same.
  CHECK(d.propose({5, 6, 7, 8, 9, 10, 20, 21, 22, 30}, 3) == std::vector<TokenId>{31, 32, 33});
  CHECK(d.ahead_hits() == 0);
  // What a later history holds of it is checked token by token: this one is the guess but for one token.
  CHECK(d.propose({5, 6, 7, 8, 9, 10, 20, 21, 22, 30, 31, 32, 33, 35}, 3) == std::vector<TokenId>{36, 37, 38});
  CHECK(d.ahead_hits() == 0);
  CHECK(toy->held.at(0).size() > 14u);
}

TEST_CASE("drafting ahead: feature drafts take the ahead steps, then feed the target's features again") {
  auto toy = std::make_shared<ToyBackend>();
  DraftModelDrafter d(toy, 2, DraftModelDrafter::Ahead::On);
  for (int p = 0; p < 3; ++p) d.take_feature(p, {float(p), 1.0f});
  // Entries: token i + 1 with feature i; 5 6 7 has two (6 and 7), the chain then 8 9, ahead 10 .. 14.
  CHECK(d.propose({5, 6, 7}, 3) == std::vector<TokenId>{8, 9, 10});
  for (int p = 2; p < 6; ++p) d.take_feature(p, {float(p), 2.0f});  // the verify window's rows, kept
  toy->windows.clear();
  CHECK(d.propose({5, 6, 7, 8, 9, 10, 11}, 3) == std::vector<TokenId>{12, 13, 14});
  CHECK(d.ahead_hits() == 1);
  d.while_verifying();
  // The stream went on from its last pick, 15, with the draft's own feature of the row that picked it.
  REQUIRE(!toy->windows.empty());
  CHECK(toy->windows[0].rows[0].token == 15);
  CHECK(toy->windows[0].features == std::vector<float>{14.5f, 8.0f});
  // The target kept 12 13 14, then picked 20: the next proposal refeeds every entry past the history the
  // target's features fed (from 7 at entry 1): the chained, ahead and stream entries read the draft's own.
  for (int p = 6; p < 10; ++p) d.take_feature(p, {float(p), 3.0f});
  toy->windows.clear();
  CHECK(d.propose({5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 20}, 2) == std::vector<TokenId>{21, 22});
  REQUIRE(!toy->windows.empty());
  const Window& w = toy->windows[0];
  CHECK(w.rows.front().pos == 2);
  CHECK(w.rows.front().token == 8);
  REQUIRE(w.features.size() == 2 * w.rows.size());
  CHECK(w.features[0] == 2.0f);  // entry 2: the target's feature at position 2
  CHECK(w.features[1] == 2.0f);
}

TEST_CASE("drafting ahead: lookup copies on past the draft's proposal within the room, and the stream goes on") {
  auto toy = std::make_shared<ToyBackend>();
  DraftModelDrafter d(toy, 0, DraftModelDrafter::Ahead::On, 0, std::make_unique<NgramDrafter>(1, 4));
  const DraftRoom room{6, 10};  // 6 drafts at no cost, 10 at most
  // Lookup finds nothing after 70; the draft's chain proposes 71 72 73 (the guess 74 and 75 .. 78 ahead),
  // and nothing follows them in the history either.
  std::vector<TokenId> h{76, 77, 50, 51, 52, 70};
  CHECK(d.propose(h, 3, room) == std::vector<TokenId>{71, 72, 73});
  // Kept whole, and the target picked 74: the stream's 75 76 77, then lookup's copy after 76 77 (50 51 52,
  // up to the 6 cheap drafts in all).
  h.insert(h.end(), {71, 72, 73, 74});
  CHECK(d.propose(h, 3, room) == std::vector<TokenId>{75, 76, 77, 50, 51, 52});
  CHECK(d.ahead_hits() == 1);
  d.while_verifying();
  // The target kept the stream's drafts but not the copy, and picked the stream's guess 78: the stream goes on.
  h.insert(h.end(), {75, 76, 77, 78});
  CHECK(d.propose(h, 3, room) == std::vector<TokenId>{79, 80, 81});
  CHECK(d.ahead_hits() == 2);
  // Without room past k, nothing is copied on.
  auto toy2 = std::make_shared<ToyBackend>();
  DraftModelDrafter e(toy2, 0, DraftModelDrafter::Ahead::On, 0, std::make_unique<NgramDrafter>(1, 4));
  std::vector<TokenId> g{76, 77, 50, 51, 52, 70};
  CHECK(e.propose(g, 3) == std::vector<TokenId>{71, 72, 73});
  g.insert(g.end(), {71, 72, 73, 74});
  CHECK(e.propose(g, 3) == std::vector<TokenId>{75, 76, 77});
}

TEST_CASE("drafting ahead: a stream goes on past a kept copy that agreed with it") {
  auto toy = std::make_shared<ToyBackend>();
  DraftModelDrafter d(toy, 0, DraftModelDrafter::Ahead::On, 0, std::make_unique<NgramDrafter>(1, 4));
  const DraftRoom room{6, 10};
  std::vector<TokenId> h{66, 67, 68, 69, 70, 71, 60};
  CHECK(d.propose(h, 3, room) == std::vector<TokenId>{61, 62, 63});
  h.insert(h.end(), {61, 62, 63, 64});
  // The stream's 65 66 67, then lookup's copy after 66 67, which is what the stream would draft too.
  CHECK(d.propose(h, 3, room) == std::vector<TokenId>{65, 66, 67, 68, 69, 70});
  d.while_verifying();
  // All kept, then 71: the history is the stream's guess and three more of its tokens, so the stream goes on
  // (its last token, 72) with no draft work, where it used to be dropped.
  h.insert(h.end(), {65, 66, 67, 68, 69, 70, 71});
  const size_t windows = toy->windows.size();
  CHECK(d.propose(h, 3, room) == std::vector<TokenId>{72});
  CHECK(d.ahead_hits() == 2);
  CHECK(toy->windows.size() == windows);
}

TEST_CASE("drafting ahead: lookup's own proposal stands in for the draft's only on a long enough match") {
  // --spec-draft-lookup-min 3: lookup beside a draft model needs three tokens of match for a proposal of its
  // own (its copies after the draft's drafts take any).
  auto propose = [](int min_match, const std::vector<TokenId>& h) {
    auto toy = std::make_shared<ToyBackend>();
    DraftModelDrafter d(toy, 0, DraftModelDrafter::Ahead::On, 0, std::make_unique<NgramDrafter>(1, 4, min_match));
    return d.propose(h, 3);
  };
  // "5 6" occurred before (followed by 90 91 8), "8 5 6" did not: a two-token match.
  const std::vector<TokenId> two{5, 6, 90, 91, 8, 5, 6};
  CHECK(propose(1, two) == std::vector<TokenId>{90, 91, 8});
  CHECK(propose(3, two) == std::vector<TokenId>{7, 8, 9});  // the draft's chain
  // "4 5 6" occurred before: three tokens, lookup's proposal either way.
  const std::vector<TokenId> three{4, 5, 6, 90, 91, 8, 4, 5, 6};
  CHECK(propose(1, three) == std::vector<TokenId>{90, 91, 8});
  CHECK(propose(3, three) == std::vector<TokenId>{90, 91, 8});
}
