// What an architecture needs to know about a checkpoint, parsed from config.json (+ generation_config.json,
// tokenizer_config.json). Parsing lives in model_config.cpp; every problem is a strata::Error naming the field.
#pragma once
#include <string>
#include <vector>

#include "engine/core/types.hpp"

namespace strata {

enum class Arch { Llama, Qwen2, Qwen3 };

struct RopeConfig {
  std::string type = "default";  // "default" or "llama3"
  double theta = 10000.0;
  // llama3 scaling
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int original_max_position_embeddings = 8192;
};

struct ModelConfig {
  Arch arch = Arch::Llama;
  std::string architecture;  // as written in config.json, e.g. "Qwen3ForCausalLM"
  int hidden_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int intermediate_size = 0;
  int vocab_size = 0;
  int max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // Qwen2: q/k/v projections carry a bias
  bool o_proj_bias = false;     // Llama/Qwen3 with attention_bias: o_proj carries one too
  bool qk_norm = false;         // Qwen3: RMSNorm over each head of q and k before RoPE
  // A feature-reading draft (architecture StrataFeatureDraft, tools/train/eagle_draft.py): a Qwen3 stack whose
  // input row is model.fc applied to [embedding(token); feature], the feature being the target's final-normed
  // hidden state (Window::features). Its embedding and LM head are the target's (load_model's `target`).
  bool feature_input = false;
  RopeConfig rope;
};

struct GenerationDefaults {
  std::vector<TokenId> eos_token_ids;  // union of generation_config.json and config.json eos ids
  int bos_token_id = -1;
  // sampling defaults a checkpoint may carry (used when a request does not set them)
  float temperature = -1.0f, top_p = -1.0f;
  int top_k = -1;
};

struct TokenizerMeta {
  std::string chat_template;  // from tokenizer_config.json (string, or the "default" of a named list)
  std::string bos_token;      // string or {"content": ...}
  std::string eos_token;
  bool add_bos_token = false;
};

ModelConfig parse_model_config(const std::string& config_json_text);  // throws strata::Error
}  // namespace strata
