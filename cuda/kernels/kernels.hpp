// Launchers for the device kernels, one .cu file per idea. Plain pointers and a stream: the forward pass
// (forward.cpp) calls them while a stream is being captured into a window graph, so none of them allocates,
// synchronizes or reads device memory on the host. Each checks its launch (STRATA_CUDA_CHECK_LAUNCH).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "engine/sampling/sampler.hpp"  // kSamplerRankedWalk

namespace strata {
namespace cuda {

// How a weight matrix is stored on the device: bf16, or fp32 holding an f16/f32 checkpoint's exact values.
enum class WType { BF16, F32 };
inline size_t wtype_bytes(WType t) { return t == WType::BF16 ? 2 : 4; }

// A chained step's tokens (run_chain): rows r < n take picks[r], the previous step's picks (which the embedding
// also keeps in kept[r]), instead of the metadata's token words.
struct EmbedFeed {
  const int* picks = nullptr;
  int n = 0;
  int* kept = nullptr;
};
// x[r][:] = table[tokens[r]][:] widened to fp32. With norm (bf16 tables, hidden a multiple of 16): also the
// first norm's folded input for the skinny kernel (MatvecFold::ss_in), xn[r][i] = norm[i] * x[r][i] and
// ss[r][p] = the sum of squares of x[r][16 p .. 16 p + 16).
void launch_embedding(const void* table, WType t, int hidden, const int* tokens, int rows, float* x,
                      cudaStream_t stream, const float* norm = nullptr, float* xn = nullptr, float* ss = nullptr,
                      const EmbedFeed& feed = {});

// A feature-reading model's input rows (ModelConfig::feature_input): xcat[r] = [table[token r] widened to fp32;
// features[r]], 2 hidden values a row, for its fc matrix. Tokens as launch_embedding takes them (feed too).
void launch_feature_input(const void* table, WType t, int hidden, const int* tokens, int rows, const float* features,
                          float* xcat, cudaStream_t stream, const EmbedFeed& feed = {});

// The GEMM path's bf16 inputs and fp32 outputs (forward.cpp). Plain: a matmul input of `rows` rows is their bf16
// rounding, [rows][k]. Split: rows [rows, 2 rows) follow with the bf16 remainders (x - hi), so one GEMM of
// 2 rows columns reads the weights once and gives hi and remainder products, [2 rows][n], which the
// consumer adds (its `*_rem` input: the remainder half of the output, indexed like the first).
struct Bf16Out {
  void* p = nullptr;   // null: no bf16 copy
  bool split = false;  // also write the remainders after the launch's rows
};

// For output row i with source row s = row_map ? row_map[i] : i: v = x[s] + ((delta[s] + delta_rem[s]) +
// bias) (delta, delta_rem and bias optional), x[s] = v when write_back, y[i] = weight * (v * rsqrt-free
// 1/sqrt(mean(v^2) + eps)) and, when y16.p is set, its bf16 form (Bf16Out; y may then be null). The residual
// add is fused into the norm so the residual stream makes one trip through memory per sub-layer.
void launch_add_rmsnorm(float* x, const float* delta, const float* delta_rem, const float* bias, const float* weight,
                        const int* row_map, int rows, int n, float eps, bool write_back, float* y, Bf16Out y16,
                        cudaStream_t stream);

// y[i] += b[i] for i < n: the split GEMM's logits (hi products plus remainder products).
void launch_add(float* y, const float* b, size_t n, cudaStream_t stream);
// Reads bytes (a multiple of 16) of p and leaves them as they were (gemm.cpp flushes the L2 with it).
void launch_read(void* p, size_t bytes, cudaStream_t stream);

// How the KV arena stores K and V: fp32, or bf16 (half the bytes; the values are rounded once when stored
// and read back exactly, so every kernel computes on the same fp32 values whichever reads them).
enum class KvType { F32, BF16 };

// The paged KV arena: k and v each [layer][cell][kv_dim] of `type`, cell = block * block_size + offset.
// Position pos of slot s lives in cell block_table[s * table_stride + pos / block_size] * block_size + pos %
// block_size (kv_access.cuh). The table is device memory at a fixed address; the host rewrites its rows
// between windows.
struct KvLayout {
  void* k = nullptr;
  void* v = nullptr;
  KvType type = KvType::F32;
  const int32_t* block_table = nullptr;  // [slots][table_stride] physical block ids
  int table_stride = 0;       // entries per slot (ceil(max_context / block_size))
  int block_size = 0;         // positions per block
  size_t layer_offset = 0;    // elements to this layer's cells
  int kv_dim = 0;
};

struct QkvRopeParams {
  int n_heads = 0, n_kv_heads = 0, head_dim = 0;
  const float* qkv_rem = nullptr; // the split GEMM's remainder products, added first (Bf16Out), or null
  const float* bias = nullptr;    // [q_dim + 2 kv_dim] or null (Qwen2)
  const float* q_norm = nullptr;  // [head_dim] or null (Qwen3)
  const float* k_norm = nullptr;
  float eps = 1e-6f;
  const float* cos = nullptr;     // [max_context][head_dim / 2], the CPU backend's table
  const float* sin = nullptr;
  const int* pos = nullptr;       // per row
  const int* slot = nullptr;      // per row
  KvLayout kv;
};

// In place on qkv rows [q | k | v] (fp32): bias, per-head q/k RMSNorm, rotate-half RoPE on q and k; then k
// and v of each row are stored into the row's slot at the row's position.
void launch_qkv_rope(float* qkv, int rows, const QkvRopeParams& p, cudaStream_t stream);

// Attention's split of a row's history: every row attends over positions [0, pos] in splits of
// kAttnSplit positions at fixed boundaries (multiples of kAttnSplit), each an exact softmax over its
// positions; splits are then merged in order. The arithmetic of a row depends on its position and its slot's
// KV alone, never on the window.
constexpr int kAttnSplit = 128;
constexpr int kAttnQueryTile = 16;  // rows of one slot at consecutive positions that share K/V tile loads
constexpr int kAttnStagedMaxRows = 16;  // larger windows may take the pipelined attention kernel (same bits)

struct AttentionParams {
  const float* qkv = nullptr;  // q at the start of each row
  int qkv_stride = 0;
  KvLayout kv;
  int n_heads = 0, n_kv_heads = 0, head_dim = 0;
  float scale = 1.0f;
  const int* pos = nullptr;
  const int* slot = nullptr;
  const int* tile_first = nullptr;  // per query tile: its first row
  const int* tile_rows = nullptr;   // per query tile: 1..kAttnQueryTile rows
  const int* n_tiles = nullptr;     // device scalar
  int max_tiles = 0;                // grid bound (this graph's worst case)
  int max_splits = 0;               // ceil(max_context / kAttnSplit): the split stride of part_*
  int grid_splits = 0;              // splits the grid covers (>= what the window's largest position needs)
  int rows = 0;
  float* part_acc = nullptr;        // [rows][n_heads][max_splits][head_dim]
  float* part_ml = nullptr;         // [rows][n_heads][max_splits][2]
  float* out = nullptr;             // [rows][n_heads * head_dim]
  Bf16Out out16;                    // optional bf16 copy (rows rows)
  bool tc_lean = false;             // launch_attention_tc: the lean variant (attention_decode.cu)
};

size_t attention_smem_bytes(int head_dim);
// Raises the attention kernel's shared-memory limit for this head_dim; call once before any capture.
void configure_attention(int head_dim);
void launch_attention(const AttentionParams& p, cudaStream_t stream);
// launch_attention's partial kernel for windows of more than kAttnStagedMaxRows rows (attention_batch.cu);
// configure_attention configures it too.
void configure_attention_ring();
void launch_attention_partial_ring(const AttentionParams& p, cudaStream_t stream);

// Tensor-core attention for the GEMM path's decode windows from a bf16 arena (attention_decode.cu): the
// inputs and outputs of launch_attention, q and P split into bf16 hi + remainder for near-fp32 products, but
// not its summation order, so the tolerance path only. head_dim 64 or 128 with a bf16 arena, else
// strata::Error at launch. configure_attention configures it.
bool attention_tc_supports(int head_dim, KvType kv);
void configure_attention_tc(int head_dim);
void launch_attention_tc(const AttentionParams& p, cudaStream_t stream);

// A one-row window's q/k norm, RoPE, KV store, attention and split merge in one kernel (attention_row.cu),
// for the tolerance path's decode step: the inputs of launch_qkv_rope and launch_attention (qp.qkv_rem
// unused, ap.rows 1, ap.out16 ignored), counters[n_heads] zero before the first launch (each launch leaves
// them zero). Throws strata::Error for shapes attention_row_supports refuses.
bool attention_row_supports(int n_heads, int n_kv_heads, int head_dim);
void launch_attention_row(float* qkv, const QkvRopeParams& qp, const AttentionParams& ap, int* counters,
                          cudaStream_t stream);

// Tensor-core attention for prompt windows (flash_attention.cu): the same inputs and outputs as
// launch_attention (part_acc / part_ml unused), q/k/v/p rounded to bf16 with fp32 sums, so the tolerance path
// only (windows that take the GEMM path). head_dim 64 or 128, else strata::Error at launch.
size_t flash_attention_smem_bytes(int head_dim);
bool flash_attention_supports(int head_dim);
// Raises the kernels' shared-memory limit when needed; call once before any capture (the kernels take over 48 KB).
void configure_flash_attention(int head_dim);
void launch_flash_attention(const AttentionParams& p, cudaStream_t stream);

// act[r][i] = silu(gate) * up with gu rows [gate | up] (plus gu_rem's when set, Bf16Out); act16 optional bf16 form,
// act optional when act16 is set (a consumer that reads only the bf16 copy).
void launch_swiglu(const float* gu, const float* gu_rem, int rows, int ff, float* act, Bf16Out act16,
                   cudaStream_t stream);

// y[r][j] = sum_i w[j][i] * x[r][i] for r < rows, j < n (x rows of k floats, y rows of n floats). The skinny
// kernel (matvec.cu): bf16 weights on the tensor cores, read once per 16 rows, the activations split into two
// bf16 parts for near-fp32 products, fp32 sums in an order fixed by k alone; fp32 weights on CUDA cores in an
// order fixed by k. Either way a row's result does not depend on how many rows share the launch.
//
// The norm and residual add between matmuls fold into the bf16 kernel (MatvecFold), so a layer on it is the
// matmuls, RoPE and attention only:
// - residual (ss_out set): y is the residual row, y[r][j] = y[r][j] + ((W x)[r][j] + bias[j]) (bias
//   optional), rounded as launch_add_rmsnorm adds; ss_out[r][p] gets the sum of squares of the new
//   y[r][16 p .. 16 p + 15] in order; with next_norm, xn_out[r][j] = next_norm[j] * y[r][j] too (the next
//   matmul's input before its scale);
// - normed input (ss_in set): x is such an xn_out row, and each product is scaled by 1 / sqrt(mean(y^2) + eps)
//   with mean(y^2) from ss_in[r][0 .. ceil(k / 16)) (the same launch's ss_out), added in a fixed order. So
//   the matmul computes W (norm * y / rms) as (W (norm * y)) / rms, the scale waiting for nothing before the
//   products, and a row's bits depend on the row alone (they are not those of launch_add_rmsnorm then
//   launch_matvec).
// One launch takes a normed input or a residual, not both.
struct MatvecFold {
  const float* ss_in = nullptr;      // [rows][ceil(k / 16)]
  float eps = 0.0f;
  const float* bias = nullptr;       // residual only, [n] or null
  float* ss_out = nullptr;           // [rows][ceil(n / 16)]: the residual epilogue when set
  const float* next_norm = nullptr;  // [n], with xn_out
  float* xn_out = nullptr;           // [rows][n]
  const int* x_rows = nullptr;       // [rows] device indices of the input rows (of x and ss_in), or null: bf16
                                     // weights without the residual epilogue only
  int out_tiles = 1;                 // 16-output tiles a block of windows of up to 8 rows takes without the
                                     // residual epilogue (1, 2 or 4): fewer, wider blocks for long matrices,
                                     // the same sums (a row's bits do not depend on it)
  int pdl_mode = 0;                  // set by the launch from STRATA_MATVEC_PDL_MODE (matvec.cu; 0 unless
                                     // measuring)
  bool rope_early = true;            // launch_matvec_qkv_rope: the RoPE tables' rows and KV cells looked up
                                     // before pdl_wait() (false: in the epilogue; the same bits)
  // Residual only: row r's old value is res_table's row of r's token ([tokens][n]) instead of y[r], the token
  // taken as launch_embedding takes it (res_tokens[r], or a chained step's pick through res_feed, which the
  // launch keeps). So y = table[token] + W x: a feature-reading model's first layer input (forward.cpp).
  const float* res_table = nullptr;
  const int* res_tokens = nullptr;
  EmbedFeed res_feed;
  // Normed input only: x_normed_out[r][i] = x[r][i] / rms(r) too (each row's input as the products see it,
  // before the weights), rows as the launch's output rows.
  float* x_normed_out = nullptr;
};
void launch_matvec(const void* w, WType t, int n, int k, const float* x, int rows, float* y, cudaStream_t stream,
                   const MatvecFold& fold = {});
// The MLP's first half on the skinny kernel: w is the stacked [gate | up] matrix (2 ff rows of k), and
// act[r][i] = silu(gate) * up with gate and up computed as launch_matvec computes them and the product as
// launch_swiglu does, so it gives the bits of launch_matvec followed by launch_swiglu in one kernel (fold:
// a normed input only; gate and up are each scaled before the SwiGLU).
void launch_matvec_swiglu(const void* w, WType t, int ff, int k, const float* x, int rows, float* act,
                          cudaStream_t stream, const MatvecFold& fold = {});
// The QKV projection on the skinny kernel with the RoPE step in its epilogue: launch_matvec of the stacked
// q | k | v matrix (n rows, into qkv) followed by launch_qkv_rope, in one kernel and with their bits. A block
// computes one head of up to 8 rows. fold: a normed input (ss_in) only. matvec_qkv_rope_supports says which
// matrices (bf16, head_dim 64 or 128); configure_matvec raises the kernel's shared-memory limit (once, before
// any capture).
bool matvec_qkv_rope_supports(WType t, int n, int head_dim);
void configure_matvec();
void launch_matvec_qkv_rope(const void* w, WType t, int n, int k, const float* x, int rows, float* qkv,
                            const QkvRopeParams& p, cudaStream_t stream, const MatvecFold& fold = {});

// The fused matmul of windows of a few rows (gemv.cu; forward.cpp says which windows come here): y = W x for
// each of `rows` fp32 activation rows x of k floats and bf16 weights W [n][k] (Swiglu: [2 n][k], the gate rows
// then the up rows), fp32 products and sums, with the sub-layer's neighbours fused:
// - norm set: the input is the RMS-normed row, norm * (x * 1 / sqrt(mean(x^2) + eps)), as launch_add_rmsnorm
//   computes it;
// - Store: y[j] = (W x)[j]; Residual: y is the residual row, y[j] = y[j] + ((W x)[j] + bias[j]) (bias
//   optional); Swiglu: y[j] = silu(gate_j) * up_j, rounded as launch_swiglu rounds it.
// - Rope: W is a layer's stacked q | k | v matrix and y its qkv rows; the step launch_qkv_rope would take
//   next rides in the epilogue, with its bits: a task is the pair (i, i + head_dim / 2) of one head, so n is
//   half of W's rows; bias, then the rotation of q and k heads, then q into y (row stride 2 n) and k and v into
//   the KV cell of the row's slot and position. No q/k norm (rope.q_norm and rope.k_norm null).
// Output row r is y + r n; its input row is x + x_rows[r] k (x + r k without x_rows). A row's bits do not
// depend on how many rows the window has, but they are not the skinny kernel's.
enum class GemvEpilogue { Store, Residual, Swiglu, Rope };
struct GemvParams {
  const void* w = nullptr;
  int n = 0, k = 0;
  const float* x = nullptr;     // 16-byte aligned
  int rows = 1;
  const int* x_rows = nullptr;  // [rows] device indices of the input rows, or null
  const float* norm = nullptr;  // [k] or null
  float eps = 0.0f;
  GemvEpilogue ep = GemvEpilogue::Store;
  const float* bias = nullptr;  // Residual only, [n] or null
  float* y = nullptr;
  // Residual only: y was last written two or more kernels back, and the kernel this launch follows triggers
  // its dependents after its own pdl_wait() (or not at all): by this launch the kernel before that one has
  // completed, and with it y's writer, so the residual values may be read before pdl_wait(). The forward's o
  // and down projections qualify (y is the previous down's or the embedding's output, and o's).
  bool y_settled = false;
  // Rope only: the epilogue's table entries and KV cells looked up before pdl_wait() (they come from the host
  // before the graph runs); false looks them up in the epilogue (a measurement switch, the same bits).
  bool rope_early = true;
  int rows_per_block = 1;       // set by launch_gemv
  QkvRopeParams rope;           // Rope only
  // Store only, optional: each block's greedy pick among the outputs it wrote, for launch_argmax_parts: the
  // best value and its output index of row r at [r * gemv_blocks + block] (argmax_token's rule).
  float* pick_value = nullptr;
  int* pick_index = nullptr;
};
// The current device's SM count, read once (the GEMV's task split over one wave of blocks).
int device_sm_count();
// k a multiple of 8, short enough for the staged row (about 56k floats).
bool gemv_supports(int k);
// Raises the kernels' shared-memory limit; call once before any capture.
void configure_gemv();
// Throws strata::Error for an unsupported k, a norm with the Residual epilogue, or a Rope epilogue asked for
// q/k norms or an odd head_dim, or picks asked of another epilogue.
void launch_gemv(const GemvParams& p, cudaStream_t stream);
// The blocks a launch of p spreads the outputs over (one row group): pick_value's row stride. At most the SM
// count.
int gemv_blocks(const GemvParams& p);

// For rows whose spec asks (kPickLogprobsWord), engine/sampling's compute_logprobs of the row's logits for
// its pick (picks[r], run after the picks are final) into out[r][kLogprobWords] (see logprobs.cu). Nothing
// for vocabularies above kDeviceSampleMaxVocab (no row may ask then).
void launch_logprobs(const float* logits, int rows, int vocab, const int32_t* specs, const int* picks, float* out,
                     cudaStream_t stream);

// picks[r] = argmax over logits[r][0 .. vocab): largest value, lowest id among equals, NaN never wins, 0
// when nothing is above -inf (engine/sampling's argmax_token rule).
void launch_argmax(const float* logits, int rows, int vocab, int* picks, cudaStream_t stream);
// The same picks from the fused GEMV's per-block candidates (GemvParams::pick_value / pick_index, `parts` of
// them a row): the best of a row's candidates by the same rule, so the same answer as launch_argmax over the
// row's logits.
void launch_argmax_parts(const float* value, const int* index, int parts, int rows, int* picks, cudaStream_t stream);

// Per output row, kPickWords int32 of the pick's settings: mode (1 = sample here from top_k <= kDeviceTopKMax
// candidates, 2 = sample here over the whole vocabulary (no top_k, or one >= vocab; see launch_sample),
// anything else = leave the
// argmax / host pick), top_k, temperature, top_p, min_p (float bits), seed low, seed high, position.
constexpr int kPickWords = 9;
// Word 8 of a row's spec: n + 1 when the device computes the row's logprobs with n <= kDeviceTopLogprobs
// alternatives (launch_logprobs), 0 when it does not.
constexpr int kPickLogprobsWord = 8;
constexpr int kDeviceTopLogprobs = 20;
// launch_logprobs's output per row: the pick's logprob, then (id as float bits, logprob) per alternative.
constexpr int kLogprobWords = 1 + 2 * kDeviceTopLogprobs;
constexpr int kDeviceTopKMax = 64;  // larger top_k below the vocabulary samples on the host
// Mode 2 orders this many of the best candidates (the host's ranked walk, sampler.hpp); a draw past them
// walks the rest in id order as the host does, a top_p cut past them leaves the row's pick at -1 for the
// host to make. Vocabularies up to kDeviceSampleMaxVocab.
constexpr int kDeviceSampleRanks = kSamplerRankedWalk;
constexpr int kDeviceSampleMaxVocab = 256 * 1024;

// Overwrites picks[r] of rows in mode 1 or 2 with engine/sampling's seeded draw (see sample.cu), or -1 for a
// mode-2 row the host must draw (non-finite logits, a top_p cut past kDeviceSampleRanks, ties overflowing
// the gather); run after argmax.
void launch_sample(const float* logits, int rows, int vocab, const int32_t* specs, int* picks, cudaStream_t stream);

}  // namespace cuda
}  // namespace strata
