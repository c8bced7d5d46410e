// Checks of the feature path that hold for every backend: a target's rows return the vector its LM head reads
// (Row::want_feature), and a feature draft (ModelConfig::feature_input) computes what
// tools/train/feature_draft_model.py defines (the model eagle_draft.py trains), against the golden
// tools/fixtures/make_feature_draft_fixture.py made with it. The CPU tests run them in CI, the CUDA tests (label
// gpu) on a GPU.
#pragma once
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/core/backend.hpp"
#include "engine/model/weights.hpp"
#include "tests/common/backend_contract.hpp"

namespace strata {
namespace backend_test {

inline float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  float worst = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

// Every row of a prompt chunk asks for its feature, the last also for its logits: each feature is
// hidden_size values, the logits are the LM head applied to the last feature (within tol, fp32 sums in
// another order), and a row's feature does not depend on whether it also picks. `be` has two free slots.
inline void check_features_are_lm_head_input(Backend& be, const Model& m, float tol) {
  const int H = m.config.hidden_size, V = m.config.vocab_size, n = 9;
  const auto p = prompt_tokens(n, V, 4);
  const SlotId a = be.open_slot(), b = be.open_slot();
  Window w = chunk(a, p, 0, n);
  for (Row& r : w.rows) {
    r.want_logits = false;
    r.want_feature = true;
  }
  w.rows.back().want_logits = true;
  w.rows.back().want_pick = true;
  const std::vector<RowResult> out = be.run_window(w);
  REQUIRE(out.size() == size_t(n));
  for (const RowResult& r : out) REQUIRE(r.feature.size() == size_t(H));
  const TensorView& head = m.checkpoint->get(m.config.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight");
  const std::vector<float> hw = head.to_f32();
  float worst = 0.0f;
  for (int v = 0; v < V; ++v) {
    double dot = 0.0;
    for (int i = 0; i < H; ++i) dot += double(out.back().feature[size_t(i)]) * hw[size_t(v) * H + i];
    worst = std::max(worst, float(std::fabs(dot - out.back().logits[size_t(v)])));
  }
  CHECK(worst < tol);
  // The same rows again in another slot, each picking: the same features.
  Window again = chunk(b, p, 0, n, true);
  for (Row& r : again.rows) r.want_feature = true;
  const std::vector<RowResult> picked = be.run_window(again);
  for (int i = 0; i < n; ++i) {
    INFO("row " << i);
    CHECK(max_abs_diff(picked[size_t(i)].feature, out[size_t(i)].feature) <= tol);
  }
  be.close_slot(a);
  be.close_slot(b);
}

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

// The golden cases of a feature draft fixture (tools/fixtures/make_feature_draft_fixture.py): the draft's
// entries over each case's tokens and input features, then k chained steps reading its own features, each
// step's logits (within logit_tol), feature (within feat_tol) and greedy token as feature_draft_model.py
// computes them; run_chain over the same entries gives the same tokens. `draft` has a free slot.
inline void check_feature_draft_golden(Backend& draft, const std::string& golden_path, float feat_tol, float logit_tol) {
  const nlohmann::json g = read_json(golden_path);
  const int k = g.at("k").get<int>();
  REQUIRE(g.at("min_margin").get<double>() > 2 * logit_tol);  // the greedy tokens are not near-ties
  for (const nlohmann::json& c : g.at("cases")) {
    const std::vector<TokenId> tokens = c.at("tokens").get<std::vector<TokenId>>();
    const int L = int(tokens.size());
    DYNAMIC_SECTION("case of " << L << " tokens") {
      std::vector<float> feats;
      for (const nlohmann::json& f : c.at("features")) {
        const std::vector<float> row = f.get<std::vector<float>>();
        feats.insert(feats.end(), row.begin(), row.end());
      }
      // The draft, step by step: entries 0 .. L - 2 (token i + 1, feature i), then one row per chained step.
      const SlotId ds = draft.open_slot();
      SamplingParams greedy;
      greedy.temperature = 0.0f;
      draft.set_sampling(ds, greedy);
      Window dw;
      for (int i = 0; i + 1 < L; ++i) dw.rows.push_back(row(ds, tokens[size_t(i + 1)], i, false));
      dw.features = feats;
      const Window first = dw;
      for (int j = 0; j < k; ++j) {
        Row& last = dw.rows.back();
        last.want_pick = last.want_logits = last.want_feature = true;
        const RowResult r = draft.run_window(dw).back();
        const nlohmann::json& step = c.at("steps").at(size_t(j));
        INFO("step " << j);
        CHECK(max_abs_diff(r.logits, step.at("logits").get<std::vector<float>>()) <= logit_tol);
        CHECK(max_abs_diff(r.feature, step.at("feature").get<std::vector<float>>()) <= feat_tol);
        REQUIRE(r.pick == step.at("token").get<TokenId>());
        dw = Window{};
        dw.rows.push_back(row(ds, r.pick, L - 1 + j, false));
        dw.features = r.feature;
      }
      // The same proposal through run_chain (a device backend feeds the picks and features on the device).
      draft.reset_slot(ds);
      const std::vector<std::vector<TokenId>> chain = [&] {
        Window w = first;
        w.rows.back().want_pick = true;
        return draft.run_chain(w, k);
      }();
      REQUIRE(chain.size() == size_t(k));
      for (int j = 0; j < k; ++j) {
        REQUIRE(chain[size_t(j)].size() == 1u);
        CHECK(chain[size_t(j)][0] == c.at("steps").at(size_t(j)).at("token").get<TokenId>());
      }
      draft.close_slot(ds);
    }
  }
}

}  // namespace backend_test
}  // namespace strata
