// The CUDA backend's contract outside the arithmetic: the paged KV pool's size from the KV budget (refused with
// a clear error when it holds no block), bad windows refused before any state changes, the slot lifecycle,
// one graph per window shape, replayed; and paging itself: a fragmented block table, prefix reuse, an
// exhausted pool, one slot filling the pool.
#include <catch2/catch.hpp>

#include <limits>

#include "cuda/cuda_backend.hpp"
#include "tests/cuda/cuda_test_util.hpp"

using namespace strata;
using namespace strata::cuda_test;
using Catch::Matchers::Contains;

namespace {

// Keys and values of `elem` bytes each (4: fp32, 2: bf16), every layer, every position.
double slot_gb(const ModelConfig& c, int context, size_t elem) {
  return double(c.num_layers) * context * c.num_kv_heads * c.head_dim * double(elem) * 2.0 / 1e9;
}

size_t block_bytes(const ModelConfig& c, int block_size, size_t elem) {
  return size_t(c.num_layers) * size_t(block_size) * size_t(c.num_kv_heads) * size_t(c.head_dim) * elem * 2;
}

// Exact-path windows (gemm_min_rows 17, as the server runs with speculation on): every window below has at
// most 16 rows.
CudaBackendOptions paged_options(int slots, int context, int blocks, bool prefix_caching) {
  CudaBackendOptions o;
  o.max_slots = slots;
  o.max_context = context;
  o.kv_blocks = blocks;
  o.kv_block_size = 16;
  o.prefix_caching = prefix_caching;
  o.gemm_min_rows = 17;
  return o;
}

// `tokens` [0, n) into a fresh slot in windows of at most 16 rows; every row's logits and greedy pick.
std::vector<RowResult> run_prompt(CudaBackend& be, SlotId s, const std::vector<TokenId>& tokens, int from, int n) {
  std::vector<RowResult> out;
  for (int first = from; first < n; first += 16) {
    const auto got = be.run_window(chunk(s, tokens, first, std::min(16, n - first), true));
    out.insert(out.end(), got.begin(), got.end());
  }
  return out;
}

bool consecutive(const std::vector<int32_t>& t) {
  for (size_t i = 1; i < t.size(); ++i)
    if (t[i] != t[i - 1] + 1) return false;
  return true;
}

}  // namespace

TEST_CASE("the KV budget decides how many blocks the pool has, and one that holds none is refused") {
  REQUIRE(CudaBackend::device_count() > 0);
  auto model = load_model(models_dir() + "/llama");
  const ModelConfig& c = model->config;
  // bf16 keeps each value in 2 bytes, fp32 in 4.
  const DType kv = GENERATE(DType::BF16, DType::F32);
  const size_t e = kv == DType::BF16 ? 2 : 4;
  INFO("kv_cache_dtype " << dtype_name(kv));
  CudaBackendOptions o;
  o.kv_cache_dtype = kv;
  o.max_slots = 8;
  o.max_context = 64;  // 4 blocks of 16 per slot
  o.kv_cache_gb = 14.5 * double(block_bytes(c, 16, e)) / 1e9;
  CudaBackend paged(*model, o);
  // Every slot may open; the pool holds 14 whole blocks (3.5 contexts).
  CHECK(paged.info().max_slots == 8);
  CHECK(paged.info().kv_block_size == 16);
  CHECK(paged.info().kv_blocks == 14);
  CHECK(paged.info().kv_free_blocks == 14);
  // The pool's blocks plus the one scratch block that padding rows of bucketed windows write.
  CHECK(paged.memory().kv_bytes == 15 * block_bytes(c, 16, e));
  CHECK(paged.memory().weights_bytes > 0);
  CHECK(paged.memory().free_bytes > 0);

  o.kv_cache_gb = 0.5 * double(block_bytes(c, 16, e)) / 1e9;
  CHECK_THROWS_WITH(CudaBackend(*model, o), Contains("holds no block of 16 positions"));

  // A budget beyond every slot's whole context is capped there.
  o.kv_cache_gb = 100 * slot_gb(c, 64, e);
  o.max_slots = 2;
  CHECK(CudaBackend(*model, o).info().kv_blocks == 8);

  o.kv_cache_gb = 0.0;
  CudaBackend two(*model, o);
  CHECK(two.info().max_slots == 2);
  CHECK(two.info().kv_blocks == 8);
  CHECK(two.info().name == "cuda");
  CHECK(two.info().max_context == 64);
  CHECK(two.info().vocab_size == model->config.vocab_size);
  // Windows below gemm_min_rows are exact (the skinny kernels); every window when none reaches cuBLAS.
  CHECK(two.info().exact_rows == o.gemm_min_rows - 1);
  o.gemm_min_rows = std::numeric_limits<int>::max();
  CHECK(CudaBackend(*model, o).info().exact_rows == std::numeric_limits<int>::max());
  o.gemm_min_rows = CudaBackendOptions{}.gemm_min_rows;

  // An explicit block count wins over the budget, and the block size is the option's.
  o.kv_blocks = 5;
  o.kv_block_size = 32;
  o.kv_cache_gb = 100 * slot_gb(c, 64, e);
  CudaBackend explicit_pool(*model, o);
  CHECK(explicit_pool.info().kv_blocks == 5);
  CHECK(explicit_pool.info().kv_block_size == 32);
  CHECK(explicit_pool.memory().kv_bytes == 6 * block_bytes(c, 32, e));
}

TEST_CASE("bad options are refused naming the option") {
  REQUIRE(CudaBackend::device_count() > 0);
  auto model = load_model(models_dir() + "/llama");
  CudaBackendOptions o;
  o.max_slots = 0;
  CHECK_THROWS_WITH(CudaBackend(*model, o), Contains("max_slots must be >= 1"));
  o = CudaBackendOptions{};
  o.gpu_memory_fraction = 1.5;
  CHECK_THROWS_WITH(CudaBackend(*model, o), Contains("gpu_memory_fraction must be in [0, 1]"));
  o = CudaBackendOptions{};
  o.device = 999;
  CHECK_THROWS_WITH(CudaBackend(*model, o), Contains("device 999 is outside"));
  o = CudaBackendOptions{};
  o.kv_block_size = 0;
  CHECK_THROWS_WITH(CudaBackend(*model, o), Contains("kv_block_size must be within [1, 4096], found 0"));
  o = CudaBackendOptions{};
  o.kv_blocks = -1;
  CHECK_THROWS_WITH(CudaBackend(*model, o), Contains("kv_blocks must not be negative, found -1"));
  o = CudaBackendOptions{};
  o.kv_cache_dtype = DType::F16;
  CHECK_THROWS_WITH(CudaBackend(*model, o), Contains("kv_cache_dtype must be f32 or bf16"));
  o = CudaBackendOptions{};
  o.split_gemm_max_rows = -1;
  CHECK_THROWS_WITH(CudaBackend(*model, o), Contains("split_gemm_max_rows must be >= 0"));
  o = CudaBackendOptions{};
  o.host_threads = -2;
  CHECK_THROWS_WITH(CudaBackend(*model, o), Contains("host_threads must be >= 0, found -2"));
}

TEST_CASE("bad windows on the GPU throw strata::Error naming the problem and change no state") {
  REQUIRE(CudaBackend::device_count() > 0);
  auto model = load_model(models_dir() + "/qwen2");
  CudaBackendOptions o;
  o.max_slots = 3;
  o.max_context = 8;
  o.max_window_rows = 8;
  CudaBackend be(*model, o);
  backend_test::check_bad_windows_change_nothing(be, model->config.vocab_size);
}

TEST_CASE("slots open up to capacity; close frees one; reset forgets the history") {
  REQUIRE(CudaBackend::device_count() > 0);
  auto model = load_model(models_dir() + "/llama");
  CudaBackendOptions o;
  o.max_slots = 2;
  o.max_context = 16;
  CudaBackend be(*model, o);
  const SlotId a = be.open_slot(), b = be.open_slot();
  CHECK(a == 0);
  CHECK(b == 1);
  CHECK(be.open_slot() == kNoSlot);
  be.close_slot(a);
  CHECK(be.open_slot() == a);
  CHECK_THROWS_WITH(be.close_slot(5), Contains("slot 5 is not open"));
  const auto p = prompt_tokens(5, model->config.vocab_size, 6);
  const auto first = be.run_window(chunk(b, p, 0, 5));
  be.reset_slot(b);
  const auto again = be.run_window(chunk(b, p, 0, 5));
  for (int i = 0; i < 5; ++i) CHECK(same_bits(first[size_t(i)].logits, again[size_t(i)].logits));
}

TEST_CASE("each window shape is captured once and then replayed") {
  REQUIRE(CudaBackend::device_count() > 0);
  auto model = load_model(models_dir() + "/llama");
  CudaBackendOptions o;
  o.max_slots = 1;
  o.max_context = 64;
  CudaBackend be(*model, o);
  const SlotId s = be.open_slot();
  be.set_sampling(s, SamplingParams{0.0f});
  CHECK(be.graphs_captured() == 0);
  TokenId t = be.run_window(Window{{row(s, 1, 0, false, true)}})[0].pick;
  CHECK(be.graphs_captured() == 1);
  for (int pos = 1; pos < 20; ++pos) t = be.run_window(Window{{row(s, t, pos, false, true)}})[0].pick;
  CHECK(be.graphs_captured() == 1);  // decode steps all replay the single-row graph
  be.run_window(chunk(s, prompt_tokens(24, model->config.vocab_size, 1), 20, 4));
  CHECK(be.graphs_captured() == 2);
}

TEST_CASE("the warm-up captures every decode shape and each mixed row bucket up front and changes no result") {
  REQUIRE(CudaBackend::device_count() > 0);
  auto model = load_model(models_dir() + "/llama");
  const int V = model->config.vocab_size, slots = 6;
  CudaBackendOptions o;
  o.max_slots = slots;
  o.max_context = 300;  // three splits: caps 1, 2 and 3
  o.gemm_min_rows = 1;  // the server's path without speculation
  CudaBackendOptions ow = o;
  ow.warm_up_decode = true;
  CudaBackend plain(*model, o), warm(*model, ow);
  CHECK(plain.graphs_captured() == 0);
  // Row buckets 1, 2, 4, 8 (6 slots) x split caps 1, 2, 3, and one window of each row bucket past
  // kDecodeRowsMax (192, 256, 384 and 512 rows for the default 512-row windows).
  REQUIRE(o.max_window_rows == 512);
  CHECK(warm.graphs_captured() == 12 + 4);
  std::vector<SlotId> ps, ws;
  std::vector<std::vector<TokenId>> prompts;
  for (int i = 0; i < slots; ++i) {
    ps.push_back(plain.open_slot());
    ws.push_back(warm.open_slot());
    plain.set_sampling(ps.back(), SamplingParams{0.0f});
    warm.set_sampling(ws.back(), SamplingParams{0.0f});
    prompts.push_back(prompt_tokens(140, V, 40 + i));
  }
  // Prompts up to position 129 (past the first split), one chunk at a time: prompt shapes, captured now.
  for (int i = 0; i < slots; ++i) {
    run_prompt(plain, ps[size_t(i)], prompts[size_t(i)], 0, 130);
    run_prompt(warm, ws[size_t(i)], prompts[size_t(i)], 0, 130);
  }
  const int after_prompts = warm.graphs_captured();
  // Decode windows of 1 .. 6 slots, each slot at its next position (130 .. 135: two splits): the warm-up's
  // shapes, and the same bits as the backend that captures them as they come.
  std::vector<int> next(size_t(slots), 130);
  for (int b = 1; b <= slots; ++b) {
    Window wp, ww;
    for (int i = 0; i < b; ++i) {
      const int pos = next[size_t(i)]++;
      wp.rows.push_back(row(ps[size_t(i)], prompts[size_t(i)][size_t(pos)], pos, true, true));
      ww.rows.push_back(row(ws[size_t(i)], prompts[size_t(i)][size_t(pos)], pos, true, true));
    }
    const auto a = plain.run_window(wp), c = warm.run_window(ww);
    INFO(b << " slots");
    for (int i = 0; i < b; ++i) {
      CHECK(same_bits(a[size_t(i)].logits, c[size_t(i)].logits));
      CHECK(a[size_t(i)].pick == c[size_t(i)].pick);
    }
    CHECK(warm.graphs_captured() == after_prompts);  // no decode window captured anything
  }
}

TEST_CASE("a slot on a fragmented block table gives the bits and picks of a slot on a fresh pool") {
  REQUIRE(CudaBackend::device_count() > 0);
  auto model = load_model(models_dir() + "/llama");
  const int V = model->config.vocab_size, n = 40, steps = 8;
  const auto p = prompt_tokens(n + steps, V, 21);

  CudaBackend fresh(*model, paged_options(1, 64, 0, false));
  const SlotId r = fresh.open_slot();
  fresh.set_sampling(r, SamplingParams{0.0f});
  std::vector<RowResult> want = run_prompt(fresh, r, p, 0, n);
  for (int i = n; i < n + steps; ++i) want.push_back(fresh.run_window(chunk(r, p, i, 1, true))[0]);
  REQUIRE(int(want.size()) == n + steps);

  // Three other slots take blocks in turn, then two of them close: the free list hands their blocks out
  // out of order and with gaps. Prefix caching off so reuse comes from the free list alone.
  CudaBackend be(*model, paged_options(4, 64, 16, false));
  const SlotId a = be.open_slot(), b = be.open_slot(), c = be.open_slot();
  for (int first = 0; first < 48; first += 16)
    for (SlotId s : {a, b, c}) be.run_window(chunk(s, prompt_tokens(48, V, 30 + s), first, 16));
  be.close_slot(a);
  be.close_slot(c);
  const SlotId t = be.open_slot();
  be.set_sampling(t, SamplingParams{0.0f});
  be.set_sampling(b, SamplingParams{0.0f});
  std::vector<RowResult> got = run_prompt(be, t, p, 0, n);
  const std::vector<int32_t> table = be.block_table(t);
  INFO("fragmented table: " << ::Catch::Detail::stringify(table));
  REQUIRE(table.size() == 3);
  CHECK_FALSE(consecutive(table));
  // Decode steps beside slot b's rows: two slots' tables uploaded for one window.
  const auto bp = prompt_tokens(64, V, 30 + b);
  for (int i = n; i < n + steps; ++i) {
    const auto w = be.run_window(Window{{row(b, bp[size_t(48 + i - n)], 48 + i - n, true, true), row(t, p[size_t(i)], i, true, true)}});
    got.push_back(w[1]);
  }
  for (int i = 0; i < n + steps; ++i) {
    INFO("position " << i);
    CHECK(same_bits(got[size_t(i)].logits, want[size_t(i)].logits));
    CHECK(got[size_t(i)].pick == want[size_t(i)].pick);
  }
}

TEST_CASE("a second slot with a cached 40-token prefix attaches 32 positions and matches a cold run") {
  REQUIRE(CudaBackend::device_count() > 0);
  auto model = load_model(models_dir() + "/qwen2");
  const int V = model->config.vocab_size;
  const auto shared = prompt_tokens(40, V, 5);
  std::vector<TokenId> second = shared;
  for (TokenId x : prompt_tokens(8, V, 77)) second.push_back(x);  // 48 tokens: the same 40, then its own

  CudaBackend cold(*model, paged_options(1, 64, 0, false));
  const SlotId r = cold.open_slot();
  const std::vector<RowResult> want = run_prompt(cold, r, second, 0, 48);

  CudaBackend be(*model, paged_options(2, 64, 0, true));
  const SlotId a = be.open_slot();
  run_prompt(be, a, shared, 0, 40);
  // A later window makes positions [0, 40) final: its two full blocks enter the prefix cache.
  be.run_window(chunk(a, prompt_tokens(41, V, 6), 40, 1));
  const SlotId b = be.open_slot();
  CHECK(be.attach_prefix(b, second) == 32);
  CHECK(be.info().kv_prefix_hits == 2);
  const std::vector<int32_t> ta = be.block_table(a), tb = be.block_table(b);
  REQUIRE(tb.size() == 2);
  CHECK(tb[0] == ta[0]);
  CHECK(tb[1] == ta[1]);
  // Positions 32 .. 47 in one 16-row window read the shared blocks for 0 .. 31.
  const auto got = be.run_window(chunk(b, second, 32, 16, true));
  for (int i = 0; i < 16; ++i) {
    INFO("position " << 32 + i);
    CHECK(same_bits(got[size_t(i)].logits, want[size_t(32 + i)].logits));
    CHECK(got[size_t(i)].pick == want[size_t(32 + i)].pick);
  }
  // The shared blocks were never written: slot a still continues with its own bits.
  CudaBackend cold_a(*model, paged_options(1, 64, 0, false));
  const SlotId ra = cold_a.open_slot();
  std::vector<TokenId> a_tokens = prompt_tokens(42, V, 6);
  std::copy(shared.begin(), shared.end(), a_tokens.begin());
  const auto want_a = run_prompt(cold_a, ra, a_tokens, 0, 42);
  const auto got_a = be.run_window(chunk(a, a_tokens, 41, 1));
  CHECK(same_bits(got_a[0].logits, want_a[41].logits));
}

TEST_CASE("a window the pool has no blocks for throws KvExhausted and changes nothing") {
  REQUIRE(CudaBackend::device_count() > 0);
  auto model = load_model(models_dir() + "/llama");
  const int V = model->config.vocab_size;
  const auto p = prompt_tokens(33, V, 8);
  CudaBackend ref(*model, paged_options(1, 64, 0, false));
  const SlotId r = ref.open_slot();
  const auto want = run_prompt(ref, r, p, 0, 33);

  CudaBackend be(*model, paged_options(2, 64, 3, true));
  const SlotId a = be.open_slot(), b = be.open_slot();
  const auto q = prompt_tokens(10, V, 9);
  run_prompt(be, a, p, 0, 32);                // two blocks
  be.run_window(chunk(b, q, 0, 8));           // the third, half full
  CHECK(be.info().kv_free_blocks == 0);
  const std::vector<int32_t> table = be.block_table(a);
  CHECK_THROWS_AS(be.run_window(chunk(a, p, 32, 1)), KvExhausted);
  // A window of two slots where only one needs a block is refused whole: slot b's row is not taken either.
  CHECK_THROWS_AS(be.run_window(Window{{row(b, q[8], 8), row(a, p[32], 32)}}), KvExhausted);
  CHECK(be.info().kv_free_blocks == 0);
  CHECK(be.block_table(a) == table);
  CHECK_NOTHROW(be.run_window(chunk(b, q, 8, 1)));  // b continues at position 8: its history did not move
  be.close_slot(b);
  CHECK(be.info().kv_free_blocks == 1);
  // Slot a continues at position 32 (its history was not advanced) with the reference's bits.
  const auto got = be.run_window(chunk(a, p, 32, 1));
  CHECK(same_bits(got[0].logits, want[32].logits));
}

TEST_CASE("one slot may fill the whole pool, and then nobody else gets a block") {
  REQUIRE(CudaBackend::device_count() > 0);
  auto model = load_model(models_dir() + "/qwen3");
  const int V = model->config.vocab_size, n = 120;
  const auto p = prompt_tokens(n, V, 12);
  CudaBackend ref(*model, paged_options(1, 128, 0, false));
  const SlotId r = ref.open_slot();
  ref.set_sampling(r, SamplingParams{0.0f});
  const auto want = run_prompt(ref, r, p, 0, n);

  // Eight blocks: the one context of 128 positions, shared by four slots.
  CudaBackend be(*model, paged_options(4, 128, 8, true));
  const SlotId s = be.open_slot(), other = be.open_slot();
  be.set_sampling(s, SamplingParams{0.0f});
  const auto got = run_prompt(be, s, p, 0, n);
  CHECK(be.info().kv_free_blocks == 0);
  CHECK(be.block_table(s).size() == 8);
  for (int i = 0; i < n; ++i) {
    INFO("position " << i);
    CHECK(same_bits(got[size_t(i)].logits, want[size_t(i)].logits));
    CHECK(got[size_t(i)].pick == want[size_t(i)].pick);
  }
  CHECK_THROWS_AS(be.run_window(Window{{row(other, 1, 0)}}), KvExhausted);
  // Positions 120 .. 127 still fit in the slot's last block.
  CHECK_NOTHROW(be.run_window(Window{{row(s, 1, 120)}}));
}
