// The forward pass of one window shape as a sequence of kernel launches on one stream: what a window graph
// captures. Nothing here touches the host or synchronizes, so the whole sequence records into one graph and
// replays with no host work per layer.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "cuda/device_weights.hpp"
#include "cuda/gemm.hpp"
#include "cuda/window_meta.hpp"
#include "engine/model/model_config.hpp"

namespace strata {
namespace cuda {

// Device buffers sized for the largest window (max_window_rows rows, max_output_rows logit rows). A split GEMM
// (forward.cpp) writes 2T rows into in16, qkv, tmp, gu and logits, so those hold twice the split windows' rows.
struct Workspace {
  float* x = nullptr;        // [T][hidden] residual stream
  float* xn = nullptr;       // [T][hidden] normed input of a matmul
  float* tmp = nullptr;      // [T][hidden] sub-layer output
  float* qkv = nullptr;      // [T][q_dim + 2 kv_dim]
  float* att = nullptr;      // [T][q_dim]
  float* gu = nullptr;       // [T][2 intermediate]
  float* act = nullptr;      // [T][intermediate]
  void* in16 = nullptr;      // [T][max(hidden, q_dim, intermediate)] bf16: the GEMM path's matmul input
  float* part_acc = nullptr; // attention splits
  float* part_ml = nullptr;
  float* fin = nullptr;      // [R][hidden]
  float* feat = nullptr;     // [T][hidden]: every row's feature (WindowShape::features)
  float* feat_in = nullptr;  // [T][hidden]: a feature-reading model's input features (uploaded per window)
  float* xcat = nullptr;     // [T][2 hidden]: its fc matrix's input rows
  float* logits = nullptr;   // [R][vocab]
  int* picks = nullptr;      // [R]
  float* logprobs = nullptr; // [R][kLogprobWords]: launch_logprobs
  float* ss = nullptr;       // [T][ceil(hidden / 16)]: partial sums of squares of x (MatvecFold)
  int32_t* meta = nullptr;   // the window's metadata block (window_meta.hpp)
  int* attn_counters = nullptr;  // [n_heads]: launch_attention_row's split counters
  float* pick_value = nullptr;   // [R][SM count]: the fused GEMV LM head's per-block picks (launch_argmax_parts)
  int* pick_index = nullptr;
  int max_splits = 0;
};

struct ForwardContext {
  const ModelConfig* cfg = nullptr;
  const DeviceWeights* w = nullptr;
  Workspace ws;
  KvLayout kv;               // layer_offset 0; forward() adds each layer's
  size_t kv_layer_stride = 0;  // floats per layer: cells x kv_dim
  const float* rope_cos = nullptr;
  const float* rope_sin = nullptr;
  Gemm* gemm = nullptr;      // the window's cuBLAS matmuls (gemm.hpp)
  int gemm_min_rows = 65;
  int split_gemm_max_rows = 0;  // GEMM windows of up to this many rows split their activations (forward.cpp)
  bool attention_tc = true;     // CudaBackendOptions::attention_tc
  bool attention_tc_lean = false;  // CudaBackendOptions::attention_tc_lean
  bool fused_gemv = true;       // CudaBackendOptions::fused_gemv
  int fused_gemv_rows = 0;      // CudaBackendOptions::fused_gemv_rows
  bool fused_row_attention = false;  // CudaBackendOptions::fused_row_attention
  bool device_logprobs = true;       // CudaBackendOptions::device_logprobs
  bool skinny_fold = true;           // the skinny kernel's windows fold norms and residual adds (forward.cpp)
  bool skinny_rope = true;           // and with skinny_fold, the QKV projection carries the RoPE step
  bool skinny_edge_fold = true;      // and with skinny_fold, the embedding and the LM head fold the first and
                                     // final norms
  EmbedFeed feed;                    // a chained step's tokens: the previous step's picks (run_chain)
  // A feature-reading model's input features, a row each: ws.feat_in, or for a chained step the previous
  // step's output rows' features (ws.fin, which such a model always writes).
  const float* features_in = nullptr;
};

// Launches the whole window: embedding (a feature-reading model: fc over [embedding; feature]), every layer,
// every row's feature when the shape asks, final norm of the output rows, LM head,
// argmax and the seeded samples (and device logprobs) the metadata asks for. draws false leaves out the
// kernels of the last two, for graphs whose rows are greedy argmaxes by contract (run_chain's steps).
void record_forward(const ForwardContext& ctx, const WindowShape& shape, cudaStream_t stream, bool draws = true);

// Whether the fused GEMV can take every matmul of the model (bf16 weights, inner dimensions it stages).
bool gemv_fits(const ModelConfig& c, WType type);

}  // namespace cuda
}  // namespace strata
