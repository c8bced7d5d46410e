// The model's weights as fp32 arrays the CPU kernels read directly, converted once at backend construction
// (bf16/f16 widen exactly). q/k/v and gate/up are stacked into one matrix each so a layer makes one pass over
// its input per stack; stacking changes which matrix a row lives in, not how any output element is summed.
#pragma once
#include <vector>

#include "engine/model/weights.hpp"

namespace strata {
namespace cpu {

struct CpuLayer {
  std::vector<float> attn_norm;  // [hidden]
  std::vector<float> wqkv;       // [q_dim + 2 kv_dim, hidden]: q rows, then k rows, then v rows
  std::vector<float> bqkv;       // [q_dim + 2 kv_dim] or empty
  std::vector<float> q_norm, k_norm;  // [head_dim] or empty
  std::vector<float> wo;         // [hidden, q_dim]
  std::vector<float> bo;         // [hidden] or empty
  std::vector<float> mlp_norm;   // [hidden]
  std::vector<float> wgu;        // [2 intermediate, hidden]: gate rows, then up rows
  std::vector<float> wdown;      // [hidden, intermediate]
};

struct CpuWeights {
  std::vector<float> embed;  // [vocab, hidden]
  std::vector<float> fc;     // [hidden, 2 hidden] for a feature-reading model (ModelConfig::feature_input), else empty
  std::vector<CpuLayer> layers;
  std::vector<float> final_norm;
  std::vector<float> lm_head;  // [vocab, hidden]; empty when tied to embed
  const std::vector<float>& output() const { return lm_head.empty() ? embed : lm_head; }
};

// Reads every tensor load_model checked; throws strata::Error if the checkpoint lacks one.
CpuWeights convert_weights(const Model& model);

}  // namespace cpu
}  // namespace strata
