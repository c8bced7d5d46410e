// Rotary position embeddings as transformers' Llama/Qwen apply them: dimension i < d/2 pairs with i + d/2
// ("rotate_half"), frequencies theta^(-2i/d), optionally reshaped by llama3 scaling. cos/sin are tabulated
// per position once, so a position's rotation is the same numbers in every window.
#pragma once
#include <vector>

#include "engine/model/model_config.hpp"
#include "engine/model/weights.hpp"

namespace strata {
namespace cpu {

// head_dim / 2 inverse frequencies, fp32 as transformers computes them (then llama3-adjusted if asked).
// freq_dtype F16/BF16 rounds them to that precision, as transformers does after model.to(half/bfloat16)
// casts the rotary buffer; only reference-parity checks of such runs want it.
std::vector<float> rope_inv_freq(const RopeConfig& rope, int head_dim, DType freq_dtype = DType::F32);

class RopeTable {
 public:
  RopeTable(const RopeConfig& rope, int head_dim, int max_positions, DType freq_dtype = DType::F32);
  // Rotates n_heads consecutive head vectors of head_dim floats in place for position pos.
  void apply(float* heads, int n_heads, int pos) const;

 private:
  int half_ = 0;
  std::vector<float> cos_, sin_;  // [max_positions][half]
};

}  // namespace cpu
}  // namespace strata
