// Reference parity (DESIGN.md invariant 4): every fixture under tests/data/models that carries a golden.json
// written by Hugging Face transformers (float32) must be reproduced by the CPU backend: the listed top logits
// within 1e-3 x max|logit|, and the 32 greedy tokens identical. The prompt runs as one window, the
// continuation as single-row decode windows, the way the engine drives a backend.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/cpu/cpu_backend.hpp"

using namespace strata;

namespace {

std::vector<std::string> golden_dirs() {
  const std::string root = std::string(STRATA_SOURCE_DIR) + "/tests/data/models";
  std::vector<std::string> out;
  DIR* d = opendir(root.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    struct stat st;
    if (name[0] != '.' && stat((root + "/" + name + "/golden.json").c_str(), &st) == 0) out.push_back(root + "/" + name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

// tools/fixtures/make_fixtures.py ran transformers on model.to(storage_dtype).to(float32): the weights are
// exactly the stored ones, but the round trip also rounded the rotary inv_freq buffer to the storage dtype,
// so that reference computed RoPE with storage-precision frequencies. A golden.json may say otherwise with
// "rope_inv_freq_dtype" (e.g. "float32" when made from a checkpoint loaded in float32).
DType reference_rope_dtype(const nlohmann::json& golden) {
  std::string t = golden.value("rope_inv_freq_dtype", golden.value("storage_dtype", std::string("float32")));
  if (t.rfind("torch.", 0) == 0) t = t.substr(6);
  if (t == "bfloat16") return DType::BF16;
  if (t == "float16") return DType::F16;
  REQUIRE(t == "float32");
  return DType::F32;
}

}  // namespace

TEST_CASE("the fixture checkpoints with goldens are present") {
  // The parity test below would pass vacuously without them.
  CHECK(golden_dirs().size() >= 4);
}

TEST_CASE("CPU backend matches transformers' logits and greedy tokens on every golden fixture") {
  for (const std::string& dir : golden_dirs()) {
    DYNAMIC_SECTION(dir.substr(dir.rfind('/') + 1)) {
      const nlohmann::json golden = read_json(dir + "/golden.json");
      auto model = load_model(dir);
      CpuBackendOptions opts{1, 256, 2};
      opts.rope_freq_dtype = reference_rope_dtype(golden);
      CpuBackend be(*model, opts);
      const SlotId slot = be.open_slot();
      REQUIRE(slot != kNoSlot);
      be.set_sampling(slot, SamplingParams{0.0f});
      for (const auto& prompt : golden["prompts"]) {
        INFO("prompt: " << prompt["text"].get<std::string>());
        be.reset_slot(slot);
        const auto ids = prompt["ids"].get<std::vector<TokenId>>();
        const float tol = 1e-3f * prompt["max_abs_logit"].get<float>();
        Window w;
        for (size_t p = 0; p < ids.size(); ++p) {
          Row r;
          r.slot = slot;
          r.token = ids[p];
          r.pos = int32_t(p);
          r.want_logits = true;
          r.want_pick = p + 1 == ids.size();
          w.rows.push_back(r);
        }
        const std::vector<RowResult> res = be.run_window(w);
        for (const auto& at : prompt["logits"]) {
          const int pos = at["pos"].get<int>();
          const auto top_ids = at["top_ids"].get<std::vector<TokenId>>();
          const auto top_values = at["top_values"].get<std::vector<float>>();
          const std::vector<float>& ours = res[size_t(pos)].logits;
          REQUIRE(int(ours.size()) == model->config.vocab_size);
          for (size_t k = 0; k < top_ids.size(); ++k) {
            INFO("pos " << pos << " token " << top_ids[k]);
            CHECK(std::fabs(ours[size_t(top_ids[k])] - top_values[k]) <= tol);
          }
        }
        std::vector<TokenId> greedy{res.back().pick};
        const auto want = prompt["greedy"].get<std::vector<TokenId>>();
        while (greedy.size() < want.size()) {
          Row r;
          r.slot = slot;
          r.token = greedy.back();
          r.pos = int32_t(ids.size() + greedy.size() - 1);
          r.want_pick = true;
          greedy.push_back(be.run_window(Window{{r}})[0].pick);
        }
        CHECK(greedy == want);
      }
    }
  }
}
