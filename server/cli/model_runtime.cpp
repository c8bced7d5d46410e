#include "server/cli/model_runtime.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "config/default_model.hpp"
#include "engine/core/faults.hpp"
#include "engine/cpu/cpu_backend.hpp"
#include "engine/logging/logging.hpp"
#include "engine/spec/draft_model_drafter.hpp"
#include "server/cli/build_info.hpp"
#ifdef STRATA_HAVE_CUDA
#include "cuda/cuda_backend.hpp"
#endif

namespace strata {
namespace {

// The draft model's --spec-max-batch when the flag is not given (attach_draft_model).
constexpr int kDraftModelMaxBatch = 2;

std::string source_of(const SourceMap& sources, const std::string& name) {
  auto it = sources.find(name);
  return it == sources.end() ? "default" : it->second;
}

// What a backend is sized by. The target's CUDA KV cache follows --kv-cache-gb / --gpu-memory-fraction; a
// draft model's leaves both 0, so it takes exactly max_slots slots and the target (built after it, with the
// fraction counting memory already in use) gets the rest of the GPU.
struct BackendShape {
  int max_slots = 1;
  int max_context = 1;
  int threads = 0;                   // CPU
  int kv_block_size = 16;            // paged KV (CPU and CUDA)
  int kv_blocks = 0;                 // 0 = every slot's full context (CUDA: or what its KV budget holds)
  bool prefix_caching = true;
  double kv_cache_gb = 0.0;          // CUDA
  double gpu_memory_fraction = 0.0;  // CUDA
  bool batch_invariant = false;      // CUDA: fixed-order kernels for every window
  bool gemm_autotune = true;         // CUDA: CudaBackendOptions::gemm_autotune
  bool graph_warmup = false;         // CUDA: CudaBackendOptions::warm_up_decode
  bool exact_verify = false;         // CUDA: speculation verifies drafts, so windows of up to 16 rows must give
                                     // a row the bits of a single-row window (the skinny kernel)
  bool draft = false;                // CUDA: a draft model's backend, whose windows are mostly of a few rows
  KvDType kv_cache_dtype = KvDType::Auto;
};

// --kv-cache-dtype on a backend: auto is bf16 on CUDA where head_dim allows it (half the KV memory, and decode
// batches take the tensor-core attention kernel, which reads a bf16 arena: +17 % at 64 streams of the 8B shape,
// docs/PERFORMANCE.md), f32 on the CPU backend (the reference).
DType kv_dtype_for(KvDType d, bool cuda, const ModelConfig& mc) {
  if (d == KvDType::F32) return DType::F32;
  if (d == KvDType::BF16) return DType::BF16;
  return cuda && mc.head_dim % 8 == 0 ? DType::BF16 : DType::F32;
}

// What both backends' options take from the shape: sequences, context and the paged KV pool.
template <class Options>
Options pool_options(const BackendShape& shape) {
  Options opts;
  opts.max_slots = shape.max_slots;
  opts.max_context = shape.max_context;
  opts.kv_block_size = shape.kv_block_size;
  opts.kv_blocks = shape.kv_blocks;
  opts.prefix_caching = shape.prefix_caching;
  return opts;
}

// The one backend choice for both the target and the draft model: CUDA (device 0, the only one used) when
// `device` is cuda, else the CPU backend.
Engine::BackendFactory backend_factory_for(std::shared_ptr<const Model> model, Device device,
                                           const BackendShape& shape) {
#ifdef STRATA_HAVE_CUDA
  if (device == Device::Cuda) {
    CudaBackendOptions opts = pool_options<CudaBackendOptions>(shape);
    opts.kv_cache_dtype = kv_dtype_for(shape.kv_cache_dtype, true, model->config);
    opts.kv_cache_gb = shape.kv_cache_gb;
    opts.gpu_memory_fraction = shape.gpu_memory_fraction;
    // With speculation on, windows of up to 16 rows take the skinny kernel (a verify window must give each row
    // the bits of plain decoding, so single rows take it too); without it, one-row windows take the fused GEMV
    // and the others cuBLAS, which reads the weights faster at every row count (docs/PERFORMANCE.md), with
    // split activations up to 16 rows (CudaBackendOptions) so decode keeps near-fp32 products.
    // --batch-invariant puts every window on the fixed-order skinny kernels. A draft model's windows (a few
    // rows of catch-up, then single rows) need no exactness and are cheapest on the fused GEMV.
    opts.max_output_rows = 256;
    opts.gemm_min_rows = shape.batch_invariant ? std::numeric_limits<int>::max()
                         : shape.exact_verify  ? kServerGemmMinRows
                                               : 1;
    opts.fused_gemv_rows = shape.draft && !shape.batch_invariant ? kDraftFusedGemvRows : 0;
    // A draft small enough for the skinny kernel's folded windows takes them instead (the QKV projection
    // carries the RoPE step there, the embedding and LM head fold the norms): strata-tiny's draft drafts ~3 %
    // faster so (docs/PERFORMANCE.md run 108); larger drafts keep the fused GEMV, faster at one row.
    // STRATA_DRAFT_SKINNY=0|1 overrides the choice, for comparisons.
    if (shape.draft && !shape.batch_invariant) {
      bool skinny = CudaBackend::skinny_folds(model->config);
      if (const char* e = std::getenv("STRATA_DRAFT_SKINNY"); e && *e) skinny = std::atoi(e) == 1;
      if (skinny) {
        opts.gemm_min_rows = kServerGemmMinRows;
        opts.fused_gemv_rows = 0;
      }
    }
    // STRATA_TARGET_FUSED_GEMV_ROWS (0-16) sets the target's, for benchmarks that compare the two.
    if (const char* e = std::getenv("STRATA_TARGET_FUSED_GEMV_ROWS"); e && *e && !shape.draft && !shape.batch_invariant)
      opts.fused_gemv_rows = std::clamp(std::atoi(e), 0, kServerGemmMinRows - 1);
    // Attention from a bf16 arena on the tensor-core kernel wherever flash attention does not serve a window,
    // verify windows included: it gives a row the same bits in any window, as the fixed-order kernel does, and
    // the engine keeps verify windows within the 16 exact rows (BackendInfo::exact_rows), so drafts verify bit
    // for bit. --batch-invariant keeps the fixed-order kernel for every window, prompts included (the
    // tensor-core kernel was never timed on 16-row prompt tiles). STRATA_TARGET_ATTENTION_TC=0|1 overrides the
    // target's choice, for comparisons.
    opts.attention_tc = !shape.batch_invariant;
    if (const char* e = std::getenv("STRATA_TARGET_ATTENTION_TC"); e && *e && !shape.draft && !shape.batch_invariant)
      opts.attention_tc = std::atoi(e) != 0;
    // The target's stream first and a draft model's last, so that the draft's steps beside a verify window
    // (drafting ahead) only fill what the target leaves idle. Alone it changed nothing beyond the noise (runs
    // 125 and 138); with a lookup proposal's chain drafting 2 steps ahead (DraftModelDrafter) the pair gained
    // ~6 % on both of strata-tiny's prompt classes in twelve ABBA rounds on an H100 (runs 138-139, where the
    // chain's k + 2 steps alone gained nothing either). STRATA_CUDA_STREAM_PRIORITY=0 turns it off, for
    // comparisons.
    const char* prio = std::getenv("STRATA_CUDA_STREAM_PRIORITY");
    if (!(prio && *prio && std::atoi(prio) == 0)) opts.stream_priority = shape.draft ? -1 : 1;
    opts.gemm_autotune = shape.gemm_autotune;
    opts.warm_up_decode = shape.graph_warmup;
    return [model, opts]() -> std::unique_ptr<Backend> { return std::make_unique<CudaBackend>(*model, opts); };
  }
#else
  (void)device;
#endif
  CpuBackendOptions opts = pool_options<CpuBackendOptions>(shape);
  opts.threads = shape.threads;
  opts.kv_cache_dtype = kv_dtype_for(shape.kv_cache_dtype, false, model->config);
  return [model, opts]() -> std::unique_ptr<Backend> { return std::make_unique<CpuBackend>(*model, opts); };
}

}  // namespace

Device resolve_device(Device requested, const SourceMap& sources) {
#ifdef STRATA_HAVE_CUDA
  // The CUDA backend (cuda/) answers whether a device is visible; a build without it never asks.
  if (requested == Device::Auto) return CudaBackend::device_count() > 0 ? Device::Cuda : Device::Cpu;
  if (requested == Device::Cuda && CudaBackend::device_count() == 0)
    throw Error("--device cuda: no CUDA device is visible (from " + source_of(sources, "device") + ")");
  return requested;
#else
  if (requested == Device::Cuda)
    throw ConfigError("--device: 'cuda' but this build has no CUDA backend (configure with -DSTRATA_CUDA=ON) (from " +
                      source_of(sources, "device") + ")");
  return Device::Cpu;
#endif
}

int resolve_ctx_size(int requested, const ModelConfig& model) {
  if (requested > 0) return requested;
  if (model.max_position_embeddings <= 0) return kDefaultCtxCap;
  return std::min(model.max_position_embeddings, kDefaultCtxCap);
}

ModelRuntime load_model_runtime(const Config& config, const SourceMap& sources) {
  ModelRuntime rt;
  rt.model_dir = config.model.model_dir.empty() ? resolve_default_model_dir(current_executable_path())
                                                : config.model.model_dir;
  rt.device = resolve_device(config.backend.device, sources);
  spdlog::info("loading model from {}", rt.model_dir);
  try {
    rt.model = load_model(rt.model_dir);
  } catch (const std::exception& e) {
    throw Error("cannot load model '" + rt.model_dir + "': " + e.what());
  }
  const std::string tok_path = config.model.tokenizer.empty() ? rt.model_dir : config.model.tokenizer;
  try {
    rt.tokenizer = Tokenizer::load(tok_path);
  } catch (const std::exception& e) {
    throw Error("cannot load tokenizer '" + tok_path + "': " + e.what());
  }
  const ModelConfig& mc = rt.model->config;
  rt.ctx_size = resolve_ctx_size(config.backend.ctx_size, mc);
  if (mc.max_position_embeddings > 0 && rt.ctx_size > mc.max_position_embeddings)
    spdlog::warn("--ctx-size {} exceeds the model's max_position_embeddings {}", rt.ctx_size,
                 mc.max_position_embeddings);
  spdlog::info("model {}: {} layers, hidden {}, vocab {}; device {}, {} slots x {} positions", mc.architecture,
               mc.num_layers, mc.hidden_size, mc.vocab_size, device_name(rt.device), config.backend.max_slots,
               rt.ctx_size);
  return rt;
}

Engine::BackendFactory make_backend_factory(const ModelRuntime& runtime, const Config& config,
                                            std::optional<bool> exact_verify) {
  BackendShape shape;
  shape.max_slots = config.backend.max_slots;
  shape.max_context = runtime.ctx_size;
  shape.threads = config.backend.threads;
  shape.kv_cache_gb = config.backend.kv_cache_gb;
  shape.gpu_memory_fraction = config.backend.gpu_memory_fraction;
  shape.kv_block_size = config.backend.kv_block_size;
  shape.kv_blocks = config.backend.kv_cache_blocks;
  shape.prefix_caching = config.engine.prefix_caching;
  shape.kv_cache_dtype = config.backend.kv_cache_dtype;
  if (shape.kv_blocks == 0 && config.backend.kv_cache_gb > 0 && runtime.device != Device::Cuda) {
    // CPU: K and V of every layer for each position of a block, fp32 whatever the dtype (bf16 values are
    // stored rounded in fp32 there).
    const ModelConfig& mc = runtime.model->config;
    const double block_bytes = 2.0 * mc.num_layers * mc.num_kv_heads * mc.head_dim * 4.0 * shape.kv_block_size;
    shape.kv_blocks = std::max(1, static_cast<int>(std::min(config.backend.kv_cache_gb * 1e9 / block_bytes, 1e9)));
  }
  shape.batch_invariant = config.backend.batch_invariant;
  shape.gemm_autotune = config.backend.gemm_autotune;
  shape.graph_warmup = config.backend.cuda_graph_warmup;
  shape.exact_verify = exact_verify.value_or(config.engine.speculation.mode != SpeculationMode::Off);
  return backend_factory_for(runtime.model, runtime.device, shape);
}

void finalize_engine_options(Config& config, const SourceMap& sources) {
  // The draft model itself is loaded by attach_draft_model once the target's shape is known.
  switch (config.spec.mode) {
    case SpecMode::Off: config.engine.speculation.mode = SpeculationMode::Off; break;
    case SpecMode::Ngram: config.engine.speculation.mode = SpeculationMode::Ngram; break;
    case SpecMode::Draft: config.engine.speculation.mode = SpeculationMode::Draft; break;
  }
  config.engine.speculation.max_k = config.spec.k;
  config.engine.speculation.lookup_k = config.spec.lookup_k;
  config.engine.speculation.max_batch = config.spec.max_batch;
  if (config.faults.spec.empty()) return;
  try {
    config.engine.faults = parse_fault_spec(config.faults.spec);
  } catch (const std::exception& e) {
    throw ConfigError(std::string("--debug-faults: ") + e.what() + " (from " + source_of(sources, "debug-faults") + ")");
  }
  spdlog::warn("fault injection is ON: {}", config.faults.spec);
}

void attach_draft_model(Config& config, const ModelRuntime& runtime, const SourceMap& sources) {
  // The embedded strata-tiny brings its draft model unless --spec or --draft-model says otherwise.
  if (apply_default_draft(config, sources, runtime.model_dir)) config.engine.speculation.mode = SpeculationMode::Draft;
  if (config.spec.mode != SpecMode::Draft) return;
  // Unless --spec-max-batch says otherwise, a draft model drafts only while at most 2 requests decode: above
  // that its windows cost more than they save (strata-tiny's pair: 0.83x at 4 streams and 0.74-0.88x at 8 on
  // the CPU, 0.45-0.51x at 8 on the H200; docs/PERFORMANCE.md).
  if (sources.find("spec-max-batch") == sources.end()) config.engine.speculation.max_batch = kDraftModelMaxBatch;
  const std::string& dir = config.spec.draft_model;
  std::shared_ptr<const Model> draft;
  try {
    draft = load_model(dir, runtime.model.get());  // a feature draft reads the target's embedding and LM head
  } catch (const std::exception& e) {
    throw Error("--draft-model: cannot load '" + dir + "': " + e.what());
  }
  // Drafts are token ids: a draft model with another vocabulary would propose meaningless ids.
  if (draft->config.vocab_size != runtime.model->config.vocab_size)
    throw ConfigError("--draft-model: '" + dir + "' has vocab_size " + std::to_string(draft->config.vocab_size) +
                      " but the target model has " + std::to_string(runtime.model->config.vocab_size) +
                      "; the draft model must share the target's tokenizer (from " +
                      source_of(sources, "draft-model") + ")");
  // The draft runs on the target's device (same GPU for a CUDA target) with one slot per target slot and the
  // target's context; its KV cache is sized for those slots alone.
  BackendShape shape;
  shape.max_slots = config.backend.max_slots;
  shape.max_context = runtime.ctx_size;
  shape.threads = config.backend.threads;
  shape.kv_cache_dtype = config.backend.kv_cache_dtype;
  // No prefix cache: drafters never attach a prefix, and a cached (shared) block would stop
  // Backend::truncate from cutting a slot back inside it, so a rejected draft there would mean a recompute.
  shape.prefix_caching = false;
  shape.draft = true;
  auto backend = std::shared_ptr<Backend>(backend_factory_for(draft, runtime.device, shape)());
  // A feature draft (StrataFeatureDraft) reads the target's hidden state beside each token.
  const int feature_dim = draft->config.feature_input ? draft->config.hidden_size : 0;
  // Drafting ahead while the target verifies where the draft backend overlaps the two (CUDA);
  // STRATA_DRAFT_AHEAD=0|1 overrides that, for the benchmarks' comparisons.
  DraftModelDrafter::Ahead ahead = DraftModelDrafter::Ahead::Auto;
  if (const char* e = std::getenv("STRATA_DRAFT_AHEAD"); e && *e)
    ahead = std::atoi(e) != 0 ? DraftModelDrafter::Ahead::On : DraftModelDrafter::Ahead::Off;
  const int critical = config.spec.draft_critical;
  // --spec-draft-lookup: prompt lookup (with the n-gram drafter's settings) beside the draft model: drafting
  // ahead, a round that waits for drafts tries it first and the draft drafts ahead past what it found
  // (docs/PERFORMANCE.md, run 127); otherwise it is the draft's rival (DraftModelDrafter). Its own proposals
  // need a match of --spec-draft-lookup-min tokens (its copies after the draft's drafts, any match).
  const bool lookup = config.spec.draft_lookup;
  const int ngram_min = config.engine.speculation.ngram_min, ngram_max = config.engine.speculation.ngram_max;
  const int lookup_min = config.spec.draft_lookup_min;
  config.engine.speculation.drafter_factory = [backend, feature_dim, ahead, critical, lookup, ngram_min, ngram_max,
                                               lookup_min]() -> std::unique_ptr<Drafter> {
    return std::make_unique<DraftModelDrafter>(
        backend, feature_dim, ahead, critical,
        lookup ? std::make_unique<NgramDrafter>(ngram_min, ngram_max, lookup_min) : nullptr);
  };
  const int max_batch = config.engine.speculation.max_batch;
  const bool ahead_on = ahead == DraftModelDrafter::Ahead::On ||
                        (ahead == DraftModelDrafter::Ahead::Auto && backend->overlaps_ahead());
  const bool copies = lookup && feature_dim == 0 && config.spec.lookup_k > config.spec.k;
  const std::string matches =
      lookup && feature_dim == 0 ? "; lookup proposes on matches of " + std::to_string(lookup_min) + "+ tokens" : "";
  spdlog::info("speculation: {} {} ({} layers) on {}, up to {} drafts per window{}{}{}, {}",
               feature_dim > 0 ? "feature draft" : "draft model", dir, draft->config.num_layers,
               device_name(runtime.device), config.spec.k,
               copies ? " (" + std::to_string(config.spec.lookup_k) + " copied by prompt lookup)" : std::string(),
               !ahead_on      ? std::string(lookup && feature_dim == 0 ? ", prompt lookup as its rival" : "")
               : critical > 0 ? ", drafting ahead (at most " + std::to_string(critical) + " draft" +
                                    (critical > 1 ? "s" : "") +
                                    (lookup && feature_dim == 0 ? ", or what prompt lookup finds," : "") +
                                    " before a waiting window)"
                              : std::string(lookup && feature_dim == 0 ? ", drafting ahead (prompt lookup first)"
                                                                       : ", drafting ahead"),
               matches, max_batch > 0 ? "while at most " + std::to_string(max_batch) + " requests decode"
                             : std::string("at every batch size"));
}

}  // namespace strata
