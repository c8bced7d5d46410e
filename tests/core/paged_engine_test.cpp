// The engine over the CPU backend's paged KV: a pool too small for every running request forces preemption
// of the youngest, and every request still ends with exactly its solo tokens (greedy and seeded) with no
// block or slot left behind; prefix caching reuses a shared prompt's blocks without changing any token; a
// request may use the whole pool, and one that cannot fit it alone is refused up front.
#include <catch2/catch.hpp>

#include "engine/core/engine.hpp"
#include "engine/cpu/cpu_backend.hpp"
#include "engine/model/weights.hpp"
#include "engine/spec/draft_model_drafter.hpp"
#include "tests/core/harness.hpp"

using namespace strata;
using namespace strata::test;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace {

struct PagedRig {
  std::unique_ptr<Model> model = load_model(STRATA_SOURCE_DIR "/tests/data/models/llama");
  std::unique_ptr<Engine> engine;
  PagedRig(EngineOptions o, int slots, int ctx, int blocks, int block_size, bool caching = true) {
    const Model& m = *model;
    CpuBackendOptions b;
    b.max_slots = slots;
    b.max_context = ctx;
    b.threads = 2;
    b.kv_blocks = blocks;
    b.kv_block_size = block_size;
    b.prefix_caching = caching;
    engine = std::make_unique<Engine>(
        [&m, b]() -> std::unique_ptr<Backend> { return std::make_unique<CpuBackend>(m, b); }, fixture_tokenizer(),
        m.generation.eos_token_ids, o);
  }
};

std::shared_ptr<GenerationRequest> request(const std::string& id, const std::string& text, int max_tokens,
                                           bool seeded, uint64_t seed) {
  auto r = make_request(id, fixture_tokenizer().encode(text), max_tokens);
  r->ignore_eos = true;
  if (seeded) {
    r->sampling.temperature = 0.9f;
    r->sampling.top_p = 0.95f;
    r->sampling.seed = seed;
  }
  return r;
}

const std::vector<std::string> kPrompts = {"def main():\n    print(1)", "import os\nimport sys\n",
                                           "class Tree:\n    pass", "for i in range(10):\n"};

}  // namespace

TEST_CASE("a pool too small for all running requests preempts the youngest; every request ends with its solo "
          "tokens", "[engine][cpu][paged]") {
  const char* modes[] = {"greedy", "seeded", "greedy with n-gram speculation",
                         "greedy with a feature draft (a preempted request's features come again)"};
  for (int mode = 0; mode < 4; ++mode) {
    const bool seeded = mode == 1;
    DYNAMIC_SECTION(modes[mode]) {
      const int max_tokens = 40;
      EngineOptions opts;
      opts.prefill_chunk = 6;
      // Verify windows write draft cells that commit() trims: blocks must follow the kept length.
      if (mode == 2) opts.speculation.mode = SpeculationMode::Ngram;
      if (mode == 3) {
        // The fixture feature draft reads the llama fixture's embedding (same width and vocabulary).
        static const std::unique_ptr<Model> target = load_model(STRATA_SOURCE_DIR "/tests/data/models/llama");
        static const std::unique_ptr<Model> fd =
            load_model(STRATA_SOURCE_DIR "/tests/data/models/qwen3_feature_draft", target.get());
        auto draft = std::shared_ptr<Backend>(std::make_unique<CpuBackend>(*fd, CpuBackendOptions{4, 256, 2}));
        const int dim = fd->config.hidden_size;
        opts.speculation.mode = SpeculationMode::Draft;
        opts.speculation.max_k = 3;
        opts.speculation.max_batch = 0;
        opts.speculation.drafter_factory = [draft, dim] { return std::make_unique<DraftModelDrafter>(draft, dim); };
      }
      std::vector<std::vector<TokenId>> solo;
      {
        PagedRig alone(opts, 1, 256, 0, 4);
        for (size_t i = 0; i < kPrompts.size(); ++i) {
          Outcome o = run_one(*alone.engine, request("solo" + std::to_string(i), kPrompts[i], max_tokens, seeded, 77 + i), 60s);
          REQUIRE(o.finished);
          REQUIRE(o.tokens.size() == size_t(max_tokens));
          solo.push_back(o.ids());
        }
      }
      // Each request needs about 13 blocks of 4; four at once need ~52 and the pool has 24.
      PagedRig crowd(opts, 4, 256, 24, 4);
      std::vector<std::shared_ptr<RequestChannel>> chans;
      for (size_t i = 0; i < kPrompts.size(); ++i) {
        chans.push_back(std::make_shared<RequestChannel>());
        REQUIRE(crowd.engine->submit(request("r" + std::to_string(i), kPrompts[i], max_tokens, seeded, 77 + i),
                                     chans.back()) == SubmitResult::Accepted);
      }
      for (size_t i = 0; i < chans.size(); ++i) {
        Outcome o = collect(*chans[i], 60s);
        INFO("request " << i);
        REQUIRE(o.finished);
        CHECK(o.finish.reason == FinishReason::Length);
        CHECK(o.ids() == solo[i]);
      }
      REQUIRE(eventually([&] { return crowd.engine->idle(); }));
      const EngineStats st = crowd.engine->stats();
      CHECK(st.preemptions > 0);
      CHECK(st.slots_busy == 0);
      CHECK(st.kv_blocks == 24);
      CHECK(st.kv_free_blocks == st.kv_blocks);
    }
  }
}

TEST_CASE("a shared prompt prefix is computed once and changes no token", "[engine][cpu][paged]") {
  std::string shared;
  for (int i = 0; i < 6; ++i) shared += "def f" + std::to_string(i) + "(x):\n    return x * " + std::to_string(i) + "\n";
  const std::string a = shared + "print(f1(2))", b = shared + "print(f5(3))";
  EngineOptions opts;
  opts.prefill_chunk = 16;
  PagedRig cold(opts, 2, 512, 0, 4, false);
  opts.prefix_caching = false;
  Outcome want = run_one(*cold.engine, request("cold", b, 12, true, 5), 60s);
  REQUIRE(want.finished);
  CHECK(cold.engine->stats().prefix_hits == 0);

  opts.prefix_caching = true;
  PagedRig warm(opts, 2, 512, 0, 4);
  Outcome first = run_one(*warm.engine, request("a", a, 12, true, 9), 60s);
  REQUIRE(first.finished);
  CHECK(first.finish.cached_prompt_tokens == 0);
  const long hits_before = warm.engine->stats().prefix_hits;
  CHECK(hits_before == 0);
  Outcome got = run_one(*warm.engine, request("b", b, 12, true, 5), 60s);
  REQUIRE(got.finished);
  CHECK(got.ids() == want.ids());
  const size_t common = fixture_tokenizer().encode(shared).size();
  const EngineStats st = warm.engine->stats();
  CHECK(st.prefix_hits >= long(common / 4) - 1);  // the shared text's full blocks (its last may straddle)
  CHECK(st.prefix_lookups > st.prefix_hits - 1);
  // The request reports what the cache supplied (usage.prompt_tokens_details.cached_tokens): its hit blocks.
  CHECK(got.finish.cached_prompt_tokens == 4 * st.prefix_hits);
  CHECK(got.finish.prompt_tokens == int(fixture_tokenizer().encode(b).size()));
  // Prompt logprobs need every prompt row, so such a request does not start from the cache.
  auto lp = request("lp", b, 2, false, 0);
  lp->prompt_logprobs = true;
  Outcome with_lp = run_one(*warm.engine, lp, 60s);
  REQUIRE(with_lp.finished);
  CHECK(warm.engine->stats().prefix_hits == st.prefix_hits);
  CHECK(with_lp.finish.cached_prompt_tokens == 0);
}

TEST_CASE("a request may use the whole KV pool; one that cannot fit it alone is refused with a clear 400",
          "[engine][cpu][paged]") {
  EngineOptions opts;
  // 4 slots share 32 blocks of 4 = 128 positions: the old equal share would be 32 positions per slot.
  PagedRig rig(opts, 4, 256, 32, 4);
  const auto prompt = fixture_tokenizer().encode(kPrompts[0]);
  const int n = int(prompt.size());
  auto big = make_request("big", prompt, 120 - n);
  big->ignore_eos = true;
  Outcome o = run_one(*rig.engine, big, 60s);
  REQUIRE(o.finished);
  CHECK(o.finish.completion_tokens == 120 - n);

  auto too_big = make_request("too-big", prompt, 200);
  Outcome refused = run_one(*rig.engine, too_big, 10s);
  REQUIRE(refused.finished);
  CHECK(refused.finish.http_status == 400);
  CHECK(refused.finish.error_code == "context_length_exceeded");
  CHECK_THAT(refused.finish.error_message, Contains("KV cache holds 128 positions"));

  // No max_tokens: the request may run to the end of the pool.
  auto open_ended = make_request("open", prompt, -1);
  open_ended->ignore_eos = true;
  Outcome all = run_one(*rig.engine, open_ended, 60s);
  REQUIRE(all.finished);
  CHECK(all.finish.completion_tokens == 128 - n);
  REQUIRE(eventually([&] { return rig.engine->idle(); }));
  CHECK(rig.engine->stats().kv_free_blocks == 32);
}

TEST_CASE("sixteen slots over a pool that holds a few contexts: every request completes with its solo tokens",
          "[engine][cpu][paged]") {
  EngineOptions opts;
  opts.prefill_chunk = 8;
  opts.max_window_tokens = 24;
  std::vector<std::string> prompts;
  for (int i = 0; i < 16; ++i)
    prompts.push_back("# task " + std::to_string(i) + "\ndef solve_" + std::to_string(i * 7) + "(n):\n");
  std::vector<std::vector<TokenId>> solo;
  {
    PagedRig alone(opts, 1, 128, 0, 4);
    for (size_t i = 0; i < prompts.size(); ++i) {
      Outcome o = run_one(*alone.engine, request("solo" + std::to_string(i), prompts[i], 20, true, 300 + i), 60s);
      REQUIRE(o.finished);
      solo.push_back(o.ids());
    }
  }
  // 40 blocks of 4 = 160 positions for 16 requests of ~40 positions each.
  PagedRig crowd(opts, 16, 128, 40, 4);
  std::vector<std::shared_ptr<RequestChannel>> chans;
  for (size_t i = 0; i < prompts.size(); ++i) {
    chans.push_back(std::make_shared<RequestChannel>());
    REQUIRE(crowd.engine->submit(request("r" + std::to_string(i), prompts[i], 20, true, 300 + i), chans.back()) ==
            SubmitResult::Accepted);
  }
  for (size_t i = 0; i < chans.size(); ++i) {
    Outcome o = collect(*chans[i], 60s);
    INFO("request " << i);
    REQUIRE(o.finished);
    CHECK(o.ids() == solo[i]);
  }
  REQUIRE(eventually([&] { return crowd.engine->idle(); }));
  const EngineStats st = crowd.engine->stats();
  CHECK(st.slots_busy == 0);
  CHECK(st.kv_free_blocks == 40);
  CHECK(st.preemptions > 0);  // 16 x ~40 positions cannot all be held at once
}
