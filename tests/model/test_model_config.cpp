// config.json parsing: both transformers v4 and v5 spellings, each architecture's specifics, clear errors.
#include <catch2/catch.hpp>

#include "engine/model/model_config.hpp"

using namespace strata;
using Catch::Matchers::Contains;

namespace {

std::string llama_json(const std::string& extra) {
  return R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
             "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 512)" +
         extra + "}";
}

// The base config with one field's text swapped, to test a single wrong field.
std::string swap(std::string s, const std::string& from, const std::string& to) {
  return s.replace(s.find(from), from.size(), to);
}

}  // namespace

TEST_CASE("a transformers v4 Llama config with llama3 rope_scaling parses") {
  ModelConfig c = parse_model_config(llama_json(R"(, "rope_theta": 500000.0, "torch_dtype": "bfloat16",
      "rms_norm_eps": 1e-5, "max_position_embeddings": 131072, "tie_word_embeddings": true,
      "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                       "original_max_position_embeddings": 8192})"));
  CHECK(c.arch == Arch::Llama);
  CHECK(c.architecture == "LlamaForCausalLM");
  CHECK(c.hidden_size == 64);
  CHECK(c.num_layers == 2);
  CHECK(c.num_heads == 4);
  CHECK(c.num_kv_heads == 2);
  CHECK(c.head_dim == 16);
  CHECK(c.intermediate_size == 128);
  CHECK(c.vocab_size == 512);
  CHECK(c.max_position_embeddings == 131072);
  CHECK(c.rms_norm_eps == 1e-5);
  CHECK(c.tie_word_embeddings);
  CHECK_FALSE(c.attention_bias);
  CHECK_FALSE(c.qk_norm);
  CHECK(c.rope.type == "llama3");
  CHECK(c.rope.theta == 500000.0);
  CHECK(c.rope.factor == 8.0);
  CHECK(c.rope.low_freq_factor == 1.0);
  CHECK(c.rope.high_freq_factor == 4.0);
  CHECK(c.rope.original_max_position_embeddings == 8192);
}

TEST_CASE("v4 rope_scaling may name its kind with the older \"type\" key") {
  ModelConfig c = parse_model_config(llama_json(R"(, "rope_scaling": {"type": "default"}, "rope_theta": 20.0)"));
  CHECK(c.rope.type == "default");
  CHECK(c.rope.theta == 20.0);
}

TEST_CASE("a transformers v5 config takes rope from rope_parameters and accepts dtype") {
  ModelConfig c = parse_model_config(llama_json(R"(, "dtype": "float16",
      "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "low_freq_factor": 2.0,
                          "high_freq_factor": 8.0, "original_max_position_embeddings": 64})"));
  CHECK(c.rope.type == "llama3");
  CHECK(c.rope.theta == 500000.0);
  CHECK(c.rope.factor == 32.0);
  CHECK(c.rope.low_freq_factor == 2.0);
  CHECK(c.rope.high_freq_factor == 8.0);
  CHECK(c.rope.original_max_position_embeddings == 64);
}

TEST_CASE("defaults: kv heads = heads, rope default with theta 10000, untied") {
  ModelConfig c = parse_model_config(
      R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 32, "num_hidden_layers": 1,
          "num_attention_heads": 2, "intermediate_size": 8, "vocab_size": 10})");
  CHECK(c.num_kv_heads == 2);
  CHECK(c.head_dim == 16);
  CHECK(c.rope.type == "default");
  CHECK(c.rope.theta == 10000.0);
  CHECK_FALSE(c.tie_word_embeddings);
}

TEST_CASE("Qwen2 always carries q/k/v biases and no o_proj bias") {
  ModelConfig c = parse_model_config(R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 48,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
      "vocab_size": 512, "rope_theta": 1000000.0, "use_sliding_window": false, "rope_scaling": null})");
  CHECK(c.arch == Arch::Qwen2);
  CHECK(c.attention_bias);
  CHECK_FALSE(c.o_proj_bias);
  CHECK(c.head_dim == 12);
  CHECK(c.rope.theta == 1000000.0);
}

TEST_CASE("Qwen3 has per-head q/k norms and a head_dim independent of hidden/heads") {
  ModelConfig c = parse_model_config(R"({"architectures": ["Qwen3ForCausalLM"], "hidden_size": 64,
      "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 48,
      "intermediate_size": 128, "vocab_size": 512, "rope_parameters": {"rope_type": "default", "rope_theta": 1e6}})");
  CHECK(c.arch == Arch::Qwen3);
  CHECK(c.qk_norm);
  CHECK(c.head_dim == 48);
  CHECK_FALSE(c.attention_bias);
  CHECK(c.rope.theta == 1e6);
}

TEST_CASE("Llama with attention_bias biases q, k, v and o") {
  ModelConfig c = parse_model_config(llama_json(R"(, "attention_bias": true)"));
  CHECK(c.attention_bias);
  CHECK(c.o_proj_bias);
}

TEST_CASE("an unsupported architecture is named along with the supported ones") {
  CHECK_THROWS_WITH(parse_model_config(R"({"architectures": ["MistralForCausalLM"], "hidden_size": 8})"),
                    Contains("unsupported architecture \"MistralForCausalLM\"") && Contains("LlamaForCausalLM") &&
                        Contains("Qwen2ForCausalLM") && Contains("Qwen3ForCausalLM"));
  CHECK_THROWS_WITH(parse_model_config(R"({"hidden_size": 8})"), Contains("architectures is missing"));
}

TEST_CASE("an unsupported rope type is named along with the supported ones") {
  CHECK_THROWS_WITH(parse_model_config(llama_json(R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4.0})")),
                    Contains("unsupported rope type \"yarn\"") && Contains("default, llama3"));
  CHECK_THROWS_WITH(parse_model_config(llama_json(R"(, "rope_parameters": {"rope_type": "dynamic"})")),
                    Contains("\"dynamic\"") && Contains("rope_parameters"));
}

TEST_CASE("missing or ill-typed fields are named") {
  CHECK_THROWS_WITH(parse_model_config(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64})"),
                    Contains("config.json: num_hidden_layers is missing"));
  CHECK_THROWS_WITH(parse_model_config(swap(llama_json(R"(, "hidden_size": "64")"), "\"hidden_size\": 64,", "")),
                    Contains("hidden_size must be an integer"));
  CHECK_THROWS_WITH(parse_model_config(swap(llama_json(R"(, "num_key_value_heads": 3)"), "\"num_key_value_heads\": 2,", "")),
                    Contains("num_key_value_heads (3) must divide num_attention_heads (4)"));
  CHECK_THROWS_WITH(parse_model_config(llama_json(R"(, "hidden_act": "gelu")")), Contains("hidden_act \"gelu\""));
  CHECK_THROWS_WITH(parse_model_config(llama_json(R"(, "torch_dtype": "int8")")), Contains("torch_dtype \"int8\""));
  CHECK_THROWS_WITH(parse_model_config(swap(llama_json(R"(, "vocab_size": 0)"), "\"vocab_size\": 512", "\"x\": 1")),
                    Contains("vocab_size must be a positive integer"));
  CHECK_THROWS_WITH(parse_model_config("{oops"), Contains("config.json: not valid JSON"));
  CHECK_THROWS_WITH(parse_model_config(llama_json(R"(, "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
      "low_freq_factor": 4.0, "high_freq_factor": 1.0})")), Contains("high_freq_factor"));
}
