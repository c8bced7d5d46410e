// The feature path on the CUDA backend, against the same statements as the CPU backend's
// (tests/common/feature_checks.hpp): a target row's feature is what its LM head reads, a feature draft computes
// feature_draft_model.py's steps as the fixture's golden has them, and its chained steps read their own features on the
// device. Through the engine, a feature draft on the GPU leaves strata-tiny-sized output unchanged.
#include <catch2/catch.hpp>

#include <prometheus/registry.h>

#include "cuda/cuda_backend.hpp"
#include "engine/core/metrics.hpp"
#include "engine/cpu/cpu_backend.hpp"
#include "engine/spec/draft_model_drafter.hpp"
#include "tests/common/feature_checks.hpp"
#include "tests/core/harness.hpp"

using namespace strata;
using namespace strata::backend_test;
using namespace std::chrono_literals;

namespace {

const std::string kModels = std::string(STRATA_SOURCE_DIR) + "/tests/data/models";

// The server's options for a target with speculation, and for a draft (the skinny kernel's windows and the
// fused GEMV's), small.
CudaBackendOptions options(bool draft) {
  CudaBackendOptions o;
  o.max_slots = 2;
  o.max_context = 256;
  o.kv_cache_dtype = DType::BF16;
  o.gemm_min_rows = kServerGemmMinRows;
  o.gemm_autotune = false;
  if (draft) o.fused_gemv_rows = kDraftFusedGemvRows;
  return o;
}

}  // namespace

TEST_CASE("CUDA: a row's feature is what its LM head reads") {
  REQUIRE(CudaBackend::device_count() > 0);
  auto model = load_model(kModels + "/qwen3");
  for (bool draft_kernels : {false, true}) {
    DYNAMIC_SECTION((draft_kernels ? "fused GEMV windows" : "skinny windows")) {
      CudaBackend be(*model, options(draft_kernels));
      check_features_are_lm_head_input(be, *model, 2e-3f);
    }
  }
}

TEST_CASE("CUDA: the feature draft fixture computes the golden's draft steps") {
  REQUIRE(CudaBackend::device_count() > 0);
  auto target = load_model(kModels + "/qwen3");
  auto draft = load_model(kModels + "/qwen3_feature_draft", target.get());
  for (bool draft_kernels : {false, true}) {
    DYNAMIC_SECTION((draft_kernels ? "fused GEMV windows" : "skinny windows")) {
      CudaBackendOptions o = options(draft_kernels);
      o.kv_cache_dtype = DType::F32;  // the golden's K and V are fp32
      CudaBackend db(*draft, o);
      check_feature_draft_golden(db, kModels + "/qwen3_feature_draft/draft_golden.json", 2e-3f, 1e-2f);
      CHECK(db.chains_on_device() > 0);  // the chain fed its picks and features on the device
    }
  }
}

TEST_CASE("CUDA: output with a feature draft on the GPU equals output without speculation") {
  REQUIRE(CudaBackend::device_count() > 0);
  std::shared_ptr<const Model> target = load_model(kModels + "/qwen3");
  std::shared_ptr<const Model> fdraft = load_model(kModels + "/qwen3_feature_draft", target.get());
  auto tok = Tokenizer::load(kModels + "/qwen3");
  Engine::BackendFactory factory = [target]() -> std::unique_ptr<Backend> {
    return std::make_unique<CudaBackend>(*target, options(false));
  };
  const std::vector<std::string> prompts = {"def add(a, b):\n    return a + b\n", "the cat sat on the mat. the cat",
                                            "hello hello hello hello"};
  auto run = [&](Engine& e) {
    std::vector<std::vector<TokenId>> out;
    for (size_t i = 0; i < prompts.size(); ++i) {
      auto r = test::make_request("p" + std::to_string(i), tok->encode(prompts[i]), 40);
      r->ignore_eos = true;
      test::Outcome o = test::run_one(e, r, 60s);
      REQUIRE(o.finished);
      out.push_back(o.ids());
    }
    return out;
  };
  Engine off(factory, *tok, target->generation.eos_token_ids, EngineOptions{});
  const auto expect = run(off);
  auto draft = std::make_shared<CudaBackend>(*fdraft, options(true));
  EngineOptions o;
  auto registry = std::make_shared<prometheus::Registry>();
  o.metrics = std::make_shared<Metrics>(registry, "0", "yes", "cuda");
  o.speculation.mode = SpeculationMode::Draft;
  o.speculation.max_k = 4;
  const int H = fdraft->config.hidden_size;
  std::shared_ptr<Backend> shared = draft;
  o.speculation.drafter_factory = [shared, H] { return std::make_unique<DraftModelDrafter>(shared, H); };
  Engine spec(factory, *tok, target->generation.eos_token_ids, o);
  CHECK(run(spec) == expect);
  CHECK(draft->chains_on_device() > 0);
}
