// The paged KV bookkeeping: the block pool (allocation, reference counts, the prefix cache's chained keys,
// collision safety, LRU eviction, exhaustion) and the block tables SlotBook keeps on top of it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <set>

#include "engine/slots/kv_blocks.hpp"
#include "engine/slots/slot_book.hpp"

using namespace strata;
using Catch::Matchers::Contains;

namespace {

std::vector<TokenId> seq(int n, int salt) {
  std::vector<TokenId> t(static_cast<size_t>(n), 0);
  for (int i = 0; i < n; ++i) t[size_t(i)] = TokenId((i * 7 + salt * 13 + 1) % 50);
  return t;
}

Window rows_of(SlotId s, const std::vector<TokenId>& t, int first, int count) {
  Window w;
  for (int i = first; i < first + count; ++i) {
    Row r;
    r.slot = s;
    r.token = t[size_t(i)];
    r.pos = i;
    w.rows.push_back(r);
  }
  return w;
}

// A book of `slots` slots, 64 positions each, 50-token vocabulary, over a pool of `blocks` blocks of 4.
SlotBook paged_book(int slots, int blocks, bool caching = true, uint64_t mask = ~uint64_t(0)) {
  return SlotBook(SlotLimits{slots, 64, 50, 64}, KvPoolLimits{4, blocks, caching, mask});
}

SlotId open_one(SlotBook& b) {
  const SlotId s = b.find_free();
  b.open(s);
  return s;
}

// Runs `t` through slot s in one window.
void feed(SlotBook& b, SlotId s, const std::vector<TokenId>& t) { b.accept(rows_of(s, t, b.committed(s), int(t.size()) - b.committed(s))); }

}  // namespace

TEST_CASE("kv pool: allocate hands out distinct blocks, release returns them, exhaustion throws KvExhausted") {
  KvBlockPool pool(KvPoolLimits{4, 3, true});
  CHECK(pool.available() == 3);
  std::set<int32_t> got;
  for (int i = 0; i < 3; ++i) got.insert(pool.allocate());
  CHECK(got == std::set<int32_t>{0, 1, 2});
  CHECK(pool.available() == 0);
  CHECK_THROWS_AS(pool.allocate(), KvExhausted);
  pool.incref(1);
  pool.release(1);
  CHECK(pool.available() == 0);  // still referenced once
  pool.release(1);
  CHECK(pool.available() == 1);
  CHECK(pool.allocate() == 1);
  pool.release(0);
  CHECK_THROWS_WITH(pool.release(0), Contains("unreferenced"));
  CHECK_THROWS_WITH(KvBlockPool(KvPoolLimits{0, 3, true}), Contains("block_size"));
  CHECK_THROWS_WITH(KvBlockPool(KvPoolLimits{4, 0, true}), Contains("num_blocks"));
}

TEST_CASE("kv pool: a published block is found by its tokens after the same parent, and only then") {
  KvBlockPool pool(KvPoolLimits{4, 8, true});
  const std::vector<TokenId> a = {1, 2, 3, 4}, b = {5, 6, 7, 8};
  const int32_t x = pool.allocate(), y = pool.allocate();
  const KvBlockRef rx = pool.publish(x, KvBlockPool::root(), a.data());
  REQUIRE(rx.block == x);
  const KvBlockRef ry = pool.publish(y, rx, b.data());
  REQUIRE(ry.block == y);
  CHECK(pool.match(KvBlockPool::root(), b.data()).block == -1);  // b is cached only after a
  const KvBlockRef m1 = pool.match(KvBlockPool::root(), a.data());
  CHECK(m1.block == x);
  CHECK(pool.refcount(x) == 2);
  const KvBlockRef m2 = pool.match(m1, b.data());
  CHECK(m2.block == y);
  const std::vector<TokenId> b2 = {5, 6, 7, 9};
  CHECK(pool.match(m1, b2.data()).block == -1);
  CHECK(pool.key(rx.key, b.data()) != pool.key(rx.key, b2.data()));
  CHECK(pool.key(KvBlockPool::root().key, b.data()) != pool.key(rx.key, b.data()));
}

TEST_CASE("kv pool: when every key collides, a lookup still returns only blocks with the same tokens and parent") {
  KvBlockPool pool(KvPoolLimits{4, 8, true, 0});  // hash_mask 0: every key is 0
  const std::vector<TokenId> a = {1, 2, 3, 4}, b = {5, 6, 7, 8};
  const int32_t x = pool.allocate();
  REQUIRE(pool.publish(x, KvBlockPool::root(), a.data()).block == x);
  CHECK(pool.key(0, a.data()) == pool.key(0, b.data()));
  CHECK(pool.match(KvBlockPool::root(), b.data()).block == -1);
  // Same tokens after another parent: not the same KV either.
  KvBlockRef other_parent{x, 99, 0};
  CHECK(pool.match(other_parent, a.data()).block == -1);
  // A second block whose key is taken by other contents stays uncached.
  const int32_t y = pool.allocate();
  CHECK(pool.publish(y, KvBlockPool::root(), b.data()).block == -1);
  CHECK_FALSE(pool.is_cached(y));
  CHECK(pool.match(KvBlockPool::root(), a.data()).block == x);
}

TEST_CASE("kv pool: contents another block already caches stay the publisher's own block, uncached") {
  KvBlockPool pool(KvPoolLimits{4, 4, true});
  const std::vector<TokenId> a = {1, 2, 3, 4};
  const int32_t x = pool.allocate(), y = pool.allocate();
  REQUIRE(pool.publish(x, KvBlockPool::root(), a.data()).block == x);
  CHECK(pool.publish(y, KvBlockPool::root(), a.data()).block == -1);
  CHECK(pool.refcount(x) == 1);
  CHECK(pool.refcount(y) == 1);
  CHECK_FALSE(pool.is_cached(y));
  CHECK(pool.available() == 2);
  pool.release(y);  // back to the free list, not the LRU
  CHECK(pool.stats().cached == 1);
  CHECK(pool.match(KvBlockPool::root(), a.data()).block == x);
}

TEST_CASE("kv pool: unreferenced cached blocks are evicted least recently released first, never before free ones") {
  KvBlockPool pool(KvPoolLimits{1, 4, true});
  std::vector<int32_t> b;
  std::vector<KvBlockRef> ref;
  const TokenId toks[4] = {10, 11, 12, 13};
  KvBlockRef parent = KvBlockPool::root();
  for (int i = 0; i < 3; ++i) {
    b.push_back(pool.allocate());
    parent = pool.publish(b.back(), parent, &toks[i]);
    REQUIRE(parent.block == b.back());
  }
  // Released in the order 1, 0, 2: eviction takes them in that order, after the never-used block.
  pool.release(b[1]);
  pool.release(b[0]);
  pool.release(b[2]);
  CHECK(pool.available() == 4);
  CHECK(pool.stats().cached == 3);
  const int32_t fresh = pool.allocate();
  CHECK(std::find(b.begin(), b.end(), fresh) == b.end());
  CHECK(pool.stats().evictions == 0);
  CHECK(pool.allocate() == b[1]);
  CHECK(pool.allocate() == b[0]);
  CHECK(pool.stats().evictions == 2);
  CHECK(pool.match(KvBlockPool::root(), &toks[0]).block == -1);  // evicted
  // b[2] is still cached, but its parent's contents are gone, so it can never be reached again.
  CHECK(pool.is_cached(b[2]));
  // A hit takes a cached block off the eviction list.
  KvBlockPool p2(KvPoolLimits{1, 2, true});
  const int32_t c = p2.allocate();
  const KvBlockRef rc = p2.publish(c, KvBlockPool::root(), &toks[0]);
  p2.release(c);
  REQUIRE(p2.match(KvBlockPool::root(), &toks[0]).block == rc.block);
  p2.allocate();
  CHECK_THROWS_AS(p2.allocate(), KvExhausted);
  CHECK(p2.refcount(c) == 1);
}

TEST_CASE("paged book: tables grow with the window, commit and close give blocks back, free == total at the end") {
  SlotBook b = paged_book(2, 8);
  REQUIRE(b.paged());
  CHECK(b.block_size() == 4);
  CHECK(b.total_blocks() == 8);
  const SlotId s = open_one(b);
  const auto t = seq(10, 1);
  b.accept(rows_of(s, t, 0, 6));
  CHECK(b.block_table(s).size() == 2);
  CHECK(b.free_blocks() == 6);
  b.commit(s, 3);  // back to 3 positions: one block
  CHECK(b.block_table(s).size() == 1);
  CHECK(b.free_blocks() == 7);
  b.accept(rows_of(s, t, 3, 7));
  CHECK(b.block_table(s).size() == 3);
  // physical_cell maps through the table.
  for (int p = 0; p < 10; ++p) CHECK(b.physical_cell(s, p) == int64_t(b.block_table(s)[size_t(p / 4)]) * 4 + p % 4);
  b.reset(s);
  CHECK(b.block_table(s).empty());
  CHECK(b.committed(s) == 0);
  b.close(s);
  CHECK(b.free_blocks() == b.total_blocks());
  // Default size: every slot can hold its whole context.
  SlotBook d(SlotLimits{3, 10, 50, 16}, KvPoolLimits{4, 0, true});
  CHECK(d.total_blocks() == 9);
  // Not paged: no blocks at all and the old behaviour.
  SlotBook old(SlotLimits{1, 8, 50, 8});
  CHECK_FALSE(old.paged());
  CHECK(old.total_blocks() == 0);
  const SlotId o = open_one(old);
  old.accept(rows_of(o, t, 0, 8));
  CHECK(old.committed(o) == 8);
  old.reset(o);
  CHECK(old.attach_prefix(o, t) == 0);
  CHECK(old.committed(o) == 0);
}

TEST_CASE("paged book: a window the pool cannot supply throws KvExhausted and changes nothing") {
  SlotBook b = paged_book(2, 3, false);
  const SlotId s = open_one(b), u = open_one(b);
  const auto t = seq(12, 2);
  b.accept(rows_of(s, t, 0, 8));  // two blocks
  const std::vector<int32_t> table = b.block_table(s);
  Window w = rows_of(u, t, 0, 5);  // needs two more, one is free
  Row extra;
  extra.slot = s;
  extra.token = t[8];
  extra.pos = 8;
  w.rows.push_back(extra);
  CHECK(b.blocks_needed(w) == 3);
  CHECK_THROWS_AS(b.accept(w), KvExhausted);
  CHECK_THROWS_WITH(b.accept(w), Contains("3 more blocks") && Contains("only 1 of 3"));
  CHECK(b.committed(s) == 8);
  CHECK(b.committed(u) == 0);
  CHECK(b.block_table(s) == table);
  CHECK(b.block_table(u).empty());
  CHECK(b.free_blocks() == 1);
  b.commit(s, 8);  // the last accepted window is still the 8-row one
  CHECK(b.committed(s) == 8);
}

TEST_CASE("paged book: attach_prefix reuses the full blocks another slot left, leaving one token to run") {
  SlotBook b = paged_book(2, 16);
  const auto t = seq(13, 3);
  const SlotId s = open_one(b);
  feed(b, s, t);  // 13 positions: 3 full blocks + 1
  b.close(s);     // its full blocks are published and stay cached
  CHECK(b.pool_stats().cached == 3);
  CHECK(b.free_blocks() == 16);

  const SlotId u = open_one(b);
  CHECK(b.attach_prefix(u, t) == 12);
  CHECK(b.committed(u) == 12);
  CHECK(b.block_table(u).size() == 3);
  CHECK(b.pool_stats().lookups == 3);
  CHECK(b.pool_stats().hits == 3);
  const TokenHistory h = b.history(u, 11);
  CHECK(std::equal(h.tokens, h.tokens + h.len, t.begin()));
  CHECK_THROWS_WITH(b.attach_prefix(u, t), Contains("already has 12 positions"));
  b.accept(rows_of(u, t, 12, 1));
  CHECK(b.committed(u) == 13);

  // A prompt of exactly 12 tokens may reuse only 2 blocks: its last token must run.
  const SlotId v = open_one(b);
  CHECK(b.attach_prefix(v, std::vector<TokenId>(t.begin(), t.begin() + 12)) == 8);
  // A prompt that differs inside block 2 reuses blocks 0 and 1.
  auto diverged = t;
  diverged[9] = TokenId((diverged[9] + 1) % 50);
  b.close(v);
  const SlotId w = open_one(b);
  CHECK(b.attach_prefix(w, diverged) == 8);
  // Shared blocks are counted once: u holds 4 blocks (3 shared), w holds 2 of the same.
  CHECK(b.pool().refcount(b.block_table(u)[0]) == 2);
  b.close(u);
  b.close(w);
  CHECK(b.free_blocks() == b.total_blocks());
}

TEST_CASE("paged book: with prefix caching off nothing is reused; drafts trimmed by commit never get cached") {
  SlotBook off = paged_book(2, 8, false);
  const auto t = seq(9, 4);
  SlotId s = open_one(off);
  feed(off, s, t);
  off.close(s);
  s = open_one(off);
  CHECK(off.attach_prefix(s, t) == 0);
  CHECK(off.pool_stats().cached == 0);

  SlotBook b = paged_book(1, 8);
  s = open_one(b);
  b.accept(rows_of(s, t, 0, 3));
  auto drafted = t;
  drafted[3] = TokenId((t[3] + 5) % 50);
  b.accept(rows_of(s, drafted, 3, 3));  // positions 3..5, the block 0..3 holds a draft at 3
  b.commit(s, 0);                       // the draft is rejected
  b.accept(rows_of(s, t, 3, 6));        // the real tokens: publishes nothing yet (block 0 was open)
  b.close(s);
  s = open_one(b);
  CHECK(b.attach_prefix(s, drafted) == 0);
  CHECK(b.attach_prefix(s, t) == 8);
}

TEST_CASE("paged book: a slot whose chain collides keeps working, uncached") {
  SlotBook b = paged_book(2, 16, true, 0);
  const auto t1 = seq(9, 5), t2 = seq(9, 6);
  const SlotId s = open_one(b), u = open_one(b);
  feed(b, s, t1);
  feed(b, u, t2);
  b.close(s);  // publishes t1's 2 blocks under key 0 (the second cannot take key 0: stays private)
  b.close(u);  // collides: nothing of t2 is cached
  const SlotId v = open_one(b);
  CHECK(b.attach_prefix(v, t2) == 0);
  b.close(v);
  const SlotId w = open_one(b);
  CHECK(b.attach_prefix(w, t1) == 4);
  b.close(w);
  CHECK(b.free_blocks() == 16);
}

TEST_CASE("paged book: truncate keeps a prefix across windows and gives the blocks past it back") {
  SlotBook b = paged_book(1, 8, /*caching=*/false);
  const SlotId s = open_one(b);
  const auto t = seq(14, 5);
  b.accept(rows_of(s, t, 0, 6));
  b.accept(rows_of(s, t, 6, 4));
  b.accept(rows_of(s, t, 10, 4));  // 14 positions over three windows: 4 blocks
  CHECK(b.block_table(s).size() == 4);
  CHECK(b.truncate(s, 5) == 5);   // inside block 1: blocks 0 and 1 stay
  CHECK(b.committed(s) == 5);
  CHECK(b.block_table(s).size() == 2);
  CHECK(b.free_blocks() == 6);
  const TokenHistory h = b.history(s, 4);
  CHECK(std::equal(h.tokens, h.tokens + h.len, t.begin()));
  // The next window continues at the cut, and no window is left for commit to trim.
  CHECK_THROWS_WITH(b.commit(s, 0), Contains("no rows in the last window"));
  CHECK_THROWS_WITH(b.accept(rows_of(s, t, 6, 1)), Contains("does not continue its history"));
  b.accept(rows_of(s, t, 5, 3));
  CHECK(b.committed(s) == 8);
  CHECK_THROWS_WITH(b.truncate(s, 9), Contains("n_keep 9 for slot 0 is outside [0, 8]"));
  CHECK(b.truncate(s, 0) == 0);
  CHECK(b.block_table(s).empty());
  CHECK(b.free_blocks() == b.total_blocks());
}

TEST_CASE("paged book: a truncate inside blocks the prefix cache shares starts the slot over") {
  SlotBook b = paged_book(1, 8);
  const SlotId s = open_one(b);
  const auto t = seq(12, 6);
  b.accept(rows_of(s, t, 0, 9));
  b.accept(rows_of(s, t, 9, 3));  // blocks 0 and 1 (positions 0-7) are final now and published
  CHECK(b.truncate(s, 9) == 9);   // past the published blocks: kept
  CHECK(b.truncate(s, 6) == 0);   // inside published block 1: reset
  CHECK(b.committed(s) == 0);
  CHECK(b.block_table(s).empty());
  b.accept(rows_of(s, t, 0, 2));
  CHECK(b.committed(s) == 2);
}

// A slot reads the same K/V whatever its windows: blocks another sequence cached with the same tokens (K/V
// computed by other windows, other bits on CUDA) never replace the slot's own blocks mid-sequence, whether
// the slot's window crosses the block boundary (published later) or stops at it (published at once).
TEST_CASE("paged book: a slot keeps the blocks it wrote when another sequence cached the same tokens") {
  SlotBook b = paged_book(3, 16);
  const auto t = seq(14, 6);
  const SlotId donor = open_one(b);
  feed(b, donor, t);
  b.close(donor);  // blocks 0-2 cached
  REQUIRE(b.pool_stats().cached == 3);
  for (int step : {1, 3}) {
    INFO("windows of " << step << " rows");
    const SlotId s = open_one(b);
    std::vector<int32_t> own;
    for (int p = 0; p < int(t.size()); p += step) {
      b.accept(rows_of(s, t, p, std::min(step, int(t.size()) - p)));
      const std::vector<int32_t>& table = b.block_table(s);
      // Every block the slot has is the one it was given when its first row was accepted.
      for (size_t i = 0; i < own.size(); ++i) CHECK(table[i] == own[i]);
      for (size_t i = own.size(); i < table.size(); ++i) {
        CHECK_FALSE(b.pool().is_cached(table[i]));
        own.push_back(table[i]);
      }
    }
    CHECK(b.pool_stats().cached == 3);  // nothing published twice
    b.close(s);
  }
  CHECK(b.free_blocks() == b.total_blocks());
  // The donor's chain is still what a new prompt attaches.
  const SlotId u = open_one(b);
  CHECK(b.attach_prefix(u, t) == 12);
}
