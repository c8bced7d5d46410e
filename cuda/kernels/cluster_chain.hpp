// A greedy chain of one slot's decode steps in one kernel, for a small draft model (launch_cluster_chain):
// one thread-block cluster (16 blocks where the device schedules that many, else 8) runs every layer of
// every step, its blocks meeting at cluster barriers (a few hundred nanoseconds each) instead of at kernel
// boundaries (~2-4 us each on a model whose matrices take ~1 us to read), and feeds each step's argmax to
// the next without leaving the kernel. A one-layer draft step takes ~30 us as eleven launches; here it is
// six barriers. Its sums run in another order than the window kernels', so its logits are not their bits
// (the draft only proposes: the target verifies every token).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.hpp"

namespace strata {
namespace cuda {

// One layer's weights (bf16 matrices, fp32 vectors; null where the model has none).
struct ChainLayer {
  const void* wqkv = nullptr;  // [q_dim + 2 kv_dim][hidden]
  const void* wo = nullptr;    // [hidden][q_dim]
  const void* wgu = nullptr;   // [2 ff][hidden]: gate rows, then up rows
  const void* wdown = nullptr; // [hidden][ff]
  const float* attn_norm = nullptr;
  const float* mlp_norm = nullptr;
  const float* bqkv = nullptr;
  const float* q_norm = nullptr;
  const float* k_norm = nullptr;
  const float* bo = nullptr;
};

constexpr int kChainMaxFirst = 8;    // rows a chain's first step may feed (the slot's catch-up)
constexpr int kChainMaxBlocks = 16;  // blocks of the cluster
constexpr int kChainMaxSteps = 64;
constexpr int kChainStamps = 8;      // ChainParams::stamps per row

struct ChainParams {
  const ChainLayer* layers = nullptr;  // [n_layers], device memory
  int n_layers = 0;
  const void* embed = nullptr;         // [vocab][hidden] bf16
  const void* output = nullptr;        // [vocab][hidden] bf16 (the embedding when tied)
  const float* final_norm = nullptr;
  int hidden = 0, ff = 0, vocab = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
  float eps = 1e-6f;
  const float* cos = nullptr;          // the RoPE tables ([max_context][head_dim / 2])
  const float* sin = nullptr;
  KvLayout kv;                         // layer_offset 0; each layer adds kv_layer_stride
  size_t kv_layer_stride = 0;
  // The chain: rows first_tokens[0 .. n_first) at positions pos0.. of `slot`, the last of them picking, then
  // steps - 1 more rows, each fed the previous pick. picks[j] is step j's pick (j < steps).
  int slot = 0, pos0 = 0, n_first = 0, steps = 0;
  int first_tokens[kChainMaxFirst] = {};
  int* picks = nullptr;
  // Scratch in device memory (the backend's workspace): one row's x, qkv, attention output, SwiGLU output,
  // the attention splits' partials and counters, each block's best logit.
  float* x = nullptr;
  float* qkv = nullptr;
  float* att = nullptr;
  float* act = nullptr;
  float* part_acc = nullptr;
  float* part_ml = nullptr;
  int max_splits = 0;
  int* counters = nullptr;   // [n_heads], zero between launches
  float* best_val = nullptr; // [kChainMaxBlocks]
  int* best_idx = nullptr;
  // Each row's weights asked of the L2 when it starts (all layers', and the LM head's for a picking row).
  bool prefetch = false;
  // Measurement: [rows][kChainStamps] %globaltimer values: the row's start, then after its last layer's
  // q/k/v, attention, o, gate/up and down barriers and after the pick's barrier (null: none taken).
  unsigned long long* stamps = nullptr;
};

// Whether a model of this shape runs as a cluster chain (bf16 weights are the caller's check): head_dim a
// multiple of 8 up to 256, query heads a multiple of the KV heads, every matmul's inner dimension a multiple
// of 8 and its input row within the kernel's shared memory.
bool cluster_chain_supports(int hidden, int q_dim, int ff, int n_heads, int n_kv_heads, int head_dim);
// Blocks of the cluster the device runs (16 or 8), 0 when it schedules neither (then chains run as windows).
int cluster_chain_blocks();
// Throws strata::Error for a shape cluster_chain_supports refuses, an fp32 KV arena (the kernel reads bf16
// ones only), a chain past its limits or a device that runs no cluster.
void launch_cluster_chain(const ChainParams& p, cudaStream_t stream);

}  // namespace cuda
}  // namespace strata
