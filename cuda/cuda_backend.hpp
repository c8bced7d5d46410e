// The CUDA backend: the Verifier on one GPU. A plain C++ header (no CUDA types) so host code can include it
// without nvcc; everything device-side lives behind Impl.
//
// Invariants it keeps (DESIGN.md):
// - Batch invariance: for windows of up to gemm_min_rows - 1 rows every matmul runs the skinny kernel (or, up
//   to fused_gemv_rows rows, the fused GEMV), whose
//   per-output reduction order depends only on the matrix shape, and attention splits a row's KV at fixed
//   positions, so a row's logits are bit-identical alone, beside other slots' rows, or inside a prompt chunk
//   or a verify window.
// - Reference parity: fp32 activations and fp32 accumulation, K/V stored as kv_cache_dtype says (the CPU
//   backend rounds them the same way); RoPE uses the CPU backend's
//   cos/sin table bit for bit; picks follow engine/sampling: argmax and seeded top_k <= 64 draws on the
//   device with the host's arithmetic, anything else (penalties, logit_bias, no top_k) on the host from the
//   same logits, so greedy tokens match the CPU backend.
// - No host work per layer: each window shape (rows, output rows) is captured once as a CUDA graph whose
//   first node copies the window's tokens/positions/slots from pinned memory; later windows replay it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/core/backend.hpp"
#include "engine/model/weights.hpp"

namespace strata {

// The server's gemm_min_rows when speculation is on (the kernel benchmark's --gemm-min-rows 17): windows of 17+ rows go
// to cuBLAS, which reads the weights at ~0.9 of the copy bandwidth from 32 rows on, while verify windows of up
// to 16 rows stay on the skinny kernel, exact against single rows (docs/PERFORMANCE.md).
constexpr int kServerGemmMinRows = 17;
// The fused_gemv_rows of a draft model's backend in the server, unless the draft is small enough for the
// skinny kernel's folded windows (CudaBackend::skinny_folds), which it then takes: its catch-up windows of a
// few rows take the fused GEMV too (10 kernels a one-layer step instead of 17; drafting ~10 % faster on strata-tiny's pair).
// The target keeps 0: its verify windows of 5 rows (an 8-row graph) are slower there than on the skinny
// kernel (strata-tiny 0.255 against 0.231 ms), and its batch windows of 4-8 rows are slower at 8B (12.0 against
// 6.9 ms for 8), though single rows are faster (8B 233 against 171 tok/s; docs/PERFORMANCE.md, runs 55-56).
constexpr int kDraftFusedGemvRows = 16;

struct CudaBackendOptions {
  int max_slots = 4;            // sequences open at once; each may use up to max_context positions
  int max_context = 4096;       // positions per slot
  // Paged KV (as CpuBackendOptions): one pool of blocks of kv_block_size positions shared by every slot. The
  // pool's size: kv_blocks when > 0, else what the budget below holds, at most max_slots x
  // ceil(max_context / kv_block_size) blocks (every slot's whole context).
  int kv_blocks = 0;
  int kv_block_size = 16;
  bool prefix_caching = true;
  // What the KV arena stores: BF16 (half the memory; each K/V value rounded once when stored; decode windows
  // on the GEMM path take the tensor-core attention kernel, which needs it; head_dim a multiple of 8) or F32
  // (exact, any head_dim). The server picks BF16 where it can (--kv-cache-dtype auto). CpuBackendOptions has
  // the same option, so parity checks compare like for like.
  DType kv_cache_dtype = DType::F32;
  double kv_cache_gb = 0.0;     // > 0: the KV pool's size in GB (1e9 bytes)
  double gpu_memory_fraction = 0.0;  // > 0 (and kv_cache_gb == 0): KV takes what is left of this fraction of
                                     // the GPU's memory after weights and workspace; both 0: every slot's
                                     // whole context
  int device = 0;
  // Additive knobs (defaults are what the server uses).
  int max_window_rows = 512;    // the largest window one call accepts (sizes the workspace)
  int max_output_rows = 64;     // rows with logits per graph replay; larger windows run as several replays
  int gemm_min_rows = 65;       // windows with at least this many rows use cuBLAS
  // cuBLAS windows of up to this many rows (bf16 weights) pass each activation as a bf16 value plus its bf16
  // remainder, two GEMM columns per row, for products close to fp32 (greedy tokens match the CPU backend's);
  // larger windows pass bf16 activations alone. The split costs 1 % of 8B decode at one row, 3 % at 8 and 6 %
  // at 64 (docs/PERFORMANCE.md, run 11).
  int split_gemm_max_rows = 16;
  // bf16 GEMMs on cuBLASLt with the algorithm timed per shape the first time it runs (gemm.hpp); false: cuBLAS's
  // default choice (cublasGemmEx).
  bool gemm_autotune = true;
  // At construction, capture the graph of every decode window shape (one row per slot, 1 .. min(max_slots,
  // max_output_rows) slots, each attention split count the context allows) and of one window per row bucket
  // past kDecodeRowsMax (window_meta.hpp: where prompt chunks ride), timing their GEMMs, so serving does not
  // pay for them in its first windows of each size (TTFT spikes). Off until it has run on the GPU.
  bool warm_up_decode = false;
  // Windows that flash attention does not take (decode batches, single rows, verify windows) use the
  // tensor-core attention kernel when the arena is bf16; false keeps the fixed-order kernels (the server's
  // choice with --batch-invariant). Either gives a row the bits of its single-row window in every window
  // (fixed split boundaries, each query vector's arithmetic its own), so verify windows stay exact on both.
  bool attention_tc = true;
  // The stream's scheduling priority: > 0 the device's greatest, < 0 its least, 0 the default. With a draft
  // model's backend at the least and the target's at the greatest, the target's blocks are dispatched first
  // when the draft's steps run beside a verify window (drafting ahead).
  int stream_priority = 0;
  // The tensor-core attention's lean variant (q fragments loaded per k-step, unpadded swizzled K/V: three
  // blocks an SM instead of two). -1 (auto): on for head_dim 128, where it is faster (8B decode +4 % at 64
  // rows, +5 % at 128), off for head_dim 64, where it is not (1B -3 %; docs/PERFORMANCE.md, run 21);
  // 0 off, 1 on.
  int attention_tc_lean = -1;
  // Windows the tensor-core attention serves cut their query tiles at 16 / (query heads a KV head) rows, one
  // mma chunk a block, so the prompt tiles of a mixed window take as long as its decode rows' blocks
  // (build_window_meta's short_tiles). false keeps 16-row tiles.
  bool attention_short_tiles = true;
  // With short tiles, a mixed window's long tiles (its prompt chunks) go to flash attention instead of being
  // cut for the tensor-core kernel (build_window_meta's flash_long_tiles); false cuts them too.
  bool attention_prompt_flash = true;
  // One-row windows on the GEMM path (bf16 weights) take the fused GEMV (fp32 activations, the norms,
  // residual adds and SwiGLU inside the matmuls) instead of cuBLAS and the separate small kernels.
  bool fused_gemv = true;
  // With fused_gemv: windows of up to this many rows take the fused GEMV too, whatever gemm_min_rows says. A
  // row's bits there do not depend on the row count, so those windows are exact against single rows
  // (BackendInfo::exact_rows is at most this when it is > 0). 0: one-row GEMM windows only.
  int fused_gemv_rows = 0;
  // Those windows' attention (q/k norm, RoPE, KV store, attention, split merge) as one kernel
  // (kernels/attention_row.cu) instead of three. Off: on the H200 it is slower than the three (docs/PERFORMANCE.md).
  // STRATA_FUSED_ROW_ATTENTION=0|1 overrides it.
  bool fused_row_attention = false;
  // Seeded draws without a top_k (or one that keeps the whole vocabulary) on the device (sample.cu mode 2),
  // the host drawing only those whose walk goes past the 1024 best candidates; false: the host draws them all.
  bool device_vocab_sampling = true;
  // Logprobs of picks the device makes (up to 20 alternatives) on the device too (kernels/logprobs.cu); false:
  // the host computes them from the row's copied logits.
  bool device_logprobs = true;
  // Threads that answer output rows on the host (seeded draws the device does not make, logprobs); 0: half
  // the machine's cores, at most 8.
  int host_threads = 0;
  bool round_weights_to_bf16 = false;  // f16/f32 checkpoints: round matrices to bf16 (half the memory)
                                       // instead of keeping their exact values in fp32
  DType rope_freq_dtype = DType::F32;  // as CpuBackendOptions: only reference-parity checks change it
};

// What startup allocated, for logs and /metrics.
struct CudaMemoryReport {
  size_t weights_bytes = 0;
  size_t kv_bytes = 0;
  size_t workspace_bytes = 0;
  size_t free_bytes = 0;   // after all of the above
  size_t total_bytes = 0;
};

class CudaBackend : public Backend {
 public:
  // Uploads the weights (progress logged), allocates the KV pool once and the workspace. Throws
  // strata::Error on bad options, no usable device, or a budget that holds no block.
  CudaBackend(const Model& model, CudaBackendOptions options);
  ~CudaBackend() override;

  BackendInfo info() const override;
  SlotId open_slot() override;
  void reset_slot(SlotId slot) override;
  void close_slot(SlotId slot) override;
  void set_sampling(SlotId slot, const SamplingParams& params) override;
  // The prefix cache (SlotBook::attach_prefix): a fresh slot starts from cached full blocks of `prompt`.
  int attach_prefix(SlotId slot, const std::vector<TokenId>& prompt) override;
  // Same window rules and error messages as the CPU backend (both keep a SlotBook); throws before any state
  // changes, KvExhausted included (the window needs more blocks than the pool has free).
  std::vector<RowResult> run_window(const Window& window) override;
  // The window's graph replay is queued by start_window() and waited for by finish_window().
  void start_window(const Window& window) override;
  std::vector<RowResult> finish_window() override;
  // Greedy chains (the draft model's proposals) run every step's replay back to back, feeding picks on the
  // device, with one synchronize; a chain it cannot feed there runs as windows (Backend::run_chain).
  std::vector<std::vector<TokenId>> run_chain(const Window& window, int steps) override;
  // The ahead steps run in a graph of their own after the first `steps` steps' picks are copied back, and
  // stay queued when this returns; every other call here waits for them first.
  std::vector<std::vector<TokenId>> run_chain_ahead(const Window& window, int steps, int ahead,
                                                    uint64_t* ticket) override;
  std::vector<std::vector<TokenId>> take_ahead(uint64_t ticket) override;
  // Continues the last chain on the device from its last picks and features, as a graph of its own.
  bool extend_ahead(uint64_t ticket, int more, uint64_t* next) override;
  bool overlaps_ahead() const override;
  void commit(SlotId slot, int n_keep) override;
  int truncate(SlotId slot, int n_keep) override;
  void release() override;

  CudaMemoryReport memory() const;
  int graphs_captured() const;    // window shapes captured so far (tests, metrics)
  int chains_on_device() const;   // run_chain calls whose picks were fed on the device (tests)
  // The slot's physical KV blocks in position order (SlotBook::block_table), what its device table row holds
  // after its next window's upload (tests).
  std::vector<int32_t> block_table(SlotId slot) const;
  std::string device_name() const;

  // How many CUDA devices are visible; 0 when there is no driver or no GPU (never throws): --device auto.
  static int device_count();
  // Whether the skinny kernel folds the norms and residual adds of cfg's windows on the current device (the
  // server's device 0): every matmul of a window of up to 8 rows is one wave of 16-output blocks (small
  // models; forward.cpp).
  static bool skinny_folds(const ModelConfig& cfg);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata
