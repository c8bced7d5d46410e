#include "engine/cpu/cpu_weights.hpp"

#include "engine/model/model_tensors.hpp"

namespace strata {
namespace cpu {
namespace {

void append(std::vector<float>* dst, const TensorView& t) {
  std::vector<float> v = t.to_f32();
  dst->insert(dst->end(), v.begin(), v.end());
}

}  // namespace

CpuWeights convert_weights(const Model& model) {
  const ModelConfig& c = model.config;
  const Checkpoint& ck = *model.checkpoint;
  const int64_t h = c.hidden_size, q = int64_t(c.num_heads) * c.head_dim, kv = int64_t(c.num_kv_heads) * c.head_dim;
  const int64_t ff = c.intermediate_size, v = c.vocab_size;
  CpuWeights w;
  w.embed = ck.get("model.embed_tokens.weight", {v, h}).to_f32();
  if (c.feature_input) w.fc = ck.get("model.fc.weight", {h, 2 * h}).to_f32();
  for (int l = 0; l < c.num_layers; ++l) {
    auto get = [&](const char* suffix, std::vector<int64_t> shape) -> const TensorView& {
      return ck.get(layer_tensor(l, suffix), shape);
    };
    CpuLayer L;
    L.attn_norm = get("input_layernorm.weight", {h}).to_f32();
    append(&L.wqkv, get("self_attn.q_proj.weight", {q, h}));
    append(&L.wqkv, get("self_attn.k_proj.weight", {kv, h}));
    append(&L.wqkv, get("self_attn.v_proj.weight", {kv, h}));
    if (c.attention_bias) {
      append(&L.bqkv, get("self_attn.q_proj.bias", {q}));
      append(&L.bqkv, get("self_attn.k_proj.bias", {kv}));
      append(&L.bqkv, get("self_attn.v_proj.bias", {kv}));
    }
    if (c.qk_norm) {
      L.q_norm = get("self_attn.q_norm.weight", {c.head_dim}).to_f32();
      L.k_norm = get("self_attn.k_norm.weight", {c.head_dim}).to_f32();
    }
    L.wo = get("self_attn.o_proj.weight", {h, q}).to_f32();
    if (c.o_proj_bias) L.bo = get("self_attn.o_proj.bias", {h}).to_f32();
    L.mlp_norm = get("post_attention_layernorm.weight", {h}).to_f32();
    append(&L.wgu, get("mlp.gate_proj.weight", {ff, h}));
    append(&L.wgu, get("mlp.up_proj.weight", {ff, h}));
    L.wdown = get("mlp.down_proj.weight", {h, ff}).to_f32();
    w.layers.push_back(std::move(L));
  }
  w.final_norm = ck.get("model.norm.weight", {h}).to_f32();
  if (!c.tie_word_embeddings) w.lm_head = ck.get("lm_head.weight", {v, h}).to_f32();
  return w;
}

}  // namespace cpu
}  // namespace strata
