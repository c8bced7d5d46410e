// The window invariants that make speculation and batching exact on the GPU (DESIGN.md invariants 1 and 2):
// a verify window of T = 1..16 rows gives the bits and picks of T single-row windows, a row's logits do not
// depend on the other slots in its window, and a window split into several graph replays (more output rows
// than one replay holds) gives the bits of the whole.
#include <catch2/catch.hpp>

#include "cuda/cuda_backend.hpp"
#include "engine/sampling/logprobs.hpp"
#include "engine/sampling/sampler.hpp"
#include "tests/cuda/cuda_test_util.hpp"

using namespace strata;
using namespace strata::cuda_test;

namespace {

CudaBackendOptions small_options(int slots, int context, DType kv = DType::F32) {
  CudaBackendOptions o;
  o.max_slots = slots;
  o.max_context = context;
  o.kv_cache_dtype = kv;
  return o;
}

// Logits and greedy picks of `tokens` fed one row per window into a fresh slot.
std::vector<RowResult> single_rows(CudaBackend& be, SlotId s, const std::vector<TokenId>& tokens, int n) {
  be.reset_slot(s);
  std::vector<RowResult> out;
  for (int i = 0; i < n; ++i) out.push_back(be.run_window(Window{{row(s, tokens[size_t(i)], i, true, true)}})[0]);
  return out;
}

}  // namespace

TEST_CASE("a verify window of T = 1..16 rows gives the bits and picks of T single-row windows") {
  REQUIRE(CudaBackend::device_count() > 0);
  const DType kv = GENERATE(DType::F32, DType::BF16);
  // The server's path with speculation on (the skinny kernel up to 16 rows), and the fused GEMV up to 16 rows
  // (qwen2's fp32 weights take the skinny kernel there too).
  // strata-tiny (head_dim 64) puts the fused GEMV's windows of a bf16 arena on the tensor-core attention.
  const int fused_rows = GENERATE(kDraftFusedGemvRows, 0);
  const std::string tiny = std::string(STRATA_SOURCE_DIR) + "/models/strata-tiny";
  for (const std::string& dir : {models_dir() + "/llama", models_dir() + "/qwen2", models_dir() + "/qwen3", tiny}) {
    const std::string name = dir.substr(dir.rfind('/') + 1);
    DYNAMIC_SECTION(name << " kv " << dtype_name(kv) << " fused gemv rows " << fused_rows) {
      auto model = load_model(dir);
      if (kv == DType::BF16 && model->config.head_dim % 8 != 0) continue;  // bf16 arenas need it
      CudaBackendOptions o = small_options(2, 64, kv);
      o.gemm_min_rows = kServerGemmMinRows;
      o.fused_gemv_rows = fused_rows;
      CudaBackend be(*model, o);
      // What the backend promises the scheduler (BackendInfo::exact_rows), checked row for row below.
      const int exact = be.info().exact_rows;
      REQUIRE(exact == 16);
      const SlotId ref = be.open_slot(), s = be.open_slot();
      be.set_sampling(ref, SamplingParams{0.0f});
      be.set_sampling(s, SamplingParams{0.0f});
      const int prefix = 5;
      const auto tokens = prompt_tokens(prefix + exact, model->config.vocab_size, 3);
      const auto want = single_rows(be, ref, tokens, prefix + exact);
      for (int T = 1; T <= exact; ++T) {
        INFO("T = " << T);
        be.reset_slot(s);
        be.run_window(chunk(s, tokens, 0, prefix));
        const auto got = be.run_window(chunk(s, tokens, prefix, T, true));
        REQUIRE(int(got.size()) == T);
        for (int t = 0; t < T; ++t) {
          INFO("row " << t);
          CHECK(same_bits(got[size_t(t)].logits, want[size_t(prefix + t)].logits));
          CHECK(got[size_t(t)].pick == want[size_t(prefix + t)].pick);
        }
      }
    }
  }
}

TEST_CASE("a greedy chain fed on the device gives the picks, KV cells and history of its steps run as windows") {
  REQUIRE(CudaBackend::device_count() > 0);
  // The default options (steps on the skinny kernel), and a draft model's backend in the server (steps and
  // windows of up to 16 rows on the fused GEMV, longer ones on cuBLAS).
  const bool draft_options = GENERATE(false, true);
  for (const char* name : {"llama", "qwen3"}) {
    DYNAMIC_SECTION(name << (draft_options ? " draft options" : "")) {
      auto model = load_model(models_dir() + "/" + name);
      const int V = model->config.vocab_size;
      CudaBackendOptions o = small_options(4, 300);
      if (draft_options) {
        o.gemm_min_rows = 1;
        o.fused_gemv_rows = kDraftFusedGemvRows;
      }
      CudaBackend be(*model, o);
      SlotId a = be.open_slot(), b = be.open_slot(), ra = be.open_slot(), rb = be.open_slot();
      for (SlotId s : {a, b, ra, rb}) be.set_sampling(s, SamplingParams{0.0f});
      // Slot a's chain crosses an attention split boundary (kAttnSplit 128); b starts from a short prompt.
      const auto pa = prompt_tokens(124, V, 5), pb = prompt_tokens(9, V, 6);
      auto first_window = [&](SlotId x, SlotId y) {
        Window w = chunk(x, pa, 0, int(pa.size()));
        for (size_t i = 0; i < pb.size(); ++i) w.rows.push_back(row(y, pb[i], int(i)));
        for (Row& r : w.rows) r.want_logits = false;
        w.rows[pa.size() - 1].want_pick = true;
        w.rows.back().want_pick = true;
        return w;
      };
      const int steps = 8;
      // The reference first: its windows time the step shapes' GEMMs, which the device chain needs.
      const auto want = be.Backend::run_chain(first_window(ra, rb), steps);
      REQUIRE(be.chains_on_device() == 0);
      const auto got = be.run_chain(first_window(a, b), steps);
      CHECK(be.chains_on_device() == 1);
      REQUIRE(got.size() == size_t(steps));
      for (int j = 0; j < steps; ++j) {
        INFO("step " << j);
        REQUIRE(got[size_t(j)].size() == 2);
        CHECK(got[size_t(j)] == want[size_t(j)]);
      }
      // The next row of each slot: the same logits bits (the chain wrote the KV cells the windows wrote), and
      // under a strong repetition penalty the same pick (the history holds the tokens the device fed).
      SamplingParams penalized{0.0f};
      penalized.repetition_penalty = 3.0f;
      for (SlotId s : {a, b, ra, rb}) be.set_sampling(s, penalized);
      auto next = [&](SlotId x, SlotId y, const std::vector<std::vector<TokenId>>& c) {
        Window w;
        w.rows.push_back(row(x, c.back()[0], int(pa.size()) + steps - 1, true, true));
        w.rows.push_back(row(y, c.back()[1], int(pb.size()) + steps - 1, true, true));
        return be.run_window(w);
      };
      const auto n_got = next(a, b, got), n_want = next(ra, rb, want);
      for (int i = 0; i < 2; ++i) {
        CHECK(same_bits(n_got[size_t(i)].logits, n_want[size_t(i)].logits));
        CHECK(n_got[size_t(i)].pick == n_want[size_t(i)].pick);
      }
      // A chain the device does not feed (a row asks for logits) runs as windows, with the same picks; a bad
      // one throws as a window would and leaves the slots as they were.
      for (SlotId s : {a, ra}) be.reset_slot(s);
      for (SlotId s : {a, b, ra, rb}) be.set_sampling(s, SamplingParams{0.0f});
      auto with_logits = [&](SlotId x) {  // four prompt rows, all with logits, the last one picking
        Window w = chunk(x, pa, 0, 4);
        w.rows.back().want_pick = true;
        return w;
      };
      const auto plain = be.run_chain(with_logits(a), 3);  // a and ra hold positions 0 .. 5 after it
      CHECK(be.chains_on_device() == 1);
      CHECK(plain == be.Backend::run_chain(with_logits(ra), 3));
      CHECK_THROWS_AS(be.run_chain(Window{{row(a, 0, 2, false, true)}}, 3), Error);  // not at position 6
      CHECK_THROWS_AS(be.run_chain(Window{{row(a, V, 6, false, true)}}, 3), Error);  // outside the vocabulary
      const auto fed = be.run_chain(Window{{row(a, pa[6], 6, false, true)}}, 4);
      CHECK(be.chains_on_device() == 2);
      CHECK(fed == be.Backend::run_chain(Window{{row(ra, pa[6], 6, false, true)}}, 4));
      // The same 8 steps as 3 and 5 ahead (run_chain_ahead): the ahead steps run after the call returns, and
      // their picks and KV cells are the ones the 8-step chain made.
      for (SlotId s : {a, b}) be.reset_slot(s);
      uint64_t ticket = 0;
      const auto first3 = be.run_chain_ahead(first_window(a, b), 3, 5, &ticket);
      CHECK(be.chains_on_device() == 3);
      const auto ahead5 = be.take_ahead(ticket);
      CHECK(be.take_ahead(ticket).empty());  // taken once
      REQUIRE(first3.size() == 3);
      REQUIRE(ahead5.size() == 5);
      std::vector<std::vector<TokenId>> both = first3;
      both.insert(both.end(), ahead5.begin(), ahead5.end());
      CHECK(both == want);
      for (SlotId s : {ra, rb}) be.reset_slot(s);
      CHECK(be.Backend::run_chain(first_window(ra, rb), steps) == want);
      for (SlotId s : {a, b, ra, rb}) be.set_sampling(s, penalized);
      const auto a_got = next(a, b, both), a_want = next(ra, rb, want);
      for (int i = 0; i < 2; ++i) CHECK(same_bits(a_got[size_t(i)].logits, a_want[size_t(i)].logits));
      // All 8 ahead (steps 0, as a round whose proposal prompt lookup made runs them): nothing comes back now,
      // and the ahead picks and KV cells are the 8-step chain's; the chain goes on from them like any other.
      for (SlotId s : {a, b}) be.reset_slot(s);
      for (SlotId s : {a, b}) be.set_sampling(s, SamplingParams{0.0f});
      uint64_t t_all = 0, t_on = 0;
      CHECK(be.run_chain_ahead(first_window(a, b), 0, 5, &t_all).empty());
      CHECK(be.chains_on_device() == 4);
      const auto all5 = be.take_ahead(t_all);
      REQUIRE(be.extend_ahead(t_all, 3, &t_on));
      std::vector<std::vector<TokenId>> zero = all5;
      const auto on3 = be.take_ahead(t_on);
      zero.insert(zero.end(), on3.begin(), on3.end());
      CHECK(zero == want);
      for (SlotId s : {a, b, ra, rb}) be.set_sampling(s, penalized);
      const auto z_got = next(a, b, zero);  // against the reference's next rows above
      for (int i = 0; i < 2; ++i) CHECK(same_bits(z_got[size_t(i)].logits, a_want[size_t(i)].logits));
      // The same 8 steps as 3, 2 ahead and 3 more (extend_ahead, on the device from the last picks): the same
      // picks and KV cells. A chain whose slots were touched since, or not the last, does not go on.
      for (SlotId s : {a, b}) be.reset_slot(s);
      for (SlotId s : {a, b}) be.set_sampling(s, SamplingParams{0.0f});
      uint64_t t0 = 0, t_ext = 0, t_none = 0;
      std::vector<std::vector<TokenId>> ext = be.run_chain_ahead(first_window(a, b), 3, 2, &t0);
      const auto ahead2 = be.take_ahead(t0);
      REQUIRE(be.extend_ahead(t0, 3, &t_ext));
      CHECK(be.chains_on_device() == 7);  // run_chain_ahead's and extend_ahead's
      CHECK(!be.extend_ahead(t0, 1, &t_none));  // not the last any more
      const auto more3 = be.take_ahead(t_ext);
      REQUIRE(ahead2.size() == 2);
      REQUIRE(more3.size() == 3);
      ext.insert(ext.end(), ahead2.begin(), ahead2.end());
      ext.insert(ext.end(), more3.begin(), more3.end());
      CHECK(ext == want);
      for (SlotId s : {ra, rb}) be.reset_slot(s);
      for (SlotId s : {ra, rb}) be.set_sampling(s, SamplingParams{0.0f});
      CHECK(be.Backend::run_chain(first_window(ra, rb), steps) == want);
      for (SlotId s : {a, b, ra, rb}) be.set_sampling(s, penalized);
      const auto e_got = next(a, b, ext), e_want = next(ra, rb, want);
      for (int i = 0; i < 2; ++i) CHECK(same_bits(e_got[size_t(i)].logits, e_want[size_t(i)].logits));
      CHECK(!be.extend_ahead(t_ext, 2, &t_none));  // a window ran since
      // A later chain's ticket replaces the earlier one's, whose ahead picks are gone.
      for (SlotId s : {a, b}) be.reset_slot(s);
      for (SlotId s : {a, b}) be.set_sampling(s, SamplingParams{0.0f});
      uint64_t t1 = 0, t2 = 0;
      (void)be.run_chain_ahead(first_window(a, b), 2, 2, &t1);
      for (SlotId s : {a, b}) be.reset_slot(s);
      (void)be.run_chain_ahead(first_window(a, b), 2, 2, &t2);
      CHECK(t1 != t2);
      CHECK(be.take_ahead(t1).empty());
      CHECK(be.take_ahead(t2).size() == 2);
    }
  }
}

TEST_CASE("a row's logits are bit-identical alone and beside 7 or 63 other slots' rows") {
  REQUIRE(CudaBackend::device_count() > 0);
  auto model = load_model(models_dir() + "/qwen3");
  const int V = model->config.vocab_size, n = 10;
  const DType kv = GENERATE(DType::F32, DType::BF16);
  // Windows of 8 and 64 rows on the skinny kernel (its 1- and 8-column-tile forms), or of 8 and 12 on the
  // fused GEMV (one and two row groups of blocks).
  const int fused_rows = GENERATE(0, kDraftFusedGemvRows);
  INFO("kv " << dtype_name(kv) << ", fused gemv rows " << fused_rows);
  for (int S : {8, fused_rows ? 12 : 64}) {
    CudaBackendOptions o = small_options(S + 1, 64, kv);
    o.fused_gemv_rows = fused_rows;
    CudaBackend be(*model, o);
    const SlotId alone = be.open_slot();
    const auto p = prompt_tokens(n, V, 1);
    const auto want = single_rows(be, alone, p, n);
    std::vector<SlotId> slots;
    for (int i = 0; i < S; ++i) slots.push_back(be.open_slot());
    for (int i = 0; i < n; ++i) {
      // Slot slots[3] carries the reference sequence; the others carry sequences of their own.
      Window w;
      for (int k = 0; k < S; ++k) {
        const TokenId t = k == 3 ? p[size_t(i)] : prompt_tokens(n, V, 10 + k)[size_t(i)];
        w.rows.push_back(row(slots[size_t(k)], t, i, true, true));
      }
      const auto got = be.run_window(w);
      INFO(S << " rows, position " << i);
      CHECK(same_bits(got[3].logits, want[size_t(i)].logits));
      CHECK(got[3].pick == want[size_t(i)].pick);
    }
  }
}

TEST_CASE("rows of one slot interleaved with another slot's rows keep their bits") {
  REQUIRE(CudaBackend::device_count() > 0);
  auto model = load_model(models_dir() + "/llama");
  const int V = model->config.vocab_size, n = 12;
  CudaBackend be(*model, small_options(3, 64));
  const SlotId a = be.open_slot(), c = be.open_slot(), d = be.open_slot();
  const auto p = prompt_tokens(n, V, 1), other = prompt_tokens(2 * n, V, 2);
  const auto whole = be.run_window(chunk(a, p, 0, n));
  for (int i = 0; i < n; ++i) {
    Window mixed;
    mixed.rows.push_back(row(d, other[size_t(2 * i)], 2 * i));
    mixed.rows.push_back(row(c, p[size_t(i)], i));
    mixed.rows.push_back(row(d, other[size_t(2 * i + 1)], 2 * i + 1));
    const auto m = be.run_window(mixed);
    INFO("position " << i);
    CHECK(same_bits(whole[size_t(i)].logits, m[1].logits));
  }
}

TEST_CASE("a window with more output rows than one replay holds gives the bits of single rows") {
  REQUIRE(CudaBackend::device_count() > 0);
  auto model = load_model(models_dir() + "/qwen3_sharded");
  CudaBackendOptions o = small_options(2, 64);
  o.max_output_rows = 3;
  o.fused_gemv_rows = GENERATE(0, kDraftFusedGemvRows);  // the LM head's rows gathered by the fused GEMV
  INFO("fused gemv rows " << o.fused_gemv_rows);
  CudaBackend be(*model, o);
  const SlotId ref = be.open_slot(), s = be.open_slot();
  const auto p = prompt_tokens(11, model->config.vocab_size, 4);
  const auto want = single_rows(be, ref, p, 11);
  const auto got = be.run_window(chunk(s, p, 0, 11, true));
  for (int i = 0; i < 11; ++i) {
    INFO("row " << i);
    CHECK(same_bits(got[size_t(i)].logits, want[size_t(i)].logits));
    CHECK(got[size_t(i)].pick == want[size_t(i)].pick);
  }
}

TEST_CASE("a verify window trimmed by commit continues exactly like a slot that only ran the kept rows") {
  REQUIRE(CudaBackend::device_count() > 0);
  auto model = load_model(models_dir() + "/llama");
  CudaBackend be(*model, small_options(2, 64));
  backend_test::check_commit_trims_verify_window(be, model->config.vocab_size);
}

TEST_CASE("device-sampled, host-sampled, penalized and greedy picks equal engine/sampling's pick on the row's logits") {
  REQUIRE(CudaBackend::device_count() > 0);
  auto model = load_model(models_dir() + "/qwen3");
  const int V = model->config.vocab_size;
  CudaBackendOptions o = small_options(2, 32);
  o.device_vocab_sampling = GENERATE(false, true);  // the nucleus rows on the host, then on the device
  CudaBackend be(*model, o);
  SamplingParams seeded;
  seeded.temperature = 0.9f;
  seeded.top_k = 20;
  seeded.top_p = 0.9f;
  seeded.seed = 5;
  SamplingParams penalized;
  penalized.temperature = 0.0f;
  penalized.repetition_penalty = 1.3f;
  penalized.presence_penalty = 0.2f;
  penalized.logit_bias = {{7, 2.5f}};
  SamplingParams nucleus;  // no top_k: drawn on the host, or on the device over the whole vocabulary
  nucleus.temperature = 1.1f;
  nucleus.top_p = 0.8f;
  nucleus.seed = 11;
  SamplingParams min_p;  // top_k within the device sampler's reach, with min_p
  min_p.temperature = 1.3f;
  min_p.top_k = 64;
  min_p.min_p = 0.05f;
  min_p.seed = 0x123456789abcdefull;
  const SamplingParams greedy{0.0f};
  const SamplingParams* params[] = {&seeded, &penalized, &nucleus, &min_p, &greedy};
  const auto p = prompt_tokens(10, V, 7);
  for (const SamplingParams* sp : params) {
    const SlotId s = be.open_slot();
    be.set_sampling(s, *sp);
    const auto res = be.run_window(chunk(s, p, 0, 10, true));
    for (int i = 0; i < 10; ++i) {
      INFO("row " << i << " temperature " << sp->temperature);
      const TokenId expect = pick_token(res[size_t(i)].logits.data(), V, *sp, TokenHistory{p.data(), size_t(i) + 1}, i);
      CHECK(res[size_t(i)].pick == expect);
    }
    be.close_slot(s);
  }
}

TEST_CASE("logprobs are engine/sampling's log-softmax of the row's logits") {
  REQUIRE(CudaBackend::device_count() > 0);
  auto model = load_model(models_dir() + "/llama");
  CudaBackendOptions o = small_options(1, 32);
  o.device_logprobs = GENERATE(false, true);  // from the copied logits, then on the device
  CudaBackend be(*model, o);
  const SlotId s = be.open_slot();
  SamplingParams seeded;  // a device draw (top_k within reach), so its logprobs may come from the device too
  seeded.temperature = 0.8f;
  seeded.top_k = 40;
  seeded.seed = 77;
  for (const SamplingParams& sp : {SamplingParams{0.0f}, seeded}) {
    be.set_sampling(s, sp);
    for (int n : {0, 5, 20}) {
      be.reset_slot(s);
      Row r = row(s, 3, 0, true, true);
      r.n_logprobs = n;
      const auto res = be.run_window(Window{{r}});
      INFO("device_logprobs " << o.device_logprobs << " temperature " << sp.temperature << " n " << n);
      REQUIRE(res[0].top.size() == size_t(n));
      float lp = 0;
      std::vector<TopLogprob> top;
      compute_logprobs(res[0].logits.data(), model->config.vocab_size, res[0].pick, n, &lp, &top);
      CHECK(res[0].pick_logprob == lp);
      if (n > 0 && sp.greedy()) CHECK(res[0].top[0].token == res[0].pick);
      for (size_t i = 0; i < top.size(); ++i) {
        CHECK(res[0].top[i].token == top[i].token);
        CHECK(res[0].top[i].logprob == top[i].logprob);
      }
    }
  }
}
