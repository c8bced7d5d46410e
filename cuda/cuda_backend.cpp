#include "cuda/cuda_backend.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "cuda/cuda_check.hpp"
#include "cuda/gemm.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/device_weights.hpp"
#include "cuda/env.hpp"
#include "cuda/forward.hpp"
#include "cuda/window_meta.hpp"
#include "engine/cpu/rope.hpp"
#include "engine/cpu/thread_pool.hpp"
#include "engine/sampling/row_answers.hpp"
#include "engine/sampling/sampler.hpp"
#include "engine/slots/slot_book.hpp"

namespace strata {

namespace {

constexpr size_t kCublasWorkspace = size_t(32) << 20;
constexpr size_t kMaxGraphs = 256;  // distinct window shapes kept; past that the cache starts over

bool rewrites_logits(const SamplingParams& p) {
  return p.repetition_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f ||
         !p.logit_bias.empty() || !p.suppressed.empty();
}

// A pick the device's argmax answers exactly: greedy with nothing that rewrites logits first.
bool device_pickable(const SamplingParams& p) { return p.greedy() && !rewrites_logits(p); }

// A seeded draw the device reproduces (sample.cu), nothing rewriting the logits first: mode 1 for a bounded
// top_k, mode 2 over the whole vocabulary (no top_k, or one that keeps every token); 0: the host draws.
int device_sample_mode(const SamplingParams& p, int vocab, bool whole_vocab) {
  if (p.greedy() || rewrites_logits(p)) return 0;
  if (p.top_k >= 1 && p.top_k <= cuda::kDeviceTopKMax) return 1;
  if (whole_vocab && (p.top_k == 0 || p.top_k >= vocab) && vocab <= cuda::kDeviceSampleMaxVocab) return 2;
  return 0;
}

int host_threads(int asked) {
  if (asked > 0) return asked;
  const int cores = int(std::thread::hardware_concurrency());
  return std::max(1, std::min(8, cores / 2));
}

std::string gb(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GB", double(bytes) / 1e9);
  return buf;
}

struct Graph {
  cudaGraphExec_t exec = nullptr;
  ~Graph() {
    if (exec) cudaGraphExecDestroy(exec);
  }
};

}  // namespace

struct CudaBackend::Impl {
  ModelConfig cfg;
  CudaBackendOptions opts;
  std::string name;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  std::unique_ptr<cuda::Gemm> gemm;  // after cublas_ws, which it uses
  cuda::DeviceWeights weights;
  cuda::DeviceBuffer rope_cos, rope_sin, workspace, cublas_ws, kv_k, kv_v, table_dev;
  cuda::PinnedBuffer meta_host, picks_host, table_host;
  cuda::PinnedBuffer logits_host;  // rows the host answers (grown on demand)
  cuda::PinnedBuffer logprobs_host;  // launch_logprobs's rows
  cuda::PinnedBuffer feat_host;      // a segment's row features (WindowShape::features)
  cuda::PinnedBuffer feat_in_host;   // a feature-reading model's input features of a segment
  cpu::ThreadPool host_pool;       // those rows' picks and logprobs
  cuda::ForwardContext fwd;
  std::map<cuda::WindowShape, std::unique_ptr<Graph>> graphs;
  // (rows, output rows) of the shapes that have had their eager run: the GEMMs' row counts, all a GEMM's
  // timing depends on, so a later shape with the same two (other tile or split counts) is captured directly.
  std::set<std::pair<int, int>> gemms_timed;
  int short_tiles = 0;  // build_window_meta's short_tiles (CudaBackendOptions::attention_short_tiles)
  bool prompt_flash = false;  // and its flash_long_tiles (attention_prompt_flash, where flash has the head size)
  SlotBook book;  // paged; allocate_kv() sizes its pool from the KV budget
  // Padding rows of bucketed windows run as this slot id (one past the last real slot): its table row points
  // at the reserved block num_blocks, outside the pool, so they never write a cell a real slot owns.
  SlotId scratch_slot = kNoSlot;
  int table_stride = 0;  // block-table entries per slot: ceil(max_context / block_size)
  int max_splits = 0;
  CudaMemoryReport mem;

  Impl(const Model& m, CudaBackendOptions o) : cfg(m.config), opts(o), host_pool(host_threads(o.host_threads)) {
    check_options();
    STRATA_CUDA_CHECK(cudaSetDevice(opts.device));
    cudaDeviceProp prop{};
    STRATA_CUDA_CHECK(cudaGetDeviceProperties(&prop, opts.device));
    name = prop.name;
    spdlog::info("cuda: device {} ({}), compute capability {}.{}, {} SMs, {}", opts.device, name, prop.major,
                 prop.minor, prop.multiProcessorCount, gb(prop.totalGlobalMem));
    int least = 0, greatest = 0;
    STRATA_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    const int priority = opts.stream_priority > 0 ? greatest : opts.stream_priority < 0 ? least : 0;
    STRATA_CUDA_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, priority));
    STRATA_CUDA_CHECK(cudaEventCreateWithFlags(&chain_event, cudaEventDisableTiming));
    try {
      STRATA_CUBLAS_CHECK(cublasCreate(&cublas));
      STRATA_CUBLAS_CHECK(cublasSetStream(cublas, stream));
      weights = cuda::upload_weights(m, opts.round_weights_to_bf16);
      upload_rope();
      allocate_workspace();
      allocate_kv();
      // A feature-reading model on the skinny kernel's folded windows reads its input through one matmul
      // (forward.cpp): fc split into its feature half and its embedding half applied to every token.
      if (cfg.feature_input && fwd.skinny_fold && fwd.skinny_edge_fold && weights.type == cuda::WType::BF16 &&
          cfg.hidden_size % 16 == 0)
        weights.bytes += cuda::prepare_feature_fold(weights, cfg.vocab_size, cfg.hidden_size, stream);
      cuda::configure_attention(cfg.head_dim);
      cuda::configure_flash_attention(cfg.head_dim);
      cuda::configure_gemv();
      cuda::configure_matvec();
      report_memory();
      if (opts.warm_up_decode) warm_up_decode();
    } catch (...) {
      destroy_handles();  // the destructor does not run for a constructor that throws
      throw;
    }
  }

  ~Impl() { destroy_handles(); }

  void destroy_handles() {
    if (stream) (void)cudaStreamSynchronize(stream);  // a chain's ahead steps may still run
    ahead_pending = nullptr;
    graphs.clear();
    fed_graphs.clear();
    gemm.reset();
    if (cublas) cublasDestroy(cublas);
    if (stream) cudaStreamDestroy(stream);
    if (chain_event) cudaEventDestroy(chain_event);
    chain_event = nullptr;
    cublas = nullptr;
    stream = nullptr;
  }

  int q_dim() const { return cfg.num_heads * cfg.head_dim; }
  int kv_dim() const { return cfg.num_kv_heads * cfg.head_dim; }
  size_t kv_elem_bytes() const { return opts.kv_cache_dtype == DType::BF16 ? 2 : 4; }

  void check_options() {
    auto bad = [](const std::string& what) { throw Error("cuda backend: " + what); };
    if (opts.max_slots < 1) bad("max_slots must be >= 1, found " + std::to_string(opts.max_slots));
    if (opts.max_context < 1) bad("max_context must be >= 1, found " + std::to_string(opts.max_context));
    if (opts.max_window_rows < 1) bad("max_window_rows must be >= 1, found " + std::to_string(opts.max_window_rows));
    if (opts.max_output_rows < 1) bad("max_output_rows must be >= 1, found " + std::to_string(opts.max_output_rows));
    if (opts.host_threads < 0) bad("host_threads must be >= 0, found " + std::to_string(opts.host_threads));
    if (opts.gemm_min_rows < 1) bad("gemm_min_rows must be >= 1, found " + std::to_string(opts.gemm_min_rows));
    if (opts.fused_gemv_rows < 0) bad("fused_gemv_rows must be >= 0, found " + std::to_string(opts.fused_gemv_rows));
    if (opts.kv_cache_dtype != DType::F32 && opts.kv_cache_dtype != DType::BF16)
      bad(std::string("kv_cache_dtype must be f32 or bf16, found ") + dtype_name(opts.kv_cache_dtype));
    if (opts.kv_cache_dtype == DType::BF16 && cfg.head_dim % 8 != 0)
      bad("kv_cache_dtype bf16 needs head_dim to be a multiple of 8, found " + std::to_string(cfg.head_dim) +
          " (use f32)");
    if (opts.split_gemm_max_rows < 0)
      bad("split_gemm_max_rows must be >= 0, found " + std::to_string(opts.split_gemm_max_rows));
    if (!(opts.kv_cache_gb >= 0.0) || std::isinf(opts.kv_cache_gb))
      bad("kv_cache_gb must be a finite number >= 0, found " + std::to_string(opts.kv_cache_gb));
    if (!(opts.gpu_memory_fraction >= 0.0 && opts.gpu_memory_fraction <= 1.0))
      bad("gpu_memory_fraction must be in [0, 1], found " + std::to_string(opts.gpu_memory_fraction));
    if (opts.kv_block_size < 1 || opts.kv_block_size > 4096)
      bad("kv_block_size must be within [1, 4096], found " + std::to_string(opts.kv_block_size));
    if (opts.kv_blocks < 0) bad("kv_blocks must not be negative, found " + std::to_string(opts.kv_blocks));
    if (opts.max_slots > 4096) bad("max_slots " + std::to_string(opts.max_slots) + " is above 4096");
    if (opts.max_context > (1 << 22))
      bad("max_context " + std::to_string(opts.max_context) + " is above the supported 4194304");
    const int n = device_count();
    if (n == 0) bad("no CUDA device is visible");
    if (opts.device < 0 || opts.device >= n)
      bad("device " + std::to_string(opts.device) + " is outside [0, " + std::to_string(n) + ")");
    // Shapes the kernels rely on: 16-byte weight rows and head_dim pairs.
    const int H = cfg.hidden_size;
    for (int k : {H, q_dim(), cfg.intermediate_size})
      if (k % 8 != 0) bad("matrix inner dimension " + std::to_string(k) + " is not a multiple of 8");
    if (cfg.head_dim % 2 != 0 || cfg.head_dim > 256)
      bad("head_dim " + std::to_string(cfg.head_dim) + " must be even and at most 256");
    if (cfg.num_kv_heads < 1 || cfg.num_heads % cfg.num_kv_heads != 0)
      bad("num_heads " + std::to_string(cfg.num_heads) + " is not a multiple of num_kv_heads " +
          std::to_string(cfg.num_kv_heads));
    if (cfg.num_layers < 1) bad("the model has no layers");
  }

  // The CPU backend's table, to the bit: fp32 angle = position x fp32 inverse frequency, cos/sin in double.
  void upload_rope() {
    const int half = cfg.head_dim / 2;
    const std::vector<float> inv = cpu::rope_inv_freq(cfg.rope, cfg.head_dim, opts.rope_freq_dtype);
    std::vector<float> c(size_t(opts.max_context) * half), s(c.size());
    for (int p = 0; p < opts.max_context; ++p)
      for (int i = 0; i < half; ++i) {
        const float angle = float(p) * inv[size_t(i)];
        c[size_t(p) * half + i] = float(std::cos(double(angle)));
        s[size_t(p) * half + i] = float(std::sin(double(angle)));
      }
    rope_cos = cuda::DeviceBuffer(c.size() * 4, "RoPE cos table");
    rope_sin = cuda::DeviceBuffer(s.size() * 4, "RoPE sin table");
    STRATA_CUDA_CHECK(cudaMemcpy(rope_cos.get(), c.data(), c.size() * 4, cudaMemcpyHostToDevice));
    STRATA_CUDA_CHECK(cudaMemcpy(rope_sin.get(), s.data(), s.size() * 4, cudaMemcpyHostToDevice));
  }

  // Windows are padded up to their row bucket (window_meta.hpp), so the workspace holds the largest bucket.
  void allocate_workspace() {
    const size_t T = size_t(cuda::bucket_rows(opts.max_window_rows));
    const size_t R = size_t(cuda::bucket_rows(opts.max_output_rows));
    const size_t H = size_t(cfg.hidden_size), FF = size_t(cfg.intermediate_size), HD = size_t(cfg.head_dim);
    const size_t NH = size_t(cfg.num_heads), V = size_t(cfg.vocab_size);
    const size_t qkv = size_t(q_dim() + 2 * kv_dim());
    max_splits = (opts.max_context + cuda::kAttnSplit - 1) / cuda::kAttnSplit;
    const size_t S = size_t(max_splits);
    const size_t k16 = std::max({H, size_t(q_dim()), FF});
    // Rows of the buffers a split GEMM writes twice over (forward.hpp).
    const size_t split = size_t(std::max(0, opts.split_gemm_max_rows));
    const size_t T2 = std::max(T, 2 * std::min(T, split)), R2 = std::max(R, 2 * std::min(R, split));
    cuda::Workspace& ws = fwd.ws;
    void* in16 = nullptr;
    std::vector<std::pair<size_t, void**>> parts = {
        {T * H * 4, reinterpret_cast<void**>(&ws.x)},
        {T * H * 4, reinterpret_cast<void**>(&ws.xn)},
        {T2 * H * 4, reinterpret_cast<void**>(&ws.tmp)},
        {T2 * qkv * 4, reinterpret_cast<void**>(&ws.qkv)},
        {T * size_t(q_dim()) * 4, reinterpret_cast<void**>(&ws.att)},
        {T2 * 2 * FF * 4, reinterpret_cast<void**>(&ws.gu)},
        {T * FF * 4, reinterpret_cast<void**>(&ws.act)},
        {T >= size_t(opts.gemm_min_rows) ? T2 * k16 * 2 : 0, &in16},
        {T * NH * S * HD * 4, reinterpret_cast<void**>(&ws.part_acc)},
        {T * NH * S * 2 * 4, reinterpret_cast<void**>(&ws.part_ml)},
        {R * H * 4, reinterpret_cast<void**>(&ws.fin)},
        {T * H * 4, reinterpret_cast<void**>(&ws.feat)},
        {cfg.feature_input ? T * H * 4 : 0, reinterpret_cast<void**>(&ws.feat_in)},
        {cfg.feature_input ? T * 2 * H * 4 : 0, reinterpret_cast<void**>(&ws.xcat)},
        {T * ((H + 15) / 16) * 4, reinterpret_cast<void**>(&ws.ss)},
        {R2 * V * 4, reinterpret_cast<void**>(&ws.logits)},
        {R * 4, reinterpret_cast<void**>(&ws.picks)},
        {cuda::meta_words_max(T, R) * 4, reinterpret_cast<void**>(&ws.meta)},
        {size_t(cfg.num_heads) * 4, reinterpret_cast<void**>(&ws.attn_counters)},
        {R * size_t(cuda::device_sm_count()) * 4, reinterpret_cast<void**>(&ws.pick_value)},
        {R * size_t(cuda::device_sm_count()) * 4, reinterpret_cast<void**>(&ws.pick_index)},
        {R * size_t(cuda::kLogprobWords) * 4, reinterpret_cast<void**>(&ws.logprobs)},
    };
    size_t total = 0;
    for (auto& p : parts) total += (p.first + 255) / 256 * 256;
    workspace = cuda::DeviceBuffer(total, "workspace for " + std::to_string(T) + "-row windows");
    char* base = workspace.get<char>();
    for (auto& p : parts) {
      *p.second = p.first ? base : nullptr;
      base += (p.first + 255) / 256 * 256;
    }
    ws.in16 = in16;
    ws.max_splits = max_splits;
    if (ws.feat_in) STRATA_CUDA_CHECK(cudaMemset(ws.feat_in, 0, T * H * 4));  // padding rows read zeros
    fwd.features_in = ws.feat_in;
    STRATA_CUDA_CHECK(cudaMemset(ws.attn_counters, 0, size_t(cfg.num_heads) * 4));  // launch_attention_row
    cublas_ws = cuda::DeviceBuffer(kCublasWorkspace, "cuBLAS workspace");
    STRATA_CUBLAS_CHECK(cublasSetWorkspace(cublas, cublas_ws.get(), cublas_ws.bytes()));
    gemm = std::make_unique<cuda::Gemm>(cublas, stream, cublas_ws.get(), cublas_ws.bytes(), opts.gemm_autotune);
    meta_host = cuda::PinnedBuffer(cuda::meta_words_max(T, R) * 4, "window metadata");
    picks_host = cuda::PinnedBuffer(R * 4, "picks");
    logprobs_host = cuda::PinnedBuffer(R * size_t(cuda::kLogprobWords) * 4, "device logprobs");
    feat_host = cuda::PinnedBuffer(T * H * 4, "row features");
    if (cfg.feature_input) feat_in_host = cuda::PinnedBuffer(T * H * 4, "input features");
    mem.workspace_bytes = total + cublas_ws.bytes() + gemm->flush_bytes() + rope_cos.bytes() + rope_sin.bytes();
  }

  // The KV pool is allocated once: K and V each [layer][cell][kv_dim] fp32 with (num_blocks + 1) x block_size
  // cells; block num_blocks is the padding rows' scratch block, never in the pool. The block table lives on
  // the device at a fixed address (graphs stay valid); upload_tables() refreshes it before each window.
  void allocate_kv() {
    const int bs = opts.kv_block_size;
    table_stride = (opts.max_context + bs - 1) / bs;
    const size_t per_block = size_t(cfg.num_layers) * size_t(bs) * size_t(kv_dim()) * kv_elem_bytes() * 2;
    const size_t full = size_t(opts.max_slots) * size_t(table_stride);  // every slot's whole context
    size_t free_b = 0, total_b = 0;
    STRATA_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    size_t blocks;
    std::string how;
    if (opts.kv_blocks > 0) {
      blocks = size_t(opts.kv_blocks);
      how = "kv_blocks " + std::to_string(opts.kv_blocks);
    } else {
      size_t budget;
      if (opts.kv_cache_gb > 0.0) {
        budget = size_t(opts.kv_cache_gb * 1e9);
        how = "kv_cache_gb " + std::to_string(opts.kv_cache_gb);
      } else if (opts.gpu_memory_fraction > 0.0) {
        const double cap = opts.gpu_memory_fraction * double(total_b);
        const double used = double(total_b - free_b);
        budget = cap > used ? size_t(cap - used) : 0;
        how = "gpu_memory_fraction " + std::to_string(opts.gpu_memory_fraction) + " (" + gb(size_t(cap)) +
              " of which " + gb(size_t(used)) + " already in use)";
      } else {
        budget = per_block * full;
        how = "max_slots " + std::to_string(opts.max_slots);
      }
      blocks = std::min(per_block ? budget / per_block : 0, full);
      if (blocks < 1)
        throw Error("cuda backend: the KV budget from " + how + " (" + gb(budget) + ") holds no block of " +
                    std::to_string(bs) + " positions (" + gb(per_block) + " per block)");
    }
    if (blocks > size_t(INT32_MAX) / size_t(bs) - 1)
      throw Error("cuda backend: " + std::to_string(blocks) + " KV blocks of " + std::to_string(bs) +
                  " positions exceed the 2^31 cells a block table can address");
    const int n = int(blocks);
    const size_t bytes = per_block * size_t(n + 1);
    if (bytes > free_b)
      throw Error("cuda backend: the KV pool (" + gb(bytes) + " for " + std::to_string(n) + " blocks from " + how +
                  ") does not fit in " + gb(free_b) + " of free device memory");
    kv_k = cuda::DeviceBuffer(bytes / 2, "KV pool (keys)");
    kv_v = cuda::DeviceBuffer(bytes / 2, "KV pool (values)");
    book = SlotBook(SlotLimits{opts.max_slots, opts.max_context, cfg.vocab_size, opts.max_window_rows},
                    KvPoolLimits{bs, n, opts.prefix_caching});
    scratch_slot = SlotId(opts.max_slots);
    const size_t entries = size_t(opts.max_slots + 1) * size_t(table_stride);
    table_dev = cuda::DeviceBuffer(entries * 4, "KV block table");
    table_host = cuda::PinnedBuffer(entries * 4, "KV block table mirror");
    // Every entry starts at the scratch block: the scratch slot's row stays so, and a real slot's entries are
    // rewritten before any kernel reads them.
    std::fill(table_host.get<int32_t>(), table_host.get<int32_t>() + entries, int32_t(n));
    STRATA_CUDA_CHECK(cudaMemcpy(table_dev.get(), table_host.get(), entries * 4, cudaMemcpyHostToDevice));
    mem.kv_bytes = bytes;
    mem.workspace_bytes += entries * 4;
    fwd.cfg = &cfg;
    fwd.w = &weights;
    fwd.kv.k = kv_k.get();
    fwd.kv.v = kv_v.get();
    fwd.kv.type = opts.kv_cache_dtype == DType::BF16 ? cuda::KvType::BF16 : cuda::KvType::F32;
    fwd.kv.block_table = table_dev.get<int32_t>();
    fwd.kv.table_stride = table_stride;
    fwd.kv.block_size = bs;
    fwd.kv.kv_dim = kv_dim();
    fwd.kv_layer_stride = size_t(n + 1) * size_t(bs) * size_t(kv_dim());
    fwd.rope_cos = rope_cos.get<float>();
    fwd.rope_sin = rope_sin.get<float>();
    fwd.gemm = gemm.get();
    fwd.gemm_min_rows = opts.gemm_min_rows;
    fwd.split_gemm_max_rows = opts.split_gemm_max_rows;
    fwd.attention_tc = opts.attention_tc;
    fwd.attention_tc_lean = opts.attention_tc_lean < 0 ? cfg.head_dim == 128 : opts.attention_tc_lean != 0;
    // The tensor-core kernel's mma chunk is 16 query vectors: a tile of 16 / G rows fills one.
    const int group = cfg.num_heads / cfg.num_kv_heads;
    short_tiles = opts.attention_short_tiles && fwd.attention_tc && cuda::attention_tc_supports(cfg.head_dim, fwd.kv.type)
                      ? std::max(1, 16 / group)
                      : 0;
    prompt_flash = short_tiles > 0 && opts.attention_prompt_flash && cuda::flash_attention_supports(cfg.head_dim);
    fwd.fused_gemv = opts.fused_gemv;
    fwd.fused_gemv_rows = opts.fused_gemv_rows;
    // STRATA_FUSED_ROW_ATTENTION=0|1 overrides it, so that `strata bench spec` can compare the draft model's
    // steps both ways.
    fwd.fused_row_attention = cuda::env_int("STRATA_FUSED_ROW_ATTENTION", 0, 1, opts.fused_row_attention ? 1 : 0) != 0;
    fwd.device_logprobs = opts.device_logprobs;
    // The skinny kernel's norm and residual folds (MatvecFold) save a launch each but add a short epilogue to
    // every block, paid once a wave: they win where every folded matmul of a one-to-eight-row window is one
    // wave of 16-output blocks (strata-tiny: 5-7 % a window) and cost 1-2 % at the 1B and 8B shapes
    // (docs/PERFORMANCE.md, run 61). STRATA_SKINNY_FOLD=0|1 overrides that for the benchmarks' comparisons.
    fwd.skinny_fold = cuda::env_int("STRATA_SKINNY_FOLD", 0, 1, CudaBackend::skinny_folds(cfg) ? 1 : 0) != 0;
    // On those windows the QKV projection also carries the RoPE step, and the embedding and the LM head take
    // the first and final norms (same matmul sums; docs/PERFORMANCE.md run 96). STRATA_SKINNY_ROPE=0 and
    // STRATA_SKINNY_EDGE_FOLD=0 keep the separate launches, for comparisons.
    fwd.skinny_rope = cuda::env_int("STRATA_SKINNY_ROPE", 0, 1, 1) != 0;
    fwd.skinny_edge_fold = cuda::env_int("STRATA_SKINNY_EDGE_FOLD", 0, 1, 1) != 0;
  }

  // The block tables of the window's slots, host mirror to device on the backend's stream (ordered before the
  // graph replays). Called after book.accept(), which has reserved every block the window's rows write. The
  // mirror is not rewritten while a copy from it may be pending: every window ends with a stream sync.
  // One copy spans the window's slots' rows: the rows of other slots between them are copied unchanged (the
  // device rows always equal the mirror's), and one copy of up to max_slots rows costs less than a copy per
  // slot (each a few microseconds of API and DMA time: ~0.5 ms for a 128-slot decode window).
  void upload_tables(const Window& win) {
    int32_t* host = table_host.get<int32_t>();
    int32_t* dev = table_dev.get<int32_t>();
    std::vector<bool> done(size_t(opts.max_slots), false);
    size_t lo = SIZE_MAX, hi = 0;
    for (const Row& r : win.rows) {
      if (done[size_t(r.slot)]) continue;
      done[size_t(r.slot)] = true;
      const std::vector<int32_t>& t = book.block_table(r.slot);
      const size_t off = size_t(r.slot) * size_t(table_stride);
      std::copy(t.begin(), t.end(), host + off);
      if (!t.empty()) {
        lo = std::min(lo, off);
        hi = std::max(hi, off + t.size());
      }
    }
    if (lo < hi)
      STRATA_CUDA_CHECK(cudaMemcpyAsync(dev + lo, host + lo, (hi - lo) * 4, cudaMemcpyHostToDevice, stream));
  }

  void report_memory() {
    size_t free_b = 0, total_b = 0;
    STRATA_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    mem.weights_bytes = weights.bytes;
    mem.free_bytes = free_b;
    mem.total_bytes = total_b;
    spdlog::info("cuda: memory weights {} ({}), KV pool {} ({}), workspace {}, free {} of {}", gb(mem.weights_bytes),
                 weights.type == cuda::WType::BF16 ? "bf16" : "fp32", gb(mem.kv_bytes),
                 opts.kv_cache_dtype == DType::BF16 ? "bf16" : "fp32", gb(mem.workspace_bytes), gb(free_b),
                 gb(total_b));
    const int64_t cells = int64_t(book.total_blocks()) * book.block_size();
    spdlog::info("cuda: KV pool {} blocks x {} positions = {} positions ({:.1f} full contexts of {}), prefix "
                 "caching {}",
                 book.total_blocks(), book.block_size(), cells, double(cells) / double(opts.max_context),
                 opts.max_context, opts.prefix_caching ? "on" : "off");
    spdlog::info("cuda: capacity {} slots of up to {} positions, windows up to {} rows ({} with logits per replay)",
                 book.limits().slots, opts.max_context, opts.max_window_rows, opts.max_output_rows);
  }

  // One graph of what `record` queues on the stream, captured and instantiated; a capture that throws is ended
  // and dropped.
  std::unique_ptr<Graph> capture(const std::function<void()>& record) {
    STRATA_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    try {
      record();
    } catch (...) {
      cudaGraph_t broken = nullptr;
      cudaStreamEndCapture(stream, &broken);
      if (broken) cudaGraphDestroy(broken);
      (void)cudaGetLastError();
      throw;
    }
    cudaGraph_t g = nullptr;
    STRATA_CUDA_CHECK(cudaStreamEndCapture(stream, &g));
    auto graph = std::make_unique<Graph>();
    const cudaError_t e = cudaGraphInstantiate(&graph->exec, g, 0);
    cudaGraphDestroy(g);
    STRATA_CUDA_CHECK(e);
    return graph;
  }

  // The window graph of a shape: its first node copies this replay's metadata from meta_host (replays read
  // whatever the pinned block holds then).
  std::unique_ptr<Graph> capture_graph(const cuda::WindowShape& shape, size_t meta_bytes) {
    return capture([&] {
      STRATA_CUDA_CHECK(cudaMemcpyAsync(fwd.ws.meta, meta_host.get(), meta_bytes, cudaMemcpyHostToDevice, stream));
      cuda::record_forward(fwd, shape, stream);
    });
  }

  // The later steps of a chain as one graph: each step's forward pass reads its metadata where the one copy
  // put it (stride words apart) and takes its tokens from the previous step's picks (the embedding keeps them
  // for the host), so the steps follow one another through programmatic dependent launch, with no graph
  // launch and no metadata written on the device between them. Null where a step shape's GEMMs have not been
  // timed: timing runs a window eagerly, which a chain's steps cannot do before their tokens exist. The key holds the buffers the kernels were recorded
  // with, so a reallocated buffer takes a new graph.
  // `offset` is the first step's index among the chain's later steps (its metadata block and kept picks).
  using ChainKey =
      std::tuple<std::vector<cuda::WindowShape>, std::vector<int>, size_t, const void*, const void*, size_t>;
  std::map<ChainKey, std::unique_ptr<Graph>> fed_graphs;
  cudaGraphExec_t fed_chain_for(const std::vector<cuda::WindowMeta>& metas, size_t stride, int S, size_t offset = 0) {
    ChainKey key{{}, {}, stride, chain_meta_dev.get(), chain_picks_dev.get(), offset};
    for (const cuda::WindowMeta& m : metas) {
      if (!gemms_timed.count({m.shape.rows, m.shape.out_rows})) return nullptr;
      std::get<0>(key).push_back(m.shape);
      std::get<1>(key).push_back(int(m.words.size()));
    }
    auto it = fed_graphs.find(key);
    if (it != fed_graphs.end()) return it->second->exec;
    if (fed_graphs.size() >= kMaxGraphs) fed_graphs.clear();
    int32_t* kept = chain_picks_dev.get<int32_t>();
    auto graph = capture([&] {
      for (size_t j = offset; j < offset + metas.size(); ++j) {
        cuda::ForwardContext step = fwd;
        step.ws.meta = chain_meta_dev.get<int32_t>() + j * stride;
        step.feed = cuda::EmbedFeed{fwd.ws.picks, S, kept + j * size_t(S)};
        step.features_in = fwd.ws.fin;  // a feature-reading model's next rows read the previous step's features
        cuda::record_forward(step, metas[j - offset].shape, stream, false);  // chained steps are greedy: no draws
      }
    });
    return fed_graphs.emplace(std::move(key), std::move(graph)).first->second->exec;
  }

  cudaGraphExec_t graph_for(const cuda::WindowShape& shape, size_t meta_bytes) {
    auto it = graphs.find(shape);
    if (it != graphs.end()) return it->second->exec;
    if (graphs.size() >= kMaxGraphs) graphs.clear();
    // One eager run first for each new pair of GEMM row counts: it times the GEMMs (gemm.hpp, never inside a
    // capture). It is idempotent — the replay below writes the same KV cells with the same values. A shape
    // that differs from an earlier one only in its attention tiles or splits is captured without it (kernel
    // modules load during a capture since CUDA 12.3), which halves what its first window costs.
    const std::pair<int, int> gemm_rows{shape.rows, shape.out_rows};
    if (!gemms_timed.count(gemm_rows)) {
      STRATA_CUDA_CHECK(cudaMemcpyAsync(fwd.ws.meta, meta_host.get(), meta_bytes, cudaMemcpyHostToDevice, stream));
      cuda::record_forward(fwd, shape, stream);
      STRATA_CUDA_CHECK(cudaStreamSynchronize(stream));
      gemms_timed.insert(gemm_rows);
    }
    return graphs.emplace(shape, capture_graph(shape, meta_bytes)).first->second->exec;
  }

  // Captures the graph of each decode window shape: B rows of one token each, B up to the slots (and the rows
  // one replay answers), at a position per attention split count. The scratch slot stands in for every slot:
  // each entry of its block table is the scratch block, so every position is a cell of it, and rows at one
  // position are tiles of their own, as a decode row of each of B slots is. The shape is all a graph depends
  // on; the eager run before each capture (graph_for) also times the shape's GEMMs.
  // Rows [first, last) as graph metadata: padded to their bucket with scratch-slot rows, whose positions stay
  // inside its one block (and the RoPE table), and at most the workspace's output rows.
  cuda::WindowMeta meta_for(const Window& w, int first, int last) {
    const int pad_span = std::min(book.block_size(), opts.max_context);
    return cuda::build_window_meta(w, first, last, max_splits, scratch_slot, pad_span,
                                   cuda::bucket_rows(opts.max_output_rows), short_tiles, fwd.gemm_min_rows,
                                   prompt_flash);
  }

  void warm_up_decode() {
    const auto t0 = std::chrono::steady_clock::now();
    const int max_rows = std::min({opts.max_slots, opts.max_output_rows, opts.max_window_rows});
    std::set<cuda::WindowShape> seen;
    auto capture = [&](const Window& w) {  // once per shape
      cuda::WindowMeta meta = meta_for(w, 0, int(w.rows.size()));
      if (!seen.insert(meta.shape).second) return;
      std::copy(meta.words.begin(), meta.words.end(), meta_host.get<int32_t>());
      graph_for(meta.shape, meta.words.size() * 4);
    };
    std::vector<int> caps;  // the windows' split caps: powers of two, and max_splits itself
    for (int c = 1; c < max_splits; c *= 2) caps.push_back(c);
    caps.push_back(max_splits);
    for (const int cap : caps) {
      const int pos = (cap - 1) * cuda::kAttnSplit;  // needs cap splits
      for (int b = 1; b <= max_rows; ++b) {
        Window w;
        for (int i = 0; i < b; ++i) w.rows.push_back(Row{scratch_slot, 0, pos, true});
        capture(w);
      }
    }
    // Windows past kDecodeRowsMax rows carry prompt chunks (mixed windows under load): one of each row bucket
    // times its GEMMs, the bulk of a new shape's first window (75-100 ms at 8B against 18-25 for a shape
    // whose GEMMs are known). Its rows stand alone as decode rows do, so the real windows' tile counts still
    // make graphs of their own, on first use.
    const int picks = std::min(cuda::kDecodeRowsMax, opts.max_output_rows);  // what one replay answers
    for (int tb = cuda::bucket_rows(cuda::kDecodeRowsMax + 1); tb <= cuda::bucket_rows(opts.max_window_rows);
         tb = cuda::bucket_rows(tb + 1)) {
      Window w;
      for (int i = 0; i < tb; ++i) w.rows.push_back(Row{scratch_slot, 0, 0, i < picks});
      capture(w);
    }
    STRATA_CUDA_CHECK(cudaStreamSynchronize(stream));
    spdlog::info("cuda: warm-up captured {} window shapes ({} GEMM shapes chosen) in {:.1f} s", seen.size(),
                 gemm->tuned_shapes(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }

  // A segment whose replay and copies are queued, and what its host part needs after the synchronize.
  struct Launched {
    cuda::WindowMeta meta;
    int first = 0, last = 0;
    std::vector<RowResult>* results = nullptr;  // the window's, indexed like its rows
    std::vector<RowAnswer> answers;
    std::vector<int> host_rows;
    std::vector<char> device_picked;
    std::vector<int> device_lp;  // alternatives the device computes, or -1
  };
  // A started window: its rows (copied), the results its answers point into, its last segment in flight.
  struct InFlight {
    Window win;
    std::vector<RowResult> results;
    Launched last;
  };
  std::unique_ptr<InFlight> in_flight;

  // Rows [first, last) as one graph replay, then the host part of each output row.
  void run_segment(const Window& win, int first, int last, std::vector<RowResult>* results) {
    Launched l = launch_segment(win, first, last, results);
    answer_segment(win, l);
  }

  // Queues rows [first, last)'s graph replay and the copies of what the host reads back.
  Launched launch_segment(const Window& win, int first, int last, std::vector<RowResult>* results) {
    Launched l;
    l.meta = meta_for(win, first, last);
    l.first = first;
    l.last = last;
    l.results = results;
    cuda::WindowMeta& meta = l.meta;
    const int H = cfg.hidden_size;
    for (int i = first; i < last && !meta.shape.features; ++i) meta.shape.features = win.rows[size_t(i)].want_feature;
    // A feature-reading model's input features of these rows (zeros where the window has none), ahead of the
    // replay on the stream.
    if (cfg.feature_input) {
      const size_t bytes = size_t(last - first) * size_t(H) * 4;
      if (win.features.empty()) {
        STRATA_CUDA_CHECK(cudaMemsetAsync(fwd.ws.feat_in, 0, bytes, stream));
      } else {
        std::memcpy(feat_in_host.get(), win.features.data() + size_t(first) * size_t(H), bytes);
        STRATA_CUDA_CHECK(cudaMemcpyAsync(fwd.ws.feat_in, feat_in_host.get(), bytes, cudaMemcpyHostToDevice, stream));
      }
    }
    const cuda::MetaLayout layout(meta.shape);
    // What each output row needs: a pick the device makes (or the host), logprobs the device computes (or
    // the host, from the logits), the logits themselves. Rows the host answers get their logits back in one
    // go behind the graph, into pinned memory, before the one synchronize.
    const int V = cfg.vocab_size;
    const int n_out = int(meta.out_rows.size());
    std::vector<RowAnswer>& answers = l.answers;
    std::vector<int>& host_rows = l.host_rows;
    std::vector<char>& device_picked = l.device_picked;
    std::vector<int>& device_lp = l.device_lp;
    answers.resize(static_cast<size_t>(n_out));
    device_picked.assign(static_cast<size_t>(n_out), 0);
    device_lp.assign(static_cast<size_t>(n_out), -1);
    bool any_device_lp = false;
    for (int i = 0; i < n_out; ++i) {
      const int idx = first + meta.out_rows[size_t(i)];
      const Row& row = win.rows[size_t(idx)];
      const SamplingParams& p = book.params(row.slot);
      const int mode = device_sample_mode(p, V, opts.device_vocab_sampling);
      const bool on_device = row.want_pick && (device_pickable(p) || mode != 0);
      int32_t* spec = meta.words.data() + layout.pick_specs + size_t(i) * cuda::kPickWords;
      if (row.want_pick && mode != 0) cuda::write_pick_spec(spec, mode, p, row.pos);
      // Logprobs of a device pick on the device too, when the alternatives asked for are few.
      const bool lp = opts.device_logprobs && on_device && row.n_logprobs >= 0 &&
                      row.n_logprobs <= cuda::kDeviceTopLogprobs && V <= cuda::kDeviceSampleMaxVocab;
      if (lp) {
        device_lp[size_t(i)] = std::min(row.n_logprobs, V);
        spec[cuda::kPickLogprobsWord] = device_lp[size_t(i)] + 1;
        any_device_lp = true;
      }
      RowAnswer& a = answers[size_t(i)];
      a.params = &p;
      a.history = book.history(row.slot, row.pos);
      a.pos = row.pos;
      a.want_pick = row.want_pick;
      a.n_logprobs = lp ? -1 : row.n_logprobs;
      a.want_logits = row.want_logits;
      a.out = &(*results)[size_t(idx)];
      device_picked[size_t(i)] = on_device;
      if (row.want_logits || a.n_logprobs >= 0 || (row.want_pick && !on_device)) host_rows.push_back(i);
    }
    const size_t meta_bytes = meta.words.size() * 4;
    std::copy(meta.words.begin(), meta.words.end(), meta_host.get<int32_t>());
    const size_t row_bytes = size_t(V) * 4;
    if (logits_host.bytes() < host_rows.size() * row_bytes)
      logits_host = cuda::PinnedBuffer(std::max(host_rows.size(), size_t(8)) * row_bytes, "host logits");
    cudaGraphExec_t exec = graph_for(meta.shape, meta_bytes);
    STRATA_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    const int R = meta.shape.out_rows;
    if (R > 0)
      STRATA_CUDA_CHECK(cudaMemcpyAsync(picks_host.get(), fwd.ws.picks, size_t(R) * 4, cudaMemcpyDeviceToHost, stream));
    for (size_t k = 0; k < host_rows.size(); ++k)
      STRATA_CUDA_CHECK(cudaMemcpyAsync(logits_host.get<char>() + k * row_bytes, fwd.ws.logits + size_t(host_rows[k]) * V,
                                        row_bytes, cudaMemcpyDeviceToHost, stream));
    if (any_device_lp)
      STRATA_CUDA_CHECK(cudaMemcpyAsync(logprobs_host.get(), fwd.ws.logprobs, size_t(R) * cuda::kLogprobWords * 4,
                                        cudaMemcpyDeviceToHost, stream));
    if (meta.shape.features)
      STRATA_CUDA_CHECK(cudaMemcpyAsync(feat_host.get(), fwd.ws.feat, size_t(last - first) * size_t(H) * 4,
                                        cudaMemcpyDeviceToHost, stream));
    return l;
  }

  // Waits for a launched segment and makes the host part of its output rows.
  // With `upto`, waits for that event (recorded after the segment's copies) instead of the whole stream.
  void answer_segment(const Window& win, Launched& l, cudaEvent_t upto = nullptr) {
    const int V = cfg.vocab_size;
    const size_t row_bytes = size_t(V) * 4;
    const cuda::WindowMeta& meta = l.meta;
    const int first = l.first;
    const int n_out = int(meta.out_rows.size());
    std::vector<RowAnswer>& answers = l.answers;
    const std::vector<int>& host_rows = l.host_rows;
    const std::vector<char>& device_picked = l.device_picked;
    const std::vector<int>& device_lp = l.device_lp;
    if (upto)
      STRATA_CUDA_CHECK(cudaEventSynchronize(upto));
    else
      STRATA_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (meta.shape.features) {
      const size_t H = size_t(cfg.hidden_size);
      for (int i = first; i < l.last; ++i)
        if (win.rows[size_t(i)].want_feature) {
          const float* f = feat_host.get<float>() + size_t(i - first) * H;
          (*l.results)[size_t(i)].feature.assign(f, f + H);
        }
    }
    for (size_t k = 0; k < host_rows.size(); ++k)
      answers[size_t(host_rows[k])].logits = logits_host.get<float>() + k * size_t(V);
    // A whole-vocabulary draw the device handed back (-1: a top_p cut past the ranks it ordered, ties
    // overflowing its gather, or a non-finite logit) is made here from the row's logits, fetched now.
    std::vector<std::vector<float>> handed_back;
    handed_back.reserve(size_t(n_out));
    for (int i = 0; i < n_out; ++i) {
      if (!device_picked[size_t(i)]) continue;
      RowAnswer& a = answers[size_t(i)];
      a.device_pick = picks_host.get<int32_t>()[i];
      if (a.device_pick >= 0) {
        if (device_lp[size_t(i)] >= 0) {  // the device's logprobs of its pick
          const float* w = logprobs_host.get<float>() + size_t(i) * cuda::kLogprobWords;
          RowResult& res = *a.out;
          res.pick_logprob = w[0];
          res.top.clear();
          for (int k = 0; k < device_lp[size_t(i)]; ++k) {
            int32_t id;
            std::memcpy(&id, &w[1 + 2 * k], 4);
            res.top.push_back({TokenId(id), w[2 + 2 * k]});
          }
        }
        continue;
      }
      // Handed back: the host makes the pick, and then its logprobs too.
      if (device_lp[size_t(i)] >= 0) a.n_logprobs = win.rows[size_t(first + meta.out_rows[size_t(i)])].n_logprobs;
      if (!a.logits) {
        handed_back.emplace_back(size_t(V));
        STRATA_CUDA_CHECK(cudaMemcpy(handed_back.back().data(), fwd.ws.logits + size_t(i) * V, row_bytes,
                                     cudaMemcpyDeviceToHost));
        a.logits = handed_back.back().data();
      }
    }
    answer_rows(answers, V, [&](int n, const std::function<void(int, int)>& fn) { host_pool.parallel_for(n, fn); });
  }

  // The window's segments but the last run to completion here; the last is left in flight for finish().
  void start(const Window& win) {
    quiesce();
    if (in_flight) throw Error("cuda backend: a window was started while another is in flight");
    // The CPU backend's window rules and messages (SlotBook), so the engine treats both backends alike; a valid
    // window becomes the slots' history before the device runs it (commit() may trim it afterwards). A window
    // the pool has too few free blocks for throws KvExhausted from here, with nothing changed.
    check_window_features(win, cfg.feature_input, cfg.hidden_size);
    book.accept(win);
    auto f = std::make_unique<InFlight>();
    f->win = win;
    const int T = int(win.rows.size());
    f->results.resize(static_cast<size_t>(T));
    if (T > 0) {
      upload_tables(win);
      // Consecutive segments are an exact split of the window: a row reads only its slot's KV cells at
      // positions up to its own, all written by this or an earlier segment.
      int first = 0, outs = 0;
      for (int i = 0; i < T; ++i) {
        const Row& r = win.rows[size_t(i)];
        const bool out = r.want_pick || r.want_logits || r.n_logprobs >= 0;
        if (out && outs == opts.max_output_rows) {
          run_segment(f->win, first, i, &f->results);
          first = i;
          outs = 0;
        }
        outs += out ? 1 : 0;
      }
      f->last = launch_segment(f->win, first, T, &f->results);
    }
    in_flight = std::move(f);  // the answers point into *f, which stays where it is
  }

  std::vector<RowResult> finish() {
    if (!in_flight) throw Error("cuda backend: finish_window without a started window");
    std::unique_ptr<InFlight> f = std::move(in_flight);
    if (!f->win.rows.empty()) answer_segment(f->win, f->last);
    return std::move(f->results);
  }

  std::vector<RowResult> run(const Window& win) {
    start(win);
    return finish();
  }

  // run_chain on the device: the first window as run() queues it, then one graph of the later steps, each
  // reading its own metadata and the previous step's picks as its tokens, all queued before the one
  // synchronize. Returns false (nothing changed) for a chain it does not take:
  // picks that are not plain device argmaxes, outputs besides them, a step shape whose GEMMs are untimed, or
  // a chain past the window or context limits; the caller then runs the steps as windows.
  // With ahead > 0, `ahead` more steps follow in a graph of their own, left running (run_chain_ahead): out gets
  // the first `steps` steps' picks (none when steps is 0: then the host waits for nothing), and settle_ahead()
  // the rest.
  bool chain(const Window& w0, int steps, std::vector<std::vector<TokenId>>* out, int ahead = 0,
             uint64_t ticket = 0) {
    quiesce();
    const int total = steps + std::max(ahead, 0);
    if (in_flight || steps < 0 || (steps == 0 && ahead < 1) || total < 2 || w0.rows.empty()) return false;
    std::vector<size_t> picking;
    std::vector<bool> seen(size_t(opts.max_slots) + 1, false);
    for (size_t i = 0; i < w0.rows.size(); ++i) {
      const Row& r = w0.rows[i];
      if (r.want_logits || r.n_logprobs >= 0 || r.want_feature) return false;
      if (r.slot < 0 || r.slot >= opts.max_slots || !book.is_open(r.slot)) return false;  // run() says why
      if (!r.want_pick) continue;
      if (seen[size_t(r.slot)] || !device_pickable(book.params(r.slot))) return false;
      for (size_t k = i + 1; k < w0.rows.size(); ++k)
        if (w0.rows[k].slot == r.slot) return false;  // a picking row must be its slot's last
      seen[size_t(r.slot)] = true;
      picking.push_back(i);
    }
    const int S = int(picking.size());
    if (S == 0 || S > opts.max_output_rows) return false;
    check_window_features(w0, cfg.feature_input, cfg.hidden_size);
    if (w0.rows.size() + size_t(S) * size_t(total - 1) > size_t(opts.max_window_rows)) return false;
    for (size_t i : picking)
      if (w0.rows[i].pos + total - 1 >= opts.max_context) return false;
    std::vector<std::pair<SlotId, int32_t>> fed;  // each picking row's slot and position
    for (size_t i : picking) fed.emplace_back(w0.rows[i].slot, w0.rows[i].pos);
    // Every later step's window and its metadata; each step's embedding takes the previous step's picks as its
    // tokens and keeps them, so the steps' picks come back in one copy too.
    ChainSteps later = chain_steps(fed, 1, total - 1);
    const std::vector<cuda::WindowMeta>& metas = later.metas;
    const size_t stride = later.stride;
    Window all = w0;
    all.rows.insert(all.rows.end(), later.rows.rows.begin(), later.rows.rows.end());
    const size_t n_later = size_t(total - 1), kept_words = n_later * size_t(S);
    chain_buffers(n_later * stride, kept_words, S);
    // The later steps' graphs (captured now, before anything is queued): those whose picks go back now, and
    // the ahead steps'.
    const size_t n_now = size_t(std::max(steps - 1, 0));
    const std::vector<cuda::WindowMeta> now_metas(metas.begin(), metas.begin() + long(n_now));
    const std::vector<cuda::WindowMeta> ahead_metas(metas.begin() + long(n_now), metas.end());
    cudaGraphExec_t exec = now_metas.empty() ? nullptr : fed_chain_for(now_metas, stride, S);
    cudaGraphExec_t ahead_exec = ahead_metas.empty() ? nullptr : fed_chain_for(ahead_metas, stride, S, n_now);
    if ((!now_metas.empty() && !exec) || (!ahead_metas.empty() && !ahead_exec)) return false;
    stage_chain(all, later);  // the rows of every step (their tokens set below, once known)
    std::vector<RowResult> first(w0.rows.size());
    Launched l0 = launch_segment(all, 0, int(w0.rows.size()), &first);
    int32_t* kept = chain_picks_dev.get<int32_t>();  // [step 0 .. total - 2][S]: each step's picks but the last's
    // The first `steps` steps' picks to the host in two copies: steps 0 .. steps - 2 as kept, the last one's
    // from the picks after them (the ahead steps' first keeps it too, later); then the ahead steps' the same
    // way, after the event the host waits on for the first.
    int32_t* host = chain_picks_host.get<int32_t>();
    if (exec) STRATA_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    if (steps > 0) {
      STRATA_CUDA_CHECK(cudaMemcpyAsync(host, kept, n_now * size_t(S) * 4, cudaMemcpyDeviceToHost, stream));
      STRATA_CUDA_CHECK(
          cudaMemcpyAsync(host + n_now * size_t(S), fwd.ws.picks, size_t(S) * 4, cudaMemcpyDeviceToHost, stream));
    }
    if (ahead_exec) {
      if (steps > 0) STRATA_CUDA_CHECK(cudaEventRecord(chain_event, stream));
      STRATA_CUDA_CHECK(cudaGraphLaunch(ahead_exec, stream));
      const size_t from = size_t(steps) * size_t(S);
      STRATA_CUDA_CHECK(
          cudaMemcpyAsync(host + from, kept + from, (kept_words - from) * 4, cudaMemcpyDeviceToHost, stream));
      STRATA_CUDA_CHECK(
          cudaMemcpyAsync(host + kept_words, fwd.ws.picks, size_t(S) * 4, cudaMemcpyDeviceToHost, stream));
    }
    // Waits for the first `steps` steps; with none, nothing waits here (the first window's picks are the ahead
    // steps' first, read with theirs).
    if (steps > 0) answer_segment(all, l0, ahead_exec ? chain_event : nullptr);
    const int V = cfg.vocab_size;
    auto read = [host, S, V](int j, int i) {
      const int32_t t = host[size_t(j) * size_t(S) + size_t(i)];
      if (t < 0 || t >= V)
        throw Error("cuda backend: chained step " + std::to_string(j) + " picked token " + std::to_string(t));
      return TokenId(t);
    };
    out->assign(size_t(steps), std::vector<TokenId>(size_t(S)));
    for (int j = 0; j < steps; ++j)
      for (int i = 0; i < S; ++i) (*out)[size_t(j)][size_t(i)] = read(j, i);
    // Step j + 1's rows ran on step j's picks (picks[j - first] of each slot).
    auto set_tokens = [this, fed](int first, int end, const std::vector<std::vector<TokenId>>& picks) {
      for (int j = first; j < end; ++j)
        for (size_t i = 0; i < fed.size(); ++i)
          book.set_token(fed[i].first, fed[i].second + j + 1, picks[size_t(j - first)][i]);
    };
    set_tokens(0, std::min(steps, total - 1), *out);  // those of the first `steps` steps are known now
    ++chains_fed;
    if (ahead_exec) {
      // The ahead steps' picks, and the tokens of the rows they fed, once the next call (or take_ahead) waits
      // for them.
      ahead_pending = [this, steps, total, S, read, set_tokens]() {
        STRATA_CUDA_CHECK(cudaStreamSynchronize(stream));
        ahead_picks.assign(size_t(total - steps), std::vector<TokenId>(size_t(S)));
        for (int j = steps; j < total; ++j)
          for (int i = 0; i < S; ++i) ahead_picks[size_t(j - steps)][size_t(i)] = read(j, i);
        set_tokens(steps, total - 1, ahead_picks);
      };
      ahead_ticket = ticket;
      ahead_picks.clear();
      last_chain = LastChain{ticket, fed, total};
    }
    return true;
  }

  // extend_ahead: `more` steps after the last chain's, in one graph fed from its last picks (still in
  // ws.picks, and its features in ws.fin: nothing has run here since), left running like ahead steps.
  bool extend(uint64_t ticket, int more, uint64_t next) {
    settle_ahead();
    if (ticket == 0 || ticket != last_chain.ticket || more < 1 || in_flight) return false;
    const int S = int(last_chain.fed.size()), total = last_chain.total;
    for (const auto& [slot, pos] : last_chain.fed) {
      if (!book.is_open(slot) || book.committed(slot) != pos + total) return false;  // cut or refilled since
      if (pos + total + more - 1 >= opts.max_context) return false;
    }
    // Step j feeds each slot the previous step's pick at position pos + total + j.
    const ChainSteps steps = chain_steps(last_chain.fed, total, more);
    const size_t kept_words = size_t(more) * size_t(S);
    chain_buffers(size_t(more) * steps.stride, kept_words, S);
    cudaGraphExec_t exec = fed_chain_for(steps.metas, steps.stride, S);
    if (!exec) return false;
    stage_chain(steps.rows, steps);  // tokens set once known
    STRATA_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    // kept[j] is what step j fed (kept[0] the last chain's last picks), then ws.picks is the last step's.
    int32_t* host = chain_picks_host.get<int32_t>();
    STRATA_CUDA_CHECK(
        cudaMemcpyAsync(host, chain_picks_dev.get(), kept_words * 4, cudaMemcpyDeviceToHost, stream));
    STRATA_CUDA_CHECK(
        cudaMemcpyAsync(host + kept_words, fwd.ws.picks, size_t(S) * 4, cudaMemcpyDeviceToHost, stream));
    const int V = cfg.vocab_size;
    ahead_pending = [this, host, more, S, V, fed = last_chain.fed, total]() {
      STRATA_CUDA_CHECK(cudaStreamSynchronize(stream));
      std::vector<std::vector<TokenId>> at(size_t(more) + 1, std::vector<TokenId>(size_t(S)));
      for (int j = 0; j <= more; ++j)
        for (int i = 0; i < S; ++i) {
          const int32_t t = host[size_t(j) * size_t(S) + size_t(i)];
          if (t < 0 || t >= V)
            throw Error("cuda backend: extended step " + std::to_string(j) + " picked token " + std::to_string(t));
          at[size_t(j)][size_t(i)] = TokenId(t);
          if (j < more) book.set_token(fed[size_t(i)].first, fed[size_t(i)].second + total + j, TokenId(t));
        }
      ahead_picks.assign(at.begin() + 1, at.end());
    };
    ahead_ticket = next;
    ahead_picks.clear();
    last_chain.ticket = next;
    last_chain.total = total + more;
    ++chains_fed;
    return true;
  }
  // The windows of `n` chained steps: step j feeds each (slot, position) of `fed` one row at position + first +
  // j; their metadata, each step's block padded to `stride` words (256-byte aligned, as a window's own is), for
  // one copy of all of them.
  struct ChainSteps {
    Window rows;  // every step's rows, in step order
    std::vector<cuda::WindowMeta> metas;
    size_t stride = 0;
  };
  ChainSteps chain_steps(const std::vector<std::pair<SlotId, int32_t>>& fed, int first, int n) {
    ChainSteps c;
    for (int j = 0; j < n; ++j) {
      Window wj;
      for (const auto& [slot, pos] : fed) wj.rows.push_back(Row{slot, 0, pos + first + j, true});
      c.metas.push_back(meta_for(wj, 0, int(fed.size())));
      c.stride = std::max(c.stride, c.metas.back().words.size());
      c.rows.rows.insert(c.rows.rows.end(), wj.rows.begin(), wj.rows.end());
    }
    c.stride = (c.stride + 63) / 64 * 64;
    return c;
  }
  // Books a chain's rows (`all`: the steps' and any first window's before them; throws with nothing changed),
  // uploads their block tables and the steps' metadata (chain_buffers() sized for it) in one copy.
  void stage_chain(const Window& all, const ChainSteps& c) {
    book.accept(all);
    for (size_t j = 0; j < c.metas.size(); ++j)
      std::copy(c.metas[j].words.begin(), c.metas[j].words.end(), chain_meta_host.get<int32_t>() + j * c.stride);
    upload_tables(all);
    STRATA_CUDA_CHECK(cudaMemcpyAsync(chain_meta_dev.get(), chain_meta_host.get(), c.metas.size() * c.stride * 4,
                                      cudaMemcpyHostToDevice, stream));
  }
  // Room for a chain's metadata (meta_words) and its kept picks with the S last ones after them; buffers
  // replaced drop the fed-chain graphs recorded with the old ones.
  void chain_buffers(size_t meta_words, size_t kept_words, int S) {
    if (chain_meta_host.bytes() < meta_words * 4) {
      fed_graphs.clear();
      chain_meta_host = cuda::PinnedBuffer(meta_words * 4, "chained window metadata");
      chain_meta_dev = cuda::DeviceBuffer(meta_words * 4, "chained window metadata");
    }
    if (chain_picks_host.bytes() < (kept_words + size_t(S)) * 4 || chain_picks_dev.bytes() < kept_words * 4) {
      fed_graphs.clear();
      chain_picks_host = cuda::PinnedBuffer((kept_words + size_t(S)) * 4, "chained window picks");
      chain_picks_dev = cuda::DeviceBuffer(kept_words * 4, "chained window picks");
    }
  }
  // The last ahead chain (chain(), extend()), while nothing else has run here since: what extend() continues.
  struct LastChain {
    uint64_t ticket = 0;
    std::vector<std::pair<SlotId, int32_t>> fed;  // each picking row's slot and position in its first window
    int total = 0;                                // steps run so far, the first window's included
  };
  LastChain last_chain;
  // settle_ahead(), and the last chain is no longer the last thing run here.
  void quiesce() {
    settle_ahead();
    last_chain = LastChain{};
  }
  // The ahead steps of the last chain (run_chain_ahead), until settled; their picks after, under ahead_ticket.
  cudaEvent_t chain_event = nullptr;
  std::function<void()> ahead_pending;
  std::vector<std::vector<TokenId>> ahead_picks;
  uint64_t ahead_ticket = 0;
  // Waits for the ahead steps in flight, if any, and books their picks. Every call that touches the device or
  // the slots comes here first.
  void settle_ahead() {
    if (!ahead_pending) return;
    std::function<void()> f = std::move(ahead_pending);
    ahead_pending = nullptr;
    f();
  }
  cuda::PinnedBuffer chain_meta_host, chain_picks_host;
  cuda::DeviceBuffer chain_meta_dev, chain_picks_dev;
  int chains_fed = 0;
};

CudaBackend::CudaBackend(const Model& model, CudaBackendOptions o) {
  if (!model.checkpoint) throw Error("cuda backend: model has no checkpoint");
  impl_ = std::make_unique<Impl>(model, o);
}

CudaBackend::~CudaBackend() = default;

BackendInfo CudaBackend::info() const {
  BackendInfo i;
  i.name = "cuda";
  i.max_slots = impl_->book.limits().slots;
  i.max_context = impl_->opts.max_context;
  i.vocab_size = impl_->cfg.vocab_size;
  i.max_window_rows = impl_->opts.max_window_rows;
  // Windows below gemm_min_rows take the skinny kernels, whose per-row bits do not depend on the row count;
  // from there on cuBLAS picks its algorithm by the shape. Windows of up to fused_gemv_rows rows take the
  // fused GEMV, exact among themselves but not against the skinny kernel's windows above them.
  const int gmr = impl_->opts.gemm_min_rows;
  i.exact_rows = gmr == std::numeric_limits<int>::max() ? gmr : std::max(gmr - 1, 0);
  if (impl_->opts.fused_gemv && impl_->opts.fused_gemv_rows > 0 && cuda::gemv_fits(impl_->cfg, impl_->weights.type))
    i.exact_rows = std::min(i.exact_rows, impl_->opts.fused_gemv_rows);
  // The skinny kernel puts a window's rows on the tensor cores' 8-wide N tile: up to 8 rows cost about one
  // (1.03-1.1x at 8B, run 6; strata-tiny 1.08x, run 81). The fused GEMV's multi-row windows cost a row each.
  const bool multi_row_gemv = impl_->opts.fused_gemv && impl_->opts.fused_gemv_rows > 1;
  if (!multi_row_gemv) i.cheap_rows = std::max(1, std::min(8, i.exact_rows));
  impl_->book.describe_pool(&i);
  return i;
}

// The KV pool is allocated at startup and blocks are taken per window (accept), so opening a slot needs no
// device work.
SlotId CudaBackend::open_slot() {
  impl_->settle_ahead();
  const SlotId s = impl_->book.find_free();
  if (s != kNoSlot) impl_->book.open(s);
  return s;
}

// Each call that touches the slots waits for a chain's ahead steps first (run_chain_ahead).
void CudaBackend::reset_slot(SlotId s) {
  impl_->quiesce();
  impl_->book.reset(s);
}
void CudaBackend::close_slot(SlotId s) {
  impl_->quiesce();
  impl_->book.close(s);
}
void CudaBackend::set_sampling(SlotId s, const SamplingParams& p) {
  impl_->settle_ahead();
  impl_->book.set_sampling(s, p);
}
int CudaBackend::attach_prefix(SlotId s, const std::vector<TokenId>& prompt) {
  impl_->settle_ahead();
  return impl_->book.attach_prefix(s, prompt);
}
std::vector<RowResult> CudaBackend::run_window(const Window& window) { return impl_->run(window); }
std::vector<std::vector<TokenId>> CudaBackend::run_chain(const Window& window, int steps) {
  std::vector<std::vector<TokenId>> picks;
  if (impl_->chain(window, steps, &picks)) return picks;
  return Backend::run_chain(window, steps);
}
std::vector<std::vector<TokenId>> CudaBackend::run_chain_ahead(const Window& window, int steps, int ahead,
                                                               uint64_t* ticket) {
  std::vector<std::vector<TokenId>> picks;
  const uint64_t t = new_ahead_ticket();
  if (ahead > 0 && impl_->chain(window, steps, &picks, ahead, t)) {
    end_default_chain();
    *ticket = t;
    return picks;
  }
  return Backend::run_chain_ahead(window, steps, ahead, ticket);
}
bool CudaBackend::extend_ahead(uint64_t ticket, int more, uint64_t* next) {
  const uint64_t t = new_ahead_ticket();
  if (impl_->extend(ticket, more, t)) {
    *next = t;
    return true;
  }
  return Backend::extend_ahead(ticket, more, next);
}
std::vector<std::vector<TokenId>> CudaBackend::take_ahead(uint64_t ticket) {
  impl_->settle_ahead();
  if (ticket != 0 && ticket == impl_->ahead_ticket) {
    impl_->ahead_ticket = 0;
    return std::move(impl_->ahead_picks);
  }
  return Backend::take_ahead(ticket);
}
bool CudaBackend::overlaps_ahead() const { return true; }
void CudaBackend::start_window(const Window& window) { impl_->start(window); }
std::vector<RowResult> CudaBackend::finish_window() { return impl_->finish(); }
void CudaBackend::commit(SlotId s, int n_keep) {
  impl_->quiesce();
  impl_->book.commit(s, n_keep);
}
// Positions past the cut stay in the arena until later windows overwrite them; nothing reads them first.
int CudaBackend::truncate(SlotId s, int n_keep) {
  impl_->quiesce();
  return impl_->book.truncate(s, n_keep);
}

void CudaBackend::release() {
  // Work already queued finishes or faults; either way no window is in flight afterwards.
  (void)cudaStreamSynchronize(impl_->stream);
  (void)cudaGetLastError();
  impl_->in_flight.reset();
  impl_->ahead_pending = nullptr;  // its rows' tokens stay unknown: the slots are reset after a release
  impl_->ahead_ticket = 0;
  impl_->last_chain = Impl::LastChain{};
  end_default_chain();
  impl_->book.forget_last_window();
}

CudaMemoryReport CudaBackend::memory() const { return impl_->mem; }
int CudaBackend::graphs_captured() const { return int(impl_->graphs.size()); }
int CudaBackend::chains_on_device() const { return impl_->chains_fed; }
std::vector<int32_t> CudaBackend::block_table(SlotId s) const {
  if (!impl_->book.is_open(s)) throw Error("block_table: slot " + std::to_string(s) + " is not open");
  return impl_->book.block_table(s);
}
std::string CudaBackend::device_name() const { return impl_->name; }

bool CudaBackend::skinny_folds(const ModelConfig& cfg) {
  const int widest = std::max({(cfg.num_heads + 2 * cfg.num_kv_heads) * cfg.head_dim, cfg.hidden_size,
                               cfg.intermediate_size});
  return (widest + 15) / 16 <= cuda::device_sm_count();
}

int CudaBackend::device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

}  // namespace strata
