#include "engine/model/model_tensors.hpp"

namespace strata {

std::string layer_tensor(int layer, const char* suffix) {
  return "model.layers." + std::to_string(layer) + "." + suffix;
}

std::vector<TensorSpec> required_tensors(const ModelConfig& c) {
  const int64_t h = c.hidden_size, q = int64_t(c.num_heads) * c.head_dim, kv = int64_t(c.num_kv_heads) * c.head_dim;
  const int64_t ff = c.intermediate_size, v = c.vocab_size;
  std::vector<TensorSpec> t;
  t.push_back({"model.embed_tokens.weight", {v, h}});
  if (c.feature_input) t.push_back({"model.fc.weight", {h, 2 * h}});
  for (int l = 0; l < c.num_layers; ++l) {
    t.push_back({layer_tensor(l, "input_layernorm.weight"), {h}});
    t.push_back({layer_tensor(l, "self_attn.q_proj.weight"), {q, h}});
    t.push_back({layer_tensor(l, "self_attn.k_proj.weight"), {kv, h}});
    t.push_back({layer_tensor(l, "self_attn.v_proj.weight"), {kv, h}});
    t.push_back({layer_tensor(l, "self_attn.o_proj.weight"), {h, q}});
    if (c.attention_bias) {
      t.push_back({layer_tensor(l, "self_attn.q_proj.bias"), {q}});
      t.push_back({layer_tensor(l, "self_attn.k_proj.bias"), {kv}});
      t.push_back({layer_tensor(l, "self_attn.v_proj.bias"), {kv}});
    }
    if (c.o_proj_bias) t.push_back({layer_tensor(l, "self_attn.o_proj.bias"), {h}});
    if (c.qk_norm) {
      t.push_back({layer_tensor(l, "self_attn.q_norm.weight"), {c.head_dim}});
      t.push_back({layer_tensor(l, "self_attn.k_norm.weight"), {c.head_dim}});
    }
    t.push_back({layer_tensor(l, "post_attention_layernorm.weight"), {h}});
    t.push_back({layer_tensor(l, "mlp.gate_proj.weight"), {ff, h}});
    t.push_back({layer_tensor(l, "mlp.up_proj.weight"), {ff, h}});
    t.push_back({layer_tensor(l, "mlp.down_proj.weight"), {h, ff}});
  }
  t.push_back({"model.norm.weight", {h}});
  if (!c.tie_word_embeddings) t.push_back({"lm_head.weight", {v, h}});
  return t;
}

}  // namespace strata
