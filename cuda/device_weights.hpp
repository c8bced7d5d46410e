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
  DeviceMatrix output;             // lm_head, or embed when tied
  std::vector<DeviceLayer> layers;
  const float* final_norm = nullptr;
  size_t bytes = 0;
};

// Uploads every tensor load_model checked, logging progress (percent, GB/s). Throws strata::Error when the
// device cannot hold them.
DeviceWeights upload_weights(const Model& model, bool round_to_bf16);

}  // namespace cuda
}  // namespace strata
