// The model's weights on the device. Matrices are bf16, or fp32 when the checkpoint stores f16/f32 and the
// caller did not ask to round (fp32 keeps their exact values, so the CUDA backend can match the CPU
// reference's greedy tokens on such checkpoints). Norm weights and biases are always fp32 (exact and tiny).
// q/k/v and gate/up are stacked like the CPU backend's, so each sub-layer makes one pass over its input.
#pragma once
#include <cuda_runtime_api.h>

#include <vector>

#include "cuda/device_buffer.hpp"
#include "cuda/kernels/kernels.hpp"
#include "engine/model/weights.hpp"

namespace strata {
namespace cuda {

struct DeviceMatrix {
  const void* ptr = nullptr;
  WType type = WType::BF16;
  int rows = 0, cols = 0;  // [rows][cols] row-major: rows are outputs
};

struct DeviceLayer {
  const float* attn_norm = nullptr;
  DeviceMatrix wqkv;               // [q_dim + 2 kv_dim, hidden]
  const float* bqkv = nullptr;     // or null
  const float* q_norm = nullptr;   // or null
  const float* k_norm = nullptr;
  DeviceMatrix wo;                 // [hidden, q_dim]
  const float* bo = nullptr;       // or null
  const float* mlp_norm = nullptr;
  DeviceMatrix wgu;                // [2 intermediate, hidden]
  DeviceMatrix wdown;              // [hidden, intermediate]
};

struct DeviceWeights {
  DeviceBuffer storage;
  WType type = WType::BF16;
  DeviceMatrix embed;              // [vocab, hidden]
  DeviceMatrix fc;                 // [hidden, 2 hidden]: a feature-reading model's input matrix, else null
  // prepare_feature_fold's split of fc, for the skinny kernel's folded windows: fc's feature half as its own
  // [hidden, hidden] matrix, and its embedding half applied to every token's embedding row, [vocab][hidden]
  // fp32, so a row's input is fc_embed[token] + fc_feature feature (one matmul launch). Null until prepared.
  DeviceMatrix fc_feature;
  const float* fc_embed = nullptr;
  DeviceBuffer fc_storage;
  DeviceMatrix output;             // lm_head, or embed when tied
  std::vector<DeviceLayer> layers;
  const float* final_norm = nullptr;
  size_t bytes = 0;
};

// Uploads every tensor load_model checked, logging progress (percent, GB/s). Throws strata::Error when the
// device cannot hold them.
DeviceWeights upload_weights(const Model& model, bool round_to_bf16);

// Fills fc_feature and fc_embed of a feature-reading model with bf16 weights (synchronizes `stream`): the
// embedding half of fc times each token's embedding row, by the skinny kernel in fp32 (every product of a bf16
// embedding value and a bf16 weight exact, the sums fp32). Returns the bytes it allocated.
size_t prepare_feature_fold(DeviceWeights& w, int vocab, int hidden, cudaStream_t stream);

}  // namespace cuda
}  // namespace strata
