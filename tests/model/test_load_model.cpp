// load_model on the committed fixture checkpoints and on hand-made directories with one thing wrong.
#include <catch2/catch.hpp>

#include "engine/model/model_tensors.hpp"
#include "engine/model/weights.hpp"
#include "tests/model/safetensors_writer.hpp"

using namespace strata;
using namespace strata_test;
using Catch::Matchers::Contains;

namespace {

const std::string kModels = std::string(STRATA_SOURCE_DIR) + "/tests/data/models";

const char* kTinyConfig = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4, "num_hidden_layers": 1,
  "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 6, "vocab_size": 5, "eos_token_id": 3})";

// A complete tiny Llama directory; `skip` leaves one tensor out, `reshape` gives one a wrong shape.
std::string tiny_model(const std::string& name, const std::string& skip = "", const std::string& reshape = "",
                       bool with_lm_head = true) {
  const std::string d = scratch_dir(name);
  write_text(d + "/config.json", kTinyConfig);
  ModelConfig c = parse_model_config(kTinyConfig);
  c.tie_word_embeddings = !with_lm_head;
  std::vector<FakeTensor> ts;
  for (const TensorSpec& s : required_tensors(c)) {
    if (s.name == skip) continue;
    std::vector<int64_t> shape = s.shape;
    if (s.name == reshape) shape.push_back(1);
    ts.push_back(f32_tensor(s.name, shape));
  }
  write_safetensors(d + "/model.safetensors", ts);
  return d;
}

}  // namespace

TEST_CASE("every committed fixture loads with the architecture's tensors checked") {
  auto llama = load_model(kModels + "/llama");
  CHECK(llama->config.arch == Arch::Llama);
  CHECK_FALSE(llama->config.tie_word_embeddings);
  CHECK(llama->checkpoint->get("lm_head.weight").dtype == DType::BF16);
  CHECK(llama->tokenizer_meta.eos_token == "<|im_end|>");
  CHECK_FALSE(llama->tokenizer_meta.chat_template.empty());
  REQUIRE(llama->generation.eos_token_ids.size() == 1);

  auto l3 = load_model(kModels + "/llama3rope");
  CHECK(l3->config.rope.type == "llama3");
  CHECK(l3->config.tie_word_embeddings);
  CHECK_FALSE(l3->checkpoint->has("lm_head.weight"));
  CHECK(l3->checkpoint->get("model.embed_tokens.weight").dtype == DType::F16);

  auto q2 = load_model(kModels + "/qwen2");
  CHECK(q2->config.arch == Arch::Qwen2);
  CHECK(q2->checkpoint->has("model.layers.0.self_attn.q_proj.bias"));

  auto q3 = load_model(kModels + "/qwen3");
  CHECK(q3->config.qk_norm);
  CHECK(q3->config.head_dim == 48);
  CHECK(q3->generation.eos_token_ids.size() == 2);

  auto sh = load_model(kModels + "/qwen3_sharded");
  CHECK(sh->config.num_kv_heads == 1);
  CHECK(sh->checkpoint->tensors().size() == required_tensors(sh->config).size());
}

TEST_CASE("a hand-made checkpoint with every tensor loads; without lm_head it is tied") {
  auto m = load_model(tiny_model("lm_full"));
  CHECK_FALSE(m->config.tie_word_embeddings);
  CHECK(m->generation.eos_token_ids == std::vector<TokenId>{3});
  auto t = load_model(tiny_model("lm_tied", "", "", false));
  CHECK(t->config.tie_word_embeddings);
}

TEST_CASE("a missing tensor is named") {
  CHECK_THROWS_WITH(load_model(tiny_model("lm_missing", "model.layers.0.mlp.up_proj.weight")),
                    Contains("tensor model.layers.0.mlp.up_proj.weight missing"));
}

TEST_CASE("a tensor of the wrong shape is named with the expected and found shapes") {
  CHECK_THROWS_WITH(load_model(tiny_model("lm_shape", "", "model.layers.0.self_attn.k_proj.weight")),
                    Contains("tensor model.layers.0.self_attn.k_proj.weight: expected [2, 4], found [2, 4, 1]"));
}

TEST_CASE("missing directories and config files are named") {
  CHECK_THROWS_WITH(load_model(kModels + "/does-not-exist"), Contains("does-not-exist: model directory missing"));
  const std::string d = scratch_dir("lm_noconfig");
  CHECK_THROWS_WITH(load_model(d), Contains("config.json: file missing"));
  write_text(d + "/config.json", R"({"architectures": ["GPT2LMHeadModel"]})");
  CHECK_THROWS_WITH(load_model(d), Contains(d + "/config.json: unsupported architecture \"GPT2LMHeadModel\""));
  write_text(d + "/config.json", kTinyConfig);
  write_text(d + "/generation_config.json", R"({"eos_token_id": "x"})");
  CHECK_THROWS_WITH(load_model(d), Contains("generation_config.json: eos_token_id"));
}
