// The CPU backend's paged KV: wherever a slot's blocks land in the pool and however its prompt is chunked,
// its logits are bit-identical to a slot whose whole context is one contiguous block (the layout the backend
// had before paging); prefix-cache hits give the same logits as a cold run; one slot may use the whole pool.
#include <catch2/catch.hpp>
#include <cstring>

#include "engine/cpu/cpu_backend.hpp"
#include "tests/common/backend_contract.hpp"

using namespace strata;
using Catch::Matchers::Contains;
using strata::backend_test::chunk;
using strata::backend_test::same_bits;

namespace {

const std::string kModels = std::string(STRATA_SOURCE_DIR) + "/tests/data/models";

std::vector<TokenId> tokens(int n, int vocab, int salt) {
  std::vector<TokenId> t;
  for (int i = 0; i < n; ++i) t.push_back(TokenId((i * 97 + salt * 53 + 11) % vocab));
  return t;
}

CpuBackendOptions paged(int slots, int ctx, int blocks, int block_size, bool caching = true) {
  CpuBackendOptions o;
  o.max_slots = slots;
  o.max_context = ctx;
  o.threads = 2;
  o.kv_blocks = blocks;
  o.kv_block_size = block_size;
  o.prefix_caching = caching;
  return o;
}

// Runs t[first, end) through slot s in chunks of `step` rows and returns every row's logits.
std::vector<std::vector<float>> run_chunked(CpuBackend& be, SlotId s, const std::vector<TokenId>& t, int first,
                                            int step) {
  std::vector<std::vector<float>> out;
  for (int i = first; i < int(t.size()); i += step) {
    const auto r = be.run_window(chunk(s, t, i, std::min(step, int(t.size()) - i)));
    for (const auto& x : r) out.push_back(x.logits);
  }
  return out;
}

}  // namespace

TEST_CASE("paged KV: logits are bit-identical to one contiguous block per slot, for any block size, chunking "
          "and fragmentation of the pool") {
  for (const char* name : {"llama", "qwen3"}) {
    DYNAMIC_SECTION(name) {
      auto model = load_model(kModels + "/" + name);
      const int V = model->config.vocab_size, n = 40;
      const auto p = tokens(n, V, 1);
      CpuBackend contiguous(*model, paged(1, 64, 1, 64));  // the pre-paging layout: [position][kv_dim]
      const auto want = run_chunked(contiguous, contiguous.open_slot(), p, 0, n);
      REQUIRE(want.size() == size_t(n));
      for (int bs : {1, 3, 16}) {
        for (int step : {1, 7, n}) {
          DYNAMIC_SECTION("block size " << bs << ", chunks of " << step) {
            // Room for y's blocks and the subject's only: the subject gets what x left, scattered among y's
            // blocks and handed out tail first (x's cached blocks are evicted in reverse order).
            const int x_blocks = (24 + bs - 1) / bs, s_blocks = (n + bs - 1) / bs;
            CpuBackend be(*model, paged(3, 64, x_blocks + s_blocks, bs));
            const SlotId x = be.open_slot(), y = be.open_slot();
            const auto qx = tokens(24, V, 2), qy = tokens(24, V, 7);
            for (int i = 0; i < 24; i += 2) {
              be.run_window(chunk(x, qx, i, 2));
              be.run_window(chunk(y, qy, i, 2));
            }
            be.close_slot(x);
            const SlotId s = be.open_slot();
            const auto got = run_chunked(be, s, p, 0, step);
            CHECK(be.info().kv_evictions > 0);  // some of the subject's blocks were x's
            REQUIRE(got.size() == want.size());
            for (int i = 0; i < n; ++i) {
              INFO("position " << i);
              CHECK(same_bits(got[size_t(i)], want[size_t(i)]));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("paged KV: a second slot with the same prefix reuses its blocks and gets a cold run's logits") {
  auto model = load_model(kModels + "/llama");
  const int V = model->config.vocab_size;
  const auto first = tokens(30, V, 3);
  auto second = first;
  for (size_t i = 22; i < second.size(); ++i) second[i] = TokenId((second[i] + 5) % V);

  CpuBackend cold(*model, paged(1, 64, 0, 4, false));
  const auto want = run_chunked(cold, cold.open_slot(), second, 0, 30);

  CpuBackend be(*model, paged(2, 64, 0, 4));
  const SlotId a = be.open_slot();
  CHECK(be.attach_prefix(a, first) == 0);  // nothing cached yet
  run_chunked(be, a, first, 0, 9);
  be.close_slot(a);
  const BackendInfo before = be.info();
  const SlotId b = be.open_slot();
  // Blocks 0..4 (positions 0..19) equal the first prompt's; block 5 (20..23) differs at 22.
  REQUIRE(be.attach_prefix(b, second) == 20);
  const BackendInfo after = be.info();
  CHECK(after.kv_prefix_hits - before.kv_prefix_hits == 5);
  CHECK(after.kv_prefix_lookups - before.kv_prefix_lookups == 7);  // 29 / 4 full blocks may be reused
  const auto got = run_chunked(be, b, second, 20, 3);
  REQUIRE(got.size() == 10);
  for (int i = 20; i < 30; ++i) {
    INFO("position " << i);
    CHECK(same_bits(got[size_t(i - 20)], want[size_t(i)]));
  }
  // With prefix caching off the backend never reuses anything.
  CpuBackend off(*model, paged(2, 64, 0, 4, false));
  const SlotId c = off.open_slot();
  run_chunked(off, c, first, 0, 30);
  off.close_slot(c);
  CHECK(off.attach_prefix(off.open_slot(), second) == 0);
}

TEST_CASE("paged KV: one slot may use the whole pool; a window the pool cannot hold throws KvExhausted and "
          "changes nothing") {
  auto model = load_model(kModels + "/llama");
  const int V = model->config.vocab_size;
  // 4 slots share 16 blocks of 4 = 64 positions: the old 1/4 share would be 16 positions per slot.
  CpuBackend be(*model, paged(4, 64, 16, 4));
  const BackendInfo info = be.info();
  CHECK(info.kv_block_size == 4);
  CHECK(info.kv_blocks == 16);
  CHECK(info.kv_free_blocks == 16);
  const auto p = tokens(60, V, 4);
  const SlotId a = be.open_slot(), b = be.open_slot();
  CpuBackend ref(*model, paged(1, 64, 1, 64));
  const auto want = run_chunked(ref, ref.open_slot(), p, 0, 60);
  const auto got = run_chunked(be, a, p, 0, 16);
  for (int i = 0; i < 60; ++i) CHECK(same_bits(got[size_t(i)], want[size_t(i)]));
  CHECK(be.info().kv_free_blocks == 1);

  const auto q = tokens(8, V, 5);
  CHECK_THROWS_AS(be.run_window(chunk(b, q, 0, 8)), KvExhausted);
  CHECK_THROWS_WITH(be.run_window(chunk(b, q, 0, 8)), Contains("needs 2 more blocks"));
  CHECK(be.info().kv_free_blocks == 1);
  // Neither slot moved: b starts at 0 with 4 rows (one block), a continues at 60.
  CHECK_NOTHROW(be.run_window(chunk(b, q, 0, 4)));
  CHECK(be.info().kv_free_blocks == 0);
  CHECK_THROWS_AS(be.run_window(chunk(a, p, 59, 1)), Error);  // a's history is 60 long
  be.close_slot(b);
  const auto tail = tokens(64, V, 4);  // same first 60 tokens as p
  const auto last = be.run_window(chunk(a, tail, 60, 4));
  CHECK(last.size() == 4);
  be.close_slot(a);
  CHECK(be.info().kv_free_blocks == 16);
  CHECK_THROWS_WITH(CpuBackend(*model, paged(1, 16, 0, 0)), Contains("kv_block_size"));
  CHECK_THROWS_WITH(CpuBackend(*model, paged(1, 16, -1, 4)), Contains("kv_blocks"));
}
