// The engine over the real CPU backend on the llama fixture: a request's tokens do not depend on what else
// shares its windows (DESIGN.md invariant 2), greedy and seeded.
#include <catch2/catch.hpp>

#include "engine/core/engine.hpp"
#include "engine/cpu/cpu_backend.hpp"
#include "engine/model/weights.hpp"
#include "tests/core/harness.hpp"

using namespace strata;
using namespace strata::test;
using namespace std::chrono_literals;

namespace {

struct CpuRig {
  std::unique_ptr<Model> model = load_model(STRATA_SOURCE_DIR "/tests/data/models/llama");
  std::unique_ptr<Engine> engine;
  explicit CpuRig(EngineOptions o) {
    const Model& m = *model;
    engine = std::make_unique<Engine>(
        [&m]() -> std::unique_ptr<Backend> { return std::make_unique<CpuBackend>(m, CpuBackendOptions{8, 256, 2}); },
        fixture_tokenizer(), m.generation.eos_token_ids, o);
  }
};

std::shared_ptr<GenerationRequest> request(const std::string& id, const std::string& text, bool seeded) {
  auto r = make_request(id, fixture_tokenizer().encode(text), 24);
  r->ignore_eos = true;  // the random fixture may pick EOS early; the comparison wants full length
  if (seeded) {
    r->sampling.temperature = 0.9f;
    r->sampling.top_p = 0.95f;
    r->sampling.seed = 1234;
  }
  return r;
}

}  // namespace

TEST_CASE("a request's tokens are the same alone and among seven others on the CPU backend", "[engine][cpu]") {
  const std::vector<std::string> others = {
      "def main():",        "import os\nimport sys", "class Tree:",          "    return self.value",
      "for i in range(10):", "# a comment about it",  "while True:\n    pass"};
  for (bool seeded : {false, true}) {
    DYNAMIC_SECTION((seeded ? "seeded" : "greedy")) {
      EngineOptions opts;
      opts.prefill_chunk = 5;  // the subject's prompt is chunked differently alone and in company
      CpuRig alone(opts);
      Outcome solo = run_one(*alone.engine, request("solo", "print(self.name)", seeded), 60s);
      REQUIRE(solo.finished);
      REQUIRE(solo.tokens.size() == 24);

      opts.prefill_chunk = 7;
      opts.max_window_tokens = 16;
      CpuRig crowd(opts);
      std::vector<std::shared_ptr<RequestChannel>> chans;
      for (size_t i = 0; i < others.size(); ++i) {
        chans.push_back(std::make_shared<RequestChannel>());
        auto r = request("other" + std::to_string(i), others[i], seeded);
        r->sampling.seed += i + 1;
        REQUIRE(crowd.engine->submit(r, chans.back()) == SubmitResult::Accepted);
      }
      auto subject = std::make_shared<RequestChannel>();
      REQUIRE(crowd.engine->submit(request("subject", "print(self.name)", seeded), subject) == SubmitResult::Accepted);
      Outcome together = collect(*subject, 60s);
      REQUIRE(together.finished);
      CHECK(together.ids() == solo.ids());
      CHECK(together.text() == solo.text());
      for (auto& c : chans) CHECK(collect(*c, 60s).finish.completion_tokens == 24);
    }
  }
}
