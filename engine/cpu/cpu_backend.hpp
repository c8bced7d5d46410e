// The CPU reference backend: fp32 weights and accumulation, one fixed summation order per output element
// (dot.hpp), a paged KV cache: one pool of fixed-size blocks shared by every slot through its block table
// (engine/slots), with automatic prefix caching. It is the reference the CUDA backend is compared
// against, so it favours exactness and clarity; its matmuls are still vectorized and multithreaded.
#pragma once
#include <memory>

#include "engine/core/backend.hpp"
#include "engine/model/weights.hpp"

namespace strata {

struct CpuBackendOptions {
  int max_slots = 4;
  int max_context = 2048;
  int threads = 0;  // <= 0: all hardware threads
  // Precision of the RoPE frequencies. F32 is what transformers uses for a loaded checkpoint; F16/BF16
  // reproduce a reference that cast the whole module (rotary buffer included) to half precision and back.
  DType rope_freq_dtype = DType::F32;
  // Paged KV: blocks of kv_block_size positions; kv_blocks 0 = max_slots * ceil(max_context / kv_block_size),
  // the memory of every slot holding its whole context. A smaller pool lets more slots share less memory.
  int kv_blocks = 0;
  int kv_block_size = 16;
  bool prefix_caching = true;
  // What the KV cache keeps of K and V: F32 (exact) or BF16 (each value rounded to bf16 when stored, as the CUDA
  // backend's bf16 arena keeps it, so the two backends compare like for like). F16 is refused.
  DType kv_cache_dtype = DType::F32;
};

class CpuBackend : public Backend {
 public:
  // Converts the weights to fp32 once; `model` may be released afterwards. Throws strata::Error on bad options.
  CpuBackend(const Model& model, CpuBackendOptions options);
  ~CpuBackend() override;

  BackendInfo info() const override;
  SlotId open_slot() override;
  void reset_slot(SlotId slot) override;
  void close_slot(SlotId slot) override;
  void set_sampling(SlotId slot, const SamplingParams& params) override;
  int attach_prefix(SlotId slot, const std::vector<TokenId>& prompt) override;
  // Rows of one slot must be at consecutive positions starting at the slot's committed length; a bad window
  // (unknown slot, position gap, past capacity, token outside the vocabulary, too many rows) throws
  // strata::Error before any state changes.
  std::vector<RowResult> run_window(const Window& window) override;
  void commit(SlotId slot, int n_keep) override;
  int truncate(SlotId slot, int n_keep) override;

  const char* kernel_name() const;  // "avx2-fma" or "portable"
  int threads() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata
