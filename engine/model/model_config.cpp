// config.json -> ModelConfig, accepting both transformers v4 (rope_theta + rope_scaling, torch_dtype) and v5
// (rope_parameters, dtype) spellings.
#include "engine/model/model_config.hpp"

#include <cmath>

#include "engine/model/json_fields.hpp"

namespace strata {
namespace {

constexpr const char* kWhere = "config.json";
constexpr const char* kSupportedArchs = "LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, StrataFeatureDraft";
constexpr const char* kSupportedRope = "default, llama3";

Arch parse_arch(const nlohmann::json& j, std::string* name) {
  if (!j.contains("architectures") || !j["architectures"].is_array() || j["architectures"].empty() ||
      !j["architectures"][0].is_string())
    throw Error(std::string(kWhere) + ": architectures is missing (supported: " + kSupportedArchs + ")");
  *name = j["architectures"][0].get<std::string>();
  if (*name == "LlamaForCausalLM") return Arch::Llama;
  if (*name == "Qwen2ForCausalLM") return Arch::Qwen2;
  if (*name == "Qwen3ForCausalLM" || *name == "StrataFeatureDraft") return Arch::Qwen3;
  throw Error(std::string(kWhere) + ": unsupported architecture \"" + *name + "\" (supported: " + kSupportedArchs +
              ")");
}

// One rope description: v5's rope_parameters or v4's rope_scaling (theta then comes from the top level).
void parse_rope_object(const nlohmann::json& r, const std::string& field, RopeConfig* rope) {
  if (!r.is_object()) throw Error(std::string(kWhere) + ": " + field + " must be an object, found " + r.dump());
  JsonFields f(r, std::string(kWhere) + " " + field);
  std::string type = f.string("rope_type", f.string("type", "default"));
  if (type != "default" && type != "llama3")
    throw Error(std::string(kWhere) + ": unsupported rope type \"" + type + "\" in " + field +
                " (supported: " + kSupportedRope + ")");
  rope->type = type;
  rope->theta = f.number("rope_theta", rope->theta);
  if (type == "llama3") {
    rope->factor = f.number("factor", rope->factor);
    rope->low_freq_factor = f.number("low_freq_factor", rope->low_freq_factor);
    rope->high_freq_factor = f.number("high_freq_factor", rope->high_freq_factor);
    rope->original_max_position_embeddings =
        f.positive("original_max_position_embeddings", rope->original_max_position_embeddings);
    if (!(rope->factor > 0)) throw f.error("factor", "must be > 0");
    if (!(rope->high_freq_factor > rope->low_freq_factor) || !(rope->low_freq_factor > 0))
      throw f.error("high_freq_factor", "must be greater than low_freq_factor > 0");
  }
}

}  // namespace

ModelConfig parse_model_config(const std::string& text) {
  const nlohmann::json j = parse_json_object(text, kWhere);
  JsonFields f(j, kWhere);
  ModelConfig c;
  c.arch = parse_arch(j, &c.architecture);

  c.hidden_size = f.positive("hidden_size");
  c.num_layers = f.positive("num_hidden_layers");
  c.num_heads = f.positive("num_attention_heads");
  c.num_kv_heads = f.positive("num_key_value_heads", c.num_heads);
  c.intermediate_size = f.positive("intermediate_size");
  c.vocab_size = f.positive("vocab_size");
  c.max_position_embeddings = f.positive("max_position_embeddings", c.arch == Arch::Llama ? 2048 : 32768);
  c.rms_norm_eps = f.number("rms_norm_eps", 1e-6);
  if (!(c.rms_norm_eps > 0) || !std::isfinite(c.rms_norm_eps)) throw f.error("rms_norm_eps", "must be > 0");

  // Qwen3 (and newer Llama configs) state head_dim, which may differ from hidden_size / num_heads.
  if (f.has("head_dim")) {
    c.head_dim = f.positive("head_dim");
  } else {
    if (c.hidden_size % c.num_heads != 0)
      throw f.error("hidden_size", "is not divisible by num_attention_heads and head_dim is not given");
    c.head_dim = c.hidden_size / c.num_heads;
  }
  if (c.head_dim % 2 != 0) throw f.error("head_dim", "must be even for rotary embeddings, found " +
                                          std::to_string(c.head_dim));
  if (c.num_heads % c.num_kv_heads != 0)
    throw f.error("num_key_value_heads", "(" + std::to_string(c.num_kv_heads) +
                                             ") must divide num_attention_heads (" + std::to_string(c.num_heads) + ")");

  const std::string act = f.string("hidden_act", "silu");
  if (act != "silu") throw f.error("hidden_act", "\"" + act + "\" is not supported (supported: silu)");
  if (f.boolean("mlp_bias", false)) throw f.error("mlp_bias", "true is not supported");
  if (f.boolean("use_sliding_window", false)) throw f.error("use_sliding_window", "true is not supported");

  c.tie_word_embeddings = f.boolean("tie_word_embeddings", false);
  // Qwen2 always has q/k/v biases (its config has no switch); Llama and Qwen3 follow attention_bias, which
  // in transformers also puts a bias on o_proj.
  if (c.arch == Arch::Qwen2) {
    c.attention_bias = true;
  } else {
    c.attention_bias = f.boolean("attention_bias", false);
    c.o_proj_bias = c.attention_bias;
  }
  c.qk_norm = c.arch == Arch::Qwen3;
  if (c.architecture == "StrataFeatureDraft") {
    // What eagle_draft.py writes: fc over [embedding; feature], one attention layer, the target's embedding
    // and LM head. Anything else is a draft this loader would read wrongly.
    c.feature_input = true;
    if (!f.boolean("attention", true)) throw f.error("attention", "false (a draft without attention) is not supported");
    if (!f.has("fc_input")) throw f.error("fc_input", "is missing");
    const nlohmann::json& in = f.at("fc_input");
    if (in != nlohmann::json::array({"embedding", "feature"}))
      throw f.error("fc_input", "must be [\"embedding\", \"feature\"], found " + in.dump());
    const std::string shared = f.string("embedding_and_lm_head", "");
    if (shared != "target") throw f.error("embedding_and_lm_head", "must be \"target\", found \"" + shared + "\"");
    if (c.attention_bias) throw f.error("attention_bias", "true is not supported for StrataFeatureDraft");
  }

  // dtype only says what the weights were saved as; the safetensors headers are authoritative.
  for (const char* key : {"dtype", "torch_dtype"}) {
    std::string dt = f.string(key, "float32");
    if (dt != "float32" && dt != "float16" && dt != "bfloat16")
      throw f.error(key, "\"" + dt + "\" is not supported (supported: float32, float16, bfloat16)");
  }

  c.rope.theta = f.number("rope_theta", 10000.0);
  if (f.has("rope_parameters")) {
    parse_rope_object(f.at("rope_parameters"), "rope_parameters", &c.rope);
  } else if (f.has("rope_scaling")) {
    parse_rope_object(f.at("rope_scaling"), "rope_scaling", &c.rope);
  }
  if (!(c.rope.theta > 0) || !std::isfinite(c.rope.theta)) throw f.error("rope_theta", "must be > 0");
  return c;
}

}  // namespace strata
