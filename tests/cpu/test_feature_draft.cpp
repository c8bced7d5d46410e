// The feature path on the CPU backend: a target's features are its LM head's input, and a feature draft
// (StrataFeatureDraft) loads with its target's embedding and LM head and computes feature_draft_model.py's
// draft steps as the fixture's golden has them; a feature draft without its target, or with a target of another shape,
// and windows with features that do not fit are refused with the reason.
#include <catch2/catch.hpp>

#include "engine/cpu/cpu_backend.hpp"
#include "tests/common/feature_checks.hpp"

using namespace strata;
using namespace strata::backend_test;
using Catch::Matchers::Contains;

namespace {

const std::string kModels = std::string(STRATA_SOURCE_DIR) + "/tests/data/models";

}  // namespace

TEST_CASE("CPU: a row's feature is what its LM head reads") {
  for (const char* name : {"llama", "qwen3"}) {
    DYNAMIC_SECTION(name) {
      auto model = load_model(kModels + "/" + name);
      CpuBackend be(*model, CpuBackendOptions{2, 64, 2});
      check_features_are_lm_head_input(be, *model, 1e-4f);
    }
  }
}

TEST_CASE("CPU: the feature draft fixture computes the golden's draft steps") {
  auto target = load_model(kModels + "/qwen3");
  auto draft = load_model(kModels + "/qwen3_feature_draft", target.get());
  CHECK(draft->config.feature_input);
  CHECK(draft->config.num_layers == 1);
  CpuBackend db(*draft, CpuBackendOptions{1, 64, 2});
  check_feature_draft_golden(db, kModels + "/qwen3_feature_draft/draft_golden.json", 1e-4f, 1e-3f);
}

TEST_CASE("CPU: feature windows that do not fit the model are refused before any state changes") {
  auto target = load_model(kModels + "/qwen3");
  auto draft = load_model(kModels + "/qwen3_feature_draft", target.get());
  CpuBackend tb(*target, CpuBackendOptions{1, 64, 2});
  CpuBackend db(*draft, CpuBackendOptions{1, 64, 2});
  const SlotId t = tb.open_slot(), d = db.open_slot();
  Window w;
  w.rows.push_back(row(t, 5, 0));
  w.features.assign(size_t(target->config.hidden_size), 0.5f);
  CHECK_THROWS_WITH(tb.run_window(w), Contains("features given to a model that reads none"));
  w.rows[0].slot = d;
  w.features.pop_back();
  CHECK_THROWS_WITH(db.run_window(w), Contains("63 feature values for 1 rows of hidden_size 64 (expected 64)"));
  // Nothing was kept: position 0 is still the slot's next.
  w.features.clear();  // no features: the draft reads zeros
  CHECK(db.run_window(w).size() == 1u);
}

TEST_CASE("a feature draft loads only as the draft of a target of its shape, and its config is checked") {
  const std::string dir = kModels + "/qwen3_feature_draft";
  CHECK_THROWS_WITH(load_model(dir), Contains("reads its target's embedding and LM head"));
  auto qwen2 = load_model(kModels + "/qwen2");  // hidden_size 48
  CHECK_THROWS_WITH(load_model(dir, qwen2.get()), Contains("cannot read a target of hidden_size 48"));
  // The config's promises about its input are checked.
  const std::string base = read_json(dir + "/config.json").dump();
  for (const auto& bad : std::vector<std::pair<std::string, std::string>>{
           {"attention", "false (a draft without attention) is not supported"},
           {"fc_input", "must be [\"embedding\", \"feature\"]"},
           {"embedding_and_lm_head", "must be \"target\""}}) {
    nlohmann::json j = nlohmann::json::parse(base);
    if (bad.first == "attention") j["attention"] = false;
    if (bad.first == "fc_input") j["fc_input"] = {"feature", "embedding"};
    if (bad.first == "embedding_and_lm_head") j["embedding_and_lm_head"] = "own";
    INFO(bad.first);
    CHECK_THROWS_WITH(parse_model_config(j.dump()), Contains(bad.first) && Contains(bad.second));
  }
}
