// The CPU backend's window contract: batch invariance (bit-exact), verify windows and commit, bad windows
// rejected without side effects, slot lifecycle, and picks/logprobs that come from the shared sampler.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "engine/cpu/cpu_backend.hpp"
#include "engine/sampling/sampler.hpp"
#include "tests/common/backend_contract.hpp"

using namespace strata;
using Catch::Matchers::Contains;
using namespace strata::backend_test;

namespace {

const std::string kModels = std::string(STRATA_SOURCE_DIR) + "/tests/data/models";

}  // namespace

TEST_CASE("a row's logits are bit-identical alone, beside other slots' rows, and inside a prompt chunk") {
  for (const char* name : {"llama", "qwen2", "qwen3"}) {
    DYNAMIC_SECTION(name) {
      auto model = load_model(kModels + "/" + name);
      CpuBackend be(*model, CpuBackendOptions{4, 64, 2});
      const int V = model->config.vocab_size, n = 12;
      const auto p = prompt_tokens(n, V, 1), other = prompt_tokens(2 * n, V, 2);
      const SlotId a = be.open_slot(), b = be.open_slot(), c = be.open_slot(), d = be.open_slot();

      const auto whole = be.run_window(chunk(a, p, 0, n));
      for (int i = 0; i < n; ++i) {
        const auto alone = be.run_window(chunk(b, p, i, 1));
        // c's row shares its window with two rows of d, placed before and after it.
        Window mixed;
        mixed.rows.push_back(row(d, other[size_t(2 * i)], 2 * i));
        mixed.rows.push_back(row(c, p[size_t(i)], i));
        mixed.rows.push_back(row(d, other[size_t(2 * i + 1)], 2 * i + 1));
        const auto m = be.run_window(mixed);
        INFO("position " << i);
        CHECK(same_bits(whole[size_t(i)].logits, alone[0].logits));
        CHECK(same_bits(whole[size_t(i)].logits, m[1].logits));
      }
    }
  }
}

TEST_CASE("logits do not depend on the number of threads") {
  auto model = load_model(kModels + "/qwen3_sharded");
  const auto p = prompt_tokens(20, model->config.vocab_size, 3);
  CpuBackend one(*model, CpuBackendOptions{1, 32, 1}), three(*model, CpuBackendOptions{1, 32, 3});
  CHECK(one.threads() == 1);
  CHECK(three.threads() == 3);
  const auto r1 = one.run_window(chunk(one.open_slot(), p, 0, 20));
  const auto r3 = three.run_window(chunk(three.open_slot(), p, 0, 20));
  for (int i = 0; i < 20; ++i) CHECK(same_bits(r1[size_t(i)].logits, r3[size_t(i)].logits));
}

TEST_CASE("a batch window's picks and logprobs do not depend on the number of threads and are the sampler's") {
  auto model = load_model(kModels + "/qwen3");
  const int S = 64, V = model->config.vocab_size;
  CpuBackend one(*model, CpuBackendOptions{S, 32, 1}), three(*model, CpuBackendOptions{S, 32, 3});
  std::vector<std::vector<RowResult>> got;
  for (CpuBackend* be : {&one, &three}) {
    Window w;
    for (int s = 0; s < S; ++s) {
      const SlotId id = be->open_slot();
      REQUIRE(id != kNoSlot);
      SamplingParams sp;
      sp.temperature = s % 4 == 0 ? 0.0f : 0.9f;  // greedy and seeded rows side by side
      sp.top_p = s % 3 == 0 ? 0.9f : 1.0f;
      sp.seed = uint64_t(1000 + s);
      be->set_sampling(id, sp);
      // Enough host work (64 rows, draws and logprobs) that the rows are spread over the pool.
      Row r = row(id, TokenId((s * 37 + 5) % V), 0);
      r.want_pick = true;
      r.n_logprobs = s % 2 == 0 ? 3 : -1;
      w.rows.push_back(r);
    }
    got.push_back(be->run_window(w));
  }
  for (int s = 0; s < S; ++s) {
    INFO("slot " << s);
    const RowResult &a = got[0][size_t(s)], &b = got[1][size_t(s)];
    CHECK(a.pick == b.pick);
    CHECK(same_bits(a.logits, b.logits));
    CHECK(std::memcmp(&a.pick_logprob, &b.pick_logprob, 4) == 0);
    REQUIRE(a.top.size() == b.top.size());
    CHECK(a.top.size() == (s % 2 == 0 ? 3u : 0u));
    for (size_t k = 0; k < a.top.size(); ++k) CHECK(a.top[k].token == b.top[k].token);
    // The pick is the shared sampler's on the row's logits (history: the row's one token).
    SamplingParams sp;
    sp.temperature = s % 4 == 0 ? 0.0f : 0.9f;
    sp.top_p = s % 3 == 0 ? 0.9f : 1.0f;
    sp.seed = uint64_t(1000 + s);
    const TokenId tok = TokenId((s * 37 + 5) % V);
    CHECK(a.pick == pick_token(a.logits.data(), V, sp, TokenHistory{&tok, 1}, 0));
  }
}

TEST_CASE("a verify window trimmed by commit continues exactly like a slot that only ran the kept rows") {
  auto model = load_model(kModels + "/llama");
  CpuBackend be(*model, CpuBackendOptions{2, 64, 2});
  check_commit_trims_verify_window(be, model->config.vocab_size);
}

TEST_CASE("commit rejects n_keep outside the last window and slots that were not in it") {
  auto model = load_model(kModels + "/llama");
  CpuBackend be(*model, CpuBackendOptions{2, 16, 1});
  const SlotId a = be.open_slot(), b = be.open_slot();
  be.run_window(chunk(a, {1, 2, 3}, 0, 3));
  CHECK_THROWS_WITH(be.commit(a, 4), Contains("n_keep 4") && Contains("[0, 3]"));
  CHECK_THROWS_WITH(be.commit(a, -1), Contains("n_keep -1"));
  CHECK_THROWS_WITH(be.commit(b, 0), Contains("slot 1 had no rows in the last window"));
  CHECK_THROWS_WITH(be.commit(7, 0), Contains("slot 7 is not open"));
  be.commit(a, 3);  // keeping everything is the implicit commit
  CHECK_NOTHROW(be.run_window(chunk(a, {1, 2, 3, 4}, 3, 1)));
}

TEST_CASE("bad windows throw strata::Error naming the problem and change no state") {
  auto model = load_model(kModels + "/qwen2");
  CpuBackend be(*model, CpuBackendOptions{3, 8, 2});
  check_bad_windows_change_nothing(be, model->config.vocab_size);
}

TEST_CASE("slots open up to max_slots; close frees one; reset forgets the history") {
  auto model = load_model(kModels + "/llama");
  CpuBackend be(*model, CpuBackendOptions{2, 16, 1});
  const BackendInfo info = be.info();
  CHECK(info.name == "cpu");
  CHECK(info.max_slots == 2);
  CHECK(info.max_context == 16);
  CHECK(info.vocab_size == model->config.vocab_size);
  CHECK(info.max_window_rows == 16);
  const SlotId a = be.open_slot(), b = be.open_slot();
  CHECK(a == 0);
  CHECK(b == 1);
  CHECK(be.open_slot() == kNoSlot);
  be.close_slot(a);
  CHECK(be.open_slot() == a);
  CHECK_THROWS_WITH(be.close_slot(5), Contains("slot 5 is not open"));
  CHECK_THROWS_WITH(be.reset_slot(-1), Contains("slot -1 is not open"));

  const auto p = prompt_tokens(5, model->config.vocab_size, 6);
  const auto first = be.run_window(chunk(b, p, 0, 5));
  be.reset_slot(b);
  const auto again = be.run_window(chunk(b, p, 0, 5));
  for (int i = 0; i < 5; ++i) CHECK(same_bits(first[size_t(i)].logits, again[size_t(i)].logits));
}

TEST_CASE("picks apply the slot's sampling settings to the row's logits and the slot's own history") {
  auto model = load_model(kModels + "/qwen3");
  const int V = model->config.vocab_size;
  CpuBackend be(*model, CpuBackendOptions{3, 32, 2});
  SamplingParams sp;
  sp.temperature = 0.9f;
  sp.top_k = 20;
  sp.repetition_penalty = 1.3f;
  sp.presence_penalty = 0.2f;
  sp.seed = 5;
  const SlotId a = be.open_slot(), b = be.open_slot(), c = be.open_slot();
  be.set_sampling(a, sp);
  be.set_sampling(b, sp);
  const auto p = prompt_tokens(10, V, 7);
  Window w = chunk(a, p, 0, 10);
  for (auto& r : w.rows) r.want_pick = true;
  const auto res = be.run_window(w);
  for (int i = 0; i < 10; ++i) {
    const TokenId expect =
        pick_token(res[size_t(i)].logits.data(), V, sp, TokenHistory{p.data(), size_t(i) + 1}, i);
    CHECK(res[size_t(i)].pick == expect);
  }
  // The same request on another slot, one row at a time beside a third slot's rows: the same picks.
  const auto q = prompt_tokens(10, V, 8);
  for (int i = 0; i < 10; ++i) {
    Row r = row(b, p[size_t(i)], i, false);
    r.want_pick = true;
    Row o = row(c, q[size_t(i)], i, false);
    o.want_pick = true;
    const auto m = be.run_window(Window{{o, r}});
    CHECK(m[1].pick == res[size_t(i)].pick);
  }
}

TEST_CASE("logprobs are the log-softmax of the raw logits, whatever the sampling settings") {
  auto model = load_model(kModels + "/llama3rope");
  const int V = model->config.vocab_size;
  CpuBackend be(*model, CpuBackendOptions{1, 16, 1});
  const SlotId a = be.open_slot();
  SamplingParams sp;
  sp.temperature = 0.0f;
  sp.logit_bias = {{3, 50.0f}};  // forces the pick, must not change the logprobs
  be.set_sampling(a, sp);
  Window w = chunk(a, prompt_tokens(4, V, 9), 0, 4);
  w.rows.back().want_pick = true;
  w.rows.back().n_logprobs = 5;
  const auto res = be.run_window(w);
  const RowResult& r = res.back();
  CHECK(r.pick == 3);
  double m = -1e300, s = 0;
  for (float x : r.logits) m = std::max(m, double(x));
  for (float x : r.logits) s += std::exp(double(x) - m);
  CHECK(r.pick_logprob == Approx(double(r.logits[3]) - m - std::log(s)).margin(1e-5));
  REQUIRE(r.top.size() == 5);
  for (size_t i = 1; i < r.top.size(); ++i) CHECK(r.top[i - 1].logprob >= r.top[i].logprob);
  CHECK(r.top[0].token == argmax_token(r.logits.data(), V));
  CHECK(res[0].top.empty());
  CHECK(res[0].pick == -1);
}

TEST_CASE("invalid sampling settings, unknown slots and bad options are rejected") {
  auto model = load_model(kModels + "/llama");
  CpuBackend be(*model, CpuBackendOptions{1, 16, 1});
  const SlotId a = be.open_slot();
  SamplingParams sp;
  sp.top_p = 2.0f;
  CHECK_THROWS_WITH(be.set_sampling(a, sp), Contains("top_p"));
  CHECK_THROWS_WITH(be.set_sampling(3, SamplingParams{}), Contains("slot 3 is not open"));
  CHECK_THROWS_WITH(CpuBackend(*model, CpuBackendOptions{0, 16, 1}), Contains("max_slots"));
  CHECK_THROWS_WITH(CpuBackend(*model, CpuBackendOptions{1, 0, 1}), Contains("max_context"));
  CHECK(be.run_window(Window{}).empty());
}

TEST_CASE("a bf16 KV cache stays within 2e-2 of the fp32 one, keeps batch invariance, and f16 is refused") {
  auto model = load_model(kModels + "/llama");
  const int V = model->config.vocab_size, n = 24;
  CpuBackendOptions o32{3, 64, 2}, o16{3, 64, 2};
  o16.kv_cache_dtype = DType::BF16;
  CpuBackend f32(*model, o32), b16(*model, o16);
  const auto p = prompt_tokens(n, V, 5);
  const auto want = f32.run_window(chunk(f32.open_slot(), p, 0, n));
  const SlotId a = b16.open_slot(), b = b16.open_slot();
  const auto got = b16.run_window(chunk(a, p, 0, n));
  bool some_differ = false;
  for (int i = 0; i < n; ++i) {
    float scale = 1.0f, err = 0.0f;
    for (int t = 0; t < V; ++t) {
      scale = std::max(scale, std::fabs(want[size_t(i)].logits[size_t(t)]));
      err = std::max(err, std::fabs(got[size_t(i)].logits[size_t(t)] - want[size_t(i)].logits[size_t(t)]));
    }
    INFO("position " << i << ": max |bf16 - f32| " << err << " at scale " << scale);
    CHECK(err <= 2e-2f * scale);
    // Position 0 attends to itself only, so its output is V's row: rounded, but the softmax weight is 1.
    if (i > 0 && !same_bits(got[size_t(i)].logits, want[size_t(i)].logits)) some_differ = true;
  }
  CHECK(some_differ);  // the option does change what is stored
  // One row at a time in another slot gives the bits of the whole chunk (the rounding is per value).
  for (int i = 0; i < n; i += 5) {
    Window w;
    for (int j = 0; j <= i; ++j) w.rows.push_back(row(b, p[size_t(j)], j, j == i));
    b16.reset_slot(b);
    const auto one = b16.run_window(w);
    INFO("position " << i);
    CHECK(same_bits(one[size_t(i)].logits, got[size_t(i)].logits));
  }
  CpuBackendOptions bad{1, 16, 1};
  bad.kv_cache_dtype = DType::F16;
  CHECK_THROWS_WITH(CpuBackend(*model, bad), Contains("kv_cache_dtype must be f32 or bf16, found"));
}
